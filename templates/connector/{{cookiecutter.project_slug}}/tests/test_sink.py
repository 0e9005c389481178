"""The example sink keeps Headwater's offset contract: the conformance suite, a stateful test through random
crashes, restarts, rebalances and failing commits, and a plain test on the simulated worker.

Run them with ``pytest``; add ``--conformance-kafka`` to run the conformance suite on a real broker too."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from headwater.harness import ConformanceContext, SimulatedWorker, SinkMachine, machine_test, sink_conformance
from headwater.runtime.plugins import installed_connectors
from headwater.sdk import TopicPartition

from {{ cookiecutter.package_name }} import {{ cookiecutter.class_prefix }}SinkConnector
from {{ cookiecutter.package_name }}.sink import locks, written_values


def config(context: ConformanceContext) -> dict[str, str]:
    return {"directory": str(context.tmp_path / "out"), "batch.size": "3"}


TestConformance = sink_conformance(
    {{ cookiecutter.class_prefix }}SinkConnector,
    config,
    written=lambda config: written_values(config["directory"]),
    provisioned=lambda config: locks(config["directory"]),
    bad_configs=[({"batch.size": "0"}, "batch.size"), ({"directory": None}, "directory")],
)


class FileSinkMachine(SinkMachine):
    """Random records, time and faults; every record must be written at least once, and nothing committed that
    was not written."""

    connector = {{ cookiecutter.class_prefix }}SinkConnector

    def setup(self) -> dict[str, str]:
        self.directory = Path(tempfile.mkdtemp())
        return {"directory": str(self.directory), "batch.size": "3"}

    def written_values(self) -> list[Any]:
        return written_values(str(self.directory))

    def cleanup(self) -> None:
        shutil.rmtree(self.directory, ignore_errors=True)


TestFileSinkMachine = machine_test(FileSinkMachine, max_examples=100)


def test_commits_only_what_was_written(make_simulated_worker: Callable[..., SimulatedWorker], tmp_path: Path) -> None:
    out = tmp_path / "out"
    worker = make_simulated_worker({"offset.flush.interval.ms": 60_000})
    config = {"directory": str(out), "batch.size": 3, "topics": "orders"}
    worker.add_connector("files", {{ cookiecutter.class_prefix }}SinkConnector, config)
    worker.produce("orders", {"n": 0})
    worker.produce("orders", {"n": 1})
    worker.advance(100)
    assert written_values(str(out)) == [] and worker.group_offsets("files") == {}, "buffered, not written"
    worker.produce("orders", {"n": 2})
    worker.advance(100)
    assert written_values(str(out)) == [{"n": 0}, {"n": 1}, {"n": 2}]
    worker.assert_group_offset("files", TopicPartition("orders", 0), 3)  # requested at once, not after 60 s
    assert worker.plugin_metrics("files", 0)["records_written"].value == 3, "the task's own metric counts them"


def test_the_connector_is_installed_under_its_entry_point() -> None:
    assert installed_connectors()["{{ cookiecutter.project_slug }}"] is {{ cookiecutter.class_prefix }}SinkConnector
