"""What every herder does to the worker's connectors and tasks, written once: task-config generation, stopping
tasks before their topics are tracked, the cleanup after a delete, and status records.

The standalone herder calls these for everything; the distributed one, through its
:class:`~headwater.runtime.distributed.member.Member`, for what its slots run. Each runs on the herder's thread.
"""

from __future__ import annotations

import logging

from headwater.runtime.herder.active_topics import ActiveTopics
from headwater.runtime.storage.configs import TargetState
from headwater.runtime.storage.status import StatusStore
from headwater.runtime.tasks.base import State, TaskId
from headwater.runtime.worker import Worker
from headwater.sdk.errors import ConnectError

log = logging.getLogger(__name__)


def generate_task_configs(worker: Worker, name: str) -> list[dict[str, str]] | None:
    """Ask the connector running on ``worker`` for its task configs (``Connector.task_configs`` with the
    connector's ``tasks.max``); ``None`` when it is not running, is still starting or has failed, and when asking
    fails, which fails the connector with the error."""
    connector = worker.connectors.get(name)
    if connector is None or not connector.started.is_set() or connector.state is State.FAILED:
        return None
    try:
        return worker.connector_task_configs(name)
    except Exception as error:
        connector.fail(error)
        return None


def stop_tasks(worker: Worker, active_topics: ActiveTopics, ids: list[TaskId], connector_deleted: bool = False) -> None:
    """Stop tasks (their last pass, final commit, ``stop(connector_deleted)``), then, unless their connector is
    deleted, record the topics they used up to their last acknowledged or consumed record (KIP-558): only a stopped
    task's topics are complete."""
    if not ids:
        return
    stopping = [worker.tasks[id] for id in ids if id in worker.tasks]
    worker.stop_tasks(ids, connector_deleted=connector_deleted)
    if not connector_deleted:
        active_topics.track(stopping)


def forget_deleted(name: str, active_topics: ActiveTopics, statuses: StatusStore) -> None:
    """After a deleted connector's tasks and instance were stopped with ``connector_deleted=True``: reset its
    active topics (no task can write them back any more) and remove its statuses. Failures are logged; source
    offsets stay, as in Kafka Connect."""
    try:
        active_topics.reset(name)
    except ConnectError as error:
        log.error("connector %s deleted, but its active topics could not be reset: %s", name, error)
    try:
        statuses.delete_connector(name)
    except ConnectError as error:
        log.error("connector %s deleted, but its statuses could not be removed: %s", name, error)


def put_status(
    store: StatusStore,
    worker_id: str,
    generation: int,
    target_state: str | None,
    connector: str,
    task: int | None,
    state: str,
    trace: str | None,
) -> None:
    """Write a status record of the run of ``generation`` (a failure is logged); a stopped task is UNASSIGNED, and
    so is a connector stopped for any other reason than its STOPPED ``target_state`` (Kafka Connect's shutdown
    status). Failure and shutdown reports (FAILED, UNASSIGNED) are written as Kafka Connect's
    ``AbstractHerder.onFailure`` and ``onShutdown`` write them, with ``putSafe``: not over another worker's status
    of a newer generation."""
    if state == "STOPPED" and (task is not None or target_state != TargetState.STOPPED):
        state = "UNASSIGNED"
    safe = state in ("FAILED", "UNASSIGNED")
    try:
        if task is None:
            store.put_connector(connector, state, trace, worker_id, generation, safe=safe)
        else:
            store.put_task(connector, task, state, trace, worker_id, generation, safe=safe)
    except (ConnectError, ValueError) as error:
        log.error("cannot record the %s status of %s: %s", state, connector if task is None else task, error)
