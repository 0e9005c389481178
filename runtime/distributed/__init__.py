"""Distributed mode: workers sharing a cluster's connectors and tasks through Kafka's group coordination. The
:class:`DistributedHerder` (:mod:`.herder`) runs on this package's members, slots, group and cluster config store;
the ``headwater distributed`` command that serves its REST API is
:class:`~headwater.runtime.commands.distributed.DistributedWorker`."""

from __future__ import annotations

from headwater.runtime.config.distributed_worker import DISTRIBUTED_CONFIG
from headwater.runtime.distributed.cluster_configs import ClusterConfigStore
from headwater.runtime.distributed.group import SlotGroup
from headwater.runtime.distributed.herder import DistributedHerder
from headwater.runtime.distributed.member import Member
from headwater.runtime.distributed.slots import Slot, SlotPlan, connector_topic, task_topic
from headwater.runtime.herder.restarts import RestartRequest

__all__ = [
    "DISTRIBUTED_CONFIG",
    "ClusterConfigStore",
    "DistributedHerder",
    "Member",
    "RestartRequest",
    "Slot",
    "SlotGroup",
    "SlotPlan",
    "connector_topic",
    "task_topic",
]
