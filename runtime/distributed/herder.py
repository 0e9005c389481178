"""The distributed herder: any worker of a cluster answers every REST request, and every change goes through the
config topic, which all workers follow in the same order.

Writes (create, reconfigure, delete, pause, resume, stop, restart) are records in the config topic, acknowledged
and read back before the request returns; reads answer from the stores' views, which the herder's loop keeps
following (:meth:`DistributedHerder.tick`). What each worker runs is decided by Kafka's group coordinator through
two :class:`~headwater.runtime.distributed.group.SlotGroup` consumers, one for connector slots and one for task
slots (so connectors and tasks are balanced each on their own), and carried out by a
:class:`~headwater.runtime.distributed.member.Member`.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping, Sequence
from typing import Any

from headwater.runtime.active_topics import ActiveTopics
from headwater.runtime.connector_offsets import ConnectorOffsets, Offset
from headwater.runtime.distributed.group import SlotGroup
from headwater.runtime.distributed.member import Member
from headwater.runtime.distributed.restarts import ClusterConfigStore, RestartRequest
from headwater.runtime.distributed.slots import Slot, SlotPlan
from headwater.runtime.errors import AlreadyExistsError, BadRequestError, NotFoundError
from headwater.runtime.herder import NOT_STOPPED, RestartPlan, put_status
from headwater.runtime.plugins import connector_type
from headwater.runtime.storage.kafka_offsets import KafkaOffsetStore
from headwater.runtime.storage.kafka_status import KafkaStatusStore
from headwater.runtime.storage.status import Status
from headwater.runtime.tasks.base import State, TaskId
from headwater.runtime.validation import check_connector_config
from headwater.runtime.worker import Worker

log = logging.getLogger(__name__)

TARGET_STATES = {"RUNNING": "STARTED", "PAUSED": "PAUSED", "STOPPED": "STOPPED"}
"""A create request's ``initial_state`` -> the target state recorded for it."""


