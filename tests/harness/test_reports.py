"""A failing harness test is reported once and readably, in a nested pytest of a project with the template's
``filterwarnings = error``: a machine's shrunk schedule and its guarantee survive a dependency that warns while the
report is made (Hypothesis' report hook imports ``libcst``, here a stand-in that warns on import), a warning in the
connector's own code still fails its test, a repeated runtime log record shows once with its count, and task ids
(``conformance-0``) read apart from topic partitions (``conformance-records-0``)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import conformance_samples as samples
import pytest

from headwater.harness.reports import collapse_repeats

PYPROJECT = """
[tool.pytest.ini_options]
addopts = ["--strict-markers", "-ra"]
filterwarnings = ["error"]
"""

LIBCST = """
import warnings

warnings.warn("libcst: this module is deprecated", DeprecationWarning, stacklevel=2)
"""

TESTS = """
import warnings

from conformance_samples import *
from headwater.harness import SourceMachine, machine_test, sink_conformance, source_conformance


class DroppingTask(LogTask):
    def poll(self):
        super().poll()
        return []  # reads every record, hands none over


class DroppingSource(LogSource):
    def task_class(self):
        return DroppingTask


class DroppingMachine(SourceMachine):
    connector = DroppingSource

    def setup(self):
        self.log = f"log-{len(LOGS)}"
        return {"log": self.log, "topic": "data"}

    def write(self, value):
        LOGS.setdefault(f"{self.log}/0", []).append(value)


class WarningMachine(DroppingMachine):
    connector = LogSource

    def write(self, value):
        warnings.warn("write_row() is deprecated", DeprecationWarning)
        super().write(value)


TestDropping = machine_test(DroppingMachine, max_examples=10, steps=3)
TestWarning = machine_test(WarningMachine, max_examples=10, steps=3)


def log_config(context):
    return {"log": f"log-{context.tmp_path.name}", "topic": context.topic}


TestReadAhead = source_conformance(ReadAheadSource, log_config, feed=feed_log, batch_size_key="batch.size")
TestEager = sink_conformance(
    EagerSink, lambda context: {"table": f"table-{context.tmp_path.name}", "batch.size": 2}, written=table
)
"""

SELECTED = [
    "test_project.py::TestDropping",
    "test_project.py::TestWarning",
    "test_project.py::TestReadAhead::test_no_record_is_lost_when_a_task_crashes_after_any_commit[simulated-trickle-batch1]",
    "test_project.py::TestEager::test_every_commit_covers_only_written_records[simulated-trickle]",
]


@pytest.fixture(scope="module")
def project_run(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The output of the nested pytest over the project (one run for every test here: each check costs seconds)."""
    where = tmp_path_factory.mktemp("reports")
    (where / "pyproject.toml").write_text(PYPROJECT)
    (where / "libcst").mkdir()
    (where / "libcst" / "__init__.py").write_text(LIBCST)
    (where / "conformance_samples.py").write_text(Path(samples.__file__).read_text())
    (where / "test_project.py").write_text(TESTS)
    args = ["-p", "no:randomly", "-p", "no:cacheprovider", *SELECTED]
    env = {**os.environ, "PYTHONPATH": str(where)}  # the project's libcst comes first
    done = subprocess.run([sys.executable, "-m", "pytest", *args], cwd=where, capture_output=True, text=True, env=env)
    return done.stdout + done.stderr


def section(output: str, test: str) -> str:
    """The failure report of ``test`` (a ``Class.method`` header) in ``output``."""
    start = re.search(rf"^_+ {re.escape(test)}\S* _+$", output, re.MULTILINE)
    assert start, f"no failure report of {test}:\n{output[-3000:]}"
    rest = output[start.end() :]
    end = re.search(r"^(_+ \S.* _+|=+ .* =+)$", rest, re.MULTILINE)
    return rest[: end.start()] if end else rest


def test_a_failing_machine_prints_its_shrunk_schedule_and_guarantee_under_filterwarnings_error(
    project_run: str,
) -> None:
    assert "INTERNALERROR" not in project_run, project_run[-3000:]
    report = section(project_run, "TestDropping.runTest")
    assert "guarantee broken: every record is delivered at least once (source to Kafka)" in report
    steps = re.findall(r"^E? *state\.(\w+)\(", report, re.MULTILINE)  # the shrunk schedule, one line a step
    assert "state = DroppingMachine()" in report and {"write_values", "fault"} & set(steps), report
    assert "state.teardown()" in report
    assert "always and only run by failing test cases" not in report, "no explain phase: it lists harness lines"
    summary = project_run[project_run.index("warnings summary") :]
    assert "DeprecationWarning: libcst: this module is deprecated" in summary, "shown, not raised, not lost"


def test_a_warning_in_the_connectors_own_code_still_fails_its_test(project_run: str) -> None:
    report = section(project_run, "TestWarning.runTest")
    assert "DeprecationWarning: write_row() is deprecated" in report
    assert "FAILED test_project.py::TestWarning::runTest" in project_run


def test_a_repeated_runtime_warning_shows_once_with_its_count(project_run: str) -> None:
    report = section(project_run, "TestReadAhead.test_no_record_is_lost")
    log = report[report.index("Captured log call") :]
    cancelled = [line for line in log.splitlines() if "the task was cancelled" in line]
    assert len(cancelled) == 1, log
    count = re.search(r"skipping the final offset commit \(x(\d+)\)$", cancelled[0])
    assert count and int(count.group(1)) > 1, cancelled


def test_task_ids_and_topic_partitions_read_apart(project_run: str) -> None:
    report = section(project_run, "TestEager.test_every_commit_covers_only_written_records")
    assert re.search(r"conformance-\d committed conformance-records-\d up to offset \d+", report), report
    assert "conformance-records-0@0" in report


def test_collapse_repeats_keeps_each_record_once_where_it_first_came() -> None:
    log = textwrap.dedent("""\
        WARNING  rt:source.py:435 the task was cancelled
        ERROR    rt:source.py:412 commit failed
        Traceback (most recent call last):
          boom
        WARNING  rt:source.py:435 the task was cancelled
        ERROR    rt:source.py:412 commit failed
        Traceback (most recent call last):
          boom
        WARNING  rt:source.py:296 retrying in 100 ms
        WARNING  rt:source.py:435 the task was cancelled""")
    assert collapse_repeats(log).splitlines() == [
        "WARNING  rt:source.py:435 the task was cancelled (x3)",
        "ERROR    rt:source.py:412 commit failed (x2)",
        "Traceback (most recent call last):",
        "  boom",
        "WARNING  rt:source.py:296 retrying in 100 ms",
    ]
    assert collapse_repeats("a\nb\na") == "a (x2)\nb", "lines of another format are each a record"
