"""Kill points: a worker of a :class:`~headwater.harness.simulated_cluster.SimulatedCluster` dies at a call of one of
its transactional producers; and a journal of every transaction those producers ran.

With exactly-once source support (KIP-618) what Kafka keeps of a source task is decided by the calls of its
transactional producer alone (Kafka's ``KafkaProducer``: ``initTransactions``, ``beginTransaction``, ``send``,
``commitTransaction``; KIP-98), so a crash between any two of them is a crash at any point. A
:class:`KillingTransport` wraps a worker's transport; each call of its transactional producers is a kill point, and
when the :class:`KillPlan` picks one, the worker dies right there
(:class:`~headwater.harness.simulated_cluster.WorkerDied`). The kinds of point:

- ``start``: as ``init_transactions`` is called: a task starting where another worker ran it, or the connector's
  owner fencing the earlier generation of its tasks: in the rebalance after a death;
- ``mid-transaction``: right after a data record went into the open transaction (a batch cut short, or a
  transaction of several batches);
- ``before commit``: the transaction holds data records and their source offsets, and is not committed;
- ``after commit``: ``commit`` of a transaction with data records returned, and the task never learned it.

Transactions of heartbeat records alone are no kill points: a death there shows nothing a death around data does
not. A plan is drawn from a seed (:meth:`KillPlan.drawn`), so a run that fails runs again the same way.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from headwater.harness.simulated_cluster import WorkerDied
from headwater.runtime.clock import VirtualClock
from headwater.runtime.storage.offsets import parse_offset_key
from headwater.runtime.transport.base import (
    Acknowledgement,
    Admin,
    Consumer,
    DeliveryCallback,
    GroupMember,
    LogApply,
    Producer,
    RawHeaders,
    RebalanceListener,
    TopicLog,
    TransactionalProducer,
)
from headwater.runtime.transport.memory import MemoryBroker, MemoryTransport

START, MID, BEFORE_COMMIT, AFTER_COMMIT = "start", "mid-transaction", "before commit", "after commit"
KINDS = (START, MID, BEFORE_COMMIT, AFTER_COMMIT)
PATIENCE_MS = 3_000
"""How long a planned death waits for a point of its kind once armed; then the next one is armed."""


def plural(count: int, noun: str) -> str:
    """``1 record``, ``2 records``."""
    return f"{count} {noun}{'' if count == 1 else 's'}"


@dataclass
class Transaction:
    """One transaction of a transactional producer, as the journal saw it."""

    transactional_id: str
    epoch: int
    """Which producer of the id ran it: 1 for the first to initialise, 2 for the one that fenced it, and so on
    (Kafka's producer epoch, counted from 1)."""
    worker: str
    number: int
    """1 for the producer's first transaction."""
    began_ms: int
    records: list[tuple[str, bytes | None]] = field(default_factory=list)
    """(topic, value) of each record it holds, offsets topic aside, in order."""
    data: int = 0
    """How many of its records are data records (not heartbeats)."""
    offsets: list[tuple[str, str]] = field(default_factory=list)
    """(source partition, source offset) as compact JSON, of each offset it holds."""
    outcome: str = "open"
    """open, committed or aborted (by the task, or by a newer producer of the id)."""
    ended_ms: int | None = None

    def __str__(self) -> str:
        offsets = ", ".join(f"{p} -> {o}" for p, o in self.offsets) or "no offsets"
        ended = "" if self.ended_ms is None else f" at {self.ended_ms} ms"
        return (
            f"transaction {self.number} of {self.transactional_id} epoch {self.epoch} (on {self.worker}), began at "
            f"{self.began_ms} ms, {self.outcome}{ended}: {plural(self.data, 'data record')}, {offsets}"
        )


@dataclass(frozen=True)
class Death:
    """A worker died at a kill point."""

    at_ms: int
    worker: str
    kind: str
    detail: str

    def __str__(self) -> str:
        return f"{self.at_ms} ms: {self.worker} died {self.detail}"


class Journal:
    """Every transaction of every transactional producer of a cluster, and when each producer epoch began (in
    virtual ms since the journal was made)."""

    def __init__(self, clock: VirtualClock, offsets_topic: str, heartbeat_topic: str | None = None) -> None:
        self.clock = clock
        self.origin = clock.now_ms()
        self.offsets_topic = offsets_topic
        self.heartbeat_topic = heartbeat_topic
        self.transactions: list[Transaction] = []
        self.epochs: dict[str, list[tuple[int, str]]] = {}
        """Transactional id -> (virtual ms, worker) of each producer that initialised it, in order."""

    def initialised(self, transactional_id: str, worker: str) -> int:
        """A producer of ``transactional_id`` initialised: the older one's open transaction is aborted; return
        the new epoch."""
        now = self.now()
        for transaction in self.transactions:
            if transaction.transactional_id == transactional_id and transaction.outcome == "open":
                transaction.outcome, transaction.ended_ms = "aborted as a newer producer of the id started", now
        epochs = self.epochs.setdefault(transactional_id, [])
        epochs.append((now, worker))
        return len(epochs)

    def began(self, transactional_id: str, epoch: int, worker: str, number: int) -> Transaction:
        transaction = Transaction(transactional_id, epoch, worker, number, self.now())
        self.transactions.append(transaction)
        return transaction

    def now(self) -> int:
        return self.clock.now_ms() - self.origin

    def holding(self, topic: str, value: bytes | None) -> list[Transaction]:
        """The transactions that hold a record of ``value`` in ``topic``."""
        return [t for t in self.transactions if (topic, value) in t.records]

    def committed_before(self, at_ms: int, transactional_id: str) -> dict[str, str]:
        """The source offsets committed, by any producer, before ``at_ms`` (per partition, compact JSON), for the
        partitions ``transactional_id``'s transactions ever wrote."""
        partitions = {p for t in self.transactions if t.transactional_id == transactional_id for p, _ in t.offsets}
        found: dict[str, str] = {}
        ended = [t for t in self.transactions if t.outcome == "committed" and t.ended_ms is not None]
        for transaction in sorted(ended, key=lambda t: t.ended_ms or 0):
            if (transaction.ended_ms or 0) < at_ms:
                found.update({p: o for p, o in transaction.offsets if p in partitions})
        return found

    def __repr__(self) -> str:
        outcomes = Counter(t.outcome.split(" ", 1)[0] for t in self.transactions)
        return f"Journal({len(self.transactions)} transactions: {dict(outcomes)}, epochs={self.epochs})"

    def data_topics(self) -> list[str]:
        """Every topic a transaction wrote data records to."""
        found = dict.fromkeys(topic for t in self.transactions for topic, _ in t.records)
        return [topic for topic in found if topic != self.heartbeat_topic]


@dataclass(frozen=True)
class Kill:
    """One planned death: at a point of ``kind``, once armed ``delay_ms`` after the previous death (or the start),
    letting ``skip`` points of its kind pass first."""

    kind: str
    delay_ms: int
    skip: int

    def __str__(self) -> str:
        return f"{self.kind} (armed {self.delay_ms} ms after the previous death, {self.skip} such points let pass)"


class KillPlan:
    """Deaths to come, one after the other, on the virtual ``clock`` (in ms since the plan was made): :attr:`deaths`
    says which happened, and :attr:`missed` which found no point of their kind within :data:`PATIENCE_MS` of being
    armed."""

    def __init__(self, kills: Sequence[Kill], clock: VirtualClock) -> None:
        self.kills = list(kills)
        self.clock = clock
        self.origin = clock.now_ms()
        self.deaths: list[Death] = []
        self.missed: list[Kill] = []
        self._next = 0
        self._arm(0)

    @classmethod
    def drawn(cls, seed: int, crashes: int, clock: VirtualClock) -> KillPlan:
        """``crashes`` deaths drawn from ``seed``: one mid-transaction, one before and one after a commit, in a
        drawn order, each armed a drawn time after the death before it and letting a drawn number of points pass;
        with four or more, a ``start`` one among them (never first), at the first point of its kind after the death
        before it: the takeover of the dead worker's tasks; any more of any kind."""
        rng = random.Random(seed)
        kinds = [MID, BEFORE_COMMIT, AFTER_COMMIT]
        rng.shuffle(kinds)
        if crashes >= 4:
            kinds.insert(rng.randint(1, 3), START)
        kinds += [rng.choice(KINDS) for _ in range(crashes - len(kinds))]
        kills = [
            Kill(kind, 0, 0) if kind == START else Kill(kind, rng.randrange(0, 1_000, 10), rng.randint(0, 2))
            for kind in kinds[:crashes]
        ]
        return cls(kills, clock)

    def now(self) -> int:
        return self.clock.now_ms() - self.origin

    @property
    def pending(self) -> Kill | None:
        """The next death to come, if any."""
        return self.kills[self._next] if self._next < len(self.kills) else None

    def _arm(self, now: int) -> None:
        pending = self.pending
        if pending is not None:
            self._armed_at, self._skip = now + pending.delay_ms, pending.skip

    def tick(self) -> None:
        """Give up the pending death when no point of its kind came within :data:`PATIENCE_MS` of its arming."""
        pending, now = self.pending, self.now()
        if pending is not None and now >= self._armed_at + PATIENCE_MS:
            self.missed.append(pending)
            self._next += 1
            self._arm(now)

    def picks(self, kind: str) -> bool:
        """Whether the worker reaching a point of ``kind`` now dies there (then :meth:`kill` it)."""
        pending = self.pending
        if pending is None or pending.kind != kind or self.now() < self._armed_at:
            return False
        if self._skip:
            self._skip -= 1
            return False
        return True

    def kill(self, worker: str, kind: str, detail: str) -> WorkerDied:
        """Note the death of ``worker`` and arm the next one; raise what this returns, where the worker is."""
        death = Death(self.now(), worker, kind, detail)
        self.deaths.append(death)
        self._next += 1
        self._arm(death.at_ms)
        return WorkerDied(str(death))

    def __repr__(self) -> str:
        planned = "; ".join(map(str, self.kills))
        return (
            f"KillPlan({len(self.deaths)} of {len(self.kills)} deaths happened, {len(self.missed)} found no point of "
            f"their kind; planned: {planned})"
        )


class KillingProducer:
    """A worker's transactional producer whose every call is a kill point of ``plan``, journaled."""

    def __init__(self, inner: TransactionalProducer, worker: str, plan: KillPlan, journal: Journal) -> None:
        self.inner = inner
        self.worker = worker
        self.plan = plan
        self.journal = journal
        self.epoch = 0
        self.current: Transaction | None = None
        self.transactions = 0

    @property
    def transactional_id(self) -> str:
        return self.inner.transactional_id

    def _die_if_picked(self, kind: str, detail: str) -> None:
        if self.plan.picks(kind):
            raise self.plan.kill(self.worker, kind, detail)

    def _in(self) -> str:
        return f"transaction {self.transactions} of {self.transactional_id} epoch {self.epoch}"

    def init_transactions(self, timeout_ms: int) -> None:
        self._die_if_picked(START, f"as a producer of {self.transactional_id} was to initialise (fencing the last)")
        self.inner.init_transactions(timeout_ms)
        self.epoch = self.journal.initialised(self.transactional_id, self.worker)

    def begin(self) -> None:
        self.inner.begin()
        self.transactions += 1
        self.current = self.journal.began(self.transactional_id, self.epoch, self.worker, self.transactions)

    def _wrote(self, topic: str, key: bytes | None, value: bytes | None) -> None:
        current = self.current
        if current is None:
            return
        if topic != self.journal.offsets_topic:
            current.records.append((topic, value))
            current.data += topic != self.journal.heartbeat_topic
            return
        parsed = parse_offset_key(key or b"")
        partition = json.dumps(None if parsed is None else parsed[1], sort_keys=True, separators=(",", ":"))
        offset = json.dumps(None if value is None else json.loads(value), sort_keys=True, separators=(",", ":"))
        current.offsets.append((partition, offset))

    def _data(self) -> int:
        """How many data records the open transaction holds."""
        return 0 if self.current is None else self.current.data

    def _mid(self) -> str:
        return f"in the middle of {self._in()}, with {plural(self._data(), 'data record')} in it and no offsets yet"

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
        self.inner.produce(topic, value, key, partition, timestamp, headers, on_delivery, ack)
        self._wrote(topic, key, value)
        if topic not in (self.journal.offsets_topic, self.journal.heartbeat_topic):
            self._die_if_picked(MID, self._mid())

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
        data = topic not in (self.journal.offsets_topic, self.journal.heartbeat_topic)
        end = next((n for n in range(start + 1, len(values) + 1) if data and self.plan.picks(MID)), None)
        cut = len(values) if end is None else end
        queued = self.inner.produce_all(
            topic,
            values[:cut],
            None if keys is None else keys[:cut],
            partition,
            None if timestamps is None else timestamps[:cut],
            ack,
            start,
            None if headers is None else headers[:cut],
        )
        for index in range(start, queued):
            self._wrote(topic, None if keys is None else keys[index], values[index])
        if end is not None:
            raise self.plan.kill(self.worker, MID, self._mid())
        return queued

    def delivery_error(self, error: Any, report: Any) -> Any:
        return self.inner.delivery_error(error, report)

    def poll(self, timeout_ms: int = 0) -> int:
        return self.inner.poll(timeout_ms)

    def flush(self, timeout_ms: int) -> int:
        return self.inner.flush(timeout_ms)

    def close(self) -> None:
        self.inner.close()

    def commit(self, timeout_ms: int) -> None:
        current, data = self.current, self._data()
        offsets = 0 if current is None else len(current.offsets)
        held = "" if current is None else f" ({plural(data, 'data record')}, {plural(offsets, 'offset')})"
        if data:
            self._die_if_picked(BEFORE_COMMIT, f"before committing {self._in()}{held}")
        self.inner.commit(timeout_ms)
        if current is not None:
            current.outcome, current.ended_ms = "committed", self.journal.now()
            self.current = None
        if data:
            self._die_if_picked(AFTER_COMMIT, f"right after committing {self._in()}{held}, before the task knew")

    def abort(self, timeout_ms: int) -> None:
        self.inner.abort(timeout_ms)
        if self.current is not None:
            self.current.outcome, self.current.ended_ms = "aborted by the task", self.journal.now()
            self.current = None

    def __repr__(self) -> str:
        return f"KillingProducer({self.inner!r}, worker={self.worker}, epoch={self.epoch})"


class KillingTransport:
    """Worker ``worker``'s transport to ``broker``: the broker's own, whose transactional producers are
    :class:`KillingProducer` s."""

    def __init__(self, worker: str, broker: MemoryBroker, plan: KillPlan, journal: Journal) -> None:
        self.inner = MemoryTransport(broker)
        self.worker = worker
        self.plan = plan
        self.journal = journal

    def producer(self, config: Mapping[str, Any]) -> Producer:
        return self.inner.producer(config)

    def transactional_producer(self, transactional_id: str, config: Mapping[str, Any]) -> TransactionalProducer:
        inner = self.inner.transactional_producer(transactional_id, config)
        return KillingProducer(inner, self.worker, self.plan, self.journal)

    def consumer(self, group_id: str | None, config: Mapping[str, Any]) -> Consumer:
        return self.inner.consumer(group_id, config)

    def admin(self) -> Admin:
        return self.inner.admin()

    def topic_log(self, topic: str, apply: LogApply, **options: Any) -> TopicLog:
        return self.inner.topic_log(topic, apply, **options)

    def group_member(self, group_id: str, config: Mapping[str, Any], listener: RebalanceListener) -> GroupMember:
        return self.inner.group_member(group_id, config, listener)
