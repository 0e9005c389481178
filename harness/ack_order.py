"""Acknowledgements out of order between topics: a source task's heartbeat records acknowledged a pass before its
data records.

On a real cluster the heartbeat topic and the data topics have leaders of their own, so a heartbeat's
acknowledgement may arrive while the data records handed over with it are still in flight, and an offset commit can
fall in between (KIP-910 sends heartbeats through the same producer as data, with no order across topics). A source
whose heartbeat reports the position of records it has read but not yet handed over loses them when the task dies
right after such a commit; with acknowledgements in topic order the next data record's offset always replaces the
heartbeat's before the commit, and the loss never shows.

:class:`HeartbeatsFirst` wraps the task's producer (in-memory or Kafka alike): every record is sent and stored as
before; only the delivery callbacks of records outside the heartbeat topic are served one ``poll`` later.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from headwater.runtime.transport.base import Acknowledgement, Producer


class _Deferred:
    """An acknowledgement whose calls are queued on :class:`HeartbeatsFirst` instead of made at once."""

    __slots__ = ("ack", "owner")

    def __init__(self, ack: Acknowledgement, owner: HeartbeatsFirst) -> None:
        self.ack = ack
        self.owner = owner

    def __call__(self, error: Any, report: Any, /) -> None:
        self.owner.arrived.append((self.ack, error, report))


class HeartbeatsFirst:
    """A producer whose data records' acknowledgements reach the task one ``poll`` after they arrive, while the
    heartbeat topic's are served at once. ``flush`` (a graceful stop's final commit) serves everything."""

    def __init__(self, producer: Producer, heartbeat_topic: str) -> None:
        self.inner = producer
        """The wrapped producer: a stepped Kafka worker flushes it after each pass, which defers nothing."""
        self.heartbeat_topic = heartbeat_topic
        self.arrived: list[tuple[Acknowledgement, Any, Any]] = []
        """Data acknowledgements that arrived since the last ``poll``: served at the next one."""
        self._due: list[tuple[Acknowledgement, Any, Any]] = []
        self.deferred = 0
        """How many acknowledgements were served late (a test checks that the reordering happened)."""

    def _ack(self, topic: str, ack: Any) -> Any:
        return ack if ack is None or topic == self.heartbeat_topic else _Deferred(ack, self)

    def produce(
        self,
        topic: str,
        value: bytes | None,
        key: bytes | None = None,
        partition: int | None = None,
        timestamp: int | None = None,
        headers: Any = None,
        on_delivery: Any = None,
        ack: Acknowledgement | None = None,
    ) -> None:
        self.inner.produce(
            topic, value, key, partition, timestamp, headers, self._ack(topic, on_delivery), self._ack(topic, ack)
        )

    def produce_all(
        self,
        topic: str,
        values: Sequence[bytes | None],
        keys: Sequence[bytes | None] | None,
        partition: int | None,
        timestamps: Sequence[int | None] | None,
        ack: Acknowledgement,
        start: int = 0,
        headers: Any = None,
    ) -> int:
        return self.inner.produce_all(topic, values, keys, partition, timestamps, self._ack(topic, ack), start, headers)

    def poll(self, timeout_ms: int = 0) -> int:
        """Serve the data acknowledgements held since the last ``poll``, then the producer's own callbacks
        (heartbeats' at once, data's held for the next ``poll``)."""
        due, self._due = self._due, []
        served = self._serve(due) + self.inner.poll(timeout_ms)
        self._due, self.arrived = self.arrived, []
        return served

    def flush(self, timeout_ms: int) -> int:
        remaining = self.inner.flush(timeout_ms)
        due, self._due, self.arrived = self._due + self.arrived, [], []
        self._serve(due)
        return remaining

    def _serve(self, due: list[tuple[Acknowledgement, Any, Any]]) -> int:
        for ack, error, report in due:
            ack(error, report)
        self.deferred += len(due)
        return len(due)

    def delivery_error(self, error: Any, report: Any) -> Any:
        return self.inner.delivery_error(error, report)

    def close(self) -> None:
        self.inner.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def __repr__(self) -> str:
        return f"HeartbeatsFirst({self.inner!r}, held={len(self._due) + len(self.arrived)})"
