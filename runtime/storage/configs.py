"""The config store: connector configs, their task configs and their target states, in Kafka Connect's
config-topic records (``config.storage.topic``, ``KafkaConfigBackingStore``).

Every write is a list of records, each a UTF-8 key and a compact JSON value (``None``: a tombstone):

============================  =============================================================================
``connector-<name>``          ``{"properties":{...}}``; with ``target-state-<name>``, tombstoned by a delete
``task-<name>-<n>``           ``{"properties":{...}}``, held back until the commit record below
``commit-<name>``             ``{"tasks":N}``: tasks 0..N-1 held back become the connector's task configs
``target-state-<name>``       ``{"state":"STARTED"|"PAUSED","state.v2":"STARTED"|"PAUSED"|"STOPPED"}``
============================  =============================================================================

STOPPED is written as ``"state":"PAUSED"`` plus ``"state.v2":"STOPPED"`` for workers older than Kafka 3.5; readers
prefer ``state.v2``. A connector without a target-state record is STARTED.

:class:`ConfigView` reads such records in order exactly as Connect does. Both stores are views over records:
:class:`MemoryConfigStore` applies what it writes at once, the Kafka store writes to the topic and reads it back,
so both behave the same, record for record. Task configs are exposed only once their commit record is read and
only when every task 0..N-1 came before it since the previous commit; otherwise the connector is *inconsistent*
and has no task configs until a complete set is committed (a writer that died between task records, or
compaction).
"""

from __future__ import annotations

import contextlib
import copy
import enum
import uuid
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Protocol

from headwater.runtime.storage.record_store import MemoryRecordStore, Record, RecordStore
from headwater.runtime.storage.wire import json_bytes, parse_record
from headwater.sdk.errors import ConnectError


class TargetState(enum.StrEnum):
    """Where a connector is told to be (Kafka Connect's ``TargetState``): running, paused with its tasks, or
    stopped without tasks (KIP-875). The config topic records the name."""

    STARTED = "STARTED"
    PAUSED = "PAUSED"
    STOPPED = "STOPPED"

    @classmethod
    def initial(cls, initial_state: str) -> TargetState:
        """The target state of a create request's ``initial_state``: RUNNING, PAUSED or STOPPED (KIP-980)."""
        return cls.STARTED if initial_state == "RUNNING" else cls(initial_state)


TARGET_STATES = tuple(state.value for state in TargetState)
"""The target states' names."""


class ConfigStore(Protocol):
    """Connector configs, task configs and target states of a cluster. Safe to call from several threads; every
    method but the reads raises ConnectError when the write fails, and then the reads do not show it."""

    def start(self) -> None:
        """Load the stored configs; called once before any other method."""

    def stop(self) -> None:
        """Release resources; called once, last."""

    def put_connector_config(self, name: str, props: Mapping[str, Any]) -> None:
        """Create or replace the connector's config. Values are written as JSON (Java workers expect strings)."""

    def patch_connector_config(self, name: str, changes: Mapping[str, Any]) -> None:
        """Change some keys of the connector's config (a ``None`` value removes its key), applied to the config
        every reader has at that point of the topic: two patches through different workers never lose one
        another's change."""

    def remove_connector(self, name: str) -> None:
        """Forget the connector: its config, task configs and target state."""

    def connector_config(self, name: str) -> dict[str, Any] | None:
        """A copy of the connector's config, ``None`` for an unknown connector."""
        ...

    def connectors(self) -> list[str]:
        """The names of all connectors, sorted."""
        ...

    def put_task_configs(self, name: str, configs: Sequence[Mapping[str, Any]]) -> None:
        """Replace the connector's task configs as one unit (an empty list: no tasks). Raises ConnectError for an
        unknown connector."""

    def task_configs(self, name: str) -> list[dict[str, Any]]:
        """Copies of the committed task configs, task 0 first; empty for an unknown or inconsistent connector."""
        ...

    def put_target_state(self, name: str, state: str) -> None:
        """Record one of :data:`TARGET_STATES` for the connector (before its config exists too, as KIP-980 does)."""

    def target_state(self, name: str) -> str | None:
        """The recorded target state; STARTED for a connector without one; ``None`` for an unknown connector."""
        ...

    def put_task_count_record(self, name: str, tasks: int) -> None:
        """Record that the earlier generations of the connector's tasks are fenced, for ``tasks`` tasks now."""

    def fenced_task_count(self, name: str) -> int | None:
        """The task count of the connector's last task count record; ``None`` when there is none."""
        ...

    def pending_fencing(self, name: str) -> bool:
        """Whether the connector's task configs were committed after its last task count record."""
        ...


# ---- the config topic's records -----------------------------------------------------------------------------


def connector_record(name: str, props: Mapping[str, Any] | None) -> Record:
    """``connector-<name>``: the config, or a tombstone for ``None``."""
    return f"connector-{name}".encode(), None if props is None else json_bytes({"properties": dict(props)})


