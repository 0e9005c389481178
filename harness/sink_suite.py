"""The conformance suite for sink connectors: the ``pre_commit`` contract, commits only of what was written, and
delivery resuming after a restart and after a crash, plus what every connector is checked for (see
:mod:`headwater.harness.conformance`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar

import pytest

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
from headwater.harness.tap import Commit
from headwater.sdk.connector import SinkConnector
from headwater.sdk.records import TopicPartition

COMMIT_TIMEOUT_MS = 60_000


PRODUCE_PATTERNS = ("bulk", "trickle")
"""How a test writes its records: all before the connector starts, or one per pass of the task loops."""


class SinkConformance(Conformance):
    """Subclass it with ``connector`` and ``config`` (or call :func:`sink_conformance`); override :meth:`written`
    and :meth:`provisioned` to turn on the checks that need them. The suite writes ``records`` JSON values
    ``{"conformance": n}`` (see :meth:`record_value`) into a topic of ``partitions`` partitions, given to the
    connector as ``topics``.

    At every commit, while the task loop waits, the suite reads the sink's store through :meth:`written` and checks
    that every record below each committed offset is there: a sink that commits what it has only buffered fails at
    that commit, not only if it is still missing at the end."""

    partitions: ClassVar[int] = 2
    records: ClassVar[int] = 10

    def written(self, config: Mapping[str, Any]) -> Any:
        """The values the sink's external system holds now, as the records carried them (decoded JSON), in any
        order. ``NotImplemented`` checks against what ``put`` was given instead, which cannot tell a record
        written from one only buffered: give a reader."""
        return NotImplemented

    def record_value(self, n: int) -> Any:
        """The value of the ``n``-th record the suite writes into the topic."""
        return {"conformance": n}

    def connector_config(self, context: ConformanceContext) -> dict[str, Any]:
        config = super().connector_config(context)
        if "topics" not in config and "topics.regex" not in config:
            config["topics"] = context.topic
        return config

    def pytest_generate_tests(self, metafunc: pytest.Metafunc) -> None:
        super().pytest_generate_tests(metafunc)
        if "produce_pattern" in metafunc.fixturenames:
            metafunc.parametrize("produce_pattern", PRODUCE_PATTERNS)

    def start(self, driver: ConnectorDriver, pattern: str = "trickle") -> None:
        """Create the topic, watch every commit, start the connector and write :attr:`records` records."""
        self.produced: list[Any] = []
        """The values this test wrote into the topic, in order."""
        self.violation: g.GuaranteeViolation | None = None
        """The first commit that covered a record the sink had not written."""
        driver.worker.create_topic(self.topic(driver), self.partitions)
        driver.tap.on_commit.append(lambda commit: self.check_commit(driver, commit))
        if pattern == "bulk":
            self.produce(driver, self.records)
        driver.start()
        if pattern == "trickle":
            self.trickle(driver, self.records)

    # ---- the tests -------------------------------------------------------------------------------------------

    def test_every_commit_covers_only_written_records(
        self, make_driver: Callable[..., ConnectorDriver], produce_pattern: str
    ) -> None:
        """Offsets are committed at every pass of the loop, so commits fall between writes."""
        driver = make_driver(offset_flush_interval_ms=10)
        self.start(driver, produce_pattern)
        self.commit_everything(driver)
        g.assert_pre_commit_contract(driver.tap)
        self.check_written(driver)

    def test_offsets_resume_after_a_restart(self, driver: ConnectorDriver) -> None:
        self.start(driver)
        self.commit_everything(driver)
        driver.restart()
        self.resume_check(driver, "restart")

    def test_offsets_resume_after_a_crash(self, driver: ConnectorDriver) -> None:
        self.start(driver)
        self.wait_for_commits(driver, bool, "a first commit")
        self.produce(driver, self.records)
        driver.advance(5 * driver.tick_ms)  # consumed and, within the commit interval, not committed yet
        driver.crash_tasks()
        self.resume_check(driver, "crash")

    def test_revocation_loses_nothing(self, driver: ConnectorDriver) -> None:
        """Partitions taken away while records are buffered are delivered again, and those redelivered records
        are written, not skipped as seen before."""
        self.start(driver, "bulk")
        for _ in range(3):
            self.trickle(driver, self.records // 2)
            driver.rebalance()
        self.commit_everything(driver)
        g.assert_pre_commit_contract(driver.tap)
        self.check_written(driver)

    # ---- helpers ---------------------------------------------------------------------------------------------

    def topic(self, driver: ConnectorDriver) -> str:
        return str(driver.config["topics"]).split(",")[0].strip()

    def produce(self, driver: ConnectorDriver, count: int) -> None:
        """Write the next ``count`` records, round-robin over the partitions (counted here: the topic is this
        test's alone, and a just-created topic on a real broker may not answer reads yet)."""
        topic = self.topic(driver)
        first = len(self.produced)
        for n in range(first, first + count):
            driver.worker.produce(topic, self.record_value(n), partition=n % self.partitions)
            self.produced.append(self.record_value(n))

    def trickle(self, driver: ConnectorDriver, count: int) -> None:
        """Write ``count`` records one per pass of the task loops, so commits fall between them."""
        for _ in range(count):
            self.produce(driver, 1)
            driver.advance(driver.tick_ms)
            self.raise_violation()

    def ends(self, driver: ConnectorDriver) -> dict[TopicPartition, int]:
        """The end offset of each partition written to."""
        topic, count, partitions = self.topic(driver), len(self.produced), self.partitions
        return {TopicPartition(topic, p): len(range(p, count, partitions)) for p in range(min(count, partitions))}

    def record_at(self, tp: TopicPartition, offset: int) -> Any:
        """The value this test wrote at ``offset`` of ``tp`` (round-robin, in order, on a topic of its own)."""
        n = offset * self.partitions + tp.partition
        return self.produced[n] if n < len(self.produced) else None

    def check_commit(self, driver: ConnectorDriver, commit: Commit) -> None:
        """At ``commit``: every record below each committed offset is in the sink's store (first failure kept)."""
        if self.violation is not None or not commit.sink:
            return
        topic = self.topic(driver)

        def below(tp: TopicPartition, committed: int) -> list[tuple[int, Any]]:
            return [(offset, self.record_at(tp, offset)) for offset in range(committed)] if tp.topic == topic else []

        try:
            g.assert_commit_written(commit, self.values(driver), below)
        except g.GuaranteeViolation as violation:
            self.violation = violation

    def raise_violation(self) -> None:
        if self.violation is not None:
            raise self.violation

    def commit_everything(self, driver: ConnectorDriver) -> None:
        """Run until every record of the topic is committed."""
        ends = self.ends(driver)
        self.wait_for_commits(
            driver, lambda committed: all(committed.get(tp, 0) >= end for tp, end in ends.items()), f"all of {ends}"
        )

    def wait_for_commits(
        self, driver: ConnectorDriver, done: Callable[[dict[TopicPartition, int]], bool], what: str
    ) -> None:
        """Run until the group's committed offsets satisfy ``done``; fail naming the guarantee when they never do,
        or as soon as a commit covers a record the sink has not written."""
        try:
            driver.run_until(
                lambda: self.violation is not None or done(driver.worker.group_offsets(driver.name)),
                COMMIT_TIMEOUT_MS,
                what,
            )
        except AssertionError:
            g.assert_pre_commit_contract(driver.tap)  # the likelier cause, when it broke
            calls = [
                f"{p.task} at {p.at_ms} ms: given {p.current}, returned {p.returned}" for p in driver.tap.pre_commits
            ]
            raise g.GuaranteeViolation(
                "a sink commits every record it is given, eventually",
                f"after {COMMIT_TIMEOUT_MS} ms the group holds {driver.worker.group_offsets(driver.name)}, waiting "
                f"for {what}; pre_commit calls:\n{g.describe(calls)}",
            ) from None
        self.raise_violation()

    def values(self, driver: ConnectorDriver) -> list[Any]:
        found = self.written(driver.config)
        return [r.value for r in driver.tap.put_records()] if found is NotImplemented else list(found)

    def check_written(self, driver: ConnectorDriver) -> None:
        assert_running(driver)
        self.raise_violation()
        values = self.values(driver)
        g.assert_committed_records_written(driver.tap, values)
        g.assert_at_least_once(self.produced, values, "Kafka to the sink", driver.tap)
        g.assert_stop_hooks_clean(driver.tap)

    def resume_check(self, driver: ConnectorDriver, event: str) -> None:
        """After ``event``: every record at or above the committed offsets is put again, and all end up written."""
        committed = driver.worker.group_offsets(driver.name)
        puts = len(driver.tap.puts)
        self.produce(driver, self.records)
        self.commit_everything(driver)
        again = {(r.topic_partition, r.offset) for _, _, records in driver.tap.puts[puts:] for r in records}
        missing = [
            (tp, offset)
            for tp, end in self.ends(driver).items()
            for offset in range(committed.get(tp, 0), end)
            if (tp, offset) not in again
        ]
        if missing:
            raise g.GuaranteeViolation(
                f"records not committed before a {event} are delivered again after it (at-least-once)",
                f"committed at the {event}: {committed}; never put again:\n"
                + g.describe([f"{tp}@{offset}" for tp, offset in missing]),
            )
        self.check_written(driver)


def sink_conformance(
    connector: type[SinkConnector] | str,
    config: ConfigSpec,
    *,
    written: Callable[[Mapping[str, Any]], Sequence[Any]] | None = None,
    provisioned: Callable[[Mapping[str, Any]], Any] | None = None,
    bad_configs: Sequence[BadConfig] = (),
    worker_config: Mapping[str, Any] | None = None,
    kafka: bool = False,
) -> type[SinkConformance]:
    """A pytest class checking ``connector`` (bind it to a ``Test*`` name). ``config`` is the connector config, or
    a callable given a :class:`ConformanceContext`; the probes get the config the connector was given."""
    probes = {"written": written, "provisioned": provisioned}
    return suite_class(SinkConformance, connector, config, probes, bad_configs, worker_config, kafka)
