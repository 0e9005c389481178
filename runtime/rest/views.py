"""What the REST API shows of a connector, built from the herder: its info, its status, its tasks, in Kafka
Connect's JSON shapes; and request configs taken from JSON into Connect's string maps."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from headwater.runtime.config.secrets import hide, password_keys
from headwater.runtime.errors import BadRequestError, NotFoundError
from headwater.runtime.herder.base import Herder
from headwater.runtime.herder.restarts import RestartPlan
from headwater.runtime.herder.validation import config_string
from headwater.runtime.plugins import resolve_connector_class
from headwater.runtime.storage.status import Status
from headwater.runtime.tasks.base import TaskId
from headwater.sdk.connector import Connector
from headwater.sdk.errors import ConfigError


def string_config(config: Mapping[str, Any]) -> dict[str, str | None]:
    """A JSON config as a string map: numbers and booleans as their JSON text, ``null`` kept (validation reports
    it); a nested object or list is refused naming its key."""
    found: dict[str, str | None] = {}
    for key, value in config.items():
        if value is None or isinstance(value, str):
            found[key] = value
        elif isinstance(value, bool | int | float):
            found[key] = config_string(value)
        else:
            raise BadRequestError(f"Configuration values must be strings, got {type(value).__name__} for {key!r}")
    return found


def connector_info(herder: Herder, name: str) -> dict[str, Any]:
    """``{"name", "config", "tasks": [{"connector", "task"}], "type"}``, secret values hidden; raises
    NotFoundError."""
    info = herder.connector_info(name)
    return {
        "name": name,
        "config": {
            key: config_string(value)
            for key, value in hide(info.config, password_keys(info.config, stored=True)).items()
            if value is not None
        },
        "tasks": [{"connector": name, "task": task} for task in range(len(info.tasks))],
        "type": info.type,
    }


def task_infos(herder: Herder, name: str) -> list[dict[str, Any]]:
    """``[{"id": {"connector", "task"}, "config": {...}}]``, secret values hidden (the connector's ``PASSWORD``
    keys and the well-known names: task configs have no definition of their own); raises NotFoundError."""
    info = herder.connector_info(name)
    keys = password_keys(info.config, stored=True)
    return [
        {"id": {"connector": name, "task": task}, "config": hide(config, keys)}
        for task, config in enumerate(info.tasks)
    ]


def connector_status(herder: Herder, name: str, restarting: RestartPlan | None = None) -> dict[str, Any]:
    """``{"name", "connector": {state, worker_id, version?, trace?}, "tasks": [{id, state, worker_id, version?,
    trace?}], "type"}``; the instances a restart plan names show RESTARTING. Raises NotFoundError when there is no
    status."""
    status = herder.connector_status(name)
    restarted = restarting.tasks if restarting else []
    connector_version, task_version = plugin_versions(herder, name)
    return {
        "name": name,
        "connector": state_info(status.connector, restarting is not None and restarting.connector, connector_version),
        "tasks": [
            {"id": task, **state_info(found, task in restarted, task_version)} for task, found in status.tasks.items()
        ],
        "type": status.type,
    }


def task_status(herder: Herder, name: str, task: int) -> dict[str, Any]:
    """``{"id", "state", "worker_id", "version"?, "trace"?}``; raises NotFoundError."""
    found = herder.task_status(TaskId(name, task))
    return {"id": task, **state_info(found, version=plugin_versions(herder, name)[1])}


def state_info(status: Status, restarting: bool = False, version: str | None = None) -> dict[str, Any]:
    shown: dict[str, Any] = {"state": "RESTARTING" if restarting else status.state, "worker_id": status.worker_id}
    if version is not None:
        shown["version"] = version
    if status.trace:
        shown["trace"] = status.trace
    return shown


def plugin_versions(herder: Herder, name: str) -> tuple[str | None, str | None]:
    """The versions of the connector's plugin and of its task class as installed on this worker (Kafka Connect
    shows the versions its worker runs, KIP-891), the task's being the connector's when its class tells none
    (:meth:`Task.version` returns None); None for one that cannot be told."""
    try:
        config = herder.connector_config(name)
        cls = resolve_connector_class(config.get("connector.class") or "", allowed_modules=herder.allowed_modules)
    except (ConfigError, NotFoundError):
        return None, None
    return _class_versions(cls)


@functools.lru_cache(maxsize=256)
def _class_versions(cls: type[Connector]) -> tuple[str | None, str | None]:
    try:
        connector = cls()
        connector_version: str | None = str(connector.version())
    except Exception:
        return None, None
    try:
        task_version = connector.task_class()().version()
    except Exception:
        return connector_version, None
    return connector_version, connector_version if task_version is None else str(task_version)
