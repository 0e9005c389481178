"""Transports the task loops run over."""

from headwater.runtime.transport.base import (
    Admin,
    CommitCallback,
    Consumer,
    DeliveryCallback,
    Message,
    NewTopic,
    Producer,
    RawHeaders,
    RebalanceListener,
    RecordMetadata,
    Transport,
)

__all__ = [
    "Admin",
    "CommitCallback",
    "Consumer",
    "DeliveryCallback",
    "Message",
    "NewTopic",
    "Producer",
    "RawHeaders",
    "RebalanceListener",
    "RecordMetadata",
    "Transport",
]
