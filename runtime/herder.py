"""The standalone herder: keeps connector configs and tells the worker what to run, in Kafka Connect's order."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from headwater.runtime.tasks.base import State, TaskId
from headwater.runtime.worker import Worker
from headwater.sdk.errors import ConnectError

log = logging.getLogger(__name__)


class NotFoundError(ConnectError):
    """No connector (or task) of that name."""


class AlreadyExistsError(ConnectError):
    """A connector of that name exists already."""


class StandaloneHerder:
    """Connector configs in memory (a file or Kafka config store comes with the standalone CLI)."""

    def __init__(self, worker: Worker) -> None:
        self.worker = worker
        self.configs: dict[str, dict[str, Any]] = {}
        self.task_configs: dict[str, list[dict[str, str]]] = {}
        self.target_states: dict[str, str] = {}
        self.statuses: dict[tuple[str, int | None], tuple[State, str | None]] = {}
        previous = worker.listener

        def record(connector: str, task: int | None, state: State, trace: str | None) -> None:
            self.statuses[(connector, task)] = (state, trace)
            if previous is not None:
                previous(connector, task, state, trace)

        worker.listener = record

    # ---- configs ---------------------------------------------------------------------------------------------

    def put_connector_config(
        self, name: str, props: Mapping[str, Any], allow_replace: bool = True, initial_state: str = "RUNNING"
    ) -> bool:
        """Create or replace a connector; return whether it was created. An invalid config changes nothing."""
        props = {**props, "name": name}
        self.worker.validate(props)
        created = name not in self.configs
        if not created and not allow_replace:
            raise AlreadyExistsError(f"Connector {name} already exists")
        if not created:
            self._stop_all(name, connector_deleted=False)
        self.configs[name] = props
        self.target_states.setdefault(name, "STARTED" if initial_state == "RUNNING" else initial_state)
        self._start(name)
        return created

    def delete_connector(self, name: str) -> None:
        """Stop the tasks, then the connector, both with ``connector_deleted=True``; forget the config.

        Source offsets stay in the offset store (Kafka Connect keeps them too).
        """
        self._require(name)
        self._stop_all(name, connector_deleted=True)
        del self.configs[name]
        self.target_states.pop(name, None)
        for key in [k for k in self.statuses if k[0] == name]:
            del self.statuses[key]

    def restart_connector(self, name: str) -> None:
        self._require(name)
        self._stop_all(name, connector_deleted=False)
        self._start(name)

    def restart_task(self, id: TaskId) -> None:
        self._require(id.connector)
        configs = self.task_configs.get(id.connector, [])
        if not 0 <= id.task < len(configs):
            raise NotFoundError(f"Task {id} not found")
        self.worker.stop_tasks([id])
        self.worker.start_task(id, configs[id.task], paused=self.target_states[id.connector] == "PAUSED")

    def pause_connector(self, name: str) -> None:
        self._require(name)
        self.target_states[name] = "PAUSED"
        self.worker.pause(name)

    def resume_connector(self, name: str) -> None:
        """Resume a paused or stopped connector."""
        self._require(name)
        previous = self.target_states[name]
        self.target_states[name] = "STARTED"
        if previous == "STOPPED":
            self._start(name)
        else:
            self.worker.resume(name)

    def stop_connector(self, name: str) -> None:
        """``PUT /connectors/{c}/stop``: no tasks, connector stopped (not deleted); the config stays."""
        self._require(name)
        self.target_states[name] = "STOPPED"
        self._stop_all(name, connector_deleted=False)

    def tick(self) -> None:
        """Serve task reconfiguration requests made by connectors."""
        for name, connector in list(self.worker.connectors.items()):
            if connector.reconfiguration_requested.is_set():
                connector.reconfiguration_requested.clear()
                self._reconfigure(name)

    def stop(self) -> None:
        self.worker.stop()

    # ---- reads -----------------------------------------------------------------------------------------------

    def connectors(self) -> list[str]:
        return sorted(self.configs)

    def connector_state(self, name: str) -> State | None:
        found = self.statuses.get((name, None))
        return None if found is None else found[0]

    def task_state(self, id: TaskId) -> State | None:
        found = self.statuses.get((id.connector, id.task))
        return None if found is None else found[0]

    # ---- internals -------------------------------------------------------------------------------------------

    def _require(self, name: str) -> None:
        if name not in self.configs:
            raise NotFoundError(f"Connector {name} not found")

    def _start(self, name: str) -> None:
        state = self.target_states[name]
        if state == "STOPPED":
            return
        connector = self.worker.start_connector(name, self.configs[name], paused=state == "PAUSED")
        if connector.state is not State.FAILED:
            self._reconfigure(name)

    def _reconfigure(self, name: str) -> None:
        try:
            configs = self.worker.connector_task_configs(name)
        except Exception as error:
            self.worker.connectors[name].fail(error)
            return
        if configs == self.task_configs.get(name) and self.worker.task_ids(name):
            return
        self.worker.stop_tasks(self.worker.task_ids(name))
        self.task_configs[name] = configs
        paused = self.target_states[name] == "PAUSED"
        for index, config in enumerate(configs):
            self.worker.start_task(TaskId(name, index), config, paused=paused)

    def _stop_all(self, name: str, connector_deleted: bool) -> None:
        self.worker.stop_tasks(self.worker.task_ids(name), connector_deleted=connector_deleted)
        self.task_configs.pop(name, None)
        self.worker.stop_connector(name, connector_deleted=connector_deleted)
