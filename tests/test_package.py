"""The distribution as a whole: its version, its ``python -m headwater`` entry."""

from __future__ import annotations

import importlib
import importlib.metadata
import json
import subprocess
import sys
from pathlib import Path

import headwater
from support.counter_job import COUNTER_JOB


def test_version_is_the_installed_distributions() -> None:
    assert headwater.__version__ == importlib.metadata.version("headwater")


def test_python_dash_m_headwater_is_the_headwater_command() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "headwater", "--help"], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage: headwater ")
    assert "standalone" in done.stdout and "distributed" in done.stdout


SERVER_STACK = ("fastapi", "uvicorn", "starlette", "pydantic", "prometheus_client")
"""The ``worker`` extra: the REST API's server stack and the metrics exporter."""

WORKER_EXTRA = (*SERVER_STACK, "cryptography")
"""All that the ``worker`` extra installs: the server stack and the TLS of its listener."""

TEST_TOOLS = ("pytest", "_pytest", "hypothesis", "testcontainers", "docker")
"""The ``harness`` extra (and what testcontainers brings): what an author's tests add to the core install."""


def not_installed(roots: tuple[str, ...]) -> str:
    """Code that makes the distributions of ``roots`` (top-level import names) look uninstalled to the child process
    that runs it first."""
    return f"""
import importlib.abc, sys

class NotInstalled(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in {roots!r}:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None

sys.meta_path.insert(0, NotInstalled())
"""


def run_without(roots: tuple[str, ...], script: str) -> subprocess.CompletedProcess[str]:
    """Run ``script`` in a child process of this venv in which the distributions of ``roots`` look uninstalled."""
    return subprocess.run(
        [sys.executable, "-c", not_installed(roots) + script],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def run_without_server_stack(script: str) -> subprocess.CompletedProcess[str]:
    return run_without(SERVER_STACK, script)


NEEDS_TEST_TOOLS = {
    "headwater.harness.conformance": "pytest",
    "headwater.harness.plugin": "pytest",
    "headwater.harness.reports": "pytest",
    "headwater.harness.shared_services": "pytest",
    "headwater.harness.sink_suite": "pytest",
    "headwater.harness.source_suite": "pytest",
    "headwater.harness.stateful": "hypothesis",
    "headwater.harness.strategies": "hypothesis",
}
"""The harness modules that need the ``harness`` extra, and the first of its libraries each one imports; every
other harness module imports with the core install alone."""

IMPORT_EACH_HARNESS_MODULE = """
import importlib, json, pkgutil
import headwater.harness

failed = {}
for found in pkgutil.walk_packages(headwater.harness.__path__, "headwater.harness."):
    try:
        importlib.import_module(found.name)
    except ImportError as error:
        failed[found.name] = getattr(error, "name", None) or repr(error)
missing = []
for name in headwater.harness.__all__:
    try:
        getattr(headwater.harness, name)
    except ImportError:
        missing.append(name)
print(json.dumps({"failed": failed, "missing": missing}))
"""
"""Imports every module of ``headwater.harness`` and each of its exports; prints those that failed, with the
module each one missed."""


def test_every_harness_module_imports_without_the_server_stack() -> None:
    """An author's venv (``headwater[harness]``) imports all of the harness: both conformance suites, the
    stateful machines, the exactly-once check, the fault schedules, the simulated worker and cluster, the plugin."""
    done = run_without(WORKER_EXTRA, IMPORT_EACH_HARNESS_MODULE)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"failed": {}, "missing": []}


def test_the_core_imports_the_simulated_worker_and_the_harness_without_its_test_tools() -> None:
    """The core install (``headwater`` alone) imports every harness module but those that need pytest or
    Hypothesis, and each of those misses only its test tool; the public exports stay lazy."""
    done = run_without(WORKER_EXTRA + TEST_TOOLS, IMPORT_EACH_HARNESS_MODULE)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["failed"] == NEEDS_TEST_TOOLS
    harness = importlib.import_module("headwater.harness")
    exported_by = {name: module for module, names in harness._LAZY.items() for name in names}
    assert sorted(result["missing"]) == sorted(
        name for name in harness.__all__ if exported_by[name] in NEEDS_TEST_TOOLS
    )


AFTER_THE_JOB = f"""
loaded = sorted(name for name in sys.modules if name.partition(".")[0] in {WORKER_EXTRA + TEST_TOOLS!r})
assert loaded == [], loaded
"""
"""Checks that the job loaded nothing of the ``worker`` and ``harness`` extras."""


def test_the_core_runs_a_connector_on_the_simulated_worker() -> None:
    done = run_without(WORKER_EXTRA + TEST_TOOLS, COUNTER_JOB + AFTER_THE_JOB)
    assert done.returncode == 0, done.stderr


def test_the_distributed_herder_imports_first() -> None:
    """``runtime/distributed/`` and the herder built on it do not import each other in a circle, whichever comes
    first."""
    done = run_without(WORKER_EXTRA, "import headwater.runtime.distributed.herder\n")
    assert done.returncode == 0, done.stderr


def test_worker_commands_without_the_server_stack_name_the_worker_extra(tmp_path: Path) -> None:
    worker_config = tmp_path / "worker.properties"
    worker_config.write_text("bootstrap.servers=127.0.0.1:9\n")
    for command in ("standalone", "distributed"):
        done = run_without_server_stack(
            f"from headwater.runtime.commands.cli import main\nmain([{command!r}, {str(worker_config)!r}])\n"
        )
        assert done.returncode == 2, done.stderr
        assert f"headwater {command}: " in done.stderr
        assert "pip install 'headwater[worker]'" in done.stderr
