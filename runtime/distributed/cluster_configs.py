"""Restart requests and logger levels through the config topic, and the config store a distributed worker follows.

``POST /connectors/<c>/restart`` on any worker writes Kafka Connect's ``restart-connector-<c>`` record,
``{"include-tasks":bool,"only-failed":bool}`` (KIP-745). ``POST /connectors/<c>/tasks/<n>/restart`` writes
Headwater's ``restart-task-<c>-<n>`` record, ``{}``: Kafka Connect forwards that request to the task's worker over
REST instead, and its workers skip the key. ``PUT /admin/loggers/<namespace>?scope=cluster`` writes Kafka Connect's
``logger-cluster-<namespace>`` record, ``{"level":"DEBUG"}`` (KIP-976). Every worker reads every request and acts on
what it runs (a logger level: on itself); requests already in the topic when a worker starts are history, not acted
on.
"""

from __future__ import annotations

import collections
import copy
from typing import Any

from headwater.runtime.herder.restarts import RestartRequest
from headwater.runtime.storage.kafka_configs import KafkaConfigStore
from headwater.runtime.storage.record_store import Record
from headwater.runtime.storage.wire import json_bytes, parse_record


def restart_record(request: RestartRequest) -> Record:
    if request.task is not None:
        return f"restart-task-{request.connector}-{request.task}".encode(), b"{}"
    value = {"include-tasks": request.include_tasks, "only-failed": request.only_failed}
    return f"restart-connector-{request.connector}".encode(), json_bytes(value)


def parse_restart(key: bytes | None, value: bytes | None) -> RestartRequest | None:
    """The request a config-topic record holds; ``None`` for any other record and for malformed ones."""
    parsed = parse_record(key, value)
    if parsed is None:
        return None
    text, data = parsed
    if data is None:
        return None
    if text.startswith("restart-connector-") and len(text) > len("restart-connector-"):
        include, only = data.get("include-tasks", False), data.get("only-failed", False)
        if isinstance(include, bool) and isinstance(only, bool):
            return RestartRequest(text.removeprefix("restart-connector-"), None, include, only)
        return None
    name, _, task = text.removeprefix("restart-task-").rpartition("-")
    if text.startswith("restart-task-") and name and task.isdecimal() and task.isascii():
        return RestartRequest(name, int(task))
    return None


LOGGER_PREFIX = "logger-cluster-"


def logger_record(namespace: str, level: str) -> Record:
    """Kafka Connect's ``logger-cluster-<namespace>`` record, ``{"level": ...}`` (KIP-976)."""
    return f"{LOGGER_PREFIX}{namespace}".encode(), json_bytes({"level": level})


def parse_logger_level(key: bytes | None, value: bytes | None) -> tuple[str, str] | None:
    """The (namespace, level) a config-topic record holds; ``None`` for any other record and for malformed ones."""
    parsed = parse_record(key, value)
    if parsed is None:
        return None
    text, data = parsed
    if not text.startswith(LOGGER_PREFIX) or data is None or not isinstance(data.get("level"), str):
        return None
    return text.removeprefix(LOGGER_PREFIX), data["level"]


class ClusterConfigStore(KafkaConfigStore):
    """The config store of a distributed worker: a :class:`KafkaConfigStore` that also counts the records it reads
    (:attr:`version`, so a worker sees at a glance whether anything changed), keeps the restart requests read
    after :meth:`start` for :meth:`restart_requests`, and the last config of each deleted connector for
    :meth:`last_config`."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        """Takes :class:`KafkaConfigStore`'s arguments."""
        super().__init__(*args, **kwargs)
        self.version = 0
        self._requests: collections.deque[RestartRequest] = collections.deque()
        self._logger_levels: collections.deque[tuple[str, str]] = collections.deque()
        self._following = False
        self._deleted: dict[str, dict[str, Any]] = {}

    def start(self) -> None:
        super().start()
        self._following = True

    def read_available(self, timeout_ms: int = 0) -> int:
        """Read what other workers wrote and has arrived (see :meth:`KafkaBasedLog.read_available`)."""
        return self.log.read_available(timeout_ms)

    def request_restart(self, request: RestartRequest) -> None:
        self._write([restart_record(request)])

    def put_logger_level(self, namespace: str, level: str) -> None:
        """Ask every worker to set a namespace's level (each applies it once read, :meth:`logger_levels`)."""
        self._write([logger_record(namespace, level)])

    def logger_levels(self) -> list[tuple[str, str]]:
        """The (namespace, level) records read since the last call, oldest first; those in the topic before
        :meth:`start` are history, not returned (Kafka Connect's workers skip them too)."""
        found = []
        while self._logger_levels:
            found.append(self._logger_levels.popleft())
        return found

    def restart_requests(self) -> list[RestartRequest]:
        """The requests read since the last call, oldest first."""
        found = []
        while self._requests:
            found.append(self._requests.popleft())
        return found

    def last_config(self, name: str) -> dict[str, Any] | None:
        """The connector's config or, once it is deleted, the last config read for it: what an instance started to
        be told ``stop(connector_deleted=True)`` is given."""
        found = self.connector_config(name)
        if found is None and name in self._deleted:
            found = copy.deepcopy(self._deleted[name])
        return found

    def _apply(self, key: bytes | None, value: bytes | None) -> None:
        if value is None and key is not None and key.startswith(b"connector-"):
            name = key.decode("utf-8", "replace").removeprefix("connector-")
            if (config := self.connector_config(name)) is not None:
                self._deleted[name] = config
        super()._apply(key, value)
        self.version += 1
        if self._following and (request := parse_restart(key, value)) is not None:
            self._requests.append(request)
        if self._following and (level := parse_logger_level(key, value)) is not None:
            self._logger_levels.append(level)
