"""Versions users can read over REST, on an in-memory worker: ``GET /`` reports the installed Headwater's version
and the commit it was built from; a connector's tasks report its version unless their class tells its own, so the
reference connectors and their tasks all report Headwater's."""

from __future__ import annotations

import importlib
import importlib.metadata
from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from headwater import release
from headwater.runtime.rest.views import _class_versions
from headwater.sdk import SourceConnector, SourceRecord, SourceTask
from support.distribution import SOURCE_ROOT
from support.rest_worker import MemoryRestWorker, wait_until

REFERENCE_CONNECTORS = [
    "headwater.reference_connectors.kafka_mirror:KafkaMirrorSourceConnector",
    "headwater.reference_connectors.jdbc_cdc:JdbcCdcSourceConnector",
    "headwater.reference_connectors.spark_sink:SparkSinkConnector",
]


class UnversionedTask(SourceTask):
    def start(self, config: Mapping[str, str]) -> None:
        pass

    def poll(self) -> Sequence[SourceRecord]:
        return []


class VersionedSource(SourceConnector):
    def version(self) -> str:
        return "3.2"

    def start(self, config: Mapping[str, str]) -> None:
        pass

    def task_class(self) -> type[SourceTask]:
        return UnversionedTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [{} for _ in range(max_tasks)]


def test_root_reports_the_installed_version_and_the_commit_built_from(memory_rest: MemoryRestWorker) -> None:
    assert memory_rest.http.get("/").json() == {
        "version": importlib.metadata.version("headwater"),
        "commit": release.git_commit(SOURCE_ROOT) or "unknown",
        "kafka_cluster_id": None,
    }


def test_root_says_unknown_when_the_commit_cannot_be_told(
    memory_rest: MemoryRestWorker, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(release, "commit", lambda: None)
    assert memory_rest.http.get("/").json()["commit"] == "unknown"


def test_tasks_whose_class_tells_no_version_report_their_connectors(memory_rest: MemoryRestWorker) -> None:
    config = {"connector.class": f"{__name__}:VersionedSource", "tasks.max": "2"}
    created = memory_rest.http.post("/connectors", json={"name": "plain", "config": config})
    assert created.status_code == 201, created.text

    def running() -> dict[str, Any] | None:
        found: dict[str, Any] = memory_rest.http.get("/connectors/plain/status").json()
        return found if [task["state"] for task in found.get("tasks", [])] == ["RUNNING", "RUNNING"] else None

    status = wait_until(running, "both tasks running")
    assert [status["connector"]["version"]] + [task["version"] for task in status["tasks"]] == ["3.2"] * 3
    assert memory_rest.http.get("/connectors/plain/tasks/1/status").json()["version"] == "3.2"


@pytest.mark.parametrize("class_path", REFERENCE_CONNECTORS)
def test_reference_connectors_and_their_tasks_report_headwaters_version(class_path: str) -> None:
    module, _, name = class_path.partition(":")
    connector = getattr(importlib.import_module(module), name)
    installed = importlib.metadata.version("headwater")
    assert _class_versions(connector) == (installed, installed)
