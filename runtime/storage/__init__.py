"""Stores of the worker's state: source offsets, connector configs and statuses, each in memory and in Kafka."""

from headwater.runtime.storage.configs import TARGET_STATES, ConfigStore, ConfigView, MemoryConfigStore, TargetState
from headwater.runtime.storage.connector_offsets import ConnectorOffsetStore
from headwater.runtime.storage.kafka_configs import KafkaConfigStore
from headwater.runtime.storage.kafka_offsets import KafkaOffsetStore
from headwater.runtime.storage.kafka_status import KafkaStatusStore
from headwater.runtime.storage.offsets import (
    FileOffsetStore,
    MemoryOffsetStore,
    OffsetStore,
    PartitionOffset,
    offset_key,
    offset_value,
    parse_offset_key,
)
from headwater.runtime.storage.status import (
    STATES,
    MemoryStatusStore,
    Status,
    StatusStore,
    StatusView,
    TopicStatus,
    may_replace,
)

__all__ = [
    "STATES",
    "TARGET_STATES",
    "ConfigStore",
    "ConfigView",
    "ConnectorOffsetStore",
    "FileOffsetStore",
    "KafkaConfigStore",
    "KafkaOffsetStore",
    "KafkaStatusStore",
    "MemoryConfigStore",
    "MemoryOffsetStore",
    "MemoryStatusStore",
    "OffsetStore",
    "PartitionOffset",
    "Status",
    "StatusStore",
    "StatusView",
    "TargetState",
    "TopicStatus",
    "may_replace",
    "offset_key",
    "offset_value",
    "parse_offset_key",
]
