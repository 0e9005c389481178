"""The conformance suite for source connectors, plus what every connector is checked for (see
:mod:`headwater.harness.conformance`).

The guarantees are checked while the connector runs, not only at the end: a task is crashed right after each commit
of its offsets (heartbeat offsets too), with records fed all at once and one at a time and, when the suite knows the
connector's batch size key, with one and a few records per poll, on several source partitions and ``tasks.max``
tasks; every record fed must arrive at least once. Duplicates of records that were handed over but not yet
committed when a task crashed are allowed (at-least-once) and never fail these checks.

A connector that declares exactly-once support (KIP-618) is also checked for it, on a simulated cluster whose
workers die at any point of their transactions (:mod:`headwater.harness.exactly_once`): there a duplicate fails.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import pytest

from headwater.harness import exactly_once
from headwater.harness import guarantees as g
from headwater.harness.conformance import (
    BadConfig,
    ConfigSpec,
    Conformance,
    ConformanceContext,
    assert_running,
    suite_class,
)
from headwater.harness.driver import ConnectorDriver
from headwater.harness.source_resume import (
    assert_idle_partitions_committed,
    assert_resumed,
    committed_offsets,
    implements_heartbeats,
)
from headwater.harness.tap import Commit, canonical
from headwater.runtime.plugins import resolve_connector_class
from headwater.runtime.transport.base import Message
from headwater.sdk.connector import SourceConnector
from headwater.sdk.records import SourceOffset

HEARTBEAT_INTERVAL_MS = 1_000
FEED_PATTERNS = ("bulk", "trickle", "heartbeats-first")
"""How the crash test feeds: every record at once before the first poll, or one record per pass of the loop; or
three times as many at once with heartbeat acknowledgements served a pass before data's (a real cluster's topics
acknowledge independently), for a task that implements heartbeats."""
QUIET_MS = 500
"""The crash test stops crashing once no new data record has been handed over for this long."""
CRASH_TEST_MS = 30_000
"""The crash test's virtual time limit."""
FEED_ROUNDS = 5
"""At most this many feeds top up the records handed over per source partition after a restart or crash."""
EXACTLY_ONCE_HEARTBEAT_MS = 200
"""The heartbeat interval of the exactly-once check (for tasks that implement heartbeats)."""


@dataclass(frozen=True)
class Fed:
    """A value :meth:`SourceConformance.feed` added to the source system, and when (virtual ms of the tap)."""

    at_ms: int
    value: Any


@dataclass(frozen=True)
class CrashPoint:
    """A crash of the connector's tasks, right after ``commit``; ``committed`` is every stored offset then."""

    at_ms: int
    commit: Commit
    committed: dict[str, str]

    def __str__(self) -> str:
        stored = ", ".join(f"{p} -> {o}" for p, o in sorted(self.committed.items())) or "nothing"
        return f"crash at {self.at_ms} ms, right after {self.commit.task} committed; stored offsets: {stored}"


