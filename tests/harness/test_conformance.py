"""The conformance suite: a source and a sink that keep the contract pass it, on the simulated worker and on a real
broker (collected right here, as an author's test module would), and in a nested pytest each broken variant fails
exactly the checks of the guarantee it breaks, with a message naming that guarantee.

The source sample's heartbeats once had no key: the simulated worker took them, the real broker's compacted
heartbeat topic refused them. That is why the suite runs on both."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from dataclasses import dataclass
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
    advance_without_data=samples.advance_log,
    batch_size_key="batch.size",
    bad_configs=[({"batch.size": "0"}, "batch.size"), ({"log": None}, "log")],
    kafka=True,  # CI shows the suite on a real broker too
)

TestExactLogSource = source_conformance(  # declares exactly-once support and connector-defined transactions
    samples.ExactLogSource,
    log_config,
    feed=samples.feed_log,
    provisioned=samples.slots,
    advance_without_data=samples.advance_log,
    batch_size_key="batch.size",
)

TestMovedHeartbeatSource = source_conformance(  # heartbeats only once a log's position moved without data
    samples.MovedHeartbeatSource,
    log_config,
    feed=samples.feed_log,
    advance_without_data=samples.advance_log,
    batch_size_key="batch.size",
)

TestLogBatchSource = source_conformance(  # batches with headers, sent as they are
    samples.LogBatchSource,
    log_config,
    feed=samples.feed_log,
    provisioned=samples.slots,
    advance_without_data=samples.advance_log,
    batch_size_key="batch.size",
    worker_config={"key.converter": "bytes", "value.converter": "bytes", "header.converter": "bytes"},
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
        connector, log_config, feed=feed_log, provisioned=slots, advance_without_data=advance_log,
        batch_size_key="batch.size", bad_configs=[({"batch.size": "0"}, "batch.size")],
    )

def sink(connector, batch=2):
    return sink_conformance(connector, table_config(batch), written=table, provisioned=staging)

TestForgetful = source(ForgetfulSource)
TestSkipping = source(SkippingSource)
TestReadAhead = source(ReadAheadSource)
TestHeartbeatAhead = source(HeartbeatAheadSource)
TestBufferedHeartbeat = source(BufferedHeartbeatSource)
TestMarkedHeartbeat = source(MarkedHeartbeatSource)
TestPagedResume = source(PagedResumeSource)
TestRestartDrops = source(RestartDropsSource)
TestMissingPartition = source(MissingPartitionSource)
TestOverlap = source(OverlapSource)
TestSharedOffset = source(SharedOffsetSource)
TestOneHeartbeat = source(OneHeartbeatSource)
TestStuck = source(StuckHeartbeatSource)
TestStray = source(StrayHeartbeatSource)
TestLeaky = source(LeakySource)
TestTidy = source(TidySource)
TestLax = source(LaxSource)
TestLateCheckpoint = source(LateCheckpointSource)
TestEagerCheckpoint = source(EagerCheckpointSource)
TestEager = sink(EagerSink)
TestOnePast = sink(OnePastSink)
TestGreedy = sink(GreedySink)
TestHoarding = sink(HoardingSink, batch=4)
TestSkipRedelivered = sink(SkipRedeliveredSink, batch=3)
"""

ARRIVES = "every record fed to the source arrives at least once (no committed offset runs ahead of delivery)"
FORWARD = "committed source offsets only move forward"
RESENT = "records handed over but not committed are sent again after a crash (at-least-once)"
RESUME = "a task resumes after its committed offset"
ADVANCE = "heartbeat offsets advance with the source's position while it sends no data"
CLEANUP = "stop(connector_deleted=True) removes what the connector provisioned; nothing else does"
WRITTEN = "a committed sink offset covers only records the sink has written"
BEYOND = "pre_commit returns no offset beyond what was consumed"
HEARTBEAT_AHEAD = "a heartbeat reports only the position of records already handed over"
EVENTUALLY = "a sink commits every record it is given, eventually"
TWICE = "a read_committed consumer sees no record twice, wherever a worker dies (exactly-once source)"
UNSEEN = "a read_committed consumer sees every record fed to the source, wherever a worker dies (exactly-once source)"


@dataclass(frozen=True)
class Planted:
    bug: str
    guarantee: str
    """The guarantee the suite must name (in at least one failing check)."""
    also: frozenset[str] = frozenset()
    """Other guarantees its failures may name: a bug often breaks more than one."""


