"""The examples in docs/ and the README run, on the simulated worker and on a real broker, and do what the docs say.

A real broker is shared by every test of a session (and by other sessions), so there each example's topics and
connectors get names of their own: the same code, with its topic and connector names made unique.
"""

from __future__ import annotations

import ast
import importlib.util
import inspect
import json
import re
import sys
import types
from collections.abc import Callable, Collection, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from headwater.harness import SimulatedWorker
from headwater.harness.kafka_worker import KafkaSteppedWorker
from headwater.runtime.tasks.base import State
from headwater.sdk import SourceConnector, SourceRecord, SourceTask

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "docs" / "examples" / "heartbeat_source.py"
ROW_A = {"sku": "A-1", "stock": 7}
ROW_B = {"sku": "B-2", "stock": 0}

Make = Callable[..., SimulatedWorker]


def code_lines(source: str) -> int:
    """Non-blank, non-comment lines after the module docstring."""
    tree = ast.parse(source)
    has_docstring = ast.get_docstring(tree) is not None
    start = (tree.body[0].end_lineno or 0) if has_docstring else 0
    return sum(1 for line in source.splitlines()[start:] if line.strip() and not line.strip().startswith("#"))


@pytest.fixture
def example(monkeypatch: pytest.MonkeyPatch) -> types.ModuleType:
    """A fresh import of the example (so its change log starts empty), importable by name for ``add_connector``."""
    spec = importlib.util.spec_from_file_location("docs_examples_heartbeat_source", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, module)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def names(unique_name: str) -> dict[str, str]:
    """The example's connector, rows topic and heartbeat topic, named for this test alone."""
    return {
        "connector": f"inventory-{unique_name}",
        "rows": f"inventory-{unique_name}",
        "beats": f"beats-{unique_name}",
    }


def start_example(
    example: types.ModuleType, make: Make, names: Mapping[str, str], heartbeat_interval_ms: int = 1000
) -> SimulatedWorker:
    config = {"heartbeat.interval.ms": heartbeat_interval_ms, "offset.flush.interval.ms": 1000}
    worker = make({**config, "heartbeat.records.topic": names["beats"]})
    example.CHANGE_LOG.extend([ROW_A, None, ROW_B])  # position 2 is a write nobody captures
    worker.add_connector(names["connector"], example.ChangeLogSource, {"topic": names["rows"]})
    return worker


def test_example_is_at_most_30_code_lines() -> None:
    count = code_lines(EXAMPLE.read_text())
    assert 10 < count <= 30, f"{EXAMPLE.name} has {count} code lines; the README promises a 30-line example"


def test_rows_arrive_and_heartbeats_commit_the_log_position_while_nothing_captured_changes(
    example: types.ModuleType, make_worker: Make, names: dict[str, str]
) -> None:
    worker = start_example(example, make_worker, names)
    log = example.LOG
    worker.advance(1000)
    assert worker.values(names["rows"]) == [ROW_A, ROW_B]
    worker.assert_source_offset(names["connector"], log, {"position": 3})

    example.CHANGE_LOG.extend([None] * 5)  # the database moves on; the captured tables are quiet
    worker.advance(2000)
    assert worker.values(names["rows"]) == [ROW_A, ROW_B], "uncaptured writes send no data"
    assert worker.values(names["beats"])[-2:] == [{"position": 8}, {"position": 8}]
    worker.assert_source_offset(names["connector"], log, {"position": 8})

    example.CHANGE_LOG.extend([None] * 4)
    worker.advance(2000)
    worker.assert_source_offset(names["connector"], log, {"position": 12})
    assert worker.values(names["rows"]) == [ROW_A, ROW_B]


def test_without_heartbeats_the_committed_offset_stays_at_the_last_row(
    example: types.ModuleType, make_worker: Make, names: dict[str, str]
) -> None:
    worker = start_example(example, make_worker, names, heartbeat_interval_ms=0)
    worker.advance(1000)
    example.CHANGE_LOG.extend([None] * 5)
    worker.advance(3000)
    assert worker.messages(names["beats"]) == []
    worker.assert_source_offset(names["connector"], example.LOG, {"position": 3})


def test_restarted_task_resumes_after_the_committed_position(
    example: types.ModuleType, make_worker: Make, names: dict[str, str]
) -> None:
    worker = start_example(example, make_worker, names)
    example.CHANGE_LOG.extend([None] * 5)
    worker.advance(3000)
    worker.assert_source_offset(names["connector"], example.LOG, {"position": 8})
    worker.restart_connector(names["connector"])
    example.CHANGE_LOG.append({"sku": "C-3", "stock": 1})
    worker.advance(1000)
    assert worker.values(names["rows"]) == [ROW_A, ROW_B, {"sku": "C-3", "stock": 1}], "no row sent twice"
    worker.assert_source_offset(names["connector"], example.LOG, {"position": 9})


