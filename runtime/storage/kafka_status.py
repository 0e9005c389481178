"""Connector and task statuses in a Kafka topic, in the records of Kafka Connect's status topic (see
:mod:`headwater.runtime.storage.status`), so Java workers and this store read each other's statuses.

Records are partitioned by murmur2 of their key, as Java's producer does. The store's view is what it read from
the topic, at :meth:`KafkaStatusStore.start`, after each of its writes (which wait until their records are
acknowledged, then read the topic to its end) and at :meth:`KafkaStatusStore.refresh`; the reads answer from that
view without asking the broker.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from headwater.runtime.storage.log_backed import Cluster, LogBackedStore, topic_log
from headwater.runtime.storage.status import _RecordStatusStore


class KafkaStatusStore(LogBackedStore, _RecordStatusStore):
    """Statuses in the compacted topic ``topic`` (created with ``partitions`` and ``replication_factor`` when
    missing). ``client_config`` holds librdkafka settings for every client; ``timeout_ms`` bounds :meth:`start`,
    each write and :meth:`refresh`."""

    def __init__(
        self,
        cluster: Cluster,
        topic: str,
        partitions: int = 5,
        replication_factor: int = 1,
        client_config: Mapping[str, Any] | None = None,
        *,
        timeout_ms: int = 30_000,
    ) -> None:
        super().__init__()
        self.log = topic_log(
            cluster,
            client_config,
            topic,
            self._apply,
            partitions=partitions,
            replication_factor=replication_factor,
            timeout_ms=timeout_ms,
        )

    def __repr__(self) -> str:
        with self._lock:
            return f"KafkaStatusStore({self.log.topic!r} at {self.log.where}, {self._view.describe()})"
