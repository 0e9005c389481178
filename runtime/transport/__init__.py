"""Transports the task loops run over: the interface, and the in-memory broker and its clients."""

from headwater.runtime.transport.base import (
    Acknowledgement,
    Admin,
    CommitCallback,
    Consumer,
    Delivery,
    DeliveryCallback,
    GroupMember,
    LogApply,
    Message,
    MissingTopicError,
    NewTopic,
    Producer,
    ProducerFencedError,
    QueueFullError,
    RawHeaders,
    RebalanceListener,
    RecordMetadata,
    TopicLog,
    TransactionAbortableError,
    TransactionalProducer,
    Transport,
)
from headwater.runtime.transport.memory import MemoryAdmin, MemoryBroker, MemoryProducer, MemoryTransport
from headwater.runtime.transport.memory_group import MemoryConsumer
from headwater.runtime.transport.memory_log import MemoryLog
from headwater.runtime.transport.memory_membership import MemoryGroupMember
from headwater.runtime.transport.memory_transactions import MemoryTransactionalProducer

__all__ = [
    "Acknowledgement",
    "Admin",
    "CommitCallback",
    "Consumer",
    "Delivery",
    "DeliveryCallback",
    "GroupMember",
    "LogApply",
    "MemoryAdmin",
    "MemoryBroker",
    "MemoryConsumer",
    "MemoryGroupMember",
    "MemoryLog",
    "MemoryProducer",
    "MemoryTransactionalProducer",
    "MemoryTransport",
    "Message",
    "MissingTopicError",
    "NewTopic",
    "Producer",
    "ProducerFencedError",
    "QueueFullError",
    "RawHeaders",
    "RebalanceListener",
    "RecordMetadata",
    "TopicLog",
    "TransactionAbortableError",
    "TransactionalProducer",
    "Transport",
]
