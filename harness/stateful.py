"""Stateful Hypothesis tests: a connector driven through random schedules of writes, time and faults on the
simulated worker, checking at-least-once delivery and offset monotonicity.

Subclass :class:`SourceMachine` (or :class:`SinkMachine`), say which connector to run and how to write to (or read
from) the system it talks to, and turn it into a test with :func:`machine_test`::

    class LinesMachine(SourceMachine):
        connector = LinesSource

        def setup_source(self) -> dict[str, str]:
            self.path = Path(tempfile.mkdtemp()) / "in.jsonl"
            return {"file": str(self.path), "topic": "lines"}

        def write(self, value: Any) -> None:
            with self.path.open("a") as file:
                file.write(json.dumps(value) + "\\n")

    TestLines = machine_test(LinesMachine)

After every step the invariants hold (committed offsets were handed over and only move forward, offset maps are
never changed after hand-over, each source partition is read by one task; ``pre_commit`` stays within what was
consumed; a sink's committed records are written, checked at every commit as it happens); at the end every fault is
healed, the worker runs until quiet, and every value written must have arrived at least once.
"""

from __future__ import annotations

import unittest
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar

from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from headwater.harness import guarantees as g
from headwater.harness.driver import ConnectorDriver
from headwater.harness.schedule import SINK_FAULTS, SOURCE_FAULTS, Fault, FaultKind
from headwater.harness.strategies import faults, json_values, topic_records
from headwater.harness.tap import Commit
from headwater.runtime.transport.base import Message
from headwater.sdk.connector import Connector
from headwater.sdk.records import SourceOffset, TopicPartition

SETTLE_MS = 10_000
"""How long, at most, the worker runs after the faults are healed for every value to arrive (it stops sooner once
nothing moves)."""


class ConnectorMachine(RuleBasedStateMachine):
    """What source and sink machines share: the driver, the time and fault rules, and the end-of-run check."""

    connector: ClassVar[type[Connector] | str]
    worker_config: ClassVar[Mapping[str, Any]] = {"offset.flush.interval.ms": 500}
    fault_kinds: ClassVar[Sequence[FaultKind]] = ()
    tick_ms: ClassVar[int] = 50

    def __init__(self) -> None:
        super().__init__()
        self.expected: list[Any] = []
        self.broken = False
        self.driver = ConnectorDriver(
            self.connector, self.config(), name="conn", worker_config=self.worker_config, tick_ms=self.tick_ms
        )
        self.prepare()
        self.driver.start()

    def setup(self) -> Mapping[str, Any]:
        """The connector's config; make here the external system it talks to (a fresh one per example)."""
        raise NotImplementedError

    def config(self) -> dict[str, Any]:
        return dict(self.setup())

    def prepare(self) -> None:
        """Called once the worker exists, before the connector starts."""

    def cleanup(self) -> None:
        """Remove what :meth:`setup` made."""

    def tagged(self, payload: Any) -> dict[str, Any]:
        """The next value to write: unique (``seq``) and carrying a drawn ``payload``."""
        return {"seq": len(self.expected), "payload": payload}

    @rule(ms=st.integers(0, 2_000))
    def advance(self, ms: int) -> None:
        self.driver.advance(ms)

    @rule(data=st.data())
    def fault(self, data: st.DataObject) -> None:
        fault: Fault = data.draw(faults(self.fault_kinds), label="fault")
        fault.apply(self.driver)

    def check(self, guarantee: Callable[[], None]) -> None:
        try:
            guarantee()
        except AssertionError:
            self.broken = True
            raise

    def check_guarantees(self) -> None:
        """The guarantees that hold after every step (checked once more at the end)."""

    @invariant()
    def guarantees_hold(self) -> None:
        self.check_guarantees()

    def after_heal(self) -> None:
        """Called at the end, once every fault is healed, before the worker runs until quiet."""

    def delivered(self) -> list[Any]:
        raise NotImplementedError

    def at_least_once(self) -> None:
        raise NotImplementedError

    def teardown(self) -> None:
        try:
            if not self.broken:
                self.driver.heal()
                self.after_heal()
                self.driver.settle(lambda: _all_in(self.expected, self.delivered()), SETTLE_MS)
                self.check_guarantees()
                self.at_least_once()
        finally:
            self.driver.close()
            self.cleanup()