class SourceConformance(Conformance):
    """Subclass it with ``connector`` and ``config`` (or call :func:`source_conformance`); override :meth:`feed`,
    :meth:`provisioned` and :meth:`advance_without_data` to turn on the checks that need them."""

    offset_order: ClassVar[Callable[[SourceOffset], Any] | None] = None
    """Orders a partition's offsets; by default, by when the task first handed each over."""
    feed_count: ClassVar[int] = 6
    """How many records each :meth:`feed` call of a test adds."""
    tasks_max: ClassVar[int] = 2
    """``tasks.max`` the connector runs with (unless its config sets it): each source partition must be read by
    exactly one task."""
    batch_size_key: ClassVar[str | None] = None
    """The connector's config key that bounds the records one ``poll`` returns; when given, the crash test also
    runs with each of :attr:`batch_sizes` (a task that reads ahead of what it hands over is found this way)."""
    batch_sizes: ClassVar[Sequence[int]] = (1, 2)
    resumed_records: ClassVar[int] = 10
    """How many records each source partition is fed, at least, after a restart or crash of the tasks: several polls'
    worth, so that a loss that recurs once a task has resumed (a record skipped after every page, say) shows."""
    exactly_once: ClassVar[bool | None] = None
    """Whether to run the exactly-once check: ``None`` (the default) when the connector's
    ``exactly_once_support(config)`` answers ``SUPPORTED``, ``True`` whatever it answers, ``False`` never."""
    exactly_once_seeds: ClassVar[Sequence[int]] = (0, 1, 2)
    """The seeds of the exactly-once check's runs, one run each: each draws where the workers die."""
    exactly_once_crashes: ClassVar[int] = 4
    """How many workers die in each run of the exactly-once check."""

    def feed(self, config: Mapping[str, Any], count: int) -> Sequence[Any] | None:
        """Add ``count`` new records to the source system and return their values as the records will carry them
        (as :meth:`read` decodes them from Kafka). The default adds none (a source that makes its own)."""
        return []

    def advance_without_data(self, config: Mapping[str, Any]) -> Any:
        """Move the source's position in every source partition without data for the connector (a write to a
        table it does not capture), so its heartbeats must move each committed offset. ``NotImplemented`` skips
        that check."""
        return self.advance_log(config)

    def advance_log(self, config: Mapping[str, Any]) -> Any:
        """The old name of :meth:`advance_without_data`, kept as an alias: override either."""
        return NotImplemented

    def read(self, message: Message) -> Any:
        """The value a data record in Kafka carries, to compare with what :meth:`feed` returned (JSON by default)."""
        return g.json_value(message)

    def connector_config(self, context: ConformanceContext) -> dict[str, Any]:
        config = super().connector_config(context)
        config.setdefault("tasks.max", type(self).tasks_max)
        return config

    def pytest_generate_tests(self, metafunc: pytest.Metafunc) -> None:
        super().pytest_generate_tests(metafunc)
        if "feed_pattern" in metafunc.fixturenames:
            beats = implements_heartbeats(resolve_connector_class(type(self).connector))
            metafunc.parametrize("feed_pattern", [p for p in FEED_PATTERNS if beats or p != "heartbeats-first"])
        if "transaction_boundary" in metafunc.fixturenames:
            connector = resolve_connector_class(type(self).connector)
            metafunc.parametrize("transaction_boundary", exactly_once.boundaries(connector))
        if "batch_size" in metafunc.fixturenames:
            sizes: list[int | None] = [None]
            if type(self).batch_size_key is not None:
                sizes += list(type(self).batch_sizes)
            ids = ["default" if size is None else f"batch{size}" for size in sizes]
            metafunc.parametrize("batch_size", sizes, ids=ids)

    def fed(self, driver: ConnectorDriver, count: int) -> list[Fed]:
        """Feed ``count`` records now; what was fed, for the arrival check."""
        values = self.fed_values(driver.config, count)
        now = driver.tap.now_ms()
        return [Fed(now, value) for value in values]

    def fed_values(self, config: Mapping[str, Any], count: int) -> list[Any]:
        """:meth:`feed`, refusing ``None`` for an answer."""
        values = self.feed(config, count)
        if values is None:
            raise TypeError(
                "feed() returned None: it must return the values it added to the source system, as the records "
                "carry them, so that the suite can check that every one arrives"
            )
        return list(values)

    def start(self, driver: ConnectorDriver) -> None:
        driver.start()
        self.expected = self.fed(driver, self.feed_count)

    def check_invariants(self, driver: ConnectorDriver, crashes: Sequence[CrashPoint] = ()) -> None:
        """Every guarantee that holds at any time, checked on everything that happened so far."""
        assert_running(driver)
        self.assert_every_fed_record_arrived(driver, crashes)
        g.assert_offsets_not_changed_after_handover(driver.tap)
        g.assert_committed_offsets_were_sent(driver.tap)
        g.assert_heartbeats_not_ahead(driver.tap, type(self).offset_order)
        g.assert_source_offsets_monotonic(driver.tap, type(self).offset_order)
        g.assert_partitions_read_by_one_task(driver.tap)
        g.assert_stop_hooks_clean(driver.tap)

    # ---- the tests -------------------------------------------------------------------------------------------

    def test_no_record_is_lost_when_a_task_crashes_after_any_commit(
        self,
        make_driver: Callable[..., ConnectorDriver],
        conformance_context: ConformanceContext,
        feed_pattern: str,
        batch_size: int | None,
    ) -> None:
        """Offsets are committed at every pass and the tasks crash right after each commit: every record at or
        before a committed offset must have been delivered, or it is never sent again. Then the last tasks, resumed
        from the offsets committed, are fed :attr:`resumed_records` per source partition."""
        driver = make_driver(offset_flush_interval_ms=10)
        if batch_size is not None:
            driver.config[str(type(self).batch_size_key)] = batch_size
        self.heartbeats_on(driver, conformance_context, driver.tick_ms)
        if feed_pattern == "heartbeats-first":
            driver.tap.heartbeats_first = conformance_context.heartbeat_topic
        driver.tap.freeze_on_commit = True  # a task hands nothing over between its commit and the crash
        driver.start()
        bulk = {"bulk": self.feed_count, "heartbeats-first": 3 * self.feed_count}.get(feed_pattern, 0)
        self.expected = self.fed(driver, bulk) if bulk else []
        to_trickle = self.feed_count if feed_pattern == "trickle" else 0
        crashes: list[CrashPoint] = []
        seen, handed = len(driver.tap.commits), len(driver.tap.sent)
        last_new = driver.tap.now_ms()
        while len(crashes) < 4 * self.feed_count + 10 and driver.tap.now_ms() < CRASH_TEST_MS:
            if to_trickle:
                self.expected += self.fed(driver, 1)
                to_trickle -= 1
            driver.advance(driver.tick_ms)
            fresh, handed = driver.tap.sent[handed:], len(driver.tap.sent)
            if any(not s.heartbeat for s in fresh):
                last_new = driver.tap.now_ms()
            elif not to_trickle and driver.tap.now_ms() - last_new >= QUIET_MS:
                break
            commits = [c for c in driver.tap.commits[seen:] if c.source]
            seen = len(driver.tap.commits)
            if commits:
                crashes.append(CrashPoint(driver.tap.now_ms(), commits[-1], self.stored(driver)))
                driver.crash_tasks()
        driver.tap.freeze_on_commit = False
        driver.tap.frozen.clear()
        self.feed_every_partition(driver)
        self.settle(driver)
        self.check_invariants(driver, crashes)

    def test_offsets_resume_after_a_restart(self, driver: ConnectorDriver) -> None:
        self.start(driver)
        driver.advance(self.run_ms)
        before = self.sent_something(driver)
        driver.restart()
        committed = committed_offsets(driver, driver.tap.sent[:before])
        self.feed_every_partition(driver)
        assert_resumed(driver, before, committed, "restart")
        self.settle(driver)
        self.check_invariants(driver)

    def test_offsets_resume_after_a_crash(self, driver: ConnectorDriver) -> None:
        self.start(driver)
        driver.advance(self.run_ms)
        fed = self.fed(driver, self.feed_count)
        self.expected += fed
        self.hand_over(driver, fed, int(driver.worker.worker.config["offset.flush.interval.ms"]) // 2)
        before = self.sent_something(driver)  # sent, and (within the commit interval) not committed yet
        driver.crash_tasks()
        committed = committed_offsets(driver, driver.tap.sent[:before])
        driver.advance(self.run_ms)
        self.feed_every_partition(driver)
        assert_resumed(driver, before, committed, "crash")
        self.settle(driver)
        self.check_invariants(driver)

    def test_heartbeats_advance_and_are_committed(
        self, driver: ConnectorDriver, conformance_context: ConformanceContext
    ) -> None:
        if not self.heartbeats_on(driver, conformance_context, HEARTBEAT_INTERVAL_MS):
            pytest.skip("the source task does not implement produce_heartbeat_records")
        topic = conformance_context.heartbeat_topic
        self.start(driver)
        idle = 3 * HEARTBEAT_INTERVAL_MS + driver.worker.worker.config["offset.flush.interval.ms"] + driver.tick_ms
        driver.advance(self.run_ms + idle)
        beats = [s for s in driver.tap.sent if s.heartbeat]
        if not beats and self.advance_without_data(driver.config) is not NotImplemented:
            driver.advance(idle)  # a source may send heartbeats only once its position moves (as Debezium's do)
            beats = [s for s in driver.tap.sent if s.heartbeat]
        if not beats:
            raise g.GuaranteeViolation(
                "a source that implements produce_heartbeat_records sends heartbeats while idle",
                f"none in {self.run_ms + idle} ms; it sent:\n{g.describe(driver.tap.sent)}",
            )
        astray = [s for s in beats if s.topic != topic]
        if astray:
            raise g.GuaranteeViolation(
                "heartbeat records go to the heartbeat topic", f"{topic}, not:\n{g.describe(astray)}"
            )
        assert_idle_partitions_committed(driver)
        self.check_invariants(driver)
        before = self.stored(driver)
        if self.advance_without_data(driver.config) is not NotImplemented:  # it moved every partition's position
            driver.advance(idle)
            after = self.stored(driver)
            for partition, offset in sorted(before.items()):
                if after.get(partition) == offset:
                    sent = driver.tap.sent_by_partition().get(partition, [])
                    raise g.GuaranteeViolation(
                        "heartbeat offsets advance with the source's position while it sends no data",
                        f"partition {partition}: advance_without_data() moved the source, but the committed offset "
                        f"stayed {offset}; handed over for the partition:\n{g.describe(sent)}",
                    )
            assert_idle_partitions_committed(driver)
            self.check_invariants(driver)

    def test_exactly_once_wherever_a_worker_dies(
        self, conformance_backend: str, tmp_path: Path, transaction_boundary: str
    ) -> None:
        """(A connector that declares exactly-once support, or with ``exactly_once=True``.) On a simulated cluster
        with exactly-once source support, workers die at seeded points of their transactions while records are
        fed; a ``read_committed`` consumer must see no record twice and every fed record. Skipped, saying why, for
        a connector that does not declare the support, and for the connector boundary when it cannot define its
        own transactions."""
        if conformance_backend != "simulated":
            pytest.skip("the exactly-once check runs on the simulated cluster only (its broker's transactions)")
        connector = resolve_connector_class(self.connector)
        for seed in type(self).exactly_once_seeds:
            place = tmp_path / f"{tmp_path.name}-seed{seed}"  # a name no other test or seed uses
            place.mkdir()
            context = ConformanceContext.named(place)
            config = self.connector_config(context)
            strings = {key: str(value) for key, value in config.items() if value is not None}
            decision = exactly_once.decide(connector, strings, transaction_boundary, type(self).exactly_once)
            if not decision.runs:
                pytest.skip(decision.reason)
            props = exactly_once.connector_props(config, transaction_boundary, decision.declared)
            beats = self.heartbeat_settings(connector, context, EXACTLY_ONCE_HEARTBEAT_MS)
            props.update({key: str(value) for key, value in beats.items()})
            run = exactly_once.ExactlyOnceRun(
                exactly_once.class_path(self.connector),
                context.name,
                props,
                self.worker_config,
                seed=seed,
                crashes=type(self).exactly_once_crashes,
                feed=lambda count, props=props: self.fed_values(props, count),  # type: ignore[misc]
                feed_count=self.feed_count,
                read=self.read,
                heartbeat_topic=context.heartbeat_topic if beats else None,
            )
            try:
                run.run()
                run.check()
            finally:
                run.close()

    # ---- helpers ---------------------------------------------------------------------------------------------

    def heartbeats_on(self, driver: ConnectorDriver, context: ConformanceContext, interval_ms: int) -> bool:
        """Turn heartbeats on (every ``interval_ms``), when the task implements them; say whether it does."""
        settings = self.heartbeat_settings(resolve_connector_class(driver.connector), context, interval_ms)
        driver.config.update(settings)
        return bool(settings)

    def heartbeat_settings(self, connector: type[Any], context: ConformanceContext, interval_ms: int) -> dict[str, Any]:
        """The config keys that turn heartbeats on (every ``interval_ms``), or none when the task does not
        implement them."""
        if not implements_heartbeats(connector):
            return {}
        return {"heartbeat.interval.ms": interval_ms, "heartbeat.records.topic": context.heartbeat_topic}

    def stored(self, driver: ConnectorDriver) -> dict[str, str]:
        """The stored offset of every source partition handed over so far (canonical JSON), where one is stored."""
        found = committed_offsets(driver, driver.tap.sent)
        return {key: canonical(offset) for key, offset in found.items() if offset is not None}

    def settle(self, driver: ConnectorDriver) -> None:
        """Run, with no more faults, until every fed value has been handed over, or no data record has been handed
        over for a while (heartbeats may go on); then for one more commit interval."""
        flush = int(driver.worker.worker.config["offset.flush.interval.ms"])
        quiet = max(2_000, 3 * flush, 3 * int(driver.config.get("heartbeat.interval.ms", 0)))
        self.hand_over(driver, self.expected, quiet)
        driver.advance(flush + 2 * driver.tick_ms)

    def feed_every_partition(self, driver: ConnectorDriver) -> None:
        """Feed records until the tasks have handed over :attr:`resumed_records` data records, at least, for every
        source partition they handed any over for so far (or a few rounds found the source never spreads records
        to one of them); run until they are handed over, or nothing more is for a while."""
        start = len(driver.tap.sent)
        partitions = {s.partition_key for s in driver.tap.sent if not s.heartbeat}
        want = type(self).resumed_records
        for _ in range(FEED_ROUNDS):
            counts = Counter(s.partition_key for s in driver.tap.sent[start:] if not s.heartbeat)
            short = sum(max(0, want - counts[p]) for p in partitions) if partitions else want
            if not short:
                return
            fed = self.fed(driver, max(short, self.feed_count))
            self.expected += fed
            self.hand_over(driver, fed, QUIET_MS)
            partitions |= {s.partition_key for s in driver.tap.sent[start:] if not s.heartbeat}

    def hand_over(self, driver: ConnectorDriver, fed: Sequence[Fed], quiet_ms: int) -> None:
        """Run tick by tick until the tasks have handed over every value of ``fed`` (some perhaps already), or no data
        record for ``quiet_ms`` (a source that idles between polls needs more than a tick to take new records)."""
        wanted = {g.canonical_value(f.value) for f in fed}
        wanted -= {g.canonical_value(s.value) for s in driver.tap.sent if not s.heartbeat}  # handed over already
        seen, since = len(driver.tap.sent), driver.tap.now_ms()
        while wanted and driver.tap.now_ms() - since < quiet_ms:
            driver.advance(driver.tick_ms)
            fresh = [s for s in driver.tap.sent[seen:] if not s.heartbeat]
            seen = len(driver.tap.sent)
            if fresh:
                wanted -= {g.canonical_value(s.value) for s in fresh}
                since = driver.tap.now_ms()

    def delivered(self, driver: ConnectorDriver) -> list[Any]:
        """The values of every data record in the topics the tasks sent data to."""
        return [self.read(m) for topic in g.data_topics(driver.tap) for m in driver.worker.messages(topic)]

    def assert_every_fed_record_arrived(self, driver: ConnectorDriver, crashes: Sequence[CrashPoint]) -> None:
        """Every value fed arrived at least once; a lost one is reported with the first crash after it was fed."""
        have = {g.canonical_value(v) for v in self.delivered(driver)}
        lost = [f for f in self.expected if g.canonical_value(f.value) not in have]
        if not lost:
            return
        first = lost[0]
        crash = next((c for c in crashes if c.at_ms >= first.at_ms), None)
        resumed = any(sent.incarnation > 1 for sent in driver.tap.sent)
        if crash is not None:
            where = (
                f"the first crash after it was fed: {crash}\n  committed then by {crash.commit.task}: "
                + ", ".join(f"{canonical(p)} -> {canonical(o)}" for p, o in crash.commit.source)
                + "\n  a committed offset ran ahead of the records delivered: the task resumed past this one"
            )
        elif resumed:
            where = "no task crashed after it was fed: a task resumed from its committed offsets and skipped it"
        else:
            where = "no task crashed after it was fed, yet it was never sent"
        if driver.tap.heartbeats_first is not None:
            where += (
                "\n  (heartbeat acknowledgements reached the tasks a pass before data's, as on a real cluster:"
                " a heartbeat committed then must cover only records already handed over)"
            )
        raise g.GuaranteeViolation(
            "every record fed to the source arrives at least once (no committed offset runs ahead of delivery)",
            f"{len(lost)} of {len(self.expected)} fed records never arrived; the first, fed at {first.at_ms} ms: "
            f"{first.value!r}\n{where}\nnever arrived:\n{g.describe([f.value for f in lost])}\n"
            f"{len(crashes)} crashes, the first {min(len(crashes), 4)}:\n{g.describe(list(crashes[:4]))}\n"
            f"handed over:\n{g.describe(driver.tap.sent)}",
        )

    def sent_something(self, driver: ConnectorDriver) -> int:
        sent = len(driver.tap.sent)
        if not sent:
            raise AssertionError(
                f"the source sent no record in {self.run_ms} ms, so there is nothing to check; give the suite a "
                f"feed() that adds records to the source system\n{driver!r}"
            )
        return sent


def source_conformance(
    connector: type[SourceConnector] | str,
    config: ConfigSpec,
    *,
    feed: Callable[[Mapping[str, Any], int], Sequence[Any]] | None = None,
    provisioned: Callable[[Mapping[str, Any]], Any] | None = None,
    advance_without_data: Callable[[Mapping[str, Any]], None] | None = None,
    advance_log: Callable[[Mapping[str, Any]], None] | None = None,
    batch_size_key: str | None = None,
    bad_configs: Sequence[BadConfig] = (),
    worker_config: Mapping[str, Any] | None = None,
    kafka: bool = False,
    exactly_once: bool | None = None,
) -> type[SourceConformance]:
    """A pytest class checking ``connector`` (bind it to a ``Test*`` name). ``config`` is the connector config, or
    a callable given a :class:`ConformanceContext`; the probes get the config the connector was given. ``feed``
    returns the values it added; ``advance_log`` is the old name of ``advance_without_data``; ``batch_size_key``
    names the connector's records-per-poll key (see :attr:`SourceConformance.batch_size_key`); ``exactly_once``
    asks for the exactly-once check (see :attr:`SourceConformance.exactly_once`)."""
    if advance_without_data is not None and advance_log is not None:
        raise TypeError("give advance_without_data or its old name advance_log, not both")
    probes = {"feed": feed, "provisioned": provisioned, "advance_without_data": advance_without_data or advance_log}
    suite = suite_class(SourceConformance, connector, config, probes, bad_configs, worker_config, kafka)
    suite.batch_size_key = batch_size_key
    suite.exactly_once = exactly_once
    return suite
