"""Slots: how a cluster's connectors and tasks become partitions that Kafka's group coordinator hands out.

Each connector has one connector slot, the single partition of topic ``<prefix>.connector.<name>.<digest>``. Each
committed set of n task configs has n task slots, the partitions of ``<prefix>.tasks.<name>.<digest>``: partition
i is task i. ``<name>`` is the connector's name cut to 40 characters Kafka allows in topic names (for people
reading topic lists); the digest is SHA-256 of the exact name, and for task slots of the task configs too. So every
worker derives the same topics from the same config topic, and every new set of task configs is a new topic with
exactly as many partitions as it has tasks: when the coordinator balances partitions, it balances tasks.

Slot topics hold no records; only their partitions matter.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from headwater.runtime.storage.configs import ConfigStore
from headwater.runtime.storage.wire import dumps
from headwater.runtime.tasks.base import TaskId


class Slot(NamedTuple):
    """One partition of a slot topic."""

    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"


def _topic(prefix: str, kind: str, name: str, *content: Any) -> str:
    readable = re.sub(r"[^A-Za-z0-9_-]", "_", name)[:40]
    digest = hashlib.sha256(dumps([name, *content], sort_keys=True).encode()).hexdigest()[:16]
    return f"{prefix}.{kind}.{readable}.{digest}"


def connector_topic(prefix: str, name: str) -> str:
    """The topic whose one partition is the connector's slot."""
    return _topic(prefix, "connector", name)


def task_topic(prefix: str, name: str, configs: Sequence[Mapping[str, Any]]) -> str:
    """The topic whose partitions are the slots of these task configs of the connector."""
    return _topic(prefix, "tasks", name, [dict(config) for config in configs])


@dataclass(frozen=True)
class TaskSet:
    """The committed task configs of a connector: task i runs ``configs[i]``."""

    connector: str
    configs: tuple[Mapping[str, Any], ...]


@dataclass(frozen=True)
class SlotPlan:
    """The slot topics the configs of a cluster call for: a connector slot per connector, and task slots for the
    committed task configs of each connector that is not STOPPED."""

    connectors: Mapping[str, str]
    """Connector slot topic -> connector name."""
    tasks: Mapping[str, TaskSet]
    """Task slot topic -> the task configs its partitions stand for."""

    @classmethod
    def of(cls, store: ConfigStore, prefix: str) -> SlotPlan:
        connectors: dict[str, str] = {}
        tasks: dict[str, TaskSet] = {}
        for name in store.connectors():
            connectors[connector_topic(prefix, name)] = name
            if store.target_state(name) == "STOPPED":
                continue
            configs = store.task_configs(name)
            if configs:
                tasks[task_topic(prefix, name, configs)] = TaskSet(name, tuple(configs))
        return cls(connectors, tasks)

    def connector_partitions(self) -> dict[str, int]:
        """What the connectors' group subscribes to: topic -> partition count (1)."""
        return dict.fromkeys(self.connectors, 1)

    def task_partitions(self) -> dict[str, int]:
        """What the tasks' group subscribes to: topic -> partition count (the number of tasks)."""
        return {topic: len(found.configs) for topic, found in self.tasks.items()}

    def task(self, slot: Slot) -> tuple[TaskId, Mapping[str, Any]] | None:
        """The task a slot stands for and its config; ``None`` for a slot this plan does not know."""
        found = self.tasks.get(slot.topic)
        if found is None or not 0 <= slot.partition < len(found.configs):
            return None
        return TaskId(found.connector, slot.partition), found.configs[slot.partition]


EMPTY_PLAN = SlotPlan({}, {})
