"""The conformance suite for sink connectors: the ``pre_commit`` contract, commits only of what was written, and
delivery resuming after a restart and after a crash, plus what every connector is checked for (see
:mod:`headwater.harness.conformance`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar

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
from headwater.sdk.connector import SinkConnector
from headwater.sdk.records import TopicPartition

COMMIT_TIMEOUT_MS = 60_000


class SinkConformance(Conformance):
    """Subclass it with ``connector`` and ``config`` (or call :func:`sink_conformance`); override :meth:`written`
    and :meth:`provisioned` to turn on the checks that need them. The suite writes ``records`` JSON values
    ``{"conformance": n}`` (see :meth:`record_value`) into a topic of ``partitions`` partitions, given to the
    connector as ``topics``."""

    partitions: ClassVar[int] = 2
    records: ClassVar[int] = 10

    def written(self, config: Mapping[str, Any]) -> Any:
        """The values the sink's external system holds now, as the records carried them (decoded JSON), in any
        order. ``NotImplemented`` checks against what ``put`` was given instead."""
        return NotImplemented

    def record_value(self, n: int) -> Any:
        """The value of the ``n``-th record the suite writes into the topic."""
        return {"conformance": n}

    def connector_config(self, context: ConformanceContext) -> dict[str, Any]:
        config = super().connector_config(context)
        if "topics" not in config and "topics.regex" not in config:
            config["topics"] = context.topic
        return config

    def start(self, driver: ConnectorDriver) -> None:
        self.produced: list[Any] = []
        """The values this test wrote into the topic, in order."""
        driver.worker.create_topic(self.topic(driver), self.partitions)
        self.produce(driver, self.records)
        driver.start()

    # ---- the tests -------------------------------------------------------------------------------------------

    def test_pre_commit_contract_holds(self, driver: ConnectorDriver) -> None:
        self.start(driver)
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

    def ends(self, driver: ConnectorDriver) -> dict[TopicPartition, int]:
        """The end offset of each partition written to."""
        topic, count, partitions = self.topic(driver), len(self.produced), self.partitions
        return {TopicPartition(topic, p): len(range(p, count, partitions)) for p in range(min(count, partitions))}

    def commit_everything(self, driver: ConnectorDriver) -> None:
        """Run until every record of the topic is committed."""
        ends = self.ends(driver)
        self.wait_for_commits(
            driver, lambda committed: all(committed.get(tp, 0) >= end for tp, end in ends.items()), f"all of {ends}"
        )

    def wait_for_commits(
        self, driver: ConnectorDriver, done: Callable[[dict[TopicPartition, int]], bool], what: str
    ) -> None:
        """Run until the group's committed offsets satisfy ``done``; fail naming the guarantee when they never do."""
        try:
            driver.run_until(lambda: done(driver.worker.group_offsets(driver.name)), COMMIT_TIMEOUT_MS, what)
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

    def values(self, driver: ConnectorDriver) -> list[Any]:
        found = self.written(driver.config)
        return [r.value for r in driver.tap.put_records()] if found is NotImplemented else list(found)

    def check_written(self, driver: ConnectorDriver) -> None:
        assert_running(driver)
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
