"""The conformance suite for source connectors: offsets resume after a restart and after a crash, heartbeats
advance and are committed, plus what every connector is checked for (see :mod:`headwater.harness.conformance`)."""

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
from headwater.harness.tap import Sent, canonical
from headwater.runtime.plugins import implements_hook, resolve_connector_class
from headwater.sdk.connector import SourceConnector
from headwater.sdk.records import SourceOffset

HEARTBEAT_INTERVAL_MS = 1_000


class SourceConformance(Conformance):
    """Subclass it with ``connector`` and ``config`` (or call :func:`source_conformance`); override :meth:`feed`,
    :meth:`provisioned` and :meth:`advance_log` to turn on the checks that need them."""

    offset_order: ClassVar[Callable[[SourceOffset], Any] | None] = None
    """Orders a partition's offsets; by default, by when the task first handed each over."""
    feed_count: ClassVar[int] = 5

    def feed(self, config: Mapping[str, Any], count: int) -> None:
        """Add ``count`` new records to the source system. The default adds none (a source that makes its own)."""

    def advance_log(self, config: Mapping[str, Any]) -> Any:
        """Move the source's position without data for the connector (a write to a table it does not capture), so
        its heartbeats must move the committed offset. ``NotImplemented`` skips that check."""
        return NotImplemented

    def start(self, driver: ConnectorDriver) -> None:
        driver.start()
        self.feed(driver.config, self.feed_count)

    def check_invariants(self, driver: ConnectorDriver) -> None:
        assert_running(driver)
        g.assert_committed_offsets_were_sent(driver.tap)
        g.assert_source_offsets_monotonic(driver.tap, type(self).offset_order)
        g.assert_stop_hooks_clean(driver.tap)

    # ---- the tests -------------------------------------------------------------------------------------------

    def test_offsets_resume_after_a_restart(self, driver: ConnectorDriver) -> None:
        self.start(driver)
        driver.advance(self.run_ms)
        before = self.sent_something(driver)
        driver.restart()
        committed = committed_offsets(driver, driver.tap.sent[:before])
        self.feed(driver.config, self.feed_count)
        driver.advance(self.run_ms)
        assert_resumed(driver, before, committed, "restart")
        if type(self).feed is not SourceConformance.feed and len(driver.tap.sent) == before:
            raise g.GuaranteeViolation(
                "a restarted task goes on reading after its committed offset",
                f"feed() added {self.feed_count} records after the restart, but the task sent none; committed: "
                f"{ {p: canonical(o) for p, o in committed.items()} }",
            )
        self.check_invariants(driver)

    def test_offsets_resume_after_a_crash(self, driver: ConnectorDriver) -> None:
        self.start(driver)
        driver.advance(self.run_ms)
        self.feed(driver.config, self.feed_count)
        driver.advance(5 * driver.tick_ms)  # sent, and (within the commit interval) not committed yet
        before = self.sent_something(driver)
        driver.crash_tasks()
        committed = committed_offsets(driver, driver.tap.sent[:before])
        driver.advance(self.run_ms)
        assert_resumed(driver, before, committed, "crash")
        self.check_invariants(driver)

    def test_heartbeats_advance_and_are_committed(
        self, driver: ConnectorDriver, conformance_context: ConformanceContext
    ) -> None:
        task = resolve_connector_class(driver.connector)().task_class()()
        if not implements_hook(task, "produce_heartbeat_records"):
            pytest.skip("the source task does not implement produce_heartbeat_records")
        topic = conformance_context.heartbeat_topic
        driver.config.update({"heartbeat.interval.ms": HEARTBEAT_INTERVAL_MS, "heartbeat.records.topic": topic})
        self.start(driver)
        driver.advance(self.run_ms + 3 * HEARTBEAT_INTERVAL_MS)
        beats = [s for s in driver.tap.sent if s.heartbeat]
        if not beats:
            raise g.GuaranteeViolation(
                "a source that implements produce_heartbeat_records sends heartbeats while idle",
                f"none in {self.run_ms + 3 * HEARTBEAT_INTERVAL_MS} ms; it sent:\n{g.describe(driver.tap.sent)}",
            )
        astray = [s for s in beats if s.topic != topic]
        if astray:
            raise g.GuaranteeViolation(
                "heartbeat records go to the heartbeat topic", f"{topic}, not:\n{g.describe(astray)}"
            )
        committed = assert_heartbeat_committed(driver, beats)
        assert_running(driver)
        if self.advance_log(driver.config) is not NotImplemented:  # it moved the source's position
            driver.advance(3 * HEARTBEAT_INTERVAL_MS)
            moved = assert_heartbeat_committed(driver, [s for s in driver.tap.sent if s.heartbeat])
            if canonical(moved) == canonical(committed):
                raise g.GuaranteeViolation(
                    "heartbeat offsets advance with the source's position while it sends no data",
                    f"advance_log() moved the source, but the committed offset stayed {canonical(committed)}; "
                    f"heartbeats:\n{g.describe([s for s in driver.tap.sent if s.heartbeat])}",
                )
        self.check_invariants(driver)

    def sent_something(self, driver: ConnectorDriver) -> int:
        sent = len(driver.tap.sent)
        if not sent:
            raise AssertionError(
                f"the source sent no record in {self.run_ms} ms, so there is nothing to check; give the suite a "
                f"feed() that adds records to the source system\n{driver!r}"
            )
        return sent


