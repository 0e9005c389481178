"""The transport interface the task loops run over: a producer, a consumer and an admin client.

Two implementations: ``memory`` (an in-process broker for deterministic tests and the embedded demo) and ``kafka``
(confluent-kafka). The shapes follow confluent-kafka so the Kafka one is a thin adapter. Nothing here
blocks on the clock in the memory implementation; the loops compute their own deadlines.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from headwater.sdk.errors import ConnectError, RetriableError
from headwater.sdk.records import SinkRecord, TopicPartition

RawHeaders = list[tuple[str, bytes | None]]


Message = SinkRecord
"""A record as the broker stores it: ``key``, ``value`` and header values are bytes (or ``None``). It is the same
type as :class:`SinkRecord`, so that with pass-through converters the sink loop hands consumed records to a task
without copying them."""


@dataclass(frozen=True, slots=True)
class RecordMetadata:
    """Where the broker put an acknowledged record."""

    topic: str
    partition: int
    offset: int


DeliveryCallback = Callable[[Exception | None, RecordMetadata | None], None]
"""Called from ``Producer.poll``/``flush`` once per produced record: ``(None, metadata)`` on success,
``(error, None)`` on failure."""


class Acknowledgement(Protocol):
    """A delivery callback that needs to know only whether the broker stored the record. A transport calls it with
    its own error and report types, sparing a conversion per record (librdkafka's ``KafkaError`` and ``Message``
    on Kafka): ``error`` is ``None`` when the record was stored, else an object whose ``str`` says why; ``report``
    is not to be relied on."""

    def __call__(self, error: Any, report: Any, /) -> None: ...


class QueueFullError(RetriableError):
    """The producer's local queue is full: serve delivery callbacks and produce again (Java's ``buffer.memory``
    back-pressure)."""


CommitCallback = Callable[[Exception | None, Mapping[TopicPartition, int]], None]
"""Called from ``Consumer.poll`` when an asynchronous commit completes."""


class RebalanceListener(Protocol):
    """Rebalance callbacks; a consumer calls them only from inside ``Consumer.poll``, on the polling thread."""

    def on_partitions_revoked(self, partitions: Collection[TopicPartition]) -> None: ...

    def on_partitions_assigned(self, partitions: Collection[TopicPartition]) -> None: ...

    def on_partitions_lost(self, partitions: Collection[TopicPartition]) -> None: ...


class Producer(Protocol):
    def produce(
        self,
        topic: str,
        value: bytes | None,
        key: bytes | None = None,
        partition: int | None = None,
        timestamp: int | None = None,
        headers: RawHeaders | None = None,
        on_delivery: DeliveryCallback | None = None,
        ack: Acknowledgement | None = None,
    ) -> None:
        """Queue one record; its delivery is reported to ``ack`` when given, else to ``on_delivery``. Raises
        :class:`QueueFullError` when the local queue stays full for a moment, another :class:`RetriableError` when
        the record cannot be queued now for another reason, :class:`ConnectError` when it never can."""
        ...

    def produce_all(
        self,
        topic: str,
        values: Sequence[bytes | None],
        keys: Sequence[bytes | None] | None,
        partition: int | None,
        timestamps: Sequence[int | None] | None,
        ack: Acknowledgement,
        start: int = 0,
        headers: Sequence[Sequence[tuple[str, bytes | None]] | None] | None = None,
    ) -> int:
        """Queue the records ``values[start:]`` (with their ``keys``, ``timestamps`` and ``headers`` when given;
        ``headers[i]`` is ``None`` or empty for a record without), each reported to ``ack``; return the index of
        the first record not queued because the queue stayed full (``len(values)`` when all were). Raises like
        :meth:`produce` otherwise."""
        ...

    def delivery_error(self, error: Any, report: Any) -> ConnectError:
        """The :class:`ConnectError` (or :class:`RetriableError`) for a failed delivery that an
        :class:`Acknowledgement` of this producer was given ``(error, report)``: why the record was not stored, in
        the words the transport's ``on_delivery`` callbacks get."""
        ...

    def poll(self, timeout_ms: int = 0) -> int:
        """Serve delivery callbacks; return how many were served."""
        ...

    def flush(self, timeout_ms: int) -> int:
        """Wait for every queued record's delivery callback; return how many are still outstanding."""
        ...

    def close(self) -> None: ...


class ProducerFencedError(ConnectError):
    """A newer producer with the same ``transactional.id`` has initialised transactions, so this one is fenced off
    (Java's ``ProducerFencedException``, librdkafka's fatal ``_FENCED``/``PRODUCER_FENCED``): its open transaction
    is aborted and every later call raises this again; close it."""


class TransactionAbortableError(ConnectError):
    """The open transaction cannot commit (a record in it failed, say): abort it, then begin another
    (librdkafka's ``KafkaError.txn_requires_abort()``)."""


