"""The exactly-once check of the source conformance suite (KIP-618): whichever point a worker dies at, a
``read_committed`` consumer sees every record the connector produced once, and every record fed to the source.

A connector whose ``exactly_once_support(config)`` answers ``SUPPORTED`` promises that a task resuming from the
offsets of its last committed transaction produces exactly the records after them. The check holds it to that: the
connector runs on a :class:`~headwater.harness.simulated_cluster.SimulatedCluster` of distributed workers with
``exactly.once.source.support=enabled``, records are fed all at once and then one at a time, and workers die at the
kill points a seeded :class:`~headwater.harness.kill_points.KillPlan` picks (mid-transaction, just before or just
after a commit, while tasks start in a rebalance); a new worker joins for each one that dies, and the others take
its tasks over once its session times out. Then the run settles, and what ``read_committed`` consumers see of the
topics the tasks wrote must hold no record twice and no fed record missing. It runs for each transaction boundary:
``poll``, ``interval``, and ``connector`` when ``can_define_transaction_boundaries`` answers ``SUPPORTED``.

Skipped, saying why, for a connector that does not answer ``SUPPORTED`` (unless the suite is asked to check it
anyway), and for ``connector`` when the connector's own ``can_define_transaction_boundaries`` does not answer
``SUPPORTED``; a connector that leaves that method as it is gets no ``connector`` case at all.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from headwater.harness import guarantees as g
from headwater.harness.kill_points import Journal, KillingTransport, KillPlan, Transaction, plural
from headwater.harness.simulated_cluster import OFFSETS_TOPIC, SimulatedCluster
from headwater.runtime.config.exactly_once_support import (
    BOUNDARY,
    CONNECTOR,
    INTERVAL,
    INTERVAL_BOUNDARY,
    POLL,
    SUPPORT,
    WORKER_SUPPORT,
)
from headwater.runtime.errors import NotFoundError
from headwater.runtime.plugins import resolve_connector_class
from headwater.runtime.transport.base import Message
from headwater.runtime.transport.memory import MemoryBroker
from headwater.sdk.connector import Connector, SourceConnector
from headwater.sdk.transactions import ConnectorTransactionBoundaries, ExactlyOnceSupport

BOUNDARIES = (POLL, INTERVAL_BOUNDARY, CONNECTOR)
WORKERS = 3
SESSION_TIMEOUT_MS = 1_000
"""How long a dead worker's tasks wait for another worker to take them over."""
INTERVAL_MS = 300
"""``transaction.boundary.interval.ms`` with the interval boundary."""
TRICKLE_MS = 100
"""After the first records, one more is fed every this often until the last death."""
CRASH_PHASE_MS = 20_000
"""Virtual time the planned deaths may take; the run goes on without the ones that did not come by then."""
SETTLE_MS = 30_000
"""Virtual time the run may take, after the deaths, for every task to run again and every fed record to show."""
TAIL_MS = 1_000
"""Virtual time the run goes on once settled, so that a task that resumed in the wrong place shows it."""

DUPLICATED = "a read_committed consumer sees no record twice, wherever a worker dies (exactly-once source)"
LOST = "a read_committed consumer sees every record fed to the source, wherever a worker dies (exactly-once source)"


@dataclass(frozen=True)
class Decision:
    """Whether the check runs for a connector, config and boundary; ``reason`` says why not."""

    runs: bool
    reason: str = ""
    declared: bool = False
    """The connector answers ``SUPPORTED``: it is created with ``exactly.once.support=required``, so the runtime's
    preflight check runs too."""


