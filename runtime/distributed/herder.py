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
from collections.abc import Mapping
from typing import Any

from headwater.runtime.distributed.cluster_configs import ClusterConfigStore
from headwater.runtime.distributed.group import SlotGroup
from headwater.runtime.distributed.member import Member
from headwater.runtime.distributed.slots import Slot, SlotPlan
from headwater.runtime.errors import BadRequestError
from headwater.runtime.herder.base import Herder
from headwater.runtime.herder.restarts import RestartPlan, RestartRequest
from headwater.runtime.storage.configs import TargetState
from headwater.runtime.storage.kafka_offsets import KafkaOffsetStore
from headwater.runtime.storage.kafka_status import KafkaStatusStore
from headwater.runtime.tasks.base import WorkerTask
from headwater.runtime.worker import Worker

log = logging.getLogger(__name__)


class DistributedHerder(Herder):
    """The herder of one worker of the cluster ``group_id``, on the worker's transport. ``group_config`` holds the
    client settings of its group memberships (session timeout, heartbeat interval); slot topics are named with
    ``prefix`` and created with ``slot_replication``. The stores must be started before :meth:`tick`."""

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
        super().__init__(worker, status_store, offset_store)
        self.config_store = config_store
        self.status_store: KafkaStatusStore = status_store
        self.offset_store = offset_store
        self.prefix = prefix
        self.member = Member(worker, config_store, status_store, offset_store, self.active_topics, self._report)
        self.connector_group = SlotGroup(
            worker.transport,
            f"{group_id}-connectors",
            group_config,
            self.member.connectors_assigned,
            self._connectors_revoked,
            slot_replication,
        )
        self.task_group = SlotGroup(
            worker.transport, group_id, group_config, self.member.tasks_assigned, self._tasks_revoked, slot_replication
        )
        self._version = -1
        self._listed: dict[str, set[str]] = {}

    # ---- the loop ----------------------------------------------------------------------------------------------

    def tick(self, timeout_s: float = 0.05) -> None:
        """One pass of the worker's loop: follow the config and status topics, apply what changed, serve restart
        and reconfiguration requests, let the groups rebalance (waiting up to ``timeout_s``), record the topics
        the tasks used."""
        with self.health.tick():
            self._tick(timeout_s)

    def _tick(self, timeout_s: float) -> None:
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
        for namespace, level in self.config_store.logger_levels():
            try:
                self.loggers.set_level(namespace, level)
            except BadRequestError as error:  # written by another worker version, say: not ours to refuse
                log.error("cannot set the level of logger %s from the config topic: %s", namespace, error)
        self.worker.report_starting()
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

    # ---- the specialisation: configs in the config topic, changes carried out by the workers that run them ----

    def connectors(self) -> list[str]:
        return self.config_store.connectors()

    def _stored_config(self, name: str) -> dict[str, Any] | None:
        config = self.config_store.connector_config(name)
        if config is None:
            self.config_store.refresh()  # written through another worker a moment ago?
            config = self.config_store.connector_config(name)
        return config

    def _stored_target_state(self, name: str) -> str | None:
        return self.config_store.target_state(name)

    def _stored_task_configs(self, name: str) -> list[dict[str, Any]]:
        return self.config_store.task_configs(name)

    def _write_config(self, name: str, props: dict[str, Any], created: bool, initial: TargetState) -> None:
        if created and initial is not TargetState.STARTED:
            self.config_store.put_target_state(name, initial)  # before the config (KIP-980)
        self.config_store.put_connector_config(name, props)

    def _patch_config(self, name: str, changes: dict[str, Any], merged: dict[str, Any]) -> None:
        """A patch record: every worker merges ``changes`` into the config it has at that point of the config
        topic, so a PATCH or PUT through another worker a moment before is kept, not overwritten."""
        self.config_store.patch_connector_config(name, changes)

    def _remove(self, name: str) -> None:
        """Tombstone the connector's config and target state; the workers running it then give up its slots
        (:class:`~headwater.runtime.distributed.member.Member`)."""
        self.config_store.remove_connector(name)

    def _set_target_state(self, name: str, state: TargetState) -> None:
        if state is TargetState.STOPPED:
            self.config_store.put_task_configs(name, [])  # an empty set of task configs first, as Connect does
        self.config_store.put_target_state(name, state)

    def _restart(self, request: RestartRequest, plan: RestartPlan) -> None:
        """Write the request to the config topic; each worker running part of the connector carries it out."""
        self.config_store.request_restart(request)

    def _set_cluster_logger_level(self, namespace: str, level: str) -> None:
        """Through the config topic, as Kafka Connect does: every worker, this one too, applies it once read."""
        self.config_store.put_logger_level(namespace, level)

    def _running_tasks(self, name: str) -> list[WorkerTask]:
        return [task for task in self.member.running_tasks() if task.id.connector == name]

    def _refresh_statuses(self) -> None:
        self.status_store.refresh()

    def _refresh_offsets(self) -> None:
        self.offset_store.refresh()

    def _track_topics(self) -> None:
        """Record the topics this worker's tasks used. A topic the status store listed at the last pass, or that
        this worker wrote then, and that it does not list now was reset (through any worker): the tasks here forget
        it, so only a new record brings it back. Counting this worker's own writes matters when its view of the
        status topic lags: a topic another worker recorded, not read here yet, is written again from here, and
        were that write not remembered, a reset read before the write came back would leave the tasks' notes in
        place and the next pass would record the topic again with no record through it."""
        running = self.member.running_tasks()
        tasks = [task for task in running if self.config_store.connector_config(task.id.connector) is not None]
        for name in {task.id.connector for task in tasks}:
            listed = set(self.active_topics.topics(name))
            gone = self._listed.get(name, set()) - listed
            for task in tasks:
                noted = getattr(task, "active_topics", None)
                if gone and task.id.connector == name and isinstance(noted, set):
                    noted.difference_update(gone)
        written = self.active_topics.track(tasks)
        self._listed = {
            name: set(self.active_topics.topics(name)) | written.get(name, set())
            for name in {task.id.connector for task in tasks}
        }

    def _report(self, connector: str, task: int | None, state: str) -> None:
        self._put_status(connector, task, state, None)

    def __repr__(self) -> str:
        return f"DistributedHerder({self.worker.worker_id}, {self.member!r})"


def _delete_stale(group: SlotGroup, revoked: list[Slot]) -> None:
    """Delete the topics of revoked slots that the group no longer subscribes to (no config calls for them) and
    that this worker owns no other slot of."""
    kept = {slot.topic for slot in group.owned if slot not in revoked} | set(group.topics)
    group.delete_topics(sorted({slot.topic for slot in revoked} - kept))
