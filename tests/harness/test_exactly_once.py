"""The conformance suite's exactly-once check: workers of a simulated cluster die at every kind of kill point; a
source that resumes from its committed offsets passes, one that resumes elsewhere fails naming the records it wrote
twice; a connector that does not declare the support is skipped, saying why, unless the suite is asked to check it.
The planted-bug gate of test_conformance.py runs the check through the whole suite."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import pytest

from headwater.harness import GuaranteeViolation
from headwater.harness.exactly_once import (
    BOUNDARIES,
    DUPLICATED,
    ExactlyOnceRun,
    boundaries,
    class_path,
    connector_props,
    decide,
)
from headwater.harness.guarantees import json_value
from headwater.harness.kill_points import AFTER_COMMIT, BEFORE_COMMIT, KINDS, MID, START, KillPlan
from headwater.runtime.clock import VirtualClock
from headwater.sdk import SourceTask
from headwater.sdk.transactions import ExactlyOnceSupport
from support.counting_source import CountingSourceConnector, CountingSourceTask

pytest_plugins = ["pytester"]


class ExactCountingSource(CountingSourceConnector):
    """Counts on, resuming after its committed offset: exactly once, and it says so."""

    def exactly_once_support(self, config: Mapping[str, str]) -> ExactlyOnceSupport:
        return ExactlyOnceSupport.SUPPORTED


class RecountingSource(ExactCountingSource):
    """Says it delivers exactly once, but resumes *at* its committed offset, so the last committed record of each
    task is written again by every new generation."""

    def task_class(self) -> type[SourceTask]:
        return RecountingTask


class RecountingTask(CountingSourceTask):
    def start(self, config: Mapping[str, str]) -> None:
        super().start(config)
        self.next = max(self.next - 1, 0)


def run(connector: type[CountingSourceConnector], boundary: str, seed: int) -> ExactlyOnceRun:
    props = connector_props({"topic": "counted", "tasks.max": 2}, boundary, declared=True)
    return ExactlyOnceRun(
        class_path(connector),
        "counting",
        props,
        {"offset.flush.interval.ms": 1_000},
        seed=seed,
        crashes=4,
        feed=lambda count: [],
        feed_count=0,
        read=json_value,
    )


def checked(connector: type[CountingSourceConnector], boundary: str, seed: int) -> ExactlyOnceRun:
    found = run(connector, boundary, seed)
    try:
        found.run()
        found.check()
    finally:
        found.close()
    return found


@pytest.mark.parametrize("boundary", ["poll", "interval"])
def test_a_source_that_resumes_from_its_offsets_passes_deaths_at_every_kind_of_point(boundary: str) -> None:
    kinds: set[str] = set()
    for seed in (0, 1, 2):
        done = checked(ExactCountingSource, boundary, seed)
        assert done.plan.deaths, f"seed {seed}: nobody died: {done.plan!r}"
        kinds |= {death.kind for death in done.plan.deaths}
        seen = [json.loads(m.value or b"null") for m, _ in done.visible()]
        assert len(seen) > 20, f"seed {seed}: too few records to say anything: {seen}"
    assert kinds == set(KINDS), f"the seeds reached only {sorted(kinds)}"


def test_a_source_that_resumes_at_its_committed_offset_fails_naming_the_records_written_twice() -> None:
    found = run(RecountingSource, "poll", 0)
    try:
        found.run()
        with pytest.raises(GuaranteeViolation) as raised:
            found.check()
    finally:
        found.close()
    assert raised.value.guarantee == DUPLICATED
    message = str(raised.value)
    assert "transaction.boundary=poll, seed 0:" in message
    assert '{"connector": "counting", "seq": ' in message and ": 2 times, at counted@" in message
    assert "its epoch began at" in message and "when the committed offsets were:" in message
    assert "where the workers died (" in message and "worker-" in message


def test_a_death_plan_is_drawn_from_its_seed_and_covers_every_kind_of_point() -> None:
    clock = VirtualClock()
    plans = [KillPlan.drawn(seed, 4, clock) for seed in range(5)]
    assert [p.kills for p in plans] == [KillPlan.drawn(seed, 4, clock).kills for seed in range(5)]
    assert len({tuple(p.kills) for p in plans}) > 1, "different seeds draw different plans"
    for plan in plans:
        assert sorted(kill.kind for kill in plan.kills) == sorted([START, MID, BEFORE_COMMIT, AFTER_COMMIT])
        assert plan.kills[0].kind != START, "the first death comes before any rebalance"
    assert [kill.kind for kill in KillPlan.drawn(0, 2, clock).kills] != [START] * 2


def test_the_connector_boundary_is_checked_for_a_connector_that_answers_whether_it_can_define_them() -> None:
    from conformance_samples import ExactLogSource, LogSource

    assert boundaries(ExactLogSource) == BOUNDARIES
    assert boundaries(LogSource) == boundaries(ExactCountingSource) == ("poll", "interval")


def test_declared_support_decides_whether_the_check_runs_and_the_skip_says_why() -> None:
    config = {"topic": "t"}
    assert decide(ExactCountingSource, config, "poll", None).runs
    assert decide(ExactCountingSource, config, "poll", None).declared
    silent = decide(CountingSourceConnector, config, "poll", None)
    assert not silent.runs
    assert "CountingSourceConnector.exactly_once_support(config) returns None" in silent.reason
    assert "exactly_once=True" in silent.reason
    asked = decide(CountingSourceConnector, config, "poll", True)
    assert asked.runs and not asked.declared, "asked for, it runs, with exactly.once.support=requested"
    refused = decide(ExactCountingSource, config, "poll", False)
    assert not refused.runs and "exactly_once=False" in refused.reason
    boundary = decide(ExactCountingSource, config, "connector", None)
    assert not boundary.runs
    assert "can_define_transaction_boundaries(config) answers ConnectorTransactionBoundaries.UNSUPPORTED" in (
        boundary.reason
    )


def test_a_connector_the_workers_cannot_find_by_name_is_refused_naming_it() -> None:
    local = type("LocalSource", (ExactCountingSource,), {})
    with pytest.raises(TypeError, match=r"LocalSource on distributed workers.*define the class at module level"):
        class_path(local)


SUITES = """
from conformance_samples import ExactLogSource, LogSource, feed_log
from headwater.harness import source_conformance

