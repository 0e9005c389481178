"""The status store: the state of each connector and task as its worker last reported it, and the topics each
connector has used (KIP-558), in Kafka Connect's status-topic records (``status.storage.topic``,
``KafkaStatusBackingStore``).

Every write is a list of records, each a UTF-8 key and a compact JSON value (``None``: a tombstone):

=========================================  ==========================================================================
``status-connector-<name>``                ``{"state":"RUNNING","trace":null,"worker_id":"host:port","generation":7}``
``status-task-<name>-<n>``                 the same shape
``status-topic-<topic>:connector-<name>``  ``{"topic":{"name":"t","connector":"c","task":0,"discoverTimestamp":ms}}``
=========================================  ==========================================================================

A deleted (Connect: ``DESTROYED``) connector or task is a tombstone. Task keys are split at their last ``-``, so
connector names may contain ``-``; topic keys at their first ``:``, which topic names cannot contain.

:class:`StatusView` reads such records as Connect does, skipping malformed ones. :class:`MemoryStatusStore`
applies what it writes at once, the Kafka store writes to the topic and reads it back, so both behave the same.

Each status carries the generation of the run (of a connector or a task, on one worker) that wrote it, and a newer
run has a newer generation (:class:`~headwater.runtime.herder.generations.Generations`). One rule,
:func:`may_replace`, keeps an older run's late record from hiding a newer run's status: a status replaces the
current one unless the current one is another worker's of a newer generation. Writers apply it to failure and
shutdown reports (``safe=True``), as Kafka Connect's ``KafkaStatusBackingStore.putSafe`` does
(``CacheEntry.canWriteSafely``), but can only check what they have read. Readers apply it to every connector and
task record, so a late record that raced past a writer's check, or any write of a zombie worker's older run, is
skipped; Connect's reader (``KafkaStatusBackingStore.readTaskStatus``) skips only a task's ``UNASSIGNED`` over a
``RUNNING`` of the same or a newer generation, from any worker. A tombstone (a deletion) always applies.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, NamedTuple, Protocol, TypeGuard, TypeVar

from headwater.runtime.storage.record_store import MemoryRecordStore, Record, RecordStore
from headwater.runtime.storage.wire import json_bytes, parse_record

log = logging.getLogger(__name__)

_K = TypeVar("_K")
_V = TypeVar("_V")

STATES = ("UNASSIGNED", "RUNNING", "PAUSED", "FAILED", "RESTARTING", "STOPPED")
"""The states a status record may hold; STOPPED is for connectors only."""


class Status(NamedTuple):
    """A connector's or task's state as reported by ``worker_id`` in its ``generation`` of the group."""

    state: str
    trace: str | None
    worker_id: str
    generation: int


class TopicStatus(NamedTuple):
    """A topic that ``task`` of ``connector`` first used at ``discover_timestamp`` (epoch milliseconds)."""

    topic: str
    connector: str
    task: int
    discover_timestamp: int


class StatusStore(Protocol):
    """Statuses of a cluster's connectors and tasks and the topics they use. Safe to call from several threads;
    the writes raise ConnectError when they fail, and then the reads do not show them."""

    def start(self) -> None:
        """Load the stored statuses; called once before any other method."""

    def stop(self) -> None:
        """Release resources; called once, last."""

    def put_connector(
        self, name: str, state: str, trace: str | None, worker_id: str, generation: int, *, safe: bool = False
    ) -> None:
        """Record the connector's state, one of :data:`STATES`, as reported by the run of ``generation`` on
        ``worker_id``; ``trace`` is the failure's stack trace. ``safe`` (Kafka Connect's ``putSafe``, for failure
        and shutdown reports): write nothing when the current status is another worker's of a newer generation
        (:func:`may_replace`)."""

    def put_task(
        self,
        connector: str,
        task: int,
        state: str,
        trace: str | None,
        worker_id: str,
        generation: int,
        *,
        safe: bool = False,
    ) -> None:
        """Record the task's state, one of :data:`STATES` but STOPPED; the rest as :meth:`put_connector`."""

    def connector(self, name: str) -> Status | None:
        """The connector's last recorded status, ``None`` when there is none."""
        ...

    def task(self, connector: str, task: int) -> Status | None:
        """The task's last recorded status, ``None`` when there is none."""
        ...

    def tasks(self, connector: str) -> dict[int, Status]:
        """Every task of the connector with a recorded status, by task number, in ascending order."""
        ...

    def put_topic(self, connector: str, topic: str, task: int, timestamp: int) -> None:
        """Record that ``task`` of the connector used ``topic``, first seen at ``timestamp`` (epoch ms)."""

    def topics(self, connector: str) -> list[TopicStatus]:
        """The topics the connector used since they were last reset, sorted by name."""
        ...

    def delete_topics(self, connector: str) -> None:
        """Reset the connector's topics: tombstone each of them."""

    def delete_connector(self, name: str) -> None:
        """Forget the statuses of the connector and all its tasks (Connect's DESTROYED); its topics stay."""