class TransactionalProducer(Producer, Protocol):
    """A producer with a ``transactional.id`` (Kafka's transactional producer, KIP-98): what it produces between
    :meth:`begin` and :meth:`commit` reaches ``read_committed`` consumers all at once, or never (:meth:`abort`).
    ``produce`` outside a transaction raises :class:`ConnectError`. Every method raises
    :class:`ProducerFencedError` once a newer producer with the same id has called :meth:`init_transactions`,
    and :class:`RetriableError` when the cluster did not answer in time (call it again)."""

    @property
    def transactional_id(self) -> str: ...

    def init_transactions(self, timeout_ms: int) -> None:
        """Register the id with the cluster, once, before the first :meth:`begin`: this fences every older producer
        with the same id and aborts the transaction it left open."""
        ...

    def begin(self) -> None:
        """Start a transaction (no request to the cluster until the first record)."""
        ...

    def commit(self, timeout_ms: int) -> None:
        """Flush the transaction's records and commit them. Raises :class:`TransactionAbortableError` when it
        cannot commit (then :meth:`abort`), :class:`ProducerFencedError` when fenced."""
        ...

    def abort(self, timeout_ms: int) -> None:
        """Abort the open transaction: its records are never shown to ``read_committed`` consumers."""
        ...


ISOLATION_LEVEL = "isolation.level"
"""The consumer setting saying which records of transactions it reads: :data:`READ_COMMITTED` (librdkafka's
default, followed by both transports) or :data:`READ_UNCOMMITTED` (also records of open and aborted
transactions). Either way a consumer never returns the commit and abort markers, whose offsets it skips."""
READ_COMMITTED = "read_committed"
READ_UNCOMMITTED = "read_uncommitted"


INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state", "__share_group_state"})
"""The broker's own topics, which a pattern subscription never matches (Java's ``exclude.internal.topics``)."""
METADATA_MAX_AGE = "metadata.max.age.ms"
DEFAULT_METADATA_MAX_AGE_MS = 300_000
"""How often a consumer subscribed to a pattern looks for new topics when its ``metadata.max.age.ms`` is not set
(the Java consumer's default)."""


def matching(pattern: re.Pattern[str], topics: Iterable[str]) -> list[str]:
    """The ``topics`` whose whole name matches ``pattern`` (Java's ``Pattern.matches``), sorted, without the broker's
    internal topics."""
    return sorted(name for name in topics if name not in INTERNAL_TOPICS and pattern.fullmatch(name) is not None)


class Consumer(Protocol):
    def subscribe(self, topics: Sequence[str], listener: RebalanceListener) -> None:
        """Join the consumer group for ``topics``; assignment arrives through ``listener`` inside ``poll``."""
        ...

    def subscribe_pattern(self, pattern: re.Pattern[str], listener: RebalanceListener) -> None:
        """Join the consumer group for every topic :func:`matching` ``pattern``, and follow the topics created
        and deleted later: the Kafka consumer looks at the cluster's topics again every ``metadata.max.age.ms``
        of its config (:data:`DEFAULT_METADATA_MAX_AGE_MS` when not set), the in-memory one at every ``poll``
        after a change. Assignment arrives through ``listener`` inside ``poll``, as with :meth:`subscribe`."""
        ...

    def assign(self, partitions: Collection[TopicPartition]) -> None:
        """Manual assignment, no group membership."""
        ...

    def poll(self, max_records: int, timeout_ms: int) -> Sequence[Message]:
        """Fetch up to ``max_records`` from assigned, unpaused partitions. Rebalance and commit callbacks run
        inside this call. The records are the caller's to keep and hand on, read-only."""
        ...

    def assignment(self) -> frozenset[TopicPartition]: ...

    def position(self, partition: TopicPartition) -> int:
        """The offset of the next record this consumer will fetch from ``partition``."""
        ...

    def positions(self) -> Mapping[TopicPartition, int]:
        """:meth:`position` of every assigned partition, in one call."""
        ...

    def high_watermarks(self, partitions: Collection[TopicPartition]) -> dict[TopicPartition, int]:
        """The high watermark of each of ``partitions`` as the consumer last learnt it from a fetch (no request to
        the broker); a partition not fetched from yet is left out, and a closing consumer returns ``{}``. Unlike
        the other methods, safe to call from any thread (the metrics collector computes sink lag with it)."""
        ...

    def seek(self, partition: TopicPartition, offset: int) -> None: ...

    def pause(self, partitions: Collection[TopicPartition]) -> None: ...

    def resume(self, partitions: Collection[TopicPartition]) -> None: ...

    def paused(self) -> frozenset[TopicPartition]: ...

    def commit(
        self,
        offsets: Mapping[TopicPartition, int],
        asynchronous: bool,
        on_complete: CommitCallback | None = None,
    ) -> None:
        """Commit next-offsets-to-consume for the group. Synchronous commits raise on failure; asynchronous ones
        report through ``on_complete`` from a later ``poll``."""
        ...

    def committed(self, partitions: Collection[TopicPartition]) -> dict[TopicPartition, int | None]: ...

    def close(self) -> None:
        """Leave the group without calling the rebalance listener."""
        ...


