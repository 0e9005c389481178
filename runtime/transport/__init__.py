"""Transports the task loops run over: the interface, and the in-memory broker and its clients."""

from headwater.runtime.transport.base import (
    Acknowledgement,
    Admin,
    CommitCallback,
    Consumer,
    DeliveryCallback,
    Message,
    NewTopic,
    Producer,
    QueueFullError,
    RawHeaders,
    RebalanceListener,
    RecordMetadata,
    Transport,
)
from headwater.runtime.transport.memory import MemoryAdmin, MemoryBroker, MemoryProducer, MemoryTransport
from headwater.runtime.transport.memory_group import MemoryConsumer

__all__ = [
    "Acknowledgement",
    "Admin",
    "CommitCallback",
    "Consumer",
    "DeliveryCallback",
    "MemoryAdmin",
    "MemoryBroker",
    "MemoryConsumer",
    "MemoryProducer",
    "MemoryTransport",
    "Message",
    "NewTopic",
    "Producer",
    "QueueFullError",
    "RawHeaders",
    "RebalanceListener",
    "RecordMetadata",
    "Transport",
]
