"""``pip install headwater`` alone (pluggy and confluent-kafka): a connector author's SDK and the simulated worker
work without any extra."""

from __future__ import annotations

from pathlib import Path

from support.counter_job import COUNTER_JOB
from support.venvs import SERVER_STACK, TEST_TOOLS, Venv

EXTRA_MODULES = ("pytest", "hypothesis", "testcontainers", "fastapi", "uvicorn", "starlette", "pydantic")
"""Top-level modules of the ``harness`` and ``worker`` extras."""


def test_the_core_install_is_headwater_with_pluggy_and_confluent_kafka(core_venv: Venv) -> None:
    installed = core_venv.distributions()
    assert {"headwater", "pluggy", "confluent-kafka"} <= installed
    assert installed & (SERVER_STACK | TEST_TOOLS) == set()


def test_the_core_runs_a_connector_on_the_simulated_worker(core_venv: Venv, tmp_path: Path) -> None:
    """The job asserts that the connector's records reach the topic, then prints what it imported of the extras."""
    report = f"print(sorted(name for name in sys.modules if name.partition('.')[0] in {EXTRA_MODULES!r}))\n"
    loaded = core_venv.python_code(COUNTER_JOB + "import sys\n" + report, cwd=tmp_path)
    assert loaded.strip() == "[]"