@dataclass(frozen=True)
class NewTopic:
    """A topic to create: ``partitions`` and ``replication_factor`` may be -1 for the broker's default."""

    name: str
    partitions: int = 1
    replication_factor: int = 1
    config: Mapping[str, str] = field(default_factory=dict)


class Admin(Protocol):
    def create_topics(self, topics: Sequence[NewTopic]) -> None:
        """Create the topics that do not exist yet; existing ones are left as they are. Raises
        :class:`ConnectError` with the cluster's reason when it refuses one (a replication factor over its number of
        brokers, an unknown topic config, no authorization), :class:`RetriableError` when it does not answer."""
        ...

    def list_topics(self) -> dict[str, int]:
        """Topic name -> partition count."""
        ...

    def describe_topics(self, names: Sequence[str]) -> dict[str, int]:
        """Topic name -> partition count, for those of ``names`` that exist (asking for these topics only, and
        never creating one). Raises :class:`RetriableError` when the cluster does not answer in time and
        :class:`ConnectError` when it refuses (not authorized, say)."""
        ...

    def delete_topics(self, names: Sequence[str], wait: bool = True) -> None:
        """Delete the named topics; raises :class:`ConnectError` when the cluster refuses. With ``wait`` false,
        ask and return at once: the outcome is only logged."""
        ...

    def list_group_offsets(self, group_id: str) -> dict[TopicPartition, int]:
        """The offsets committed by the consumer group ``group_id`` (none for a group that does not exist). Raises
        :class:`ConnectError` naming the group when the cluster does not answer."""
        ...

    def alter_group_offsets(self, group_id: str, offsets: Mapping[TopicPartition, int]) -> None:
        """Commit ``offsets`` for the group; raises :class:`ConnectError` with the cluster's reason when it refuses,
        as Kafka does while the group has members."""
        ...

    def delete_group(self, group_id: str) -> None:
        """Delete the group and its committed offsets; a group that does not exist is already deleted. Raises
        :class:`ConnectError` with the cluster's reason when it refuses, as Kafka does while the group has
        members."""
        ...


LogApply = Callable[[bytes | None, bytes | None], None]
"""Called with the key and value of each record a :class:`TopicLog` reads, in the order of its partition; a ``None``
value is a tombstone."""


class Delivery:
    """The outcome of one :meth:`TopicLog.send`, known once :meth:`TopicLog.wait` returns or raises."""

    def __init__(self, key: bytes | None) -> None:
        self.key = key
        self.done = False
        self.error: str | None = None
        self.partition: int | None = None
        self.offset: int | None = None

    def settle(self, error: str | None, partition: int | None = None, offset: int | None = None) -> None:
        """The broker stored the record at ``partition`` and ``offset``, or refused it for ``error``."""
        self.error, self.partition, self.offset = error, partition, offset
        self.done = True

    def __repr__(self) -> str:
        outcome = "pending" if not self.done else self.error or f"partition {self.partition} offset {self.offset}"
        return f"Delivery({record_key(self.key)}: {outcome})"


def raise_failed(deliveries: Sequence[Delivery], topic: str) -> None:
    """Raise :class:`ConnectError` for the first of ``deliveries`` (all done) the broker refused, naming ``topic``,
    the record's key and how many more failed."""
    failed = [delivery for delivery in deliveries if delivery.error is not None]
    if failed:
        more = f" (and {len(failed) - 1} more of {len(deliveries)} records)" if len(failed) > 1 else ""
        raise ConnectError(f"cannot write {record_key(failed[0].key)} to topic {topic!r}: {failed[0].error}{more}")