def patch_record(name: str, changes: Mapping[str, Any], id: str) -> Record:
    """``patch-connector-<id>``: Headwater's change of some keys of a connector's config (``null`` removes one),
    merged into the config its readers have when they read it, so a PATCH is one step for the whole cluster without
    a leader. A later ``connector-<name>`` record (a replace or a delete) tombstones the patches before it. Java
    workers skip the key, as they skip any they do not know."""
    return f"patch-connector-{id}".encode(), json_bytes({"connector": name, "properties": dict(changes)})


def task_record(name: str, task: int, props: Mapping[str, Any]) -> Record:
    """``task-<name>-<task>``: one task's config, applied when the commit record comes."""
    return f"task-{name}-{task}".encode(), json_bytes({"properties": dict(props)})


def commit_record(name: str, tasks: int) -> Record:
    """``commit-<name>``: the task count that makes the task records before it the connector's task configs."""
    return f"commit-{name}".encode(), json_bytes({"tasks": tasks})


def task_count_record(name: str, tasks: int) -> Record:
    """``tasks-fencing-<name>``: the connector's task count, written once the transactional producers of its tasks'
    earlier generations are fenced (Kafka Connect's task count record, KIP-618): until then, no task of its latest
    task configs may start on a worker with exactly-once source support."""
    return f"tasks-fencing-{name}".encode(), json_bytes({"task-count": tasks})


def target_state_record(name: str, state: str | None) -> Record:
    """``target-state-<name>``: the state, readable by workers without STOPPED, or a tombstone for ``None``."""
    if state is None:
        return f"target-state-{name}".encode(), None
    if state not in TARGET_STATES:
        raise ValueError(f"target state must be one of {', '.join(TARGET_STATES)}, got {state!r}")
    legacy = "PAUSED" if state == "STOPPED" else state
    return f"target-state-{name}".encode(), json_bytes({"state": legacy, "state.v2": state})


class ConfigView:
    """The configs that a sequence of config-topic records describe, read as Kafka Connect reads them: malformed
    records and unknown keys are skipped. Not thread-safe; the stores lock around it."""

    def __init__(self) -> None:
        self.configs: dict[str, dict[str, Any]] = {}
        self.task_counts: dict[str, int] = {}
        self.tasks: dict[str, dict[int, dict[str, Any]]] = {}
        self.pending: dict[str, dict[int, dict[str, Any]]] = {}
        self.inconsistent: set[str] = set()
        self.target_states: dict[str, str] = {}
        self.patches: dict[str, set[str]] = {}
        """Connector -> the keys of the patch records applied to its config since its last full config."""
        self.fenced_counts: dict[str, int] = {}
        """Connector -> the task count of its last task count record."""
        self.pending_fencing: set[str] = set()
        """Connectors whose task configs were committed after their last task count record."""

    def apply(self, key: bytes | None, value: bytes | None) -> None:
        """Read one record."""
        parsed = parse_record(key, value)
        if parsed is None:
            return
        text, data = parsed
        if text.startswith("target-state-"):
            self._target_state(text.removeprefix("target-state-"), data)
        elif text.startswith("patch-connector-"):
            self._patch(text, data)
        elif text.startswith("connector-"):
            self._connector(text.removeprefix("connector-"), data)
        elif text.startswith("task-"):
            name, _, task = text.removeprefix("task-").rpartition("-")
            properties = None if data is None else data.get("properties")
            if name and task.isdecimal() and task.isascii() and isinstance(properties, dict):
                self.pending.setdefault(name, {})[int(task)] = properties
        elif text.startswith("commit-"):
            self._commit(text.removeprefix("commit-"), data)
        elif text.startswith("tasks-fencing-"):
            self._fenced(text.removeprefix("tasks-fencing-"), data)

    def _patch(self, key: str, data: dict[str, Any] | None) -> None:
        if data is None:
            for keys in self.patches.values():
                keys.discard(key)
            return
        name, changes = data.get("connector"), data.get("properties")
        if not isinstance(name, str) or not isinstance(changes, dict) or name not in self.configs:
            return
        merged = {**self.configs[name], **changes}
        self.configs[name] = {k: v for k, v in merged.items() if v is not None}
        self.patches.setdefault(name, set()).add(key)

    def _connector(self, name: str, data: dict[str, Any] | None) -> None:
        if data is None:
            self.configs.pop(name, None)
            self.task_counts.pop(name, None)
            self.tasks.pop(name, None)
            self.pending.pop(name, None)
            self.inconsistent.discard(name)
            self.fenced_counts.pop(name, None)
            self.pending_fencing.discard(name)
        elif isinstance(properties := data.get("properties"), dict):
            self.configs[name] = properties

    def _commit(self, name: str, data: dict[str, Any] | None) -> None:
        count = None if data is None else data.get("tasks")
        if not isinstance(count, int) or isinstance(count, bool) or count < 0:
            return
        pending = self.pending.pop(name, {})
        if name not in self.configs:  # its connector was deleted; compaction may leave such commits behind
            return
        if all(task in pending for task in range(count)):
            self.tasks[name] = {task: pending[task] for task in range(count)}
            self.inconsistent.discard(name)
        else:
            self.inconsistent.add(name)
        self.task_counts[name] = count
        self.pending_fencing.add(name)

    def _fenced(self, name: str, data: dict[str, Any] | None) -> None:
        count = None if data is None else data.get("task-count")
        if not isinstance(count, int) or isinstance(count, bool) or count < 0 or name not in self.configs:
            return
        self.fenced_counts[name] = count
        self.pending_fencing.discard(name)

    def _target_state(self, name: str, data: dict[str, Any] | None) -> None:
        if data is None:
            self.target_states.pop(name, None)
            return
        state = data.get("state.v2", data.get("state"))
        if state in TARGET_STATES:
            self.target_states[name] = state

    def task_configs(self, name: str) -> list[dict[str, Any]]:
        if name in self.inconsistent or name not in self.configs:
            return []
        tasks = self.tasks.get(name, {})
        return [copy.deepcopy(tasks[task]) for task in range(self.task_counts.get(name, 0))]

    def target_state(self, name: str) -> str | None:
        return self.target_states.get(name, "STARTED" if name in self.configs else None)

    def describe(self) -> str:
        """One entry per connector: target state and task count (or inconsistency)."""
        entries = []
        for name in sorted(self.configs):
            tasks = "inconsistent" if name in self.inconsistent else f"{self.task_counts.get(name, 0)} tasks"
            entries.append(f"{name!r}: {self.target_state(name)}, {tasks}")
        return "{" + ", ".join(entries) + "}"


