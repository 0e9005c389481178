"""The conformance suite: a source and a sink that keep the contract pass it, on the simulated worker and on a real
broker (collected right here, as an author's test module would), and in a nested pytest each broken variant fails
exactly the checks of the guarantee it breaks, with a message naming that guarantee.

The source sample's heartbeats once had no key: the simulated worker took them, the real broker's compacted
heartbeat topic refused them. That is why the suite runs on both."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import conformance_samples as samples
import pytest

from headwater.harness import ConformanceContext, sink_conformance, source_conformance

pytest_plugins = ["pytester"]

SAMPLES_PATH = Path(samples.__file__)


def log_config(context: ConformanceContext) -> dict[str, str]:
    return {"log": f"log-{context.tmp_path.name}", "topic": context.topic}


def table_config(context: ConformanceContext) -> dict[str, str]:
    return {"table": f"table-{context.tmp_path.name}"}


TestLogSource = source_conformance(
    samples.LogSource,
    log_config,
    feed=samples.feed_log,
    provisioned=samples.slots,
    advance_log=samples.advance_log,
    bad_configs=[({"batch.size": "0"}, "batch.size"), ({"log": None}, "log")],
    kafka=True,  # CI shows the suite on a real broker too
)

TestTableSink = sink_conformance(
    samples.TableSink,
    table_config,
    written=samples.table,
    provisioned=samples.staging,
    bad_configs=[({"batch.size": "-1"}, "batch.size")],
    kafka=True,
)

BROKEN = """
from conformance_samples import *
from headwater.harness import sink_conformance, source_conformance

def log_config(context):
    return {"log": f"log-{context.tmp_path.name}", "topic": context.topic}

def table_config(batch):
    return lambda context: {"table": f"table-{context.tmp_path.name}", "batch.size": batch}

def source(connector):
    return source_conformance(
        connector, log_config, feed=feed_log, provisioned=slots, advance_log=advance_log,
        bad_configs=[({"batch.size": "0"}, "batch.size")],
    )

def sink(connector, batch=2):
    return sink_conformance(connector, table_config(batch), written=table, provisioned=staging)

TestForgetful = source(ForgetfulSource)
TestSkipping = source(SkippingSource)
TestLeaky = source(LeakySource)
TestLax = source(LaxSource)
TestStray = source(StrayHeartbeatSource)
TestStuck = source(StuckHeartbeatSource)
TestEager = sink(EagerSink, batch=100)
TestGreedy = sink(GreedySink)
TestHoarding = sink(HoardingSink, batch=4)
"""

RESUME = "a task resumes after its committed offset"
AT_LEAST_ONCE = "records handed over but not committed are sent again after a crash (at-least-once)"
WRITTEN = "a committed sink offset covers only records the sink has written"
BEYOND = "pre_commit returns no offset beyond what was consumed"
EVENTUALLY = "a sink commits every record it is given, eventually"

EXPECTED = {
    "TestForgetful::test_offsets_resume_after_a_restart": f"{RESUME} (after a restart)",
    "TestForgetful::test_offsets_resume_after_a_crash": f"{RESUME} (after a crash)",
    "TestSkipping::test_offsets_resume_after_a_crash": AT_LEAST_ONCE,
    "TestSkipping::test_heartbeats_advance_and_are_committed": "committed source offsets only move forward",
    "TestLeaky::test_delete_cleans_up_and_plain_stop_does_not": "stop(connector_deleted=True) removes what the "
    "connector provisioned; a plain stop keeps it",
    "TestLax::test_bad_config_is_rejected_naming_the_key": "config validation rejects a bad value with a message "
    "naming its key",
    "TestStray::test_heartbeats_advance_and_are_committed": "heartbeat records go to the heartbeat topic",
    "TestStuck::test_heartbeats_advance_and_are_committed": "heartbeat offsets advance with the source's position "
    "while it sends no data",
    "TestEager::test_pre_commit_contract_holds": WRITTEN,
    "TestEager::test_offsets_resume_after_a_restart": WRITTEN,
    "TestEager::test_offsets_resume_after_a_crash": WRITTEN,
    "TestGreedy::test_pre_commit_contract_holds": BEYOND,
    "TestGreedy::test_offsets_resume_after_a_restart": BEYOND,
    "TestGreedy::test_offsets_resume_after_a_crash": BEYOND,
    "TestHoarding::test_pre_commit_contract_holds": EVENTUALLY,
    "TestHoarding::test_offsets_resume_after_a_restart": EVENTUALLY,
    "TestHoarding::test_offsets_resume_after_a_crash": EVENTUALLY,
}
"""Every check each broken connector must fail, and the guarantee its failure must name; every other check passes."""


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    pytester.makepyfile(conformance_samples=SAMPLES_PATH.read_text(), test_broken=BROKEN)
    pytester.syspathinsert()
    sys.modules.pop("conformance_samples", None)
    try:
        return pytester.runpytest("-p", "no:hypothesispytest", "-p", "no:randomly", "-rf", *args)
    finally:
        sys.modules["conformance_samples"] = samples


def broken_guarantees(result: pytest.RunResult) -> dict[str, str]:
    """Each failed test (``Class::test``) and the first guarantee its failure report names."""
    found: dict[str, str] = {}
    test = None
    for line in result.stdout.lines:
        header = re.match(r"_{3,} (\w+)\.(\w+)\[simulated[^\]]*\] _{3,}$", line)
        if header:
            test = f"{header.group(1)}::{header.group(2)}"
        named = re.match(r"E +\S*GuaranteeViolation: guarantee broken: (.*)$", line)
        if named and test is not None and test not in found:
            found[test] = named.group(1)
    return found


def test_each_broken_connector_fails_exactly_the_check_of_its_guarantee(pytester: pytest.Pytester) -> None:
    result = run(pytester)
    assert broken_guarantees(result) == EXPECTED, "\n".join(result.stdout.lines[-60:])
    outcomes = result.parseoutcomes()
    assert outcomes["failed"] == len(EXPECTED)
    assert outcomes["passed"] > 20


def test_failure_shows_the_records_and_offsets_involved(pytester: pytest.Pytester) -> None:
    result = run(pytester, "-k", "TestSkipping and crash")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            f"*guarantee broken: {AT_LEAST_ONCE}",
            'E * partition {"log":"log-*"}: committed {"position":*} at the crash; never sent again:',
            'E *record {"position":*} -> conformance {*} (conformance-0#1)',
            "E *sent after the crash:",
        ]
    )


def test_kafka_option_runs_every_check_on_a_real_broker_too(pytester: pytest.Pytester) -> None:
    plain = run(pytester, "--collect-only", "-q", "-k", "TestLeaky")
    with_kafka = run(pytester, "--collect-only", "-q", "-k", "TestLeaky", "--conformance-kafka")
    simulated = [line for line in plain.stdout.lines if line.endswith("[simulated]")]
    assert simulated and not [line for line in plain.stdout.lines if line.endswith("[kafka]")]
    kafka = [line for line in with_kafka.stdout.lines if line.endswith("[kafka]")]
    assert sorted(line.replace("[kafka]", "") for line in kafka) == sorted(
        line.replace("[simulated]", "") for line in simulated
    )
