"""Stores whose state is a fold of a compacted topic (Kafka Connect's ``KafkaBasedLog`` users): the log comes from
the transport, so the same store runs on a Kafka cluster and on the in-memory broker."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from headwater.runtime.transport.base import LogApply, TopicLog, Transport
from headwater.runtime.transport.kafka import KafkaTransport

Cluster = str | Transport
"""Where a store's topic lives: a transport, or the bootstrap servers of a Kafka cluster."""


def topic_log(
    cluster: Cluster, client_config: Mapping[str, Any] | None, topic: str, apply: LogApply, **options: Any
) -> TopicLog:
    """The log of ``topic`` on ``cluster`` (bootstrap servers get a Kafka transport with ``client_config``, the
    librdkafka settings every client shares); ``options`` are :meth:`Transport.topic_log`'s."""
    transport = KafkaTransport(cluster, client_config) if isinstance(cluster, str) else cluster
    return transport.topic_log(topic, apply, **options)


class LogBackedStore:
    """The log side of a store whose state is a view of records (the config and status stores): the records go
    to :attr:`log` and come back through it, so the view holds only what the topic holds. Listed before the store
    base class, whose ``start``/``stop``/``_write``/``_refresh`` it replaces."""

    log: TopicLog

    def start(self) -> None:
        self.log.start()

    def stop(self) -> None:
        self.log.stop()

    def refresh(self, timeout_ms: int | None = None) -> None:
        """Read what other writers stored since the last read; raises ConnectError on timeout."""
        self.log.read_to_end(timeout_ms)

    def _refresh(self) -> None:
        self.refresh()

    def _write(self, records: Sequence[tuple[bytes | None, bytes | None]]) -> None:
        """Wait until every record is acknowledged, then read the topic to its end, as Connect's writers do."""
        self.log.send_all(records)
        self.log.read_to_end()
