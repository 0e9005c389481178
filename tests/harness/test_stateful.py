"""The stateful test: a correct source and a correct sink hold every guarantee through 200 random fault schedules
each (counted), and a source that commits offsets it never sent, or a sink that commits records it never wrote, is
caught."""

from __future__ import annotations

import itertools
import unittest
from collections import Counter
from collections.abc import Mapping
from typing import Any, ClassVar

import conformance_samples as samples
import pytest
from hypothesis import Phase
from hypothesis.stateful import run_state_machine_as_test

from headwater.harness import GuaranteeViolation, SinkMachine, SourceMachine, machine_settings, machine_test

NAMES = itertools.count()
EXAMPLES: Counter[str] = Counter()
"""How many examples each machine ran (each example sets a machine up once)."""


class LogSourceMachine(SourceMachine):
    connector = samples.LogSource
    worker_config: ClassVar[Mapping[str, Any]] = {"offset.flush.interval.ms": 500, "heartbeat.interval.ms": 700}

    def setup(self) -> dict[str, str]:
        EXAMPLES[type(self).__name__] += 1
        self.log = f"log-{next(NAMES)}"
        return {"log": self.log, "topic": "data", "partitions": "2", "tasks.max": "2"}

    def write(self, value: Any) -> None:
        samples.LOGS.setdefault(f"{self.log}/{len(self.expected) % 2}", []).append(value)

    def cleanup(self) -> None:
        for n in range(2):
            samples.LOGS.pop(f"{self.log}/{n}", None)
        samples.SLOTS.discard(self.log)


class SkippingSourceMachine(LogSourceMachine):
    """A source whose records carry the offset of the record after them, which it has not sent."""

    connector = samples.SkippingSource
    worker_config: ClassVar[Mapping[str, Any]] = {"offset.flush.interval.ms": 500}


class SharedOffsetSourceMachine(LogSourceMachine):
    """A source that keeps one offset map per log and updates it in place."""

    connector = samples.SharedOffsetSource


class BufferedHeartbeatMachine(LogSourceMachine):
    """A source whose heartbeats carry the position of the last record read into its buffer, not handed over."""

    connector = samples.BufferedHeartbeatSource
    worker_config: ClassVar[Mapping[str, Any]] = {"offset.flush.interval.ms": 500, "heartbeat.interval.ms": 50}

    def setup(self) -> dict[str, str]:
        return {**super().setup(), "batch.size": "1"}


class PagedResumeMachine(LogSourceMachine):
    """A source whose resumed tasks skip the record after every page of three."""

    connector = samples.PagedResumeSource


class TableSinkMachine(SinkMachine):
    connector = samples.TableSink
    batch = 2

    def setup(self) -> dict[str, Any]:
        EXAMPLES[type(self).__name__] += 1
        self.table = f"table-{next(NAMES)}"
        return {"table": self.table, "batch.size": self.batch}

    def written_values(self) -> list[Any]:
        return samples.table({"table": self.table})

    def cleanup(self) -> None:
        samples.TABLES.pop(self.table, None)
        samples.STAGING.discard(self.table)


class EagerSinkMachine(TableSinkMachine):
    """A sink that commits what it was given before writing it (it writes only batches of 100)."""

    connector = samples.EagerSink
    batch = 100


@pytest.mark.parametrize("machine", [LogSourceMachine, TableSinkMachine], ids=["source", "sink"])
def test_a_correct_connector_keeps_every_guarantee_through_200_random_schedules(
    machine: type[SourceMachine | SinkMachine],
) -> None:
    before = EXAMPLES[machine.__name__]
    run_state_machine_as_test(machine, settings=machine_settings(max_examples=200))
    assert EXAMPLES[machine.__name__] - before >= 200


def test_machine_test_makes_the_test_case_an_author_keeps() -> None:
    case = machine_test(LogSourceMachine)
    assert issubclass(case, unittest.TestCase)
    assert case.settings.max_examples == 200 and case.settings.deadline is None  # type: ignore[attr-defined]
    assert Phase.explain not in case.settings.phases and Phase.shrink in case.settings.phases  # type: ignore[attr-defined]


def search(machine: type[SourceMachine | SinkMachine]) -> None:
    """Run ``machine`` as CI runs it, minus shrinking (minutes of runs that only make the report shorter)."""
    phases = [Phase.explicit, Phase.reuse, Phase.generate]
    run_state_machine_as_test(machine, settings=machine_settings(200, database=None, derandomize=True, phases=phases))


def test_finds_a_source_that_commits_offsets_it_never_sent() -> None:
    with pytest.raises(GuaranteeViolation) as caught:
        search(SkippingSourceMachine)
    message = str(caught.value)
    assert caught.value.guarantee == "every record is delivered at least once (source to Kafka)", message
    assert "never arrived" in message and "commits:" in message and "handed over:" in message


def test_finds_a_sink_that_commits_records_it_never_wrote() -> None:
    with pytest.raises(GuaranteeViolation) as caught:
        search(EagerSinkMachine)
    message = str(caught.value)
    assert caught.value.guarantee == "a committed sink offset covers only records the sink has written", message
    assert "but the sink held none of these records then" in message


def test_finds_a_source_that_changes_an_offset_map_it_handed_over() -> None:
    with pytest.raises(GuaranteeViolation) as caught:
        search(SharedOffsetSourceMachine)
    message = str(caught.value)
    assert caught.value.guarantee == "a source offset handed over is never changed afterwards", message
    assert "give each record an offset map of its own" in message


def test_finds_a_source_whose_heartbeat_runs_ahead_of_its_buffered_records() -> None:
    with pytest.raises(GuaranteeViolation) as caught:
        search(BufferedHeartbeatMachine)
    message = str(caught.value)
    assert caught.value.guarantee == "a heartbeat reports only the position of records already handed over", message
    assert "which the heartbeat's position already covered" in message


def test_finds_a_source_that_loses_records_every_few_once_resumed() -> None:
    with pytest.raises(GuaranteeViolation) as caught:
        search(PagedResumeMachine)
    assert caught.value.guarantee == "every record is delivered at least once (source to Kafka)", str(caught.value)
