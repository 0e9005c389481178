"""The in-memory transport's :class:`~headwater.runtime.transport.base.TopicLog`: a compacted topic of the in-memory
broker read as a log of keyed records, so the Kafka stores (and with them a distributed worker) run in memory, on
the virtual clock.

Records are written through a :class:`~headwater.runtime.transport.memory.producer.MemoryProducer`, so they land
on the partition murmur2 of their key picks and the broker refuses what Kafka refuses (a record without a key on a
compacted topic, say). Nothing waits: a record not acknowledged once the producer is flushed (the broker holds
acks, or fails them) is reported at once, as a timeout or the broker's error.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping

from headwater.runtime.transport.base import Delivery, LogApply, Message, RecordMetadata, raise_failed, record_key
from headwater.runtime.transport.memory.producer import MemoryProducer
from headwater.runtime.transport.memory.state import BrokerState
from headwater.sdk.errors import ConnectError, RetriableError
from headwater.sdk.records import TopicPartition


def skipping(log: list[Message], start: int, end: int, hidden: set[int]) -> list[Message]:
    """The records of ``log[start:end]`` whose offsets are not ``hidden``."""
    return [message for message in log[start:end] if message.offset not in hidden]


class MemoryLog:
    """One compacted topic of the in-memory broker whose ``state`` it takes (see :meth:`Transport.topic_log` for the
    other arguments)."""

    where = "memory"

    def __init__(
        self,
        state: BrokerState,
        topic: str,
        apply: LogApply,
        *,
        partitions: int = 1,
        replication_factor: int = 1,
        exact_partitions: bool = False,
        topic_config: Mapping[str, str] | None = None,
        timeout_ms: int = 30_000,
    ) -> None:
        if partitions < 1 or replication_factor < 1:
            raise ValueError(f"topic {topic!r} needs partitions >= 1 and replication_factor >= 1")
        self.state = state
        self.topic = topic
        self.partitions = partitions
        self.exact_partitions = exact_partitions
        self.topic_config = {**(topic_config or {}), "cleanup.policy": "compact"}
        self.timeout_ms = timeout_ms
        self._apply = apply
        self._read_lock = threading.Lock()
        self._producer: MemoryProducer | None = None
        self._positions: dict[int, int] = {}

    def start(self) -> None:
        if self._producer is not None:
            raise ConnectError(f"the log of topic {self.topic!r} is started already")
        with self.state.lock:
            count = self.state.topics().get(self.topic)
            if count is None:
                self.state.create_topic(self.topic, self.partitions, self.topic_config)
                count = self.partitions
        if self.exact_partitions and count != self.partitions:
            raise ConnectError(f"topic {self.topic!r} must have exactly {self.partitions} partition(s) but has {count}")
        self._positions = dict.fromkeys(range(count), 0)
        self._producer = MemoryProducer(self.state, {})
        self.read_to_stable()

    def stop(self) -> None:
        producer, self._producer = self._producer, None
        if producer is not None:
            producer.flush(0)
            producer.close()

    def send(self, key: bytes | None, value: bytes | None) -> Delivery:
        producer = self._require()
        delivery = Delivery(key)

        def settled(error: Exception | None, metadata: RecordMetadata | None) -> None:
            if error is not None or metadata is None:
                delivery.settle(str(error))
            else:
                delivery.settle(None, metadata.partition, metadata.offset)

        try:
            producer.produce(self.topic, value, key, on_delivery=settled)
        except ConnectError as error:
            raise ConnectError(f"cannot write {record_key(key)} to topic {self.topic!r}: {error}") from None
        return delivery

    def wait(self, deliveries: Iterable[Delivery], timeout_ms: int | None = None) -> None:
        pending = list(deliveries)
        self._require().flush(0)
        waiting = [delivery for delivery in pending if not delivery.done]
        if waiting:
            raise ConnectError(
                f"timed out waiting for the broker to acknowledge {len(waiting)} of {len(pending)} records written "
                f"to topic {self.topic!r}, {record_key(waiting[0].key)} first"
            )
        raise_failed(pending, self.topic)

    def send_all(self, records: Iterable[tuple[bytes | None, bytes | None]], timeout_ms: int | None = None) -> None:
        self.wait([self.send(key, value) for key, value in records], timeout_ms)

    def read_to_end(self, timeout_ms: int | None = None) -> None:
        """As on Kafka, but nothing waits. The broker knows which records beyond the last stable offset belong to the
        transactions still open: when all do, a read to it holds every record committed so far and is whole (a read
        on Kafka would wait for them, and hold at least as much); a record committed after an open transaction
        began fails the read at once, as if the timeout had passed, naming the partition and the transaction."""
        self._require()
        with self.state.lock:
            transactions = self.state.transactions
            held = []
            for partition in self._positions:
                tp = TopicPartition(self.topic, partition)
                found = transactions.holding(tp, len(self.state.partition_log(tp)))
                if found is not None:
                    held.append((partition, *found))
        self.read_available()
        if held:
            partition, holder, offset = held[0]
            raise RetriableError(
                f"cannot read topic {self.topic!r} to its end: partition {partition} at {self._positions[partition]}: "
                f"the open transaction of {holder!r} holds back the record at offset {offset}, committed after it "
                "began (its last stable offset)"
            )

    def read_to_stable(self, timeout_ms: int | None = None) -> None:
        self.read_available()

    def read_available(self, timeout_ms: int = 0) -> int:
        """Hand ``apply`` every record written since the last read (outside the broker's lock), as a
        ``read_committed`` consumer reads them; return how many."""
        self._require()
        with self._read_lock:
            with self.state.lock:
                new = []
                transactions = self.state.transactions
                for partition, position in self._positions.items():
                    tp = TopicPartition(self.topic, partition)
                    log = self.state.log(tp)
                    if log is None:
                        raise ConnectError(f"cannot read topic {self.topic!r}: it was deleted")
                    end = transactions.stable_end(tp, len(log))
                    hidden = transactions.hidden(tp, committed_only=True)
                    new.extend(log[position:end] if hidden is None else skipping(log, position, end, hidden))
                    self._positions[partition] = end
            for message in new:
                self._apply(message.key, message.value)
            return len(new)

    def _require(self) -> MemoryProducer:
        if self._producer is None:
            raise ConnectError(f"the log of topic {self.topic!r} is not started")
        return self._producer

    def __repr__(self) -> str:
        state = "started" if self._producer is not None else "stopped"
        positions = ", ".join(f"{p}:{offset}" for p, offset in sorted(self._positions.items()))
        return f"MemoryLog({self.topic!r}, {state}, read to {{{positions}}})"
