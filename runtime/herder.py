"""The standalone herder: keeps connector configs and tells the worker what to run, in Kafka Connect's order.

Every call holds :attr:`StandaloneHerder.lock`, so the run loop's :meth:`~StandaloneHerder.tick`, REST requests
(on the REST server's threads) and shutdown never interleave. Task threads only report state changes, which go to
the status store without the lock.
"""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Concatenate, NamedTuple, ParamSpec, TypeVar

from headwater.runtime.active_topics import ActiveTopics
from headwater.runtime.connector_offsets import ConnectorOffsets, Offset
from headwater.runtime.errors import AlreadyExistsError, BadRequestError, NotFoundError
from headwater.runtime.plugins import connector_type
from headwater.runtime.storage.status import MemoryStatusStore, Status, StatusStore
from headwater.runtime.tasks.base import State, TaskId
from headwater.runtime.validation import check_connector_config
from headwater.runtime.worker import Worker
from headwater.sdk.errors import ConnectError

log = logging.getLogger(__name__)

_P = ParamSpec("_P")
_R = TypeVar("_R")

NOT_STOPPED = (
    "Connectors must be in the STOPPED state before their offsets can be modified. This can be done for the "
    "specified connector by issuing a 'PUT' request to the '/connectors/{name}/stop' endpoint"
)


