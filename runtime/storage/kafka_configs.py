"""Connector configs in a Kafka topic, in the records of Kafka Connect's config topic (see
:mod:`headwater.runtime.storage.configs`), so Java workers and this store read each other's configs.

The topic has exactly one partition, as Connect requires: the order of task records and their commit record is
the meaning of the log. The store's view is what it read from the topic, at :meth:`KafkaConfigStore.start`, after
each of its writes (which wait until their records are acknowledged, then read the topic to its end, as Connect's
writers do) and at :meth:`KafkaConfigStore.refresh`; the reads answer from that view without asking the broker.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from headwater.runtime.storage.configs import ConfigView, _RecordConfigStore
from headwater.runtime.storage.log_backed import Cluster, LogBackedStore


class KafkaConfigStore(LogBackedStore[ConfigView], _RecordConfigStore):
    """Configs in the compacted one-partition topic ``topic``, created with ``replication_factor`` when missing;
    an existing topic with more partitions is refused. ``client_config`` holds librdkafka settings for every
    client; ``timeout_ms`` bounds :meth:`start`, each write and :meth:`refresh`."""

    EXACT_PARTITIONS = True

    def __init__(
        self,
        cluster: Cluster,
        topic: str,
        replication_factor: int = 1,
        client_config: Mapping[str, Any] | None = None,
        *,
        timeout_ms: int = 30_000,
    ) -> None:
        super().__init__(cluster, topic, 1, replication_factor, client_config, timeout_ms=timeout_ms)