def decide(connector: type[Connector], config: Mapping[str, str], boundary: str, asked: bool | None) -> Decision:
    """Whether to check ``connector`` with ``config`` (every value a string) and ``boundary``. ``asked`` is what the
    suite was told: ``None`` follows the connector's ``exactly_once_support`` answer, ``True`` checks whatever it
    answers, ``False`` never checks."""
    name = connector.__name__
    if asked is False:
        return Decision(False, "exactly-once delivery is not checked: the suite was given exactly_once=False")
    if not issubclass(connector, SourceConnector):
        raise TypeError(f"{name} is not a SourceConnector: the exactly-once check is for sources")
    answer = connector().exactly_once_support(config)
    declared = answer is ExactlyOnceSupport.SUPPORTED
    if not declared and not asked:
        said = "returns None (it does not say)" if answer is None else f"answers {answer}"
        return Decision(
            False,
            f"exactly-once delivery is not checked: {name}.exactly_once_support(config) {said}; return "
            "ExactlyOnceSupport.SUPPORTED when a task resuming from its committed offsets produces exactly the "
            "records after them, or pass exactly_once=True to check it anyway",
        )
    if boundary == CONNECTOR:
        answered = connector().can_define_transaction_boundaries(config)
        if answered is not ConnectorTransactionBoundaries.SUPPORTED:
            return Decision(
                False,
                f"transaction.boundary=connector is not checked: {name}.can_define_transaction_boundaries(config) "
                f"answers {answered}",
            )
    return Decision(True, declared=declared)


def boundaries(connector: type[Any]) -> tuple[str, ...]:
    """The transaction boundaries to check ``connector`` with: ``poll`` and ``interval``, and ``connector`` when the
    class answers ``can_define_transaction_boundaries`` itself (the default answer is ``UNSUPPORTED`` whatever the
    config; an answer of its own is asked again for the config under test)."""
    own = connector.can_define_transaction_boundaries is not SourceConnector.can_define_transaction_boundaries
    return BOUNDARIES if own else (POLL, INTERVAL_BOUNDARY)


def class_path(connector: type[Connector] | str) -> str:
    """The name the workers find ``connector`` by (their config topic holds names, not classes)."""
    if isinstance(connector, str):
        return connector
    path = f"{connector.__module__}:{connector.__qualname__}"
    found: object
    try:
        found = resolve_connector_class(path)
    except Exception as error:
        found = error
    if found is not connector:
        raise TypeError(
            f"the exactly-once check runs {connector.__qualname__} on distributed workers, which find a connector "
            f"by its name, and {path} does not name it ({found!r}): define the class at module level"
        )
    return path


