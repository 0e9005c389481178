"""The herder: what every worker's herder does, written once (Kafka Connect's ``AbstractHerder``).

A herder validates and stores connector configs, answers the REST API's reads in one consistent step each, plans
restarts, keeps statuses, and alters and resets connector offsets. :class:`Herder` does all of that and leaves
two things to its specialisations: where configs, target states and task configs live (a dict in
:class:`~headwater.runtime.herder.standalone.StandaloneHerder`, the config topic in
:class:`~headwater.runtime.distributed.herder.DistributedHerder`) and who carries out a change (the herder itself,
or whichever workers of the cluster run what the change touches).

Every public method holds :attr:`Herder.lock`, so a read-modify-write (PATCH) or a restart with its plan never
interleaves with another request on the same worker. Methods naming a connector raise
:class:`~headwater.runtime.errors.NotFoundError` when there is none of that name.
"""

from __future__ import annotations

import abc
import contextlib
import logging
import threading
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from headwater.runtime.config.names import check_connector_name
from headwater.runtime.config.secrets import (
    password_keys,
    restore_hidden,
    scrub,
    scrub_error,
    secret_values,
    warn_short_secrets,
)
from headwater.runtime.errors import AlreadyExistsError, BadRequestError, NotFoundError
from headwater.runtime.herder.active_topics import ActiveTopics
from headwater.runtime.herder.generations import Generations
from headwater.runtime.herder.health import Health
from headwater.runtime.herder.lifecycle import put_status
from headwater.runtime.herder.offset_alterations import ConnectorOffsets, Offset
from headwater.runtime.herder.restarts import RestartPlan, RestartRequest, build_restart_plan
from headwater.runtime.herder.validation import check_connector_config
from headwater.runtime.logs.loggers import Loggers, parse_level
from headwater.runtime.logs.scrubber import watch
from headwater.runtime.plugins import ALLOWED_MODULES, connector_type, resolve_connector_class
from headwater.runtime.storage.configs import TargetState
from headwater.runtime.storage.offsets import OffsetStore
from headwater.runtime.storage.status import Status, StatusStore
from headwater.runtime.tasks.base import State, TaskId, WorkerTask
from headwater.runtime.worker import Worker
from headwater.sdk.errors import ConfigError

log = logging.getLogger(__name__)

NOT_STOPPED = (
    "Connectors must be in the STOPPED state before their offsets can be modified. This can be done for the "
    "specified connector by issuing a 'PUT' request to the '/connectors/{name}/stop' endpoint"
)


def _warn_unknown(name: str, unknown: Mapping[str, str]) -> None:
    """Log each unknown key of the connector's new config (:func:`check_connector_config`)."""
    for key, message in unknown.items():
        log.warning("connector %s: %s", name, message, extra={"unknown_key": key})


class ConnectorInfo(NamedTuple):
    """A connector's config, its tasks' configs and its type, read in one step."""

    config: dict[str, Any]
    tasks: list[dict[str, str]]
    type: str


class ConnectorStatus(NamedTuple):
    """A connector's status, its current tasks' statuses by number and its type, read in one step."""

    connector: Status
    tasks: dict[int, Status]
    type: str