def log_config(context):
    return {"log": f"log-{context.tmp_path.name}", "topic": context.topic}

TestSilent = source_conformance(LogSource, log_config, feed=feed_log)
TestAsked = source_conformance(LogSource, log_config, feed=feed_log, exactly_once=True)
TestRefused = source_conformance(ExactLogSource, log_config, feed=feed_log, exactly_once=False)
"""


def test_the_suite_skips_the_check_saying_why_or_runs_it_when_asked(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_suites=SUITES)  # conformance_samples: the module conftest.py loaded
    result = pytester.runpytest("-p", "no:randomly", "-rs", "-k", "exactly_once and (poll or connector)")
    outcomes: dict[str, Any] = result.parseoutcomes()
    text = result.stdout.str()
    assert outcomes.get("passed") == 1, text  # TestAsked[poll]: LogSource resumes from its offsets
    assert outcomes.get("skipped") == 3, text  # TestSilent[poll], TestRefused[poll] and [connector]
    assert "LogSource.exactly_once_support(config) returns None (it does not say)" in text
    assert "the suite was given exactly_once=False" in text
    collected = pytester.runpytest("-p", "no:randomly", "--collect-only", "-q", "-k", "exactly_once").stdout.lines
    tests = [line.split("::", 1)[1] for line in collected if "::" in line]
    assert sorted(tests) == sorted(
        [
            f"{suite}::test_exactly_once_wherever_a_worker_dies[simulated-{b}]"
            for suite in ("TestSilent", "TestAsked")
            for b in ("poll", "interval")
        ]
        + [f"TestRefused::test_exactly_once_wherever_a_worker_dies[simulated-{b}]" for b in BOUNDARIES]
    ), "the connector boundary is a case only for a connector that answers can_define_transaction_boundaries"
