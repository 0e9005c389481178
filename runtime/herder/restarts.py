"""Restart requests and the plans built from them (Kafka Connect's ``RestartRequest`` and ``RestartPlan``, KIP-745).

A request names a connector and whether its tasks restart too (``include_tasks``) and whether only failed instances
restart (``only_failed``), or names one task. :func:`build_restart_plan` is the one place that decides, from the
statuses a worker sees, what such a request restarts; both herders call it (the distributed one on the worker that
answers the request, for the reply, and on every worker that runs part of the connector, to act on it), as Kafka
Connect's ``AbstractHerder.buildRestartPlan`` does.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple

from headwater.runtime.storage.status import Status

FAILED = "FAILED"


class RestartRequest(NamedTuple):
    """Restart the connector (``task`` None; its tasks too with ``include_tasks``; only failed instances with
    ``only_failed``), or one task."""

    connector: str
    task: int | None = None
    include_tasks: bool = False
    only_failed: bool = False


class RestartPlan(NamedTuple):
    """What a restart request restarts: the connector instance or not, and which tasks."""

    connector: bool
    tasks: list[int]


def build_restart_plan(
    request: RestartRequest, connector: Status | None, tasks: Mapping[int, Status | None]
) -> RestartPlan:
    """What ``request`` restarts, given the connector's status (``None``: not known) and its tasks' by number.

    A one-task request restarts that task. Otherwise the connector instance restarts unless ``only_failed`` and it
    did not fail; with ``include_tasks`` every task restarts too, or every failed one with ``only_failed``.
    """
    if request.task is not None:
        return RestartPlan(False, [request.task])
    restart_connector = not request.only_failed or (connector is not None and connector.state == FAILED)
    restarted = [
        task
        for task, status in sorted(tasks.items())
        if request.include_tasks and (not request.only_failed or (status is not None and status.state == FAILED))
    ]
    return RestartPlan(restart_connector, restarted)
