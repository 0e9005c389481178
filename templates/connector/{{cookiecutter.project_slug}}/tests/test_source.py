"""The example source keeps Headwater's offset contract: the conformance suite (with its exactly-once check, as the
connector declares exactly-once support), a stateful test through random crashes, restarts, rebalances and
failing commits, and a plain test on the simulated worker.

Run them with ``pytest``; add ``--conformance-kafka`` to run the conformance suite on a real broker too."""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, ClassVar

from headwater.harness import ConformanceContext, SimulatedWorker, SourceMachine, machine_test, source_conformance
from headwater.runtime.plugins import installed_connectors

from {{ cookiecutter.package_name }} import {{ cookiecutter.class_prefix }}SourceConnector
from {{ cookiecutter.package_name }}.source import slots


def append(path: str | Path, *lines: str) -> None:
    with Path(path).open("a", encoding="utf-8") as file:
        file.writelines(line + "\n" for line in lines)


def config(context: ConformanceContext) -> dict[str, str]:
    path = context.tmp_path / "input.jsonl"
    path.touch()
    return {"file": str(path), "topic": context.topic}


def feed(config: Mapping[str, Any], count: int) -> list[Any]:
    """New data in the source: ``count`` JSON lines, each unique; returns the values the records will carry."""
    first = len(Path(config["file"]).read_text(encoding="utf-8").splitlines())
    values = [{"line": first + n} for n in range(count)]
    append(config["file"], *(json.dumps(value) for value in values))
    return values


def advance_without_data(config: Mapping[str, Any]) -> None:
    """The source moves on without data for us: a comment line, which the connector skips."""
    append(config["file"], "# not captured")


TestConformance = source_conformance(
    {{ cookiecutter.class_prefix }}SourceConnector,
    config,
    feed=feed,
    advance_without_data=advance_without_data,
    batch_size_key="batch.size",  # the suite also runs with one and two records per poll
    provisioned=lambda config: slots(config["file"]),
    bad_configs=[({"batch.size": "0"}, "batch.size"), ({"file": " "}, "file"), ({"topic": None}, "topic")],
)


class FileMachine(SourceMachine):
    """Random writes to the file, time and faults; every line must reach the topic at least once."""

    connector = {{ cookiecutter.class_prefix }}SourceConnector
    worker_config: ClassVar[Mapping[str, Any]] = {"offset.flush.interval.ms": 500, "heartbeat.interval.ms": 700}

    def setup(self) -> dict[str, str]:
        self.directory = Path(tempfile.mkdtemp())
        self.path = self.directory / "input.jsonl"
        self.path.touch()
        return {"file": str(self.path), "topic": "lines"}

    def write(self, value: Any) -> None:
        append(self.path, json.dumps(value))

    def cleanup(self) -> None:
        shutil.rmtree(self.directory, ignore_errors=True)


TestFileMachine = machine_test(FileMachine, max_examples=100)


def test_lines_arrive_and_heartbeats_commit_past_skipped_ones(
    make_simulated_worker: Callable[..., SimulatedWorker], tmp_path: Path
) -> None:
    path = tmp_path / "input.jsonl"
    append(path, '{"id": 1}', "# a comment", '{"id": 2}')
    worker = make_simulated_worker({"offset.flush.interval.ms": 1_000, "heartbeat.interval.ms": 1_000})
    worker.add_connector("lines", {{ cookiecutter.class_prefix }}SourceConnector, {"file": str(path), "topic": "lines"})
    worker.advance(1_000)
    assert worker.values("lines") == [{"id": 1}, {"id": 2}]
    worker.assert_source_offset("lines", {"file": str(path)}, {"line": 2})
    append(path, "# another comment", "")
    worker.advance(2_000)
    assert worker.values("lines") == [{"id": 1}, {"id": 2}], "skipped lines send nothing"
    worker.assert_source_offset("lines", {"file": str(path)}, {"line": 4})


def test_a_heartbeat_reports_only_the_position_of_data_already_handed_over(
    make_simulated_worker: Callable[..., SimulatedWorker], tmp_path: Path
) -> None:
    path = tmp_path / "input.jsonl"
    append(path, '{"id": 1}', "# a comment", '{"id": 2}', '{"id": 3}')
    worker = make_simulated_worker({"offset.flush.interval.ms": 10, "heartbeat.interval.ms": 10})
    config = {"file": str(path), "topic": "lines", "batch.size": 1}
    worker.add_connector("lines", {{ cookiecutter.class_prefix }}SourceConnector, config)
    for _ in range(10):
        worker.advance(10)
        handed_over = [value["id"] for value in worker.values("lines")]
        last = {0: -1, 1: 0, 2: 2, 3: 3}[len(handed_over)]  # the line of the last record handed over
        beats = [beat["line"] for beat in worker.values("connect-heartbeats")]
        assert all(line <= last for line in beats), f"heartbeats {beats} ran ahead of records {handed_over}"
    assert worker.values("lines") == [{"id": 1}, {"id": 2}, {"id": 3}]
    worker.assert_source_offset("lines", {"file": str(path)}, {"line": 3})


def test_the_connector_is_installed_under_its_entry_point() -> None:
    assert installed_connectors()["{{ cookiecutter.project_slug }}"] is {{ cookiecutter.class_prefix }}SourceConnector