def python_blocks(text: str) -> str:
    """The ``python`` blocks of a Markdown text as one module, each on its own lines, so tracebacks point into it."""
    code = [""] * len(text.splitlines())
    for block in re.finditer(r"^```python\n(.*?)^```", text, flags=re.MULTILINE | re.DOTALL):
        first = text.count("\n", 0, block.start(1))
        for offset, line in enumerate(block.group(1).splitlines()):
            code[first + offset] = line
    return "\n".join(code)


class Renamer(ast.NodeTransformer):
    """Replaces every string constant that is a key of ``names`` with its value."""

    def __init__(self, names: Mapping[str, str]) -> None:
        self.names = names
        self.seen: set[str] = set()

    def visit_Constant(self, node: ast.Constant) -> ast.Constant:
        if isinstance(node.value, str) and node.value in self.names:
            self.seen.add(node.value)
            return ast.copy_location(ast.Constant(self.names[node.value]), node)
        return node


def load(
    document: str,
    monkeypatch: pytest.MonkeyPatch,
    names: Mapping[str, str] | None = None,
    block_with: str | None = None,
) -> types.ModuleType:
    """The document's ``python`` blocks (only the one containing ``block_with``, when given) as a fresh module, with
    the string constants ``names`` holds renamed."""
    path = ROOT / document
    text = path.read_text()
    if block_with is not None:
        blocks = re.finditer(r"^```python\n.*?^```", text, re.MULTILINE | re.DOTALL)
        [text] = [block.group(0) for block in blocks if block_with in block.group(0)]
    tree = ast.parse(python_blocks(text), str(path))
    if names:
        renamer = Renamer(names)
        tree = ast.fix_missing_locations(renamer.visit(tree))
        assert renamer.seen == set(names), f"{document} no longer uses {sorted(set(names) - renamer.seen)}"
    module = types.ModuleType(f"docs_snippet_{path.stem.lower()}")
    monkeypatch.setitem(sys.modules, module.__name__, module)
    exec(compile(tree, str(path), "exec"), module.__dict__)
    return module


def run_tests(
    document: str, module: types.ModuleType, fixture: Callable[[str], Any], only: Collection[str] | None = None
) -> None:
    """Call each ``test_`` function of ``module`` (those named in ``only``, when given), giving each argument
    ``fixture(its name)``."""
    tests = [value for name, value in vars(module).items() if name.startswith("test_") and callable(value)]
    assert tests, f"{document} shows no test function"
    if only is not None:
        assert set(only) <= {test.__name__ for test in tests}, f"{document} no longer shows all of {sorted(only)}"
        tests = [test for test in tests if test.__name__ in only]
    for test in tests:
        test(**{name: fixture(name) for name in inspect.signature(test).parameters})