class ExactlyOnceRun:
    """One run of the check: connector ``connector`` (a class path) named ``name`` with ``config`` on a simulated
    cluster of :data:`WORKERS` workers with ``worker_config``, workers dying as ``seed`` draws. ``feed(count)``
    feeds the source and returns the values the records will carry; ``read`` decodes a record's value;
    ``heartbeat_topic`` is left out of the check."""

    def __init__(
        self,
        connector: str,
        name: str,
        config: Mapping[str, str],
        worker_config: Mapping[str, Any],
        *,
        seed: int,
        crashes: int,
        feed: Callable[[int], Sequence[Any]],
        feed_count: int,
        read: Callable[[Message], Any],
        heartbeat_topic: str | None = None,
    ) -> None:
        self.connector, self.name, self.config = connector, name, dict(config)
        self.seed, self.feed_count = seed, feed_count
        self._feed, self.read, self.heartbeat_topic = feed, read, heartbeat_topic
        settings = {key: str(value) for key, value in worker_config.items()}
        self.cluster = SimulatedCluster(
            0, {**settings, WORKER_SUPPORT: "enabled"}, session_timeout_ms=SESSION_TIMEOUT_MS, transport=self._transport
        )
        self.journal = Journal(self.cluster.clock, OFFSETS_TOPIC, heartbeat_topic)
        self.plan = KillPlan.drawn(seed, crashes, self.cluster.clock)
        self.flush_ms = int(settings.get("offset.flush.interval.ms", "1000"))
        self.fed: list[tuple[int, Any]] = []
        """(virtual ms, value) of every record fed."""
        for _ in range(WORKERS):
            self.cluster.join()

    def _transport(self, worker: str, broker: MemoryBroker) -> KillingTransport:
        return KillingTransport(worker, broker, self.plan, self.journal)

    @property
    def boundary(self) -> str:
        return self.config.get(BOUNDARY, POLL)

    def now(self) -> int:
        """Virtual ms since the run began (the times of its journal and its deaths)."""
        return self.journal.now()

    # ---- running ---------------------------------------------------------------------------------------------

    def run(self) -> None:
        """Create the connector, feed it while workers die, then settle."""
        self.cluster.live[0].herder.put_connector_config(self.name, {**self.config, "connector.class": self.connector})
        self.feed(self.feed_count)
        next_at, end = self.now() + TRICKLE_MS, self.now() + CRASH_PHASE_MS
        while self.plan.pending is not None and self.now() < end:
            if self.now() >= next_at:
                self.feed(1)
                next_at += TRICKLE_MS
            self.step()
            self.plan.tick()
        self.settle()

    def feed(self, count: int) -> None:
        now = self.now()
        self.fed += [(now, value) for value in self._feed(count)]

    def step(self) -> None:
        """One pass of the cluster; a new worker joins for each one that died in it."""
        deaths = len(self.plan.deaths)
        self.cluster.step()
        for _ in self.plan.deaths[deaths:]:
            self.cluster.join()

    def settle(self) -> None:
        """Run until every task runs again and every fed record shows (or :data:`SETTLE_MS` passed), then for
        :data:`TAIL_MS` and a commit interval more."""
        wanted = Counter(g.canonical_value(value) for _, value in self.fed)
        end, committed = self.now() + SETTLE_MS, -1
        while self.now() < end:
            done = sum(t.outcome == "committed" for t in self.journal.transactions)
            if done != committed:
                committed = done
                if self.running() and (not wanted or not wanted - self.visible_counts()):
                    break
            self.step()
        tail = self.now() + TAIL_MS + max(self.flush_ms, INTERVAL_MS) + 3 * self.cluster.tick_ms
        while self.now() < tail:
            self.step()

    def running(self) -> bool:
        """Whether every task of the connector runs once, on a live worker, and says it is RUNNING."""
        try:
            statuses = self.cluster.live[0].herder.connector_status(self.name).tasks
        except NotFoundError:  # a worker that joined a moment ago has not read the statuses yet
            return False
        ids = self.cluster.running([self.name])
        return bool(statuses) and all(s.state == "RUNNING" for s in statuses.values()) and len(ids) == len(statuses)

    def close(self) -> None:
        """Stop the live workers; release what the dead ones' tasks hold, committing nothing (a process's end)."""
        for worker in self.cluster.workers:
            if worker.alive:
                worker.herder.stop()
                worker.alive = False
            else:
                for task in worker.worker.tasks.values():
                    task.cancel()
                worker.worker.stop()

    # ---- what a read_committed consumer sees -------------------------------------------------------------------

    def visible(self) -> list[tuple[Message, Any]]:
        """Every record of the data topics a ``read_committed`` consumer reads, with its decoded value."""
        broker = self.cluster.broker
        found = [m for topic in self.journal.data_topics() for m in broker.messages(topic, committed_only=True)]
        return [(m, self.read(m)) for m in found]

    def visible_counts(self) -> Counter[str]:
        return Counter(g.canonical_value(value) for _, value in self.visible())

    # ---- the check -------------------------------------------------------------------------------------------

    def check(self) -> None:
        """Fail with what went wrong: no record produced, no worker died, a task not running, a record seen twice, a
        fed record never seen."""
        where = f"transaction.boundary={self.boundary}, seed {self.seed}"
        if not any(t.data for t in self.journal.transactions):
            raise AssertionError(
                f"{where}: the connector produced no record in {self.now()} ms, so there is nothing to check; give "
                "the suite a feed() that adds records to the source system"
            )
        if not self.plan.deaths:
            raise AssertionError(f"{where}: no worker died, so nothing was checked: {self.plan!r}")
        if not self.running():
            self.raise_not_running(where)
        visible = self.visible()
        counts = Counter(g.canonical_value(value) for _, value in visible)
        fed = Counter(g.canonical_value(value) for _, value in self.fed)
        twice = {key: n for key, n in counts.items() if n > max(fed[key], 1)}
        if twice:
            raise g.GuaranteeViolation(DUPLICATED, self.duplicates_text(where, visible, twice))
        lost = fed - counts
        if lost:
            raise g.GuaranteeViolation(LOST, self.lost_text(where, lost))

    def raise_not_running(self, where: str) -> None:
        try:
            tasks = self.cluster.live[0].herder.connector_status(self.name).tasks
        except NotFoundError as error:
            tasks, where = {}, f"{where} ({error})"
        traces = "\n".join(f"task {n}: {s.state} on {s.worker_id}\n{s.trace or ''}" for n, s in tasks.items())
        raise AssertionError(
            f"{where}: the connector's tasks do not all run again {SETTLE_MS} ms after the last death\n{traces}\n"
            f"{self.deaths_text()}\n{self.cluster!r}"
        )

    def duplicates_text(self, where: str, visible: Sequence[tuple[Message, Any]], twice: Mapping[str, int]) -> str:
        shown = "" if len(twice) <= 5 else ", the first 5"
        lines = [f"{where}: {plural(len(twice), 'record')} seen more than once{shown}:"]
        for key in list(twice)[:5]:
            messages = [m for m, value in visible if g.canonical_value(value) == key]
            lines.append(f"  {key}: {twice[key]} times, at {', '.join(f'{m.topic}@{m.offset}' for m in messages)}")
            holders = {id(t): t for m in messages for t in self.journal.holding(m.topic, m.value)}
            for transaction in holders.values():
                if transaction.outcome == "committed":
                    lines.append(f"    in {transaction}")
                    lines.append(f"      {self.resumed_from(transaction)}")
        lines.append(self.deaths_text())
        lines.append(
            "a task that resumes from its last committed transaction's offsets produces every record after them "
            "once: one that resumes elsewhere, or keeps its position outside its offsets, writes records again"
        )
        return "\n".join(lines)

    def resumed_from(self, transaction: Transaction) -> str:
        """What had been committed for its partitions when the producer epoch of ``transaction`` began."""
        epochs = self.journal.epochs.get(transaction.transactional_id, [])
        began = epochs[transaction.epoch - 1][0] if 0 < transaction.epoch <= len(epochs) else transaction.began_ms
        committed = self.journal.committed_before(began, transaction.transactional_id)
        stored = ", ".join(f"{p} -> {o}" for p, o in sorted(committed.items())) or "no offsets"
        return f"its epoch began at {began} ms, when the committed offsets were: {stored}"

    def lost_text(self, where: str, lost: Counter[str]) -> str:
        missing = [(at, value) for at, value in self.fed if lost[g.canonical_value(value)]]
        first_at, first = missing[0]
        lines = [
            f"{where}: {sum(lost.values())} of {plural(len(self.fed), 'fed record')} never seen; the first, fed at "
            f"{first_at} ms: {first!r}",
            "never seen:",
            g.describe([value for _, value in missing]),
        ]
        written = [t for t in self.journal.transactions if t.data]
        held = [t for t in written if any(self.read_raw(topic, v) in lost for topic, v in t.records)]
        lines.append("transactions that held them:" if held else "no transaction ever held them")
        lines += [f"    {t}" for t in held[-8:]]
        still = [t for t in self.journal.transactions if t.outcome == "open"]
        if still:
            lines.append("transactions still open (a read_committed consumer reads no further):")
            lines += [f"    {t}" for t in still]
        lines.append(self.deaths_text())
        return "\n".join(lines)

    def read_raw(self, topic: str, value: bytes | None) -> str:
        """The canonical decoded value of a raw record ``value`` written to ``topic``."""
        return g.canonical_value(self.read(Message(topic, 0, -1, None, value, None, ())))

    def __repr__(self) -> str:
        return (
            f"ExactlyOnceRun({self.connector}, transaction.boundary={self.boundary}, seed {self.seed}, now_ms="
            f"{self.now()}, fed={len(self.fed)}, {self.plan!r}, {self.journal!r}, {self.cluster!r})"
        )

    def deaths_text(self) -> str:
        plan = self.plan
        deaths = "\n".join(f"    {death}" for death in plan.deaths) or "    (none)"
        missed = "".join(f"\n    no point for: {kill}" for kill in plan.missed)
        return f"where the workers died ({len(plan.deaths)} of {len(plan.kills)} planned):\n{deaths}{missed}"


def connector_props(config: Mapping[str, Any], boundary: str, declared: bool) -> dict[str, str]:
    """The connector config for a run with ``boundary`` (every value a string)."""
    props = {key: str(value) for key, value in config.items() if value is not None}
    props[BOUNDARY] = boundary
    if boundary == INTERVAL_BOUNDARY:
        props[INTERVAL] = str(INTERVAL_MS)
    props[SUPPORT] = "required" if declared else "requested"
    return props