def committed_offsets(driver: ConnectorDriver, sent: Sequence[Sent]) -> dict[str, SourceOffset | None]:
    """The stored offset of every source partition in ``sent``, by canonical partition."""
    partitions = {canonical(s.partition): s.partition for s in sent}
    return {key: driver.worker.source_offset(driver.name, p) for key, p in partitions.items()}


def assert_resumed(
    driver: ConnectorDriver, before: int, committed: Mapping[str, SourceOffset | None], event: str
) -> None:
    """After the restart (or crash) that happened once ``before`` records were handed over, each partition sent
    again no offset it had committed, and every offset it had sent after its committed one."""
    sent_before = driver.tap.sent_by_partition(before)
    after = [s for s in driver.tap.sent[before:] if not s.heartbeat]
    for partition, records in sent_before.items():
        offsets = [canonical(s.offset) for s in records]
        mark = committed.get(partition)
        key = None if mark is None else canonical(mark)
        cut = len(offsets) - offsets[::-1].index(key) if key in offsets else 0
        done = set(offsets[:cut]) - set(offsets[cut:])
        again = [s for s in after if canonical(s.partition) == partition]
        repeated = [s for s in again if canonical(s.offset) in done]
        where = f"partition {partition}: committed {canonical(mark)} at the {event}"
        if repeated:
            raise g.GuaranteeViolation(
                f"a task resumes after its committed offset (after a {event})",
                f"{where}, yet after it the task sent again:\n{g.describe(repeated)}\n"
                f"before it:\n{g.describe(records)}",
            )
        resent = {canonical(s.offset) for s in again}
        lost = [s for s in records[cut:] if canonical(s.offset) not in resent and not s.heartbeat]
        if lost:
            raise g.GuaranteeViolation(
                f"records handed over but not committed are sent again after a {event} (at-least-once)",
                f"{where}; never sent again:\n{g.describe(lost)}\nsent after the {event}:\n{g.describe(again)}",
            )


def assert_heartbeat_committed(driver: ConnectorDriver, beats: Sequence[Sent]) -> SourceOffset | None:
    """Once a commit interval has passed, the last heartbeat's partition holds one of the heartbeats' offsets."""
    driver.advance(driver.worker.worker.config["offset.flush.interval.ms"] + driver.tick_ms)
    last = beats[-1]
    stored = driver.worker.source_offset(driver.name, last.partition)
    offered = {canonical(s.offset) for s in driver.tap.sent if s.heartbeat and s.partition == last.partition}
    if canonical(stored) not in offered:
        raise g.GuaranteeViolation(
            "heartbeat offsets are committed",
            f"partition {canonical(last.partition)} holds {canonical(stored)}, no heartbeat's offset; heartbeats:\n"
            f"{g.describe(beats)}",
        )
    return stored


def source_conformance(
    connector: type[SourceConnector] | str,
    config: ConfigSpec,
    *,
    feed: Callable[[Mapping[str, Any], int], None] | None = None,
    provisioned: Callable[[Mapping[str, Any]], Any] | None = None,
    advance_log: Callable[[Mapping[str, Any]], None] | None = None,
    bad_configs: Sequence[BadConfig] = (),
    worker_config: Mapping[str, Any] | None = None,
    kafka: bool = False,
) -> type[SourceConformance]:
    """A pytest class checking ``connector`` (bind it to a ``Test*`` name). ``config`` is the connector config, or
    a callable given a :class:`ConformanceContext`; the probes get the config the connector was given."""
    probes = {"feed": feed, "provisioned": provisioned, "advance_log": advance_log}
    return suite_class(SourceConformance, connector, config, probes, bad_configs, worker_config, kafka)