class Herder(abc.ABC):
    """The herder of ``worker``: statuses and active topics in ``status_store``, source offsets in
    ``offset_store``. Subclasses say where configs live (the ``_stored_*`` methods, :meth:`connectors`) and carry
    out changes (:meth:`_write_config`, :meth:`_remove`, :meth:`_set_target_state`, :meth:`_restart`)."""

    def __init__(self, worker: Worker, status_store: StatusStore, offset_store: OffsetStore) -> None:
        self.worker = worker
        self.lock = threading.RLock()
        self.health = Health()
        """Whether the worker has started and its herder answers (``GET /health``, KIP-1017)."""
        self.loggers = Loggers(worker.clock)
        """This process's loggers, their levels and when this worker changed them (``/admin/loggers``, KIP-495)."""
        self.status_store = status_store
        self.generations = Generations(status_store)
        """The generation of each run of a connector or task on this worker, which its statuses carry."""
        self.active_topics = ActiveTopics(status_store, worker.clock, bool(worker.config["topic.tracking.enable"]))
        self.offsets = ConnectorOffsets(self._source_offsets, worker.transport)
        self._offset_store = offset_store
        self._checked: dict[str, Mapping[str, Any]] = {}
        """Each connector's config last checked by :meth:`_check_started`."""
        previous = worker.listener

        def record(connector: str, task: int | None, state: State, trace: str | None) -> None:
            self._state_changed(connector, task, state, trace)
            if previous is not None:
                previous(connector, task, state, trace)

        worker.listener = record
        worker.starting = self.generations.begin
        watch(worker)

    @property
    def allowed_modules(self) -> list[str]:
        """The worker's ``connector.class.allowed.modules``."""
        return list(self.worker.config[ALLOWED_MODULES])

    # ---- configs -------------------------------------------------------------------------------------------

    def put_connector_config(
        self, name: str, props: Mapping[str, Any], allow_replace: bool = True, initial_state: str = "RUNNING"
    ) -> bool:
        """Create or replace a connector; return whether it was created. An invalid config changes nothing and
        raises :class:`~headwater.runtime.errors.InvalidConfigError` naming every bad key; so does a create
        request's ``initial_state`` other than RUNNING, PAUSED and STOPPED (it only applies to a new connector).
        A name that cannot be a connector's (:func:`check_connector_name`) is refused; a secret key sent as
        ``[hidden]`` keeps its stored value (:func:`restore_hidden`)."""
        check_connector_name(name)
        with contextlib.suppress(ConfigError):  # a bad class is reported by the check below
            # an allowed class is loaded first, so that restore_hidden knows its PASSWORD keys
            resolve_connector_class(props.get("connector.class") or "", allowed_modules=self.allowed_modules)
        with self.lock:
            props = restore_hidden(name, {**props, "name": name}, self._stored_config(name))
        unknown = self._check(props)
        with self.lock:
            created = self._stored_config(name) is None
            if not created and not allow_replace:
                raise AlreadyExistsError(f"Connector {name} already exists")
            self._write_config(name, props, created, TargetState.initial(initial_state))
        _warn_unknown(name, unknown)
        self._await_start(name)
        return created

    def patch_connector_config(self, name: str, changes: Mapping[str, Any]) -> None:
        """Change some keys of the connector's config; a ``None`` value removes its key. The merged config must be
        valid (:class:`~headwater.runtime.errors.InvalidConfigError` otherwise). Merge and write are one step: no
        other PATCH or PUT, through this worker or another, makes either's change go missing."""
        with self.lock:
            stored = self._require(name)
            changes = restore_hidden(name, changes, stored)
            config = {**stored, **changes}
            merged = {key: value for key, value in config.items() if value is not None}
            unknown = self._check(merged)
            self._patch_config(name, dict(changes), merged)
        _warn_unknown(name, unknown)
        self._await_start(name)

    def _check(self, props: dict[str, Any]) -> dict[str, str]:
        """Validate a connector config (the unknown keys' warnings returned); an error shows no secret value."""
        try:
            unknown = check_connector_config(props, self.worker.config, self.worker.group_id is not None)
            self.worker.validate(props)
        except ConfigError as error:
            raise scrub_error(error, props) from None
        return unknown

    def delete_connector(self, name: str) -> None:
        """Delete the connector: its tasks, then its instance, get ``stop(connector_deleted=True)`` whatever its
        state (a STOPPED connector's instance is started to be told: :meth:`Worker.delete_connector`), its active
        topics are reset and its statuses removed. Source offsets stay (Kafka Connect keeps them too)."""
        with self.lock:
            self._require(name)
            self._remove(name)

    def pause_connector(self, name: str) -> None:
        """Pause a running connector, or start a stopped one paused."""
        self._change_target_state(name, TargetState.PAUSED)

    def resume_connector(self, name: str) -> None:
        """Resume a paused or stopped connector."""
        self._change_target_state(name, TargetState.STARTED)

    def stop_connector(self, name: str) -> None:
        """``PUT /connectors/{c}/stop``: no tasks, connector stopped (not deleted); the config stays."""
        self._change_target_state(name, TargetState.STOPPED)

    def restart(self, name: str, include_tasks: bool = False, only_failed: bool = False) -> RestartPlan:
        """Kafka Connect's restart request (KIP-745); return what it restarts, as this worker's statuses show
        it (:func:`~headwater.runtime.herder.restarts.build_restart_plan`)."""
        with self.lock:
            self._require(name)
            self._refresh_statuses()
            status = self.status_store.connector(name)
            if status is None:
                raise NotFoundError(f"Status for connector {name} not found")
            request = RestartRequest(name, None, include_tasks, only_failed)
            plan = build_restart_plan(request, status, self.task_statuses(name))
            self._restart(request, plan)
        self._await_start(name)
        return plan

    def restart_task(self, id: TaskId) -> None:
        with self.lock:
            self._require(id.connector)
            if not 0 <= id.task < len(self._stored_task_configs(id.connector)):
                raise NotFoundError(f"Task {id} not found")
            self._restart(RestartRequest(id.connector, id.task), RestartPlan(False, [id.task]))

    # ---- reads ---------------------------------------------------------------------------------------------

    @abc.abstractmethod
    def connectors(self) -> list[str]:
        """Every connector's name, sorted."""

    def connector_config(self, name: str) -> dict[str, Any]:
        """The connector's config as it was given."""
        with self.lock:
            return dict(self._require(name))

    def connector_type(self, name: str) -> str:
        """``source``, ``sink`` or ``unknown``."""
        with self.lock:
            return connector_type(self._require(name).get("connector.class"))

    def tasks(self, name: str) -> list[dict[str, str]]:
        """The config of each of the connector's tasks (none while it is stopped)."""
        with self.lock:
            self._require(name)
            return [{k: str(v) for k, v in config.items()} for config in self._stored_task_configs(name)]

    def connector_info(self, name: str) -> ConnectorInfo:
        """The connector's config, task configs and type, in one step."""
        with self.lock:
            return ConnectorInfo(self.connector_config(name), self.tasks(name), self.connector_type(name))

    def task_statuses(self, name: str) -> dict[int, Status]:
        """The status of each of the connector's current tasks, by task number."""
        with self.lock:
            count = len(self._stored_task_configs(name))
            return {task: status for task, status in self.status_store.tasks(name).items() if task < count}

    def connector_status(self, name: str) -> ConnectorStatus:
        """The connector's status and its current tasks', in one step; raises NotFoundError when there is none."""
        with self.lock:
            status = self.status_store.connector(name)
            if status is None or self._stored_config(name) is None:
                raise NotFoundError(f"No status found for connector {name}")
            return ConnectorStatus(status, self.task_statuses(name), self.connector_type(name))

    def task_status(self, id: TaskId) -> Status:
        """The status of one of the connector's current tasks; raises NotFoundError when there is none."""
        with self.lock:
            found = self.task_statuses(id.connector).get(id.task) if self._stored_config(id.connector) else None
            if found is None:
                raise NotFoundError(f"No status found for task {id.connector}-{id.task}")
            return found

    # ---- active topics and offsets -------------------------------------------------------------------------

    def reset_active_topics(self, name: str) -> None:
        """Tombstone the topics the connector used; those still in use come back with their next record."""
        with self.lock:
            self.active_topics.reset(name, self._running_tasks(name))

    def connector_offsets(self, name: str) -> list[Offset]:
        with self.lock:
            kind = self.connector_type(name)
            self._refresh_offsets()
            return self.offsets.get(name, kind)

    def alter_connector_offsets(self, name: str, offsets: Sequence[Mapping[str, Any]]) -> str:
        """Alter the offsets of a STOPPED connector; return Connect's success message."""
        with self.lock:
            kind = self._require_stopped(name)
            return self.offsets.alter(name, kind, offsets)

    def reset_connector_offsets(self, name: str) -> str:
        """Delete every offset of a STOPPED connector; return Connect's success message."""
        with self.lock:
            kind = self._require_stopped(name)
            self._refresh_offsets()
            return self.offsets.reset(name, kind)

    # ---- loggers ---------------------------------------------------------------------------------------------

    def set_cluster_logger_level(self, namespace: str, level: str) -> None:
        """Set a namespace's level on every worker of the cluster (KIP-976); BadRequestError for an unknown level.
        A standalone worker is its whole cluster."""
        parse_level(level)
        self._set_cluster_logger_level(namespace, level)

    def _set_cluster_logger_level(self, namespace: str, level: str) -> None:
        self.loggers.set_level(namespace, level)

    # ---- statuses ------------------------------------------------------------------------------------------

    def _state_changed(self, connector: str, task: int | None, state: State, trace: str | None) -> None:
        """The worker's listener: a connector or task of this worker changed state (on any thread)."""
        if task is None and state in (State.RUNNING, State.PAUSED):
            self._check_started(connector)
        self._put_status(connector, task, state.value, trace)

    def _check_started(self, name: str) -> None:
        """Warn once per start (a new config object) of a connector about secrets too short to be hidden in logs."""
        running = self.worker.connectors.get(name)
        if running is None or self._checked.get(name) is running.config:
            return
        self._checked[name] = running.config
        warn_short_secrets(f"connector {name}", running.config, password_keys(running.config, stored=True))

    def _put_status(self, connector: str, task: int | None, state: str, trace: str | None) -> None:
        """Write a status record of the connector's or task's current (or last) run here, in that run's generation,
        unless the connector is gone (deleted)."""
        target = self._stored_target_state(connector)
        if target is not None and trace:
            trace = scrub(trace, self._secret_values(connector))
        if target is not None:
            generation = self.generations.of(connector, task)
            put_status(self.status_store, self.worker.worker_id, generation, target, connector, task, state, trace)

    def _secret_values(self, name: str) -> set[str]:
        """The secret values of the connector's stored config and task configs, to hide in its traces."""
        config = self._stored_config(name) or {}
        keys = password_keys(config, stored=True)
        return secret_values([config], keys) | secret_values(self._stored_task_configs(name), keys)

    # ---- where configs live, and who carries out changes: the specialisations ----------------------------

    @abc.abstractmethod
    def _stored_config(self, name: str) -> dict[str, Any] | None:
        """The connector's stored config, ``None`` when there is no such connector."""

    @abc.abstractmethod
    def _stored_target_state(self, name: str) -> str | None:
        """The connector's stored target state, ``None`` when there is no such connector."""

    @abc.abstractmethod
    def _stored_task_configs(self, name: str) -> list[dict[str, Any]]:
        """The connector's committed task configs (none while it is stopped)."""

    @abc.abstractmethod
    def _write_config(self, name: str, props: dict[str, Any], created: bool, initial: TargetState) -> None:
        """Store a valid config; ``initial`` is a new connector's target state."""

    def _patch_config(self, name: str, changes: dict[str, Any], merged: dict[str, Any]) -> None:
        """Store a PATCH: ``changes`` to the stored config, which make it ``merged`` (validated) as this worker
        sees it. Where configs change only under :attr:`lock`, storing ``merged`` is enough."""
        self._write_config(name, merged, False, TargetState.STARTED)

    @abc.abstractmethod
    def _remove(self, name: str) -> None:
        """Delete the connector (see :meth:`delete_connector`)."""

    @abc.abstractmethod
    def _set_target_state(self, name: str, state: TargetState) -> None:
        """Record the connector's new target state and see that what runs of it follows."""

    @abc.abstractmethod
    def _restart(self, request: RestartRequest, plan: RestartPlan) -> None:
        """Carry out a restart request whose plan, as this worker sees it, is ``plan``."""

    @abc.abstractmethod
    def _running_tasks(self, name: str) -> list[WorkerTask]:
        """The connector's tasks this worker runs."""

    def _await_start(self, name: str) -> None:
        """After a request that may have started the connector here, with :attr:`lock` released: wait for its
        ``start`` as the worker's ``connector.start.wait.ms`` says, and start its tasks if it did start. Where
        requests do not start connectors themselves there is nothing to wait for."""
        return None

    def _refresh_statuses(self) -> None:
        """Catch up with statuses other workers wrote (nothing to do where there are none)."""
        return None

    def _source_offsets(self, name: str) -> OffsetStore:
        """The offset store of the source connector ``name``: the one :meth:`Worker.connector_offset_store` gives
        for its config (its own offsets topic), else the herder's."""
        return self.worker.connector_offset_store(self._require(name)) or self._offset_store

    def _refresh_offsets(self) -> None:
        """Catch up with source offsets other workers wrote (nothing to do where there are none)."""
        return None

    # ---- shared checks -------------------------------------------------------------------------------------

    def _change_target_state(self, name: str, state: TargetState) -> None:
        with self.lock:
            self._require(name)
            self._set_target_state(name, state)
        self._await_start(name)

    def _require(self, name: str) -> dict[str, Any]:
        config = self._stored_config(name)
        if config is None:
            raise NotFoundError(f"Connector {name} not found")
        return config

    def _require_stopped(self, name: str) -> str:
        """The connector's type, when it is STOPPED with no tasks; else BadRequestError (KIP-875)."""
        kind = self.connector_type(name)
        if self._stored_target_state(name) != TargetState.STOPPED or self._stored_task_configs(name):
            raise BadRequestError(NOT_STOPPED.format(name=name))
        return kind
