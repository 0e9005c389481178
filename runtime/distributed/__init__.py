"""Distributed mode: workers sharing a cluster's connectors and tasks through Kafka's group coordination."""

from headwater.runtime.distributed.cluster_configs import ClusterConfigStore
from headwater.runtime.distributed.command import DistributedWorker
from headwater.runtime.distributed.config import DISTRIBUTED_CONFIG
from headwater.runtime.distributed.group import SlotGroup
from headwater.runtime.distributed.member import Member
from headwater.runtime.distributed.slots import Slot, SlotPlan, connector_topic, task_topic
from headwater.runtime.herder.distributed import DistributedHerder
from headwater.runtime.herder.restarts import RestartRequest

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