# ---- stores -----------------------------------------------------------------------------------------------------


class _RecordConfigStore(RecordStore[ConfigView]):
    """A ConfigStore whose state is a :class:`ConfigView` of the records it wrote or read
    (:class:`~headwater.runtime.storage.record_store.RecordStore`)."""

    def _new_view(self) -> ConfigView:
        return ConfigView()

    def put_connector_config(self, name: str, props: Mapping[str, Any]) -> None:
        with _encoding(name):
            record = connector_record(name, props)
        self._write([record, *self._patch_tombstones(name)])

    def patch_connector_config(self, name: str, changes: Mapping[str, Any]) -> None:
        with _encoding(name):
            record = patch_record(name, changes, uuid.uuid4().hex)
        self._write([record])

    def remove_connector(self, name: str) -> None:
        self._write([connector_record(name, None), target_state_record(name, None), *self._patch_tombstones(name)])

    def _patch_tombstones(self, name: str) -> list[Record]:
        """Tombstones of the patch records a full config of the connector makes history (compaction drops them)."""
        with self._lock:
            return [(key.encode(), None) for key in sorted(self._view.patches.get(name, ()))]

    def put_task_configs(self, name: str, configs: Sequence[Mapping[str, Any]]) -> None:
        with _encoding(name):
            tasks = [task_record(name, task, props) for task, props in enumerate(configs)]
        self._refresh()
        with self._lock:
            known = name in self._view.configs
        if not known:
            raise ConnectError(f"cannot store task configs of connector {name!r}: no such connector")
        if tasks:
            self._write(tasks)  # all acknowledged before the commit: no commit refers to a lost task record
        self._write([commit_record(name, len(tasks))])

    def put_target_state(self, name: str, state: str) -> None:
        self._write([target_state_record(name, state)])

    def put_task_count_record(self, name: str, tasks: int) -> None:
        self._write([task_count_record(name, tasks)])

    def fenced_task_count(self, name: str) -> int | None:
        with self._lock:
            return self._view.fenced_counts.get(name)

    def pending_fencing(self, name: str) -> bool:
        with self._lock:
            return name in self._view.pending_fencing

    def connector_config(self, name: str) -> dict[str, Any] | None:
        with self._lock:
            found = self._view.configs.get(name)
            return None if found is None else copy.deepcopy(found)

    def connectors(self) -> list[str]:
        with self._lock:
            return sorted(self._view.configs)

    def task_configs(self, name: str) -> list[dict[str, Any]]:
        with self._lock:
            return self._view.task_configs(name)

    def target_state(self, name: str) -> str | None:
        with self._lock:
            return self._view.target_state(name)


@contextlib.contextmanager
def _encoding(name: str) -> Iterator[None]:
    """Turn a config that cannot be written as JSON into a ConnectError naming the connector."""
    try:
        yield
    except (TypeError, ValueError) as error:
        raise ConnectError(f"cannot store the configs of connector {name!r}: {error}") from None


class MemoryConfigStore(MemoryRecordStore[ConfigView], _RecordConfigStore):
    """Configs in this process only, lost when it ends. Usable without :meth:`start`. ``records`` lists every record
    written, in order: the bytes a Kafka config store would have put in its topic."""
