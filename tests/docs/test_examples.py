"""The examples in docs/ and the README run, on the simulated worker, and do what the docs say."""

from __future__ import annotations

import ast
import importlib.util
import inspect
import re
import sys
import types
from collections.abc import Callable
from pathlib import Path

import pytest

from headwater.harness import SimulatedWorker

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "docs" / "examples" / "heartbeat_source.py"
HEARTBEATS = "connect-heartbeats"
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


def start_example(example: types.ModuleType, make: Make, heartbeat_interval_ms: int = 1000) -> SimulatedWorker:
    worker = make({"heartbeat.interval.ms": heartbeat_interval_ms, "offset.flush.interval.ms": 1000})
    example.CHANGE_LOG.extend([ROW_A, None, ROW_B])  # position 2 is a write nobody captures
    worker.add_connector("inventory", example.ChangeLogSource, {"topic": "inventory"})
    return worker


def test_example_is_at_most_30_code_lines() -> None:
    count = code_lines(EXAMPLE.read_text())
    assert 10 < count <= 30, f"{EXAMPLE.name} has {count} code lines; the README promises a 30-line example"


def test_rows_arrive_and_heartbeats_commit_the_log_position_while_nothing_captured_changes(
    example: types.ModuleType, make_simulated_worker: Make
) -> None:
    worker = start_example(example, make_simulated_worker)
    log = example.LOG
    worker.advance(1000)
    assert worker.values("inventory") == [ROW_A, ROW_B]
    worker.assert_source_offset("inventory", log, {"position": 3})

    example.CHANGE_LOG.extend([None] * 5)  # the database moves on; the captured tables are quiet
    worker.advance(2000)
    assert worker.values("inventory") == [ROW_A, ROW_B], "uncaptured writes send no data"
    assert worker.values(HEARTBEATS)[-2:] == [{"position": 8}, {"position": 8}]
    worker.assert_source_offset("inventory", log, {"position": 8})

    example.CHANGE_LOG.extend([None] * 4)
    worker.advance(2000)
    worker.assert_source_offset("inventory", log, {"position": 12})
    assert worker.values("inventory") == [ROW_A, ROW_B]


def test_without_heartbeats_the_committed_offset_stays_at_the_last_row(
    example: types.ModuleType, make_simulated_worker: Make
) -> None:
    worker = start_example(example, make_simulated_worker, heartbeat_interval_ms=0)
    worker.advance(1000)
    example.CHANGE_LOG.extend([None] * 5)
    worker.advance(3000)
    assert worker.messages(HEARTBEATS) == []
    worker.assert_source_offset("inventory", example.LOG, {"position": 3})


def test_restarted_task_resumes_after_the_committed_position(
    example: types.ModuleType, make_simulated_worker: Make
) -> None:
    worker = start_example(example, make_simulated_worker)
    example.CHANGE_LOG.extend([None] * 5)
    worker.advance(3000)
    worker.assert_source_offset("inventory", example.LOG, {"position": 8})
    worker.restart_connector("inventory")
    example.CHANGE_LOG.append({"sku": "C-3", "stock": 1})
    worker.advance(1000)
    assert worker.values("inventory") == [ROW_A, ROW_B, {"sku": "C-3", "stock": 1}], "no row sent twice"
    worker.assert_source_offset("inventory", example.LOG, {"position": 9})


def python_blocks(text: str) -> str:
    """The ``python`` blocks of a Markdown text as one module, each on its own lines, so tracebacks point into it."""
    code = [""] * len(text.splitlines())
    for block in re.finditer(r"^```python\n(.*?)^```", text, flags=re.MULTILINE | re.DOTALL):
        first = text.count("\n", 0, block.start(1))
        for offset, line in enumerate(block.group(1).splitlines()):
            code[first + offset] = line
    return "\n".join(code)


@pytest.mark.parametrize("document", ["README.md", "docs/index.md", "docs/testing.md"])
def test_documented_example_runs(
    document: str, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The document's ``python`` blocks run as one module; each of its ``test_`` functions gets its fixtures."""
    path = ROOT / document
    module = types.ModuleType(f"docs_snippet_{path.stem.lower()}")
    monkeypatch.setitem(sys.modules, module.__name__, module)
    exec(compile(python_blocks(path.read_text()), str(path), "exec"), module.__dict__)
    tests = [value for name, value in vars(module).items() if name.startswith("test_") and callable(value)]
    assert tests, f"{document} shows no test function"
    for test in tests:
        test(**{name: request.getfixturevalue(name) for name in inspect.signature(test).parameters})
