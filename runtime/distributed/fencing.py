"""Zombie fencing (KIP-618): before any task of a source connector's new task configs starts on a cluster with
exactly-once source support, the transactional producers of its earlier generations are fenced, so that a task
that lost its place (still running on a worker that has not given up its slot, or cut off from the group) can
never commit again.

As in Kafka Connect, the committed task configs leave the connector *pending fencing* until a task count record
follows them in the config topic (``tasks-fencing-<name>``). The worker that runs the connector (its slot's owner,
the one that writes its task configs) fences the transactional ids of the task count of the last such record, the
generation before, then writes the record with the new count. Until that record is read, no worker starts a task
of the new configs; each new task then fences its own id again when it initialises its producer, which also
aborts whatever its previous generation left open.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from headwater.runtime.config.exactly_once_support import transactional_id
from headwater.runtime.plugins import resolve_connector_class
from headwater.runtime.storage.configs import ConfigStore
from headwater.runtime.tasks.exactly_once_source import TRANSACTION_TIMEOUT_MS
from headwater.runtime.worker import Worker
from headwater.sdk.connector import SourceConnector

log = logging.getLogger(__name__)


def runs_in_transactions(worker: Worker, config: Mapping[str, Any] | None) -> bool:
    """Whether the connector of ``config`` runs its tasks in transactions on ``worker``: a source connector on a
    worker with exactly-once support enabled."""
    if not worker.exactly_once or config is None:
        return False
    try:
        return issubclass(resolve_connector_class(str(config.get("connector.class", ""))), SourceConnector)
    except Exception:  # its task fails to start, naming why
        return False


def awaits_fencing(worker: Worker, configs: ConfigStore, name: str) -> bool:
    """Whether the connector's tasks must not start yet: their generation's fencing is not recorded."""
    return runs_in_transactions(worker, configs.connector_config(name)) and configs.pending_fencing(name)


def fence_zombies(worker: Worker, configs: ConfigStore, name: str) -> None:
    """When the connector awaits fencing: fence its tasks' earlier generations, then record the task count. Raises
    ConnectError when the cluster does not answer; the connector's owner tries again at its next pass."""
    if not awaits_fencing(worker, configs, name):
        return
    assert worker.group_id is not None
    previous = configs.fenced_task_count(name) or 0
    for task in range(previous):
        producer = worker.transport.transactional_producer(transactional_id(worker.group_id, f"{name}-{task}"), {})
        try:
            producer.init_transactions(TRANSACTION_TIMEOUT_MS)
        finally:
            producer.close()
    count = len(configs.task_configs(name))
    configs.put_task_count_record(name, count)
    log.info("connector %s: fenced the producers of its %d earlier tasks; %d tasks may start", name, previous, count)
