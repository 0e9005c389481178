"""The standalone herder: connector configs in this process, everything run by this worker, in Kafka Connect's
order.

Every call holds :attr:`~headwater.runtime.herder.base.Herder.lock`, so the run loop's
:meth:`~StandaloneHerder.tick`, REST requests (on the REST server's threads) and shutdown never interleave. Task
threads only report state changes, which go to the status store without the lock.
"""

from __future__ import annotations

from typing import Any

from headwater.runtime.herder.base import Herder
from headwater.runtime.herder.lifecycle import forget_deleted, generate_task_configs, stop_tasks
from headwater.runtime.herder.restarts import RestartPlan, RestartRequest
from headwater.runtime.storage.configs import TargetState
from headwater.runtime.storage.offsets import OffsetStore
from headwater.runtime.storage.status import MemoryStatusStore, StatusStore
from headwater.runtime.tasks.base import State, TaskId, WorkerTask
from headwater.runtime.worker import Worker
from headwater.runtime.worker_connector import WorkerConnector


class StandaloneHerder(Herder):
    """Connector configs in memory (the standalone CLI reads them from files); statuses and active topics in
    ``status_store`` (a memory one by default); source offsets in the worker's offset store."""

    def __init__(
        self, worker: Worker, status_store: StatusStore | None = None, offset_store: OffsetStore | None = None
    ) -> None:
        super().__init__(
            worker,
            MemoryStatusStore() if status_store is None else status_store,
            worker.offset_store if offset_store is None else offset_store,
        )
        self.configs: dict[str, dict[str, Any]] = {}
        self.task_configs: dict[str, list[dict[str, str]]] = {}
        self.target_states: dict[str, TargetState] = {}
        self.statuses: dict[tuple[str, int | None], tuple[State, str | None]] = {}
        """The last state each connector and task of this worker reported, with its trace."""

    def tick(self) -> None:
        """Serve task reconfiguration requests made by connectors (a connector whose ``start`` returned on its own
        thread makes one); record the topics the tasks used; report connectors whose ``start`` takes long."""
        with self.health.tick():
            with self.lock:
                for name, connector in list(self.worker.connectors.items()):
                    self._serve_reconfiguration(name, connector)
                self.active_topics.track(list(self.worker.tasks.values()))
            self.worker.report_starting()

    def _await_start(self, name: str) -> None:
        connector = self.worker.connectors.get(name)
        wait_s = int(self.worker.config["connector.start.wait.ms"]) / 1000
        if connector is None or not connector.started.wait(wait_s):
            return
        with self.lock:
            if self.worker.connectors.get(name) is connector:
                self._serve_reconfiguration(name, connector)

    def _serve_reconfiguration(self, name: str, connector: WorkerConnector) -> None:
        """Reconfigure the connector's tasks if it asked for it (a connector whose ``start`` returned asks too)."""
        if connector.reconfiguration_requested.is_set():
            connector.reconfiguration_requested.clear()
            self._reconfigure(name)

    def stop(self) -> None:
        with self.lock:
            self.worker.stop()

    def connectors(self) -> list[str]:
        with self.lock:
            return sorted(self.configs)

    def connector_state(self, name: str) -> State | None:
        found = self.statuses.get((name, None))
        return None if found is None else found[0]

    def task_state(self, id: TaskId) -> State | None:
        found = self.statuses.get((id.connector, id.task))
        return None if found is None else found[0]

    # ---- the specialisation ----------------------------------------------------------------------------------

    def _stored_config(self, name: str) -> dict[str, Any] | None:
        return self.configs.get(name)

    def _stored_target_state(self, name: str) -> str | None:
        return self.target_states.get(name)

    def _stored_task_configs(self, name: str) -> list[dict[str, Any]]:
        return list(self.task_configs.get(name, []))

    def _write_config(self, name: str, props: dict[str, Any], created: bool, initial: TargetState) -> None:
        if not created:
            self._stop_all(name, connector_deleted=False)
        self.configs[name] = props
        self.target_states.setdefault(name, initial)
        self._start(name)

    def _remove(self, name: str) -> None:
        self._stop_all(name, connector_deleted=True)
        forget_deleted(name, self.active_topics, self.status_store)
        del self.configs[name]
        self.target_states.pop(name, None)
        for key in [k for k in self.statuses if k[0] == name]:
            del self.statuses[key]

    def _set_target_state(self, name: str, state: TargetState) -> None:
        previous, self.target_states[name] = self.target_states[name], state
        if state is TargetState.STOPPED:
            self._stop_all(name, connector_deleted=False)
            self._put_status(name, None, "STOPPED", None)
        elif previous is TargetState.STOPPED:
            self._start(name)
        elif state is TargetState.PAUSED:
            self.worker.pause(name)
        else:
            self.worker.resume(name)
            self._reconfigure(name)  # one created PAUSED, or paused from STOPPED, has no tasks yet

    def _restart(self, request: RestartRequest, plan: RestartPlan) -> None:
        """Restart what the plan names; those restarted are reported RESTARTING first."""
        name = request.connector
        if plan.connector:
            self.worker.stop_connector(name)
            self._put_status(name, None, "RESTARTING", None)
        ids = [TaskId(name, task) for task in plan.tasks]
        stop_tasks(self.worker, self.active_topics, ids)
        for id in ids:
            self._put_status(name, id.task, "RESTARTING", None)
        if plan.connector:
            self._start(name)
        for id in ids:
            if id not in self.worker.tasks:
                self._start_task(id)

    def _running_tasks(self, name: str) -> list[WorkerTask]:
        return [task for id, task in self.worker.tasks.items() if id.connector == name]

    def _state_changed(self, connector: str, task: int | None, state: State, trace: str | None) -> None:
        self.statuses[(connector, task)] = (state, trace)
        super()._state_changed(connector, task, state, trace)

    # ---- running connectors and tasks ----------------------------------------------------------------------

    def _start(self, name: str) -> None:
        state = self.target_states[name]
        if state is TargetState.STOPPED:
            self._put_status(name, None, "STOPPED", None)
            return
        connector = self.worker.start_connector(name, self.configs[name], paused=state is TargetState.PAUSED)
        if connector.state is not State.FAILED:
            self._reconfigure(name)

    def _start_task(self, id: TaskId) -> None:
        config = self.task_configs[id.connector][id.task]
        self.worker.start_task(id, config, paused=self.target_states[id.connector] is TargetState.PAUSED)

    def _reconfigure(self, name: str) -> None:
        """New task configs from the connector: when they differ from the running tasks', stop those and start
        the new ones. Only a STARTED connector is asked (Kafka's ``StandaloneHerder.updateConnectorTasks``): one
        created PAUSED, or paused from STOPPED, gets its tasks once resumed."""
        if self.target_states.get(name) is not TargetState.STARTED:
            return
        configs = generate_task_configs(self.worker, name)
        if configs is None or (configs == self.task_configs.get(name) and self.worker.task_ids(name)):
            return
        stop_tasks(self.worker, self.active_topics, self.worker.task_ids(name))
        self.task_configs[name] = configs
        for index in range(len(configs)):
            self._start_task(TaskId(name, index))

    def _stop_all(self, name: str, connector_deleted: bool) -> None:
        stop_tasks(self.worker, self.active_topics, self.worker.task_ids(name), connector_deleted=connector_deleted)
        self.task_configs.pop(name, None)
        if connector_deleted:
            self.worker.delete_connector(name, self.configs[name])
        else:
            self.worker.stop_connector(name)
