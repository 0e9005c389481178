"""Distributed mode: workers sharing a cluster's connectors and tasks through Kafka's group coordination."""

from headwater.runtime.distributed.command import DistributedWorker
from headwater.runtime.distributed.config import DISTRIBUTED_CONFIG
from headwater.runtime.distributed.group import SlotGroup
from headwater.runtime.distributed.herder import DistributedHerder
from headwater.runtime.distributed.member import Member
from headwater.runtime.distributed.restarts import ClusterConfigStore, RestartRequest
from headwater.runtime.distributed.slots import Slot, SlotPlan, connector_topic, task_topic

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