@pytest.mark.parametrize("document", ["README.md", "docs/index.md", "docs/testing.md"])
def test_documented_example_runs(
    document: str, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The document's ``python`` blocks run as one module; each of its ``test_`` functions gets its fixtures."""
    run_tests(document, load(document, monkeypatch), request.getfixturevalue)


ON_A_REAL_BROKER: dict[str, tuple[tuple[str, ...], frozenset[str] | None]] = {
    "README.md": (("events", "connect-heartbeats", "feed"), None),
    "docs/index.md": (("access", "log", "orders", "batch"), None),
}
"""The documents whose examples run on a real broker too: the topic and connector names their tests use, and which
tests (``None``: all). docs/testing.md's conformance suite makes workers of its own: it runs on a real broker in
:func:`test_the_testing_guide_conformance_suite_passes_on_both_backends`."""


@pytest.fixture
def kafka_workers(kafka_bootstrap: str) -> Iterator[Callable[..., SimulatedWorker]]:
    """``make(config, **options)``: a :class:`KafkaSteppedWorker` on the session's broker; closed after the test."""
    made: list[SimulatedWorker] = []

    def make(config: Mapping[str, Any] | None = None, **options: Any) -> SimulatedWorker:
        made.append(KafkaSteppedWorker(kafka_bootstrap, config, **options))
        return made[-1]

    yield make
    for worker in made:
        worker.close()


@pytest.mark.kafka
@pytest.mark.parametrize("document", sorted(ON_A_REAL_BROKER))
def test_documented_example_runs_on_a_real_broker(
    document: str,
    unique_name: str,
    kafka_workers: Callable[..., SimulatedWorker],
    request: pytest.FixtureRequest,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The same tests, each worker fixture they take made on a real broker (the runtime's loops, stepped on the
    virtual clock, see harness/kafka_worker.py), and their topics and connectors named for this run."""
    renamed, only = ON_A_REAL_BROKER[document]
    names = {name: f"{name}-{unique_name}" for name in renamed}
    defaults = {"heartbeat.records.topic": names.get("connect-heartbeats", "connect-heartbeats")}

    def make(config: Mapping[str, Any] | None = None, **options: Any) -> SimulatedWorker:
        return kafka_workers({**defaults, **(config or {})}, **options)

    on_kafka: dict[str, Callable[[], Any]] = {"make_simulated_worker": lambda: make, "simulated_worker": make}
    run_tests(
        document,
        load(document, monkeypatch, names),
        lambda name: on_kafka[name]() if name in on_kafka else request.getfixturevalue(name),
        only,
    )


ROWS: list[dict[str, Any]] = []


class HookedSource(SourceConnector):
    """Runs the task class the test sets (docs/hooks.md's ``MyTask``, with a ``poll`` that hands over ``ROWS``)."""

    task: type[SourceTask] = SourceTask

    def start(self, config: Mapping[str, str]) -> None:
        self.config = dict(config)

    def task_class(self) -> type[SourceTask]:
        return HookedSource.task

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [self.config]


def test_the_hook_reference_heartbeat_example_runs(
    make_worker: Make, unique_name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """docs/hooks.md's heartbeat hook, in a task whose ``poll`` hands over rows: its heartbeats reach the
    (compacted) heartbeat topic, keyed, and commit the position while no row comes."""
    hooks = load("docs/hooks.md", monkeypatch, block_with="def produce_heartbeat_records")

    class RowsTask(hooks.MyTask):  # type: ignore[misc,name-defined]
        def start(self, config: Mapping[str, str]) -> None:
            self.topic, self.position = config["topic"], 0

        def poll(self) -> list[SourceRecord]:
            rows, start = ROWS[self.position :], self.position
            self.position += len(rows)
            return [SourceRecord(hooks.LOG, {"position": start + n + 1}, self.topic, row) for n, row in enumerate(rows)]

    monkeypatch.setattr(HookedSource, "task", RowsTask)
    ROWS[:] = [{"id": 1}, {"id": 2}]
    beats = f"beats-{unique_name}"
    worker = make_worker(
        {"heartbeat.interval.ms": 1000, "offset.flush.interval.ms": 1000, "heartbeat.records.topic": beats}
    )
    worker.add_connector(unique_name, HookedSource, {"topic": f"rows-{unique_name}"})
    worker.advance(2000)
    assert worker.task_state(unique_name) is State.RUNNING, worker.source_task(unique_name).failure
    assert worker.values(f"rows-{unique_name}") == [{"id": 1}, {"id": 2}]
    assert [(json.loads(m.key), json.loads(m.value)) for m in worker.messages(beats)] == [
        (hooks.LOG, {"position": 2}),
        (hooks.LOG, {"position": 2}),
    ]
    worker.assert_source_offset(unique_name, hooks.LOG, {"position": 2})


@pytest.mark.kafka
def test_the_testing_guide_conformance_suite_passes_on_both_backends(
    pytester: pytest.Pytester, kafka_bootstrap: str
) -> None:
    """docs/testing.md's ``TestRowsSource``, as an author's test module, passes every check on the simulated worker
    and on a real broker (``--conformance-kafka``)."""
    pytester.makepyfile(test_guide=python_blocks((ROOT / "docs/testing.md").read_text()))
    args = ["-v", "-k", "TestRowsSource", "--conformance-kafka", "--kafka-bootstrap", kafka_bootstrap]
    result = pytester.runpytest_subprocess("-p", "no:randomly", "-p", "no:cacheprovider", *args)
    lines = result.stdout.lines
    outcomes = result.parseoutcomes()
    assert not outcomes.get("failed") and not outcomes.get("error"), "\n".join(lines[-60:])
    for backend in ("simulated", "kafka"):
        passed = [line for line in lines if f"[{backend}" in line and "PASSED" in line]
        assert len(passed) >= 5, f"{backend}: {len(passed)} checks passed\n" + "\n".join(lines[-60:])