GATE = {
    "TestForgetful": Planted(
        "ignores its committed offset when it starts again",
        f"{RESUME} (after a restart)",
        frozenset({f"{RESUME} (after a crash)", FORWARD}),
    ),
    "TestSkipping": Planted("a record's offset is the next record's position", ARRIVES, frozenset({RESENT, FORWARD})),
    "TestReadAhead": Planted(
        "a record's offset is the task's read position, not its own", ARRIVES, frozenset({HEARTBEAT_AHEAD})
    ),
    "TestHeartbeatAhead": Planted(
        "heartbeats carry the end of the log while records are unread", ARRIVES, frozenset({FORWARD, HEARTBEAT_AHEAD})
    ),
    "TestBufferedHeartbeat": Planted(
        "heartbeats carry the position of the last record read into its buffer, not handed over",
        HEARTBEAT_AHEAD,
        frozenset({ARRIVES, FORWARD}),
    ),
    "TestMarkedHeartbeat": Planted(
        "heartbeats (offsets marked as theirs) carry the position of the last record read into its buffer",
        ARRIVES,
        frozenset({FORWARD}),
    ),
    "TestPagedResume": Planted("a resumed task skips the record after every page of three", ARRIVES),
    "TestRestartDrops": Planted("a restarted task drops what came while it was down", ARRIVES, frozenset({RESENT})),
    "TestMissingPartition": Planted("task_configs leaves a partition out when tasks.max > 1", ARRIVES),
    "TestOverlap": Planted(
        "task_configs gives every task every partition", "every source partition is read by exactly one task"
    ),
    "TestSharedOffset": Planted(
        "one offset map per partition, updated in place", "a source offset handed over is never changed afterwards"
    ),
    "TestOneHeartbeat": Planted("heartbeats for one partition of each task only", ADVANCE),
    "TestStuck": Planted("heartbeats carry the last captured position, not the log's", ADVANCE),
    "TestStray": Planted("heartbeats go to a topic of their own", "heartbeat records go to the heartbeat topic"),
    "TestLeaky": Planted("cleans up on no stop, not even on delete", CLEANUP),
    "TestTidy": Planted("cleans up on every stop, deleted or not", CLEANUP),
    "TestLax": Planted("accepts any batch size", "config validation rejects a bad value with a message naming its key"),
    "TestLateCheckpoint": Planted("says exactly once, keeps its position outside offsets, saved after commits", TWICE),
    "TestEagerCheckpoint": Planted(
        "says exactly once, keeps its position outside offsets, saved as it hands records over",
        UNSEEN,
        frozenset({RESENT, ARRIVES}),
    ),
    "TestEager": Planted("pre_commit returns current_offsets (commits what it only buffered)", WRITTEN),
    "TestOnePast": Planted("pre_commit says one record more than it wrote is safe", WRITTEN, frozenset({EVENTUALLY})),
    "TestGreedy": Planted("pre_commit returns offsets beyond what was consumed", BEYOND),
    "TestHoarding": Planted("never writes a partial batch, so never commits the tail", EVENTUALLY),
    "TestSkipRedelivered": Planted(
        "skips records redelivered after a revocation as duplicates", WRITTEN, frozenset({EVENTUALLY})
    ),
}
"""The mutation gate: each planted bug, and the guarantee the suite must name when it fails the connector."""