class TopicLog(Protocol):
    """A compacted topic used as a log of keyed records (Kafka Connect's ``KafkaBasedLog``): the stores' view of
    the worker's state is a fold of it. Safe to use from several threads; ``apply`` runs on the reading thread and
    must not call back into the log. Every call that talks to the cluster is bounded by a timeout (the log's by
    default) and raises :class:`ConnectError` naming the topic."""

    @property
    def topic(self) -> str: ...

    @property
    def where(self) -> str:
        """The cluster, for messages and reprs (its bootstrap servers)."""
        ...

    def start(self) -> None:
        """Create the topic if it is missing (compacted), then hand every record from the beginning to ``apply``, up
        to the last stable offset: a transaction left open (by a worker that died) must not keep a worker from
        starting, and :meth:`read_to_end` reads the rest once it ended."""
        ...

    def stop(self) -> None:
        """Wait (a bounded time) for records still being sent, then close the clients. Idempotent."""
        ...

    def send(self, key: bytes | None, value: bytes | None) -> Delivery:
        """Start writing one record (``value`` ``None``: a tombstone); :meth:`wait` tells how it went."""
        ...

    def wait(self, deliveries: Iterable[Delivery], timeout_ms: int | None = None) -> None:
        """Return once every record was acknowledged; raise when one failed or the timeout passed first."""
        ...

    def send_all(self, records: Iterable[tuple[bytes | None, bytes | None]], timeout_ms: int | None = None) -> None:
        """:meth:`send` each (key, value), then :meth:`wait` for all of them."""
        ...

    def read_to_end(self, timeout_ms: int | None = None) -> None:
        """Hand ``apply`` every record up to the end the topic has now. A log reads committed records only
        (``read_committed``): records of an open transaction wait for its commit, an aborted one's never come. The
        end is the high watermark, not the last stable offset: a record committed after a transaction still open is
        read once that transaction ends, and the read waits for it (Kafka Connect's ``KafkaBasedLog``, KIP-618). It
        never returns short: a :class:`~headwater.sdk.errors.RetriableError` naming the partition says the timeout
        passed first."""
        ...

    def read_to_stable(self, timeout_ms: int | None = None) -> None:
        """Hand ``apply`` every record up to the topic's last stable offset now (what :meth:`start` reads to): never
        waits for an open transaction, so what was committed after one began may still be missing."""
        ...

    def read_available(self, timeout_ms: int = 0) -> int:
        """Hand ``apply`` what has arrived, waiting up to ``timeout_ms`` for something, without asking where the
        topic ends (how a worker follows a log other workers write); return how many records it handed over."""
        ...


class GroupMember(Protocol):
    """Membership of a consumer group that never fetches: the group coordinator hands out the partitions of the
    subscribed topics with cooperative, sticky assignment (a partition is taken from its owner, which must give it
    up, before another member gets it), and the member only reports its decisions to its
    :class:`RebalanceListener`, from inside :meth:`poll` and :meth:`close`. A member that stops polling for the
    group's session timeout loses its partitions to the others (``on_partitions_lost`` once it polls again).
    Not thread-safe: one thread subscribes, polls and closes."""

    def subscribe(self, topics: Sequence[str]) -> None:
        """Own partitions of ``topics`` from now on (an empty list leaves them all at the next :meth:`poll`)."""
        ...

    def poll(self, timeout_ms: int) -> None:
        """Serve the group, running the listener for what it decided, waiting up to ``timeout_ms``. Raises
        :class:`MissingTopicError` when a subscribed topic does not exist (its partitions cannot be handed out)
        and :class:`ConnectError` when membership failed for good."""
        ...

    def close(self) -> None:
        """Give up every partition (``on_partitions_revoked`` first) and leave the group. Idempotent."""
        ...


class MissingTopicError(RetriableError):
    """A topic a :class:`GroupMember` subscribes to does not exist (deleted while still wanted, say)."""


class Transport(Protocol):
    """Makes clients for one cluster."""

    def producer(self, config: Mapping[str, Any]) -> Producer: ...

    def transactional_producer(self, transactional_id: str, config: Mapping[str, Any]) -> TransactionalProducer:
        """A producer with ``transactional.id`` ``transactional_id``; call its ``init_transactions`` first."""
        ...

    def consumer(self, group_id: str | None, config: Mapping[str, Any]) -> Consumer: ...

    def admin(self) -> Admin: ...

    def topic_log(
        self,
        topic: str,
        apply: LogApply,
        *,
        partitions: int = 1,
        replication_factor: int = 1,
        exact_partitions: bool = False,
        topic_config: Mapping[str, str] | None = None,
        timeout_ms: int = 30_000,
    ) -> TopicLog:
        """A log of ``topic``, not started: ``partitions`` and ``replication_factor`` are used when it has to be
        created (always with ``cleanup.policy=compact`` and ``topic_config``); with ``exact_partitions`` an
        existing topic with another partition count is refused; ``timeout_ms`` bounds its calls."""
        ...

    def group_member(self, group_id: str, config: Mapping[str, Any], listener: RebalanceListener) -> GroupMember:
        """A member of ``group_id``; ``config`` holds the client settings of its membership (``session.timeout.ms``,
        ``heartbeat.interval.ms``, ``max.poll.interval.ms``)."""
        ...


def record_key(key: bytes | None) -> str:
    """A record key for messages: the text of a UTF-8 key, cut short."""
    text = "null" if key is None else key.decode("utf-8", "replace")
    return repr(text if len(text) <= 120 else text[:117] + "...")
