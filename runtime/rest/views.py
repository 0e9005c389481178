"""What the REST API shows of a connector, built from the herder: its info, its status, its tasks, in Kafka
Connect's JSON shapes; and request configs taken from JSON into Connect's string maps."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from headwater.runtime.errors import BadRequestError, NotFoundError
from headwater.runtime.herder import RestartPlan
from headwater.runtime.rest.herder import Herder
from headwater.runtime.storage.status import Status
from headwater.runtime.validation import config_string


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
    """``{"name", "config", "tasks": [{"connector", "task"}], "type"}``; raises NotFoundError."""
    with herder.lock:
        config = herder.connector_config(name)
        tasks = herder.tasks(name)
        kind = herder.connector_type(name)
    return {
        "name": name,
        "config": {key: config_string(value) for key, value in config.items() if value is not None},
        "tasks": [{"connector": name, "task": task} for task in range(len(tasks))],
        "type": kind,
    }


def task_infos(herder: Herder, name: str) -> list[dict[str, Any]]:
    """``[{"id": {"connector", "task"}, "config": {...}}]``; raises NotFoundError."""
    return [
        {"id": {"connector": name, "task": task}, "config": config} for task, config in enumerate(herder.tasks(name))
    ]


def connector_status(herder: Herder, name: str, restarting: RestartPlan | None = None) -> dict[str, Any]:
    """``{"name", "connector": {state, worker_id, trace?}, "tasks": [{id, state, worker_id, trace?}], "type"}``;
    the instances a restart plan names show RESTARTING. Raises NotFoundError when there is no status."""
    with herder.lock:
        status = herder.status_store.connector(name)
        if status is None or name not in herder.connectors():
            raise NotFoundError(f"No status found for connector {name}")
        tasks = herder.task_statuses(name)
        kind = herder.connector_type(name)
    restarted = restarting.tasks if restarting else []
    return {
        "name": name,
        "connector": state_info(status, restarting is not None and restarting.connector),
        "tasks": [{"id": task, **state_info(found, task in restarted)} for task, found in tasks.items()],
        "type": kind,
    }


def task_status(herder: Herder, name: str, task: int) -> dict[str, Any]:
    """``{"id", "state", "worker_id", "trace"?}``; raises NotFoundError."""
    with herder.lock:
        found = herder.task_statuses(name).get(task) if name in herder.connectors() else None
    if found is None:
        raise NotFoundError(f"No status found for task {name}-{task}")
    return {"id": task, **state_info(found)}


def state_info(status: Status, restarting: bool = False) -> dict[str, Any]:
    shown: dict[str, Any] = {"state": "RESTARTING" if restarting else status.state, "worker_id": status.worker_id}
    if status.trace:
        shown["trace"] = status.trace
    return shown