# ---- the status topic's records -----------------------------------------------------------------------------


def _status_value(state: str, trace: str | None, worker_id: str, generation: int) -> bytes:
    if state not in STATES:
        raise ValueError(f"state must be one of {', '.join(STATES)}, got {state!r}")
    return json_bytes({"state": state, "trace": trace, "worker_id": worker_id, "generation": generation})


def connector_status_record(name: str, status: Status | None) -> Record:
    """``status-connector-<name>``: the status, or a tombstone for ``None``."""
    return f"status-connector-{name}".encode(), None if status is None else _status_value(*status)


def task_status_record(connector: str, task: int, status: Status | None) -> Record:
    """``status-task-<connector>-<task>``: the status, or a tombstone for ``None``."""
    return f"status-task-{connector}-{task}".encode(), None if status is None else _status_value(*status)


def topic_status_record(connector: str, topic: str, status: TopicStatus | None) -> Record:
    """``status-topic-<topic>:connector-<connector>``: the topic's use, or a tombstone for ``None``."""
    key = f"status-topic-{topic}:connector-{connector}".encode()
    if status is None:
        return key, None
    value = {"name": topic, "connector": connector, "task": status.task, "discoverTimestamp": status.discover_timestamp}
    return key, json_bytes({"topic": value})


def may_replace(current: Status | None, status: Status) -> bool:
    """Whether ``status`` may replace ``current``: there is none, or both come from one worker, or ``current``'s
    generation is not newer (Kafka Connect's ``CacheEntry.canWriteSafely``)."""
    return current is None or current.worker_id == status.worker_id or current.generation <= status.generation


class StatusView:
    """The statuses that a sequence of status-topic records describe: the last record of each key wins, but a
    status does not replace another worker's of a newer generation (:func:`may_replace`). Not thread-safe; the
    stores lock around it."""

    def __init__(self) -> None:
        self.connectors: dict[str, Status] = {}
        self.tasks: dict[str, dict[int, Status]] = {}
        self.topics: dict[str, dict[str, TopicStatus]] = {}

    def apply(self, key: bytes | None, value: bytes | None) -> None:
        """Read one record; a malformed one changes nothing."""
        parsed = parse_record(key, value)
        if parsed is None:
            return
        text, data = parsed
        if text.startswith("status-connector-"):
            _update(self.connectors, text.removeprefix("status-connector-"), data, _status, may_replace)
        elif text.startswith("status-task-"):
            connector, _, task = text.removeprefix("status-task-").rpartition("-")
            if connector and task.isdecimal() and task.isascii():
                _update(self.tasks.setdefault(connector, {}), int(task), data, _status, may_replace)
                if not self.tasks[connector]:
                    del self.tasks[connector]
        elif text.startswith("status-topic-"):
            topic, colon, rest = text.removeprefix("status-topic-").partition(":")
            connector = rest.removeprefix("connector-")
            if topic and colon and rest.startswith("connector-") and connector:
                _update(self.topics.setdefault(connector, {}), topic, data, _topic_status(topic, connector))
                if not self.topics[connector]:
                    del self.topics[connector]

    def describe(self) -> str:
        """One entry per connector: its state and its tasks' states."""
        entries = []
        for name in sorted({*self.connectors, *self.tasks}):
            connector = self.connectors.get(name)
            tasks = ", ".join(f"{task}: {status.state}" for task, status in sorted(self.tasks.get(name, {}).items()))
            entries.append(f"{name!r}: {connector.state if connector else None} [{tasks}]")
        return "{" + ", ".join(entries) + "}"


def _update(
    entries: dict[_K, _V],
    key: _K,
    data: dict[str, Any] | None,
    parse: Callable[[dict[str, Any]], _V | None],
    accept: Callable[[_V | None, _V], bool] | None = None,
) -> None:
    """Delete the entry for a tombstone, replace it for a well-formed value that ``accept`` lets replace the current
    one, skip a malformed one."""
    if data is None:
        entries.pop(key, None)
    elif (parsed := parse(data)) is not None and (accept is None or accept(entries.get(key), parsed)):
        entries[key] = parsed


