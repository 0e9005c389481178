"""Stores kept in a compacted topic (Kafka Connect's ``KafkaBasedLog`` users): where a store's topic log is made,
once for the offset, config and status stores. The log comes from the transport, so the same store runs on a Kafka
cluster and on the in-memory broker."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from headwater.runtime.storage.record_store import Record, RecordStore, V
from headwater.runtime.transport.base import LogApply, TopicLog, Transport
from headwater.runtime.transport.kafka import KafkaTransport

Cluster = str | Transport
"""Where a store's topic lives: a transport, or the bootstrap servers of a Kafka cluster."""


@dataclasses.dataclass(frozen=True)
class TopicSettings:
    """A store's topic: where it is, and what it is created with when missing. ``client_config`` holds the
    librdkafka settings every client shares (for bootstrap servers); ``timeout_ms`` bounds the log's start, its
    writes and its reads to the end; ``exact_partitions`` refuses an existing topic of another partition count."""

    cluster: Cluster
    topic: str
    partitions: int
    replication_factor: int = 1
    client_config: Mapping[str, Any] | None = None
    timeout_ms: int = 30_000
    exact_partitions: bool = False

    def log(self, apply: LogApply) -> TopicLog:
        """The topic's log, not started; each record read goes to ``apply``."""
        cluster = self.cluster
        transport = KafkaTransport(cluster, self.client_config) if isinstance(cluster, str) else cluster
        return transport.topic_log(
            self.topic,
            apply,
            partitions=self.partitions,
            replication_factor=self.replication_factor,
            exact_partitions=self.exact_partitions,
            timeout_ms=self.timeout_ms,
        )

    def for_topic(self, topic: str) -> TopicSettings:
        """The same settings for another topic on the same cluster."""
        return dataclasses.replace(self, topic=topic)


class LogBackedStore(RecordStore[V]):
    """A record store whose records go to :attr:`log` and come back through it, so the view holds only what the
    topic holds: the config and status stores on Kafka. Listed before the store kind's base class, whose
    ``start``/``stop``/``_write``/``_refresh`` it replaces. Kinds set :attr:`PARTITIONS` (the default partition
    count) and :attr:`EXACT_PARTITIONS`."""

    PARTITIONS: ClassVar[int] = 1
    EXACT_PARTITIONS: ClassVar[bool] = False

    def __init__(
        self,
        cluster: Cluster,
        topic: str,
        partitions: int | None = None,
        replication_factor: int = 1,
        client_config: Mapping[str, Any] | None = None,
        *,
        timeout_ms: int = 30_000,
    ) -> None:
        super().__init__()
        count = self.PARTITIONS if partitions is None else partitions
        settings = TopicSettings(
            cluster, topic, count, replication_factor, client_config, timeout_ms, self.EXACT_PARTITIONS
        )
        self.log = settings.log(self._apply)

    def start(self) -> None:
        self.log.start()

    def stop(self) -> None:
        self.log.stop()

    def refresh(self, timeout_ms: int | None = None) -> None:
        """Read what other writers stored since the last read; raises ConnectError on timeout."""
        self.log.read_to_end(timeout_ms)

    def _refresh(self) -> None:
        self.refresh()

    def _write(self, records: Sequence[Record]) -> None:
        """Wait until every record is acknowledged, then read the topic to its end, as Connect's writers do."""
        self.log.send_all(records)
        self.log.read_to_end()

    def _where(self) -> str:
        return f"{self.log.topic!r} at {self.log.where}, "
