"""Deleting over HTTP (KIP-901): a task that provisions an external resource (a file) is told
``stop(connector_deleted=True)`` exactly once, on DELETE only, and removes it; restarts, pause/resume,
reconfiguration and stop never pass True."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from pathlib import Path
from typing import ClassVar

from headwater.sdk import SourceConnector, SourceRecord, SourceTask, hookimpl
from support.rest_worker import MemoryRestWorker, wait_until


class ProvisioningTask(SourceTask):
    """Creates ``<resource.dir>/<connector>-<task>`` at start; removes it when told its connector was deleted."""

    stops: ClassVar[list[tuple[str, bool]]] = []
    lock = threading.Lock()

    def start(self, config: Mapping[str, str]) -> None:
        self.resource = Path(config["resource.dir"]) / f"{config['name']}-{config['task']}"
        self.resource.write_text("provisioned", encoding="utf-8")

    def poll(self) -> list[SourceRecord]:
        return []

    @hookimpl(specname="stop")
    def on_stop(self, connector_deleted: bool) -> None:
        with ProvisioningTask.lock:
            ProvisioningTask.stops.append((self.resource.name, connector_deleted))
        if connector_deleted:
            self.resource.unlink()


class ProvisioningSource(SourceConnector):
    stops: ClassVar[list[bool]] = []

    def start(self, config: Mapping[str, str]) -> None:
        self.config = dict(config)

    def task_class(self) -> type[SourceTask]:
        return ProvisioningTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [{**self.config, "task": str(task)} for task in range(max_tasks)]

    @hookimpl(specname="stop")
    def on_stop(self, connector_deleted: bool) -> None:
        ProvisioningSource.stops.append(connector_deleted)


def test_only_delete_tells_the_task_to_remove_what_it_provisioned(
    live_rest: MemoryRestWorker, unique_name: str, tmp_path: Path
) -> None:
    ProvisioningTask.stops.clear()
    ProvisioningSource.stops.clear()
    config = {"connector.class": f"{__name__}:ProvisioningSource", "resource.dir": str(tmp_path), "tasks.max": "2"}
    url = f"/connectors/{unique_name}"
    live_rest.create(unique_name, config)
    resources = [tmp_path / f"{unique_name}-{task}" for task in (0, 1)]
    wait_until(lambda: all(path.exists() for path in resources), "both tasks provisioning their resource")

    assert live_rest.http.post(f"{url}/restart?includeTasks=true").status_code == 202
    assert live_rest.http.post(f"{url}/tasks/1/restart").status_code == 204
    assert live_rest.http.put(f"{url}/pause").status_code == 202
    assert live_rest.http.put(f"{url}/resume").status_code == 202
    assert live_rest.http.put(f"{url}/config", json={**config, "tasks.max": "1"}).status_code == 200
    assert live_rest.http.put(f"{url}/stop").status_code == 204
    assert live_rest.http.put(f"{url}/resume").status_code == 202
    live_rest.wait_for_states(unique_name, "RUNNING", ["RUNNING"])
    assert {deleted for _, deleted in ProvisioningTask.stops} == {False}
    assert set(ProvisioningSource.stops) == {False}
    assert all(path.exists() for path in resources)

    assert live_rest.http.delete(url).status_code == 204
    told = [stop for stop in ProvisioningTask.stops if stop[1]]
    assert told == [(f"{unique_name}-0", True)], "the one running task, exactly once"
    assert ProvisioningSource.stops[-1:] == [True]
    assert ProvisioningSource.stops.count(True) == 1
    assert not resources[0].exists()
    assert resources[1].exists(), "task 1 was reconfigured away before the delete, so it was never told"