def _locked(method: Callable[Concatenate[StandaloneHerder, _P], _R]) -> Callable[Concatenate[StandaloneHerder, _P], _R]:
    def locked(self: StandaloneHerder, /, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        with self.lock:
            return method(self, *args, **kwargs)

    functools.update_wrapper(locked, method)
    return locked


class RestartPlan(NamedTuple):
    """What a restart request restarted: the connector instance or not, and which tasks."""

    connector: bool
    tasks: list[int]


class StandaloneHerder:
    """Connector configs in memory (a file or Kafka config store comes with the standalone CLI); statuses and
    active topics in ``status_store`` (a memory one by default)."""

    def __init__(self, worker: Worker, status_store: StatusStore | None = None) -> None:
        self.worker = worker
        self.lock = threading.RLock()
        self.status_store: StatusStore = MemoryStatusStore() if status_store is None else status_store
        self.active_topics = ActiveTopics(self.status_store, worker.clock, bool(worker.config["topic.tracking.enable"]))
        self.offsets = ConnectorOffsets(worker.offset_store, worker.transport)
        self.configs: dict[str, dict[str, Any]] = {}
        self.task_configs: dict[str, list[dict[str, str]]] = {}
        self.target_states: dict[str, str] = {}
        self.statuses: dict[tuple[str, int | None], tuple[State, str | None]] = {}
        previous = worker.listener

        def record(connector: str, task: int | None, state: State, trace: str | None) -> None:
            self.statuses[(connector, task)] = (state, trace)
            self._put_status(connector, task, state.value, trace)
            if previous is not None:
                previous(connector, task, state, trace)

        worker.listener = record

    # ---- configs ---------------------------------------------------------------------------------------------

    @_locked
    def put_connector_config(
        self, name: str, props: Mapping[str, Any], allow_replace: bool = True, initial_state: str = "RUNNING"
    ) -> bool:
        """Create or replace a connector; return whether it was created. An invalid config changes nothing and
        raises :class:`~headwater.runtime.errors.InvalidConfigError` naming every bad key."""
        props = {**props, "name": name}
        check_connector_config(props)
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

    @_locked
    def delete_connector(self, name: str) -> None:
        """Stop the tasks, then the connector, both with ``connector_deleted=True``, whatever its state (a
        STOPPED connector's instance is started to be told: :meth:`Worker.delete_connector`); then reset its active
        topics (its tasks can no longer write them back) and forget its config and statuses.

        Source offsets stay in the offset store (Kafka Connect keeps them too).
        """
        self._require(name)
        self._stop_all(name, connector_deleted=True)
        try:
            self.active_topics.reset(name)
        except ConnectError as error:
            log.error("connector %s deleted, but its active topics could not be reset: %s", name, error)
        del self.configs[name]
        self.target_states.pop(name, None)
        for key in [k for k in self.statuses if k[0] == name]:
            del self.statuses[key]
        try:
            self.status_store.delete_connector(name)
        except ConnectError as error:
            log.error("connector %s deleted, but its statuses could not be removed: %s", name, error)

    @_locked
    def restart_connector(self, name: str) -> None:
        """Restart the connector and its tasks."""
        self._require(name)
        self._stop_all(name, connector_deleted=False)
        self._start(name)

    @_locked
    def restart(self, name: str, include_tasks: bool = False, only_failed: bool = False) -> RestartPlan:
        """Kafka Connect's restart request (KIP-745): the connector instance unless ``only_failed`` and it did not
        fail; with ``include_tasks`` also every task (every failed one with ``only_failed``). Those restarted are
        reported RESTARTING first."""
        self._require(name)
        status = self.status_store.connector(name)
        if status is None:
            raise NotFoundError(f"Status for connector {name} not found")
        restart_connector = not only_failed or status.state == "FAILED"
        tasks = [
            task
            for task, found in self.task_statuses(name).items()
            if include_tasks and (not only_failed or found.state == "FAILED")
        ]
        if restart_connector:
            self.worker.stop_connector(name)
            self._put_status(name, None, "RESTARTING", None)
        ids = [TaskId(name, task) for task in tasks]
        self._stop_tasks(ids)
        for id in ids:
            self._put_status(name, id.task, "RESTARTING", None)
        if restart_connector:
            self._start(name)
        for id in ids:
            if id not in self.worker.tasks:
                self._start_task(id)
        return RestartPlan(restart_connector, tasks)

    @_locked
    def restart_task(self, id: TaskId) -> None:
        self._require(id.connector)
        if not 0 <= id.task < len(self.task_configs.get(id.connector, [])):
            raise NotFoundError(f"Task {id} not found")
        self._stop_tasks([id])
        self._start_task(id)

    @_locked
    def pause_connector(self, name: str) -> None:
        """Pause a running connector, or start a stopped one paused."""
        self._require(name)
        previous = self.target_states[name]
        self.target_states[name] = "PAUSED"
        if previous == "STOPPED":
            self._start(name)
        else:
            self.worker.pause(name)

    @_locked
    def resume_connector(self, name: str) -> None:
        """Resume a paused or stopped connector."""
        self._require(name)
        previous = self.target_states[name]
        self.target_states[name] = "STARTED"
        if previous == "STOPPED":
            self._start(name)
        else:
            self.worker.resume(name)

    @_locked
    def stop_connector(self, name: str) -> None:
        """``PUT /connectors/{c}/stop``: no tasks, connector stopped (not deleted); the config stays."""
        self._require(name)
        self.target_states[name] = "STOPPED"
        self._stop_all(name, connector_deleted=False)
        self._put_status(name, None, "STOPPED", None)

    @_locked
    def tick(self) -> None:
        """Serve task reconfiguration requests made by connectors; record the topics the tasks used."""
        for name, connector in list(self.worker.connectors.items()):
            if connector.reconfiguration_requested.is_set():
                connector.reconfiguration_requested.clear()
                self._reconfigure(name)
        self.active_topics.track(list(self.worker.tasks.values()))

    @_locked
    def stop(self) -> None:
        self.worker.stop()

    # ---- reads -----------------------------------------------------------------------------------------------

    @_locked
    def connectors(self) -> list[str]:
        return sorted(self.configs)

    @_locked
    def connector_config(self, name: str) -> dict[str, Any]:
        """The connector's config as it was given; raises NotFoundError."""
        self._require(name)
        return dict(self.configs[name])

    @_locked
    def connector_type(self, name: str) -> str:
        """``source``, ``sink`` or ``unknown``; raises NotFoundError."""
        self._require(name)
        return connector_type(self.configs[name].get("connector.class"))

    @_locked
    def tasks(self, name: str) -> list[dict[str, str]]:
        """The config of each of the connector's tasks (none while it is stopped); raises NotFoundError."""
        self._require(name)
        return [dict(config) for config in self.task_configs.get(name, [])]

    @_locked
    def task_statuses(self, name: str) -> dict[int, Status]:
        """The status of each of the connector's current tasks, by task number."""
        count = len(self.task_configs.get(name, []))
        return {task: status for task, status in self.status_store.tasks(name).items() if task < count}

    def connector_state(self, name: str) -> State | None:
        found = self.statuses.get((name, None))
        return None if found is None else found[0]

    def task_state(self, id: TaskId) -> State | None:
        found = self.statuses.get((id.connector, id.task))
        return None if found is None else found[0]

    # ---- active topics and offsets -----------------------------------------------------------------------

    @_locked
    def reset_active_topics(self, name: str) -> None:
        """Tombstone the topics the connector used; those still in use come back with their next record."""
        tasks = [task for id, task in self.worker.tasks.items() if id.connector == name]
        self.active_topics.reset(name, tasks)

    @_locked
    def connector_offsets(self, name: str) -> list[Offset]:
        kind = self.connector_type(name)
        return self.offsets.get(name, kind)

    @_locked
    def alter_connector_offsets(self, name: str, offsets: Sequence[Mapping[str, Any]]) -> str:
        """Alter the offsets of a STOPPED connector; return Connect's success message."""
        kind = self._require_stopped(name)
        return self.offsets.alter(name, kind, offsets)

    @_locked
    def reset_connector_offsets(self, name: str) -> str:
        """Delete every offset of a STOPPED connector; return Connect's success message."""
        kind = self._require_stopped(name)
        return self.offsets.reset(name, kind)

    # ---- internals -------------------------------------------------------------------------------------------

    def _require(self, name: str) -> None:
        if name not in self.configs:
            raise NotFoundError(f"Connector {name} not found")

    def _require_stopped(self, name: str) -> str:
        kind = self.connector_type(name)
        if self.target_states[name] != "STOPPED" or self.worker.task_ids(name):
            raise BadRequestError(NOT_STOPPED.format(name=name))
        return kind

    def _start(self, name: str) -> None:
        state = self.target_states[name]
        if state == "STOPPED":
            self._put_status(name, None, "STOPPED", None)
            return
        connector = self.worker.start_connector(name, self.configs[name], paused=state == "PAUSED")
        if connector.state is not State.FAILED:
            self._reconfigure(name)

    def _start_task(self, id: TaskId) -> None:
        config = self.task_configs[id.connector][id.task]
        self.worker.start_task(id, config, paused=self.target_states[id.connector] == "PAUSED")

    def _reconfigure(self, name: str) -> None:
        try:
            configs = self.worker.connector_task_configs(name)
        except Exception as error:
            self.worker.connectors[name].fail(error)
            return
        if configs == self.task_configs.get(name) and self.worker.task_ids(name):
            return
        self._stop_tasks(self.worker.task_ids(name))
        self.task_configs[name] = configs
        for index in range(len(configs)):
            self._start_task(TaskId(name, index))

    def _stop_all(self, name: str, connector_deleted: bool) -> None:
        self._stop_tasks(self.worker.task_ids(name), connector_deleted=connector_deleted)
        self.task_configs.pop(name, None)
        if connector_deleted:
            self.worker.delete_connector(name, self.configs[name])
        else:
            self.worker.stop_connector(name)

    def _stop_tasks(self, ids: list[TaskId], connector_deleted: bool = False) -> None:
        """Stop the tasks; unless their connector is deleted, record the topics they used up to their last
        acknowledged or consumed record."""
        stopping = [self.worker.tasks[id] for id in ids if id in self.worker.tasks]
        self.worker.stop_tasks(ids, connector_deleted=connector_deleted)
        if not connector_deleted:
            self.active_topics.track(stopping)

    def _put_status(self, connector: str, task: int | None, state: str, trace: str | None) -> None:
        put_status(
            self.status_store, self.worker.worker_id, self.target_states.get(connector), connector, task, state, trace
        )


def put_status(
    store: StatusStore,
    worker_id: str,
    target_state: str | None,
    connector: str,
    task: int | None,
    state: str,
    trace: str | None,
) -> None:
    """Write a status record (a failure is logged); a stopped task is UNASSIGNED, and so is a connector stopped for
    any other reason than its STOPPED ``target_state`` (Kafka Connect's shutdown status)."""
    if state == "STOPPED" and (task is not None or target_state != "STOPPED"):
        state = "UNASSIGNED"
    try:
        if task is None:
            store.put_connector(connector, state, trace, worker_id, 0)
        else:
            store.put_task(connector, task, state, trace, worker_id, 0)
    except (ConnectError, ValueError) as error:
        log.error("cannot record the %s status of %s: %s", state, connector if task is None else task, error)
