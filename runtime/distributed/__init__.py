"""Distributed mode: workers sharing a cluster's connectors and tasks through Kafka's group coordination.

:class:`DistributedHerder` (``runtime/herder/``, which builds on this package's members, slots and config store)
and :class:`DistributedWorker` (the ``headwater distributed`` command, which serves the REST API of the ``worker``
extra) are imported on first use: importing any module of this package, as the harness's simulated cluster does,
neither pulls in the server stack nor imports the herder in a circle.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from headwater.runtime.distributed.cluster_configs import ClusterConfigStore
from headwater.runtime.distributed.config import DISTRIBUTED_CONFIG
from headwater.runtime.distributed.group import SlotGroup
from headwater.runtime.distributed.member import Member
from headwater.runtime.distributed.slots import Slot, SlotPlan, connector_topic, task_topic
from headwater.runtime.herder.restarts import RestartRequest

if TYPE_CHECKING:
    from headwater.runtime.distributed.command import DistributedWorker
    from headwater.runtime.herder.distributed import DistributedHerder

_LAZY = {
    "DistributedHerder": "headwater.runtime.herder.distributed",
    "DistributedWorker": "headwater.runtime.distributed.command",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


__all__ = [
    "DISTRIBUTED_CONFIG",
    "ClusterConfigStore",
    "DistributedHerder",
    "DistributedWorker",
    "Member",
    "RestartRequest",
    "Slot",
    "SlotGroup",
    "SlotPlan",
    "connector_topic",
    "task_topic",
]