def _status(data: dict[str, Any]) -> Status | None:
    state, trace, worker, generation = (data.get(k) for k in ("state", "trace", "worker_id", "generation"))
    if state not in STATES or not isinstance(worker, str) or not (trace is None or isinstance(trace, str)):
        return None
    if not _is_int(generation):
        return None
    return Status(state, trace, worker, generation)


def _topic_status(topic: str, connector: str) -> Callable[[dict[str, Any]], TopicStatus | None]:
    def parse(data: dict[str, Any]) -> TopicStatus | None:
        found = data.get("topic")
        if not isinstance(found, dict):
            return None
        task, timestamp = found.get("task"), found.get("discoverTimestamp")
        if not (_is_int(task) and _is_int(timestamp)):
            return None
        return TopicStatus(topic, connector, task, timestamp)

    return parse


def _is_int(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


# ---- stores -----------------------------------------------------------------------------------------------------


class _RecordStatusStore(RecordStore[StatusView]):
    """A StatusStore whose state is a :class:`StatusView` of the records it wrote or read
    (:class:`~headwater.runtime.storage.record_store.RecordStore`)."""

    def _new_view(self) -> StatusView:
        return StatusView()

    def put_connector(
        self, name: str, state: str, trace: str | None, worker_id: str, generation: int, *, safe: bool = False
    ) -> None:
        status = Status(state, trace, worker_id, generation)
        record = connector_status_record(name, status)
        if not safe or self._safe_to_write(self.connector(name), status, f"connector {name}"):
            self._write([record])

    def put_task(
        self,
        connector: str,
        task: int,
        state: str,
        trace: str | None,
        worker_id: str,
        generation: int,
        *,
        safe: bool = False,
    ) -> None:
        _check_task(task)
        status = Status(state, trace, worker_id, generation)
        record = task_status_record(connector, task, status)
        if not safe or self._safe_to_write(self.task(connector, task), status, f"task {connector}-{task}"):
            self._write([record])

    @staticmethod
    def _safe_to_write(current: Status | None, status: Status, what: str) -> bool:
        """Kafka Connect's ``putSafe`` check, on what this store has read so far (a newer status it has not read
        yet is left to the readers' own check)."""
        if current is None or may_replace(current, status):
            return True
        log.debug(
            "not recording the %s status of %s from %s (generation %d): the current %s status is from %s, "
            "generation %d",
            status.state,
            what,
            status.worker_id,
            status.generation,
            current.state,
            current.worker_id,
            current.generation,
        )
        return False

    def put_topic(self, connector: str, topic: str, task: int, timestamp: int) -> None:
        _check_task(task)
        if not topic or ":" in topic:
            raise ValueError(f"not a topic name: {topic!r}")
        self._write([topic_status_record(connector, topic, TopicStatus(topic, connector, task, timestamp))])

    def delete_topics(self, connector: str) -> None:
        self._refresh()
        with self._lock:
            topics = sorted(self._view.topics.get(connector, {}))
        if topics:
            self._write([topic_status_record(connector, topic, None) for topic in topics])

    def delete_connector(self, name: str) -> None:
        self._refresh()
        with self._lock:
            tasks = sorted(self._view.tasks.get(name, {}))
        records = [connector_status_record(name, None)]
        self._write(records + [task_status_record(name, task, None) for task in tasks])

    def connector(self, name: str) -> Status | None:
        with self._lock:
            return self._view.connectors.get(name)

    def task(self, connector: str, task: int) -> Status | None:
        with self._lock:
            return self._view.tasks.get(connector, {}).get(task)

    def tasks(self, connector: str) -> dict[int, Status]:
        with self._lock:
            return dict(sorted(self._view.tasks.get(connector, {}).items()))

    def topics(self, connector: str) -> list[TopicStatus]:
        with self._lock:
            return [status for _, status in sorted(self._view.topics.get(connector, {}).items())]


def _check_task(task: int) -> None:
    if not _is_int(task) or task < 0:
        raise ValueError(f"a task number is an int >= 0, got {task!r}")


class MemoryStatusStore(MemoryRecordStore[StatusView], _RecordStatusStore):
    """Statuses in this process only, lost when it ends. Usable without :meth:`start`. ``records`` lists every
    record written, in order: the bytes a Kafka status store would have put in its topic."""
