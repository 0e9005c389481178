"""``pip install 'headwater[worker]'`` and connectors installed from wheels, as an operator deploys them: the
template's source (with its transformation) and sink, each built into a wheel from a generated project, run under
``headwater standalone`` from properties files on a real broker; the source's records reach the topic, transformed,
the sink writes them, and SIGTERM stops the worker cleanly with the source's last offset committed."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from headwater.harness.kafka_worker import KafkaInspector
from support.process import WorkerProcess
from support.template import render
from support.venvs import SERVER_STACK, Venv, Venvs, build_wheel

pytestmark = pytest.mark.kafka

LINES = ['{"id": 1}', '{"id": 2}', "# not a record", '{"id": 3}', '{"id": 4}', '{"id": 5}']
"""The source's input file: five records and a comment line it skips."""

EXPECTED = [{"id": n, "origin": "wheel"} for n in range(1, 6)]
"""What reaches the topic and the sink: each record tagged by the source project's transformation."""


@pytest.fixture(scope="module")
def worker_venv(venvs: Venvs, tmp_path_factory: pytest.TempPathFactory) -> Venv:
    """``headwater[worker]`` from the session's wheel, plus the wheels of a generated source project (with the
    transformation) and a generated sink project."""
    root = tmp_path_factory.mktemp("connector-wheels")
    projects = [render("source", root / "source", "yes"), render("sink", root / "sink", "no")]
    wheels = [build_wheel(project, root / "wheels" / project.name) for project in projects]
    return venvs.get("worker", [venvs.headwater("worker"), *map(str, wheels)])


class VenvWorker(WorkerProcess):
    """``headwater standalone`` as the venv's own ``headwater`` command, which sees only what the venv holds."""

    def __init__(self, venv: Venv, *args: Any, **kwargs: Any) -> None:
        leak = {name: "" for name in ("PYTHONPATH",) if name in os.environ}
        path = os.pathsep.join([str(venv.path / "bin"), os.environ.get("PATH", "")])
        env = {**leak, "VIRTUAL_ENV": str(venv.path), "PATH": path}
        super().__init__(*args, env=env, test_connectors=False, **kwargs)
        self.venv = venv

    def command(self) -> list[str]:
        files = [str(self.worker_path), *map(str, self.connector_paths)]
        return [str(self.venv.script("headwater")), "--log-level", self.log_level, "standalone", *files]


def written_values(directory: Path) -> list[Any]:
    """What the generated sink wrote: one JSON-lines file per topic partition."""
    return [json.loads(line) for file in sorted(directory.glob("*.jsonl")) for line in file.read_text().splitlines()]


def test_a_worker_runs_connectors_installed_from_wheels_and_stops_on_sigterm(
    worker_venv: Venv, kafka_bootstrap: str, unique_name: str, tmp_path: Path
) -> None:
    installed = worker_venv.distributions()
    assert installed >= SERVER_STACK | {"acme-orders-source", "acme-orders-sink"}
    assert "pytest" not in installed, "a worker installs no test tools"

    input_file, out = tmp_path / "input.jsonl", tmp_path / "out"
    input_file.write_text("".join(line + "\n" for line in LINES))
    worker_props = {
        "bootstrap.servers": kafka_bootstrap,
        "offset.flush.interval.ms": 600_000,  # only the commit at the stop runs
        "value.converter.schemas.enable": "false",
    }
    connectors = {
        "lines-in": {
            "connector.class": "acme-orders-source",
            "file": str(input_file),
            "topic": unique_name,
            "transforms": "tag",
            "transforms.tag.type": "acme-orders-source-tag",
            "transforms.tag.field.value": "wheel",
        },
        "lines-out": {
            "connector.class": "acme-orders-sink",
            "topics": unique_name,
            "directory": str(out),
            "batch.size": 1,  # each record is written (and its commit asked for) as it comes
        },
    }
    with VenvWorker(worker_venv, tmp_path / "worker", worker_props, connectors) as worker:
        worker.start()
        worker.wait_until(lambda: len(written_values(out)) >= len(EXPECTED), 90, "the sink wrote every record")
        assert worker.terminate(60) == 0
        assert worker.offset("lines-in", {"file": str(input_file)}) == {"line": len(LINES) - 1}
        worker.assert_log_contains("connector lines-in stopped", "connector lines-out stopped")

    assert sorted(written_values(out), key=lambda value: value["id"]) == EXPECTED
    on_topic = [
        json.loads(message.value or b"null") for message in KafkaInspector(kafka_bootstrap).messages(unique_name)
    ]
    assert sorted(on_topic, key=lambda value: value["id"]) == EXPECTED
