"""Headwater's runtime: the worker, its herder, the task loops, and connector and hook discovery."""

from headwater.runtime.clock import SystemClock, VirtualClock
from headwater.runtime.config.connector import SINK_CONNECTOR_CONFIG, SOURCE_CONNECTOR_CONFIG, TaskSettings
from headwater.runtime.config.worker import WORKER_CONFIG
from headwater.runtime.errors import AlreadyExistsError, NotFoundError
from headwater.runtime.herder import StandaloneHerder
from headwater.runtime.plugins import installed_connectors, plugin_manager, resolve_connector_class
from headwater.runtime.tasks.base import State, TaskId
from headwater.runtime.tasks.sink import WorkerSinkTask
from headwater.runtime.tasks.source import WorkerSourceTask
from headwater.runtime.worker import Worker

__all__ = [
    "SINK_CONNECTOR_CONFIG",
    "SOURCE_CONNECTOR_CONFIG",
    "WORKER_CONFIG",
    "AlreadyExistsError",
    "NotFoundError",
    "StandaloneHerder",
    "State",
    "SystemClock",
    "TaskId",
    "TaskSettings",
    "VirtualClock",
    "Worker",
    "WorkerSinkTask",
    "WorkerSourceTask",
    "installed_connectors",
    "plugin_manager",
    "resolve_connector_class",
]