class DistributedHerder:
    """The herder of one worker of the cluster ``group_id``. ``group_config`` holds the librdkafka settings of the
    group consumers (``bootstrap.servers``, security, session timeout, heartbeat interval); slot topics are named
    with ``prefix`` and created with ``slot_replication``. The stores must be started before :meth:`tick`."""

    def __init__(
        self,
        worker: Worker,
        config_store: ClusterConfigStore,
        status_store: KafkaStatusStore,
        offset_store: KafkaOffsetStore,
        group_id: str,
        group_config: Mapping[str, Any],
        prefix: str,
        slot_replication: int = -1,
    ) -> None:
        self.worker = worker
        self.lock = threading.RLock()
        self.config_store = config_store
        self.status_store = status_store
        self.offset_store = offset_store
        self.prefix = prefix
        self.active_topics = ActiveTopics(status_store, worker.clock, bool(worker.config["topic.tracking.enable"]))
        self.offsets = ConnectorOffsets(offset_store, worker.transport)
        self.member = Member(worker, config_store, status_store, offset_store, self.active_topics, self._report)
        self.connector_group = SlotGroup(
            f"{group_id}-connectors",
            group_config,
            self.member.connectors_assigned,
            self._connectors_revoked,
            slot_replication,
        )
        self.task_group = SlotGroup(
            group_id, group_config, self.member.tasks_assigned, self._tasks_revoked, slot_replication
        )
        self._version = -1
        self._listed: dict[str, set[str]] = {}
        previous = worker.listener

        def record(connector: str, task: int | None, state: State, trace: str | None) -> None:
            self._put_status(connector, task, state.value, trace)
            if previous is not None:
                previous(connector, task, state, trace)

        worker.listener = record

    # ---- the loop ----------------------------------------------------------------------------------------------

    def tick(self, timeout_s: float = 0.05) -> None:
        """One pass of the worker's loop: follow the config and status topics, apply what changed, serve restart
        and reconfiguration requests, let the groups rebalance (waiting up to ``timeout_s``), record the topics
        the tasks used."""
        self.config_store.read_available()
        self.status_store.log.read_available()
        version = self.config_store.version
        if version != self._version:
            plan = SlotPlan.of(self.config_store, self.prefix)
            self.connector_group.subscribe(plan.connector_partitions())
            self.task_group.subscribe(plan.task_partitions())
            self.member.update(plan)
            self._version = version  # only once applied: a failed pass is tried again
        self.member.serve_requests()
        self.task_group.poll(timeout_s)
        self.connector_group.poll(0)
        self._track_topics()

    def stop(self) -> None:
        """Leave the cluster gracefully: give up every task (sinks: pre_commit -> close -> commit) and connector,
        so the other workers take them over at once, then stop whatever is left."""
        self.task_group.close()
        self.connector_group.close()
        self.member.stop()
        self.worker.stop()

    def _connectors_revoked(self, slots: list[Slot], lost: bool) -> None:
        self.member.connectors_revoked(slots, lost)
        _delete_stale(self.connector_group, slots)

    def _tasks_revoked(self, slots: list[Slot], lost: bool) -> None:
        self.member.tasks_revoked(slots, lost)
        _delete_stale(self.task_group, slots)

    # ---- configs -------------------------------------------------------------------------------------------

    def put_connector_config(
        self, name: str, props: Mapping[str, Any], allow_replace: bool = True, initial_state: str = "RUNNING"
    ) -> bool:
        """Create or replace a connector through the config topic; return whether it was created. An invalid
        config writes nothing and raises :class:`~headwater.runtime.errors.InvalidConfigError`."""
        props = {**props, "name": name}
        check_connector_config(props)
        self.worker.validate(props)
        with self.lock:
            self.config_store.refresh()
            created = self.config_store.connector_config(name) is None
            if not created and not allow_replace:
                raise AlreadyExistsError(f"Connector {name} already exists")
            if created and initial_state != "RUNNING":
                self.config_store.put_target_state(name, TARGET_STATES[initial_state])  # before the config (KIP-980)
            self.config_store.put_connector_config(name, props)
        return created

    def delete_connector(self, name: str) -> None:
        """Tombstone the connector's config and target state. The workers running it then give up its slots: its
        tasks and the connector get ``stop(connector_deleted=True)``, whatever the connector's state (the owner of
        a STOPPED connector's slot starts an instance to tell it), its active topics are reset, its statuses
        removed. Source offsets stay (Kafka Connect keeps them too)."""
        with self.lock:
            self._require(name)
            self.config_store.remove_connector(name)

    def restart(self, name: str, include_tasks: bool = False, only_failed: bool = False) -> RestartPlan:
        """Kafka Connect's restart request (KIP-745), carried out by the workers running what it restarts; the plan
        says what will restart, as this worker's statuses show it."""
        with self.lock:
            self._require(name)
            self.status_store.refresh()
            status = self.status_store.connector(name)
            if status is None:
                raise NotFoundError(f"Status for connector {name} not found")
            tasks = [
                task
                for task, found in self.task_statuses(name).items()
                if include_tasks and (not only_failed or found.state == "FAILED")
            ]
            self.config_store.request_restart(RestartRequest(name, None, include_tasks, only_failed))
        return RestartPlan(not only_failed or status.state == "FAILED", tasks)

    def restart_task(self, id: TaskId) -> None:
        with self.lock:
            self._require(id.connector)
            if not 0 <= id.task < len(self.config_store.task_configs(id.connector)):
                raise NotFoundError(f"Task {id} not found")
            self.config_store.request_restart(RestartRequest(id.connector, id.task))

    def pause_connector(self, name: str) -> None:
        """Pause a running connector, or start a stopped one paused."""
        self._set_target_state(name, "PAUSED")

    def resume_connector(self, name: str) -> None:
        """Resume a paused or stopped connector."""
        self._set_target_state(name, "STARTED")

    def stop_connector(self, name: str) -> None:
        """``PUT /connectors/{c}/stop``: an empty set of task configs first, then the STOPPED target state."""
        with self.lock:
            self._require(name)
            self.config_store.put_task_configs(name, [])
            self.config_store.put_target_state(name, "STOPPED")

    def _set_target_state(self, name: str, state: str) -> None:
        with self.lock:
            self._require(name)
            self.config_store.put_target_state(name, state)

    # ---- reads ---------------------------------------------------------------------------------------------

    def connectors(self) -> list[str]:
        return self.config_store.connectors()

    def connector_config(self, name: str) -> dict[str, Any]:
        """The connector's config as it was given; raises NotFoundError."""
        return self._require(name)

    def connector_type(self, name: str) -> str:
        """``source``, ``sink`` or ``unknown``; raises NotFoundError."""
        return connector_type(self._require(name).get("connector.class"))

    def tasks(self, name: str) -> list[dict[str, str]]:
        """The committed config of each of the connector's tasks; raises NotFoundError."""
        self._require(name)
        return [{k: str(v) for k, v in config.items()} for config in self.config_store.task_configs(name)]

    def task_statuses(self, name: str) -> dict[int, Status]:
        """The status of each of the connector's current tasks, by task number."""
        count = len(self.config_store.task_configs(name))
        return {task: status for task, status in self.status_store.tasks(name).items() if task < count}

    # ---- active topics and offsets -------------------------------------------------------------------------

    def reset_active_topics(self, name: str) -> None:
        """Tombstone the topics the connector used; those still in use come back with their next record (the
        workers running its tasks see the tombstones and forget what their tasks noted)."""
        self.status_store.refresh()
        tasks = [task for task in self.member.running_tasks() if task.id.connector == name]
        self.active_topics.reset(name, tasks)

    def connector_offsets(self, name: str) -> list[Offset]:
        kind = self.connector_type(name)
        self.offset_store.refresh()
        return self.offsets.get(name, kind)

    def alter_connector_offsets(self, name: str, offsets: Sequence[Mapping[str, Any]]) -> str:
        """Alter the offsets of a STOPPED connector; return Connect's success message."""
        with self.lock:
            kind = self._require_stopped(name)
            return self.offsets.alter(name, kind, offsets)

    def reset_connector_offsets(self, name: str) -> str:
        """Delete every offset of a STOPPED connector; return Connect's success message."""
        with self.lock:
            kind = self._require_stopped(name)
            self.offset_store.refresh()
            return self.offsets.reset(name, kind)

    # ---- internals -----------------------------------------------------------------------------------------

    def _require(self, name: str) -> dict[str, Any]:
        config = self.config_store.connector_config(name)
        if config is None:
            self.config_store.refresh()  # written through another worker a moment ago?
            config = self.config_store.connector_config(name)
        if config is None:
            raise NotFoundError(f"Connector {name} not found")
        return config

    def _require_stopped(self, name: str) -> str:
        kind = self.connector_type(name)
        if self.config_store.target_state(name) != "STOPPED" or self.config_store.task_configs(name):
            raise BadRequestError(NOT_STOPPED.format(name=name))
        return kind

    def _track_topics(self) -> None:
        """Record the topics this worker's tasks used. A topic that left the status store since the last pass
        was reset (through any worker): the tasks here forget it too, so only a new record brings it back."""
        running = self.member.running_tasks()
        tasks = [task for task in running if self.config_store.connector_config(task.id.connector) is not None]
        for name in {task.id.connector for task in tasks}:
            listed = set(self.active_topics.topics(name))
            gone = self._listed.get(name, set()) - listed
            for task in tasks:
                noted = getattr(task, "active_topics", None)
                if gone and task.id.connector == name and isinstance(noted, set):
                    noted.difference_update(gone)
        self.active_topics.track(tasks)
        self._listed = {name: set(self.active_topics.topics(name)) for name in {task.id.connector for task in tasks}}

    def _report(self, connector: str, task: int | None, state: str) -> None:
        self._put_status(connector, task, state, None)

    def _put_status(self, connector: str, task: int | None, state: str, trace: str | None) -> None:
        """Write a status record, unless the connector is gone from the config store (deleted)."""
        target = self.config_store.target_state(connector)
        if target is not None:
            put_status(self.status_store, self.worker.worker_id, target, connector, task, state, trace)

    def __repr__(self) -> str:
        return f"DistributedHerder({self.worker.worker_id}, {self.member!r})"


def _delete_stale(group: SlotGroup, revoked: list[Slot]) -> None:
    """Delete the topics of revoked slots that the group no longer subscribes to (no config calls for them) and
    that this worker owns no other slot of."""
    kept = {slot.topic for slot in group.owned if slot not in revoked} | set(group.topics)
    group.delete_topics(sorted({slot.topic for slot in revoked} - kept))
