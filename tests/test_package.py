"""The distribution as a whole: its version, its ``python -m headwater`` entry."""

from __future__ import annotations

import importlib.metadata
import subprocess
import sys
from pathlib import Path

import headwater


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

WITHOUT_SERVER_STACK = f"""
import importlib.abc, sys

class NotInstalled(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in {SERVER_STACK!r}:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None

sys.meta_path.insert(0, NotInstalled())
"""
"""Makes the server stack look uninstalled to the child process that runs it first."""

SIMULATED_JOB = """
from collections.abc import Mapping

import headwater.harness.plugin
from headwater.harness import SimulatedWorker
from headwater.sdk import SourceConnector, SourceRecord, SourceTask


class Counter(SourceConnector):
    def start(self, config: Mapping[str, str]) -> None:
        self.config = dict(config)

    def task_class(self) -> type[SourceTask]:
        return CounterTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [self.config]


class CounterTask(SourceTask):
    def start(self, config: Mapping[str, str]) -> None:
        self.sent = 0

    def poll(self) -> list[SourceRecord]:
        self.sent += 1
        return [SourceRecord({"counter": 0}, {"n": self.sent}, "counts", self.sent)] if self.sent <= 3 else []


with SimulatedWorker() as worker:
    worker.add_connector("counter", Counter, {})
    worker.advance(1000)
    assert worker.values("counts") == [1, 2, 3], worker.values("counts")
loaded = sorted(name for name in sys.modules if name.partition(".")[0] in SERVER_STACK)
assert loaded == [], loaded
"""


def run_without_server_stack(script: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", WITHOUT_SERVER_STACK + f"SERVER_STACK = {SERVER_STACK!r}\n" + script],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_sdk_and_simulated_worker_run_without_the_server_stack() -> None:
    done = run_without_server_stack(SIMULATED_JOB)
    assert done.returncode == 0, done.stderr


def test_worker_commands_without_the_server_stack_name_the_worker_extra(tmp_path: Path) -> None:
    worker_config = tmp_path / "worker.properties"
    worker_config.write_text("bootstrap.servers=127.0.0.1:9\n")
    for command in ("standalone", "distributed"):
        done = run_without_server_stack(
            f"from headwater.runtime.cli import main\nmain([{command!r}, {str(worker_config)!r}])\n"
        )
        assert done.returncode == 2, done.stderr
        assert f"headwater {command}: " in done.stderr
        assert "pip install 'headwater[worker]'" in done.stderr