@pytest.fixture(scope="module")
def gate_run(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """The suite run once over every planted-bug connector, in a pytest of its own; its output lines."""
    where = tmp_path_factory.mktemp("gate")
    (where / "conformance_samples.py").write_text(SAMPLES_PATH.read_text())
    (where / "test_broken.py").write_text(BROKEN)
    args = ["-p", "no:hypothesispytest", "-p", "no:randomly", "-p", "no:cacheprovider", "-rf", "-q"]
    if importlib.util.find_spec("xdist") is not None:
        args += ["-n", "2"]  # the fast tier's longest test: its planted bugs spread over both cores
    done = subprocess.run(
        [sys.executable, "-m", "pytest", *args, "test_broken.py"], cwd=where, capture_output=True, text=True
    )
    assert done.returncode in (0, 1), done.stdout[-3000:] + done.stderr[-3000:]
    return done.stdout.splitlines()


def failures(lines: list[str]) -> dict[str, list[str | None]]:
    """Per planted-bug class, the guarantee each failing check named (``None``: a failure naming none)."""
    found: dict[str, list[str | None]] = {}
    test: str | None = None
    for line in lines:
        header = re.match(r"_+ (\w+)\.(\w+)\[simulated[^\]]*\] _+$", line)
        if header:
            test = header.group(1)
            found.setdefault(test, []).append(None)
        named = re.match(r"E +\S*GuaranteeViolation: guarantee broken: (.*)$", line)
        if named and test is not None and found[test][-1] is None:
            found[test][-1] = named.group(1)
    return found


def test_the_suite_fails_every_planted_bug_naming_its_guarantee(gate_run: list[str]) -> None:
    found = failures(gate_run)
    report = [
        f"{name}: {GATE[name].bug if name in GATE else '?'} -> {sorted(set(map(str, named)))}"
        for name, named in found.items()
    ]
    assert set(found) == set(GATE), "\n".join(report)
    for name, planted in GATE.items():
        named = found[name]
        assert None not in named, f"{name}: a failure named no guarantee\n" + "\n".join(gate_run[-80:])
        assert planted.guarantee in named, f"{name} ({planted.bug}) never failed naming {planted.guarantee!r}: {named}"
        stray = set(named) - {planted.guarantee} - planted.also
        assert not stray, f"{name} ({planted.bug}) failed naming other guarantees too: {stray}"
    assert len(GATE) >= 24
    summary = gate_run[-1]
    assert " passed" in summary and "error" not in summary, summary


def test_failure_names_the_partition_the_first_lost_record_and_the_commit(gate_run: list[str]) -> None:
    text = "\n".join(gate_run)
    block = text[text.index("TestReadAhead.test_no_record_is_lost") :]
    block = block[: block.index("\n____")] if "\n____" in block else block
    assert f"guarantee broken: {ARRIVES}" in block
    assert re.search(r"fed records never arrived; the first, fed at \d+ ms: \{'log': 'log-\S+/\d', 'n': \d\}", block)
    assert re.search(r"the first crash after it was fed: crash at \d+ ms, right after conformance-\d committed", block)
    assert re.search(r'committed then by conformance-\d: \{"log":"log-\S+/\d"\} -> \{"position":\d\}', block)
    assert "data records (" in block and "heartbeats (" in block, "data records are listed apart from heartbeats"


REAL_BROKER_GATE = {
    "TestBufferedHeartbeat": (
        "test_no_record_is_lost_when_a_task_crashes_after_any_commit[kafka-bulk-batch1]",
        HEARTBEAT_AHEAD,
    ),
    "TestMarkedHeartbeat": (
        "test_no_record_is_lost_when_a_task_crashes_after_any_commit[kafka-heartbeats-first-batch1]",
        ARRIVES,
    ),
    "TestPagedResume": ("test_offsets_resume_after_a_restart[kafka]", ARRIVES),
}
"""The planted bugs the heartbeat and resume checks were added for, each with one check that must fail it on a real
broker too, naming the guarantee (the simulated gate above runs every check of every planted bug)."""


def test_heartbeat_and_resume_checks_fail_their_planted_bugs_on_a_real_broker(
    kafka_bootstrap: str, tmp_path: Path
) -> None:
    (tmp_path / "conformance_samples.py").write_text(SAMPLES_PATH.read_text())
    (tmp_path / "test_broken.py").write_text(BROKEN)
    ids = [f"test_broken.py::{name}::{test}" for name, (test, _) in REAL_BROKER_GATE.items()]
    args = ["-p", "no:randomly", "-p", "no:cacheprovider", "-q", "--conformance-kafka"]
    done = subprocess.run(
        [sys.executable, "-m", "pytest", *args, "--kafka-bootstrap", kafka_bootstrap, *ids],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    lines = done.stdout.splitlines()
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-3000:]
    named: dict[str, set[str]] = {}
    test = None
    for line in lines:
        header = re.match(r"_+ (\w+)\.\w+\[kafka[^\]]*\] _+$", line)
        if header:
            test = header.group(1)
        found = re.match(r"E +\S*GuaranteeViolation: guarantee broken: (.*)$", line)
        if found and test is not None:
            named.setdefault(test, set()).add(found.group(1))
    for name, (check, guarantee) in REAL_BROKER_GATE.items():
        assert guarantee in named.get(name, set()), (
            f"{name}.{check} on the real broker: {named}\n" + done.stdout[-4000:]
        )
    assert f"{len(REAL_BROKER_GATE)} failed" in lines[-1], lines[-1]


def test_kafka_option_runs_every_check_on_a_real_broker_too(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(conformance_samples=SAMPLES_PATH.read_text(), test_broken=BROKEN)
    pytester.syspathinsert()
    sys.modules.pop("conformance_samples", None)
    try:
        plain = pytester.runpytest("--collect-only", "-q", "-k", "TestLeaky")
        with_kafka = pytester.runpytest("--collect-only", "-q", "-k", "TestLeaky", "--conformance-kafka")
    finally:
        sys.modules["conformance_samples"] = samples
    simulated = [line for line in plain.stdout.lines if "[simulated" in line]
    assert simulated and not [line for line in plain.stdout.lines if "[kafka" in line]
    kafka = [line for line in with_kafka.stdout.lines if "[kafka" in line]
    assert sorted(line.replace("[kafka", "[") for line in kafka) == sorted(
        line.replace("[simulated", "[") for line in simulated
    )


def test_exactly_once_failure_names_the_records_written_twice_and_where_a_worker_died(gate_run: list[str]) -> None:
    text = "\n".join(gate_run)
    block = text[text.index("TestLateCheckpoint.test_exactly_once_wherever_a_worker_dies") :]
    block = block[: block.index("\n____")] if "\n____" in block else block
    assert f"guarantee broken: {TWICE}" in block
    assert re.search(r"transaction\.boundary=\w+, seed \d: \d+ records? seen more than once", block)
    assert re.search(
        r'\{"log": "log-\S+/\d", "n": \d+\}: 2 times, at conformance-records@\d+, conformance-records@\d+', block
    )
    assert re.search(r"died right after committing transaction \d+ of connect-cluster-conformance-\d", block)
