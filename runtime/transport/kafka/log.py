"""The Kafka transport's :class:`~headwater.runtime.transport.base.TopicLog`: a compacted Kafka topic used as a log
of keyed records, like Kafka Connect's ``KafkaBasedLog``.

The Kafka stores (offsets, configs, statuses) keep their view of the worker's state as a fold of such a topic:
:meth:`KafkaBasedLog.start` creates the topic when missing and hands every record from the beginning to a callback,
:meth:`KafkaBasedLog.read_to_end` hands over what was written since, up to the end the topic had when it was
called. Writes are acknowledged by all in-sync replicas (``acks=all``, idempotent producer, ``murmur2_random``
partitioner so keys land on the partition Java clients choose).

There is no background reader thread: a log sees other writers' records when it reads to its end, or when its owner
calls :meth:`KafkaBasedLog.read_available` (a distributed worker does, at each pass of its loop), and not before.
Every call that talks to the broker is bounded by a timeout and raises :class:`ConnectError` naming the topic.

It reads committed records only (``isolation.level=read_committed``), as Kafka Connect's offsets store does with
exactly-once source support: offsets a task writes in a transaction are read back once the transaction commits,
never when it aborts. The end :meth:`KafkaBasedLog.read_to_end` reads to is the high watermark, not the last stable
offset (Kafka Connect's ``TopicAdmin.endOffsets`` lists it ``read_uncommitted`` since KIP-618): a record committed
after another producer's transaction that is still open lies beyond the last stable offset, so reading to that
would miss it (a starting task would read its own committed offsets stale while a sibling task has a transaction
open on the same offsets partition). The read waits for such a transaction to end instead, and its timeout says so.
:meth:`KafkaBasedLog.start` reads to the last stable offset only, so that a transaction a dead worker left open
does not keep the next worker from starting.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

from confluent_kafka import (
    Consumer,
    IsolationLevel,
    KafkaError,
    KafkaException,
    Message,
    Producer,
    TopicCollection,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient, NewTopic, OffsetSpec

from headwater.runtime.transport.base import Delivery, LogApply, raise_failed, record_key
from headwater.runtime.transport.kafka.logger import with_logger
from headwater.sdk.errors import ConnectError, RetriableError

log = logging.getLogger(__name__)

PRODUCER_DEFAULTS: dict[str, Any] = {"linger.ms": 0}
CONSUMER_DEFAULTS: dict[str, Any] = {"fetch.wait.max.ms": 100, "fetch.error.backoff.ms": 20}
"""Short waits: a partition whose fetch failed (a new topic's, before its leader is ready) is fetched again with
the next fetch request, which an idle consumer sends every ``fetch.wait.max.ms``."""
_PRODUCER_REQUIRED = {"acks": "all", "enable.idempotence": True, "partitioner": "murmur2_random"}
_CONSUMER_REQUIRED = {
    "enable.auto.commit": False,
    "enable.partition.eof": True,
    "auto.offset.reset": "earliest",
    "isolation.level": "read_committed",
}
_POLL_S = 0.01
_RETRY_S = 0.05
_NOT_READY = frozenset(
    {
        KafkaError._NOENT,  # "No leaders found" while librdkafka has no metadata for the new topic yet
        KafkaError.UNKNOWN_TOPIC_OR_PART,
        KafkaError.LEADER_NOT_AVAILABLE,
        KafkaError.NOT_LEADER_FOR_PARTITION,
        # a broker whose metadata lags the new topic's leader epoch, or a client whose metadata is stale: retriable
        # in Kafka's own clients (UnknownLeaderEpochException, FencedLeaderEpochException)
        KafkaError.UNKNOWN_LEADER_EPOCH,
        KafkaError.FENCED_LEADER_EPOCH,
    }
)
"""Errors of a topic just created whose partitions have no leader yet."""
_Client = TypeVar("_Client")


class KafkaBasedLog:
    """One compacted topic: read from the beginning by :meth:`start`, caught up by :meth:`read_to_end`, written by
    :meth:`send`. ``apply`` gets every record read; it runs on the reading thread with the read lock held, so it
    must not call back into the log. Safe to use from several threads.

    ``partitions`` and ``replication_factor`` are used when the topic has to be created (always with
    ``cleanup.policy=compact``, plus ``topic_config``); with ``exact_partitions`` an existing topic with another
    partition count is refused. ``client_config`` holds librdkafka settings shared by the producer, consumer and
    admin client (security, for instance); ``timeout_ms`` bounds :meth:`start` and is the default of the other
    calls.
    """

    def __init__(
        self,
        bootstrap_servers: str,
        topic: str,
        apply: LogApply,
        *,
        partitions: int = 1,
        replication_factor: int = 1,
        exact_partitions: bool = False,
        topic_config: Mapping[str, str] | None = None,
        client_config: Mapping[str, Any] | None = None,
        timeout_ms: int = 30_000,
    ) -> None:
        if partitions < 1 or replication_factor < 1:
            raise ValueError(f"topic {topic!r} needs partitions >= 1 and replication_factor >= 1")
        self.bootstrap_servers = bootstrap_servers
        self.topic = topic
        self.partitions = partitions
        self.replication_factor = replication_factor
        self.exact_partitions = exact_partitions
        self.topic_config = {**(topic_config or {}), "cleanup.policy": "compact"}
        self.timeout_ms = timeout_ms
        self._apply = apply
        self._client_config = with_logger({**(client_config or {}), "bootstrap.servers": bootstrap_servers})
        self._read_lock = threading.Lock()
        self._admin: AdminClient | None = None
        self._producer: Producer | None = None
        self._consumer: Consumer | None = None
        self._positions: dict[int, int] = {}

    @property
    def where(self) -> str:
        return self.bootstrap_servers

    # ---- lifecycle -------------------------------------------------------------------------------------------

    def start(self) -> None:
        """Create the topic if it is missing, then read it from the beginning to its end. On failure the clients
        made so far are closed again."""
        if self._consumer is not None:
            raise ConnectError(f"the log of topic {self.topic!r} is started already")
        deadline = time.monotonic() + self.timeout_ms / 1000
        try:
            self._admin = AdminClient(dict(self._client_config))
            count = self._ensure_topic(self._admin, deadline)
            self._producer = Producer({**PRODUCER_DEFAULTS, **self._client_config, **_PRODUCER_REQUIRED})
            group = {"group.id": f"headwater-log-{self.topic}"}  # required by the client, never joined
            self._consumer = Consumer({**CONSUMER_DEFAULTS, **group, **self._client_config, **_CONSUMER_REQUIRED})
            # offset 0 rather than OFFSET_BEGINNING: no offset lookup, which waits for the leader of a new topic
            self._consumer.assign([TopicPartition(self.topic, p, 0) for p in range(count)])
            self._positions = dict.fromkeys(range(count), 0)
            self.read_to_stable(max(0, int((deadline - time.monotonic()) * 1000)))
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        """Wait (a bounded time) for records still being sent, then close the clients. Idempotent."""
        producer, consumer = self._producer, self._consumer
        self._producer = self._consumer = self._admin = None
        if producer is not None:
            left = producer.flush(min(self.timeout_ms, 5_000) / 1000)
            if left:
                log.warning("closing the log of topic %s with %d records not acknowledged", self.topic, left)
        if consumer is not None:
            with self._read_lock:
                consumer.close()

    # ---- writing ---------------------------------------------------------------------------------------------

    def send(self, key: bytes | None, value: bytes | None) -> Delivery:
        """Start writing one record (``value`` ``None``: a tombstone); :meth:`wait` tells how it went."""
        producer = self._require(self._producer)
        delivery = Delivery(key)
        try:
            producer.produce(self.topic, value, key, on_delivery=_settle(delivery))
        except BufferError:
            raise ConnectError(
                f"cannot write {record_key(key)} to topic {self.topic!r}: the producer queue is full"
            ) from None
        except KafkaException as error:
            raise ConnectError(
                f"cannot write {record_key(key)} to topic {self.topic!r}: {error.args[0].str()}"
            ) from None
        return delivery

    def wait(self, deliveries: Iterable[Delivery], timeout_ms: int | None = None) -> None:
        """Return once every record was acknowledged; raise ConnectError naming the topic when one failed or the
        timeout (default: the log's) passed first."""
        producer = self._require(self._producer)
        pending = list(deliveries)
        timeout_ms = self.timeout_ms if timeout_ms is None else timeout_ms
        deadline = time.monotonic() + timeout_ms / 1000
        while not all(delivery.done for delivery in pending):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                waiting = [delivery for delivery in pending if not delivery.done]
                raise ConnectError(
                    f"timed out after {timeout_ms} ms waiting for Kafka at {self.bootstrap_servers} to acknowledge "
                    f"{len(waiting)} of {len(pending)} records written to topic {self.topic!r}, "
                    f"{record_key(waiting[0].key)} first"
                )
            producer.poll(min(remaining, _POLL_S))
        raise_failed(pending, self.topic)

    def send_all(self, records: Iterable[tuple[bytes | None, bytes | None]], timeout_ms: int | None = None) -> None:
        """:meth:`send` each (key, value) then :meth:`wait` for all of them."""
        self.wait([self.send(key, value) for key, value in records], timeout_ms)

    # ---- reading ---------------------------------------------------------------------------------------------

    def read_to_end(self, timeout_ms: int | None = None) -> None:
        """Hand every record up to the end the topic has now (its high watermark) to ``apply``, waiting for the
        transactions open below it to end; raise :class:`RetriableError` if that takes longer than the timeout
        (default: the log's), naming the partitions an open transaction holds back."""
        self._read_to_end(self.timeout_ms if timeout_ms is None else timeout_ms, IsolationLevel.READ_UNCOMMITTED)

    def read_to_stable(self, timeout_ms: int | None = None) -> None:
        """Hand every record up to the last stable offset to ``apply``, not waiting for open transactions."""
        self._read_to_end(self.timeout_ms if timeout_ms is None else timeout_ms, IsolationLevel.READ_COMMITTED)

    def _read_to_end(self, timeout_ms: int, isolation: IsolationLevel) -> None:
        """Read to the high watermark (``READ_UNCOMMITTED``) or to the last stable offset (``READ_COMMITTED``)."""
        deadline = time.monotonic() + timeout_ms / 1000
        with self._read_lock:
            consumer = self._require(self._consumer)
            ends = self._end_offsets(deadline, timeout_ms, isolation)
            positions = self._positions
            behind = {p for p, end in ends.items() if positions[p] < end}
            while behind:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise RetriableError(
                        f"timed out after {timeout_ms} ms reading topic {self.topic!r} ({self._lag(behind, ends)})"
                    )
                messages = consumer.consume(500, 0)  # what is fetched already; never waits for a full batch
                if not messages:
                    message = consumer.poll(min(remaining, 0.1))
                    messages = [] if message is None else [message]
                for message in messages:
                    self._consume(message)
                behind = {p for p in behind if positions[p] < ends[p]}

    def _lag(self, behind: set[int], ends: dict[int, int]) -> str:
        """Where each partition ``behind`` is, and whether an open transaction holds it back."""
        try:
            stable = self._end_offsets(time.monotonic() + 1, 1000, IsolationLevel.READ_COMMITTED)
        except ConnectError:
            stable = {}
        found = []
        for p in sorted(behind):
            at = f"partition {p} at {self._positions[p]} of {ends[p]}"
            if stable.get(p, ends[p]) < ends[p]:
                at += f": an open transaction holds its last stable offset at {stable[p]}"
            found.append(at)
        return ", ".join(found)

    def read_available(self, timeout_ms: int = 0) -> int:
        """Hand ``apply`` what has arrived, waiting up to ``timeout_ms`` for something (writers wait meanwhile),
        without asking where the topic ends: how a worker follows a log other workers write. Returns how many
        records were handed over."""
        with self._read_lock:
            consumer = self._require(self._consumer)
            messages = consumer.consume(500, timeout_ms / 1000)
            for message in messages:
                self._consume(message)
            return sum(1 for message in messages if message.error() is None)

    def _consume(self, message: Message) -> None:
        error = message.error()
        if error is not None and error.code() != KafkaError._PARTITION_EOF:
            if error.fatal() or not error.retriable():
                raise ConnectError(f"cannot read topic {self.topic!r}: {error.name()}: {error.str()}")
            log.warning("reading topic %s, retrying after: %s", self.topic, error.str())
            return
        partition, offset = message.partition(), message.offset()
        if partition is None or offset is None:  # never for a record or an end of partition
            return
        if error is None:
            self._positions[partition] = offset + 1
            self._apply(message.key(), message.value())
        else:  # the end of the partition: offset is where the next record will be
            self._positions[partition] = max(self._positions[partition], offset)

    def _end_offsets(self, deadline: float, timeout_ms: int, isolation: IsolationLevel) -> dict[int, int]:
        """The offset after the last record of each partition (the high watermark; with ``READ_COMMITTED`` the last
        stable offset), retried while a new topic gets its leaders."""
        admin = self._require(self._admin)
        admin.poll(0)  # serves the client's log lines
        latest = {TopicPartition(self.topic, p): OffsetSpec.latest() for p in self._positions}  # type: ignore[no-untyped-call]
        while True:
            remaining = max(deadline - time.monotonic(), 0.001)
            try:
                futures = admin.list_offsets(latest, request_timeout=remaining, isolation_level=isolation)
                return {tp.partition: future.result(timeout=remaining + 1).offset for tp, future in futures.items()}
            except KafkaException as exception:
                error = exception.args[0]
                if error.code() in _NOT_READY and time.monotonic() + _RETRY_S < deadline:
                    time.sleep(_RETRY_S)
                    continue
                raise ConnectError(
                    f"cannot find the end of topic {self.topic!r} at {self.bootstrap_servers} within {timeout_ms} "
                    f"ms: {error.str()}"
                ) from None
            except TimeoutError:
                raise ConnectError(
                    f"timed out after {timeout_ms} ms finding the end of topic {self.topic!r} at "
                    f"{self.bootstrap_servers}"
                ) from None

    # ---- the topic -------------------------------------------------------------------------------------------

    def _ensure_topic(self, admin: AdminClient, deadline: float) -> int:
        """The topic's partition count, once it exists."""
        count = self._partition_count(admin, deadline)
        if count is None:
            if self._create_topic(admin, deadline):
                return self.partitions
            count = self._partition_count(admin, deadline)  # created meanwhile by another worker
            if count is None:
                raise ConnectError(f"topic {self.topic!r} exists but {self._where} does not describe it")
        if self.exact_partitions and count != self.partitions:
            raise ConnectError(f"topic {self.topic!r} must have exactly {self.partitions} partition(s) but has {count}")
        return count

    def _partition_count(self, admin: AdminClient, deadline: float) -> int | None:
        """The topic's partition count, or ``None`` when it does not exist (never auto-created by asking)."""
        remaining = max(deadline - time.monotonic(), 0.001)
        try:
            future = admin.describe_topics(TopicCollection([self.topic]), request_timeout=remaining)[self.topic]
            return len(future.result(timeout=remaining + 1).partitions)
        except KafkaException as exception:
            error = exception.args[0]
            if error.code() == KafkaError.UNKNOWN_TOPIC_OR_PART:
                return None
            if error.code() in (KafkaError._TIMED_OUT, KafkaError._TRANSPORT):
                raise ConnectError(f"cannot reach {self._where} within {self.timeout_ms} ms: {error.str()}") from None
            raise ConnectError(f"cannot use {self._where}: {error.str()}") from None
        except TimeoutError:
            raise ConnectError(f"cannot reach {self._where} within {self.timeout_ms} ms") from None

    def _create_topic(self, admin: AdminClient, deadline: float) -> bool:
        """Create the topic; ``False`` when it exists already."""
        remaining = max(deadline - time.monotonic(), 0.001)
        new = NewTopic(self.topic, self.partitions, self.replication_factor, config=self.topic_config)
        try:
            future = admin.create_topics([new], operation_timeout=remaining, request_timeout=remaining)[self.topic]
            future.result(timeout=remaining + 1)
        except KafkaException as error:
            if error.args[0].code() == KafkaError.TOPIC_ALREADY_EXISTS:
                return False
            raise ConnectError(f"cannot create {self._where}: {error.args[0].str()}") from None
        except TimeoutError:
            raise ConnectError(f"timed out after {self.timeout_ms} ms creating {self._where}") from None
        log.info("created topic %s (%d partitions, compacted)", self.topic, self.partitions)
        return True

    @property
    def _where(self) -> str:
        return f"Kafka at {self.bootstrap_servers} (topic {self.topic!r})"

    def _require(self, client: _Client | None) -> _Client:
        if client is None:
            raise ConnectError(f"the log of topic {self.topic!r} is not started")
        return client

    def __repr__(self) -> str:
        state = "started" if self._consumer is not None else "stopped"
        positions = ", ".join(f"{p}:{offset}" for p, offset in sorted(self._positions.items()))
        return f"KafkaBasedLog({self.topic!r} at {self.bootstrap_servers}, {state}, read to {{{positions}}})"


def _settle(delivery: Delivery) -> Callable[[KafkaError | None, Message], None]:
    def settled(error: KafkaError | None, message: Message) -> None:
        if error is not None:
            delivery.settle(f"{error.name()}: {error.str()}")
        else:
            delivery.settle(None, message.partition(), message.offset())

    return settled
