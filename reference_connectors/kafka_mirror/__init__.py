"""Kafka mirror source connector (KIP-310): copies matching topics of a source cluster into the worker's cluster.

Install with ``pip install 'headwater[kafka-mirror]'``; its entry point is ``kafka-mirror``
(``connector.class=kafka-mirror``). Run it with ``key.converter=bytes`` and ``value.converter=bytes`` so records are
copied byte for byte; the default header converter copies header bytes as they are.
"""

from headwater.reference_connectors.kafka_mirror.config import (
    CONFIG_DEF,
    KIP_310_CONFIG,
    MirrorConfig,
    whitelist_pattern,
)
from headwater.reference_connectors.kafka_mirror.connector import KafkaMirrorSourceConnector
from headwater.reference_connectors.kafka_mirror.monitor import PartitionMonitor
from headwater.reference_connectors.kafka_mirror.partitions import (
    TASK_PARTITIONS,
    LeaderTopicPartition,
    fetch_partitions,
    group_partitions,
    task_configs,
)
from headwater.reference_connectors.kafka_mirror.task import KafkaMirrorSourceTask, source_partition

__all__ = [
    "CONFIG_DEF",
    "KIP_310_CONFIG",
    "TASK_PARTITIONS",
    "KafkaMirrorSourceConnector",
    "KafkaMirrorSourceTask",
    "LeaderTopicPartition",
    "MirrorConfig",
    "PartitionMonitor",
    "fetch_partitions",
    "group_partitions",
    "source_partition",
    "task_configs",
    "whitelist_pattern",
]
