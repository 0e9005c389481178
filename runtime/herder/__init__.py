"""Herders: what every worker's herder does (:class:`Herder`, :mod:`.lifecycle`, :mod:`.restarts`,
:mod:`.generations`), and the standalone specialisation. The distributed one,
:class:`~headwater.runtime.distributed.herder.DistributedHerder`, is exported by :mod:`headwater.runtime.distributed`
with the machinery it runs on."""

from headwater.runtime.herder.base import NOT_STOPPED, ConnectorInfo, ConnectorStatus, Herder
from headwater.runtime.herder.generations import Generations
from headwater.runtime.herder.lifecycle import forget_deleted, generate_task_configs, put_status, stop_tasks
from headwater.runtime.herder.restarts import RestartPlan, RestartRequest, build_restart_plan
from headwater.runtime.herder.standalone import StandaloneHerder
from headwater.runtime.storage.configs import TargetState

__all__ = [
    "NOT_STOPPED",
    "ConnectorInfo",
    "ConnectorStatus",
    "Generations",
    "Herder",
    "RestartPlan",
    "RestartRequest",
    "StandaloneHerder",
    "TargetState",
    "build_restart_plan",
    "forget_deleted",
    "generate_task_configs",
    "put_status",
    "stop_tasks",
]