class SourceMachine(ConnectorMachine):
    """Drives a source connector: writes to its source system, time, crashes, restarts, rebalances, failing
    offset commits and sends, slow acks. Override :meth:`setup`, :meth:`write` and, when its records are not
    the written values as JSON, :meth:`read`."""

    fault_kinds: ClassVar[Sequence[FaultKind]] = SOURCE_FAULTS
    offset_order: ClassVar[Callable[[SourceOffset], Any] | None] = None
    """Orders a partition's offsets when given; else offsets are ordered by when the task first handed them over."""
    resumed_records: ClassVar[int] = 10
    """At the end, when a task was restarted or crashed, how many values are written per source partition seen, so
    that the tasks resumed from the committed offsets read several polls' worth (a loss that recurs once resumed,
    a record skipped after every page, shows)."""

    def write(self, value: Any) -> None:
        """Add ``value`` to the source system, as a new record the connector must deliver."""
        raise NotImplementedError

    def read(self, message: Message) -> Any:
        """The value a Kafka record carries, to compare with what was written."""
        return g.json_value(message)

    @rule(payloads=st.lists(json_values(3), min_size=1, max_size=4))
    def write_values(self, payloads: list[Any]) -> None:
        for payload in payloads:
            value = self.tagged(payload)
            self.write(value)
            self.expected.append(value)

    @precondition(lambda self: self.driver.memory_broker.faults.holding)
    @rule()
    def release_acks(self) -> None:
        self.driver.release_acks()

    def check_guarantees(self) -> None:
        """Committed offsets were handed over and only move forward; no heartbeat ran ahead of the records handed over;
        no offset map changed after it was handed over; each source partition is read by one task; no stop hook
        raised."""
        order = type(self).offset_order
        self.check(lambda: g.assert_offsets_not_changed_after_handover(self.driver.tap))
        self.check(lambda: g.assert_partitions_read_by_one_task(self.driver.tap))
        self.check(lambda: g.assert_committed_offsets_were_sent(self.driver.tap))
        self.check(lambda: g.assert_heartbeats_not_ahead(self.driver.tap, order))
        self.check(lambda: g.assert_source_offsets_monotonic(self.driver.tap, order))
        self.check(lambda: g.assert_stop_hooks_clean(self.driver.tap))

    def after_heal(self) -> None:
        """When a task was restarted or crashed, write :attr:`resumed_records` values per source partition seen."""
        tap = self.driver.tap
        if any(sent.incarnation > 1 for sent in tap.sent) or self.driver.crashes:
            partitions = {sent.partition_key for sent in tap.sent if not sent.heartbeat}
            self.write_values([None] * (type(self).resumed_records * max(1, len(partitions))))

    def delivered(self) -> list[Any]:
        return [self.read(m) for topic in g.data_topics(self.driver.tap) for m in self.driver.worker.messages(topic)]

    def at_least_once(self) -> None:
        g.assert_at_least_once(self.expected, self.delivered(), "source to Kafka", self.driver.tap)


class SinkMachine(ConnectorMachine):
    """Drives a sink connector: records into its topic, time, crashes, restarts, rebalances, failing commits and
    puts. Override :meth:`setup` (the config; ``topics`` is set to :attr:`topic`) and :meth:`written_values`."""

    fault_kinds: ClassVar[Sequence[FaultKind]] = SINK_FAULTS
    topic: ClassVar[str] = "records"
    partitions: ClassVar[int] = 2

    def config(self) -> dict[str, Any]:
        return {**self.setup(), "topics": self.topic}

    def prepare(self) -> None:
        self.driver.worker.create_topic(self.topic, self.partitions)
        self.at_commit: g.GuaranteeViolation | None = None
        """The first commit that covered a record the sink had not written, checked as it happened."""
        self.driver.tap.on_commit.append(self.check_commit)

    def check_commit(self, commit: Commit) -> None:
        if self.at_commit is not None or not commit.sink:
            return
        worker = self.driver.worker

        def below(tp: TopicPartition, committed: int) -> list[tuple[int, Any]]:
            found = [m for m in worker.messages(tp.topic) if m.partition == tp.partition and m.offset < committed]
            return [(m.offset, g.json_value(m)) for m in found]

        try:
            g.assert_commit_written(commit, self.written_values(), below)
        except g.GuaranteeViolation as violation:
            self.at_commit = violation

    def raise_at_commit(self) -> None:
        if self.at_commit is not None:
            raise self.at_commit

    def written_values(self) -> list[Any]:
        """Every value the sink's external system holds, as the records carried it (decoded JSON)."""
        raise NotImplementedError

    @rule(records=st.lists(topic_records(partitions=2, values=json_values(3)), min_size=1, max_size=4))
    def produce(self, records: list[Any]) -> None:
        for record in records:
            value = self.tagged(record.value)
            partition = None if record.partition is None else record.partition % self.partitions
            self.driver.worker.produce(self.topic, value, record.key, partition)
            self.expected.append(value)

    def check_guarantees(self) -> None:
        """pre_commit stays within what was consumed; every committed record is written; no stop hook raised."""
        tap = self.driver.tap
        self.check(self.raise_at_commit)
        self.check(lambda: g.assert_pre_commit_contract(tap))
        self.check(lambda: g.assert_committed_records_written(tap, self.written_values()))
        self.check(lambda: g.assert_stop_hooks_clean(tap))

    def delivered(self) -> list[Any]:
        return self.written_values()

    def at_least_once(self) -> None:
        g.assert_at_least_once(self.expected, self.delivered(), "Kafka to the sink", self.driver.tap)


def _all_in(expected: Sequence[Any], found: Sequence[Any]) -> bool:
    have = {g.canonical_value(v) for v in found}
    return all(g.canonical_value(v) in have for v in expected)


MACHINE_PHASES = tuple(phase for phase in Phase if phase is not Phase.explain)
"""Every phase but Hypothesis' ``explain``: it replays the shrunk failure under a line tracer to list the lines only
failing runs took, which for a machine are the harness's own (its checks), and it took four fifths of the time to
the first report (66-68 s of CPU down to 12-18 s for planted lost records)."""


def machine_settings(max_examples: int = 200, steps: int = 12, **options: Any) -> settings:
    """Settings for a machine run: no deadline (a run is many task-loop passes), short runs, many of them, and no
    ``explain`` phase (:data:`MACHINE_PHASES`)."""
    return settings(
        max_examples=max_examples,
        stateful_step_count=steps,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
        **{"phases": MACHINE_PHASES, **options},
    )


def machine_test(machine: type[ConnectorMachine], max_examples: int = 200, steps: int = 12) -> type[unittest.TestCase]:
    """A test class (pytest collects it) that runs ``machine`` for ``max_examples`` examples of up to ``steps``."""
    case: type[unittest.TestCase] = machine.TestCase
    case.settings = machine_settings(max_examples, steps)  # type: ignore[attr-defined]
    return case
