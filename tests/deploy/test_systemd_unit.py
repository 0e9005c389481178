"""``deploy/systemd/headwater-worker.service`` runs a command the ``headwater`` command accepts, and gives the
worker time to stop gracefully before systemd kills it."""

from __future__ import annotations

import configparser
import shlex
from pathlib import Path

import pytest

from headwater.runtime.commands import cli
from headwater.runtime.distributed import DISTRIBUTED_CONFIG

UNIT = Path(__file__).resolve().parents[2] / "deploy" / "systemd" / "headwater-worker.service"


def service() -> configparser.SectionProxy:
    parser = configparser.ConfigParser(interpolation=None, strict=True)
    parser.optionxform = str  # type: ignore[assignment,method-assign]  # systemd keys are case-sensitive
    parser.read_string(UNIT.read_text())
    return parser["Service"]


def test_exec_start_is_a_distributed_worker_on_its_file(monkeypatch: pytest.MonkeyPatch) -> None:
    program, *args = shlex.split(service()["ExecStart"])
    assert program == "/opt/headwater/bin/headwater"  # the console script of the venv the unit's comment creates
    started: list[str] = []
    monkeypatch.setattr("headwater.runtime.commands.distributed.main", lambda path: started.append(path) or 0)
    assert cli.main(args) == 0
    assert started == ["/etc/headwater/worker.properties"]


def test_systemd_waits_longer_than_the_workers_graceful_stop() -> None:
    unit = service()
    assert (unit["KillSignal"], unit["KillMode"]) == ("SIGTERM", "mixed")
    graceful_s = DISTRIBUTED_CONFIG.keys["task.shutdown.graceful.timeout.ms"].default / 1000
    assert int(unit["TimeoutStopSec"]) > 2 * graceful_s
    assert unit["RestartPreventExitStatus"] == "2"  # a bad worker file
