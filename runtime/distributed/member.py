"""What one distributed worker runs: the connector of each connector slot and the task of each task slot its groups
gave it, kept in step with the config topic.

A connector starts when its slot is assigned, after the status topic is read to its end (so that its run's status
generation, :class:`~headwater.runtime.herder.generations.Generations`, is newer than any earlier run's); its worker
asks it for task configs and writes them to the config topic when they differ from the committed ones (at start,
when its config changes, when it asks for a reconfiguration). A task starts when its slot is assigned, after the
offsets and status topics are read to their end (so it resumes from its previous owner's last commit, which came
before that owner gave the slot up, and its run's status generation is newer than its previous owner's). Revoked or
lost slots stop what runs on them, with ``connector_deleted=True`` exactly when the connector is gone from the
config store (the connector's own slot delivers it whatever the connector's state: a STOPPED one's instance is
started from its last config to be told); the worker then resets a deleted connector's active topics and forgets
its statuses. Target states (PAUSED, STOPPED) and restart requests apply to whatever of the connector runs here.

Everything here runs on the herder's thread: in its loop and inside the groups' rebalance callbacks.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

from headwater.runtime.distributed.cluster_configs import ClusterConfigStore
from headwater.runtime.distributed.fencing import awaits_fencing, fence_zombies
from headwater.runtime.distributed.slots import EMPTY_PLAN, Slot, SlotPlan
from headwater.runtime.herder.active_topics import ActiveTopics
from headwater.runtime.herder.lifecycle import forget_deleted, generate_task_configs, stop_tasks
from headwater.runtime.herder.restarts import RestartRequest, build_restart_plan
from headwater.runtime.storage.configs import TargetState
from headwater.runtime.storage.kafka_offsets import KafkaOffsetStore
from headwater.runtime.storage.kafka_status import KafkaStatusStore
from headwater.runtime.tasks.base import State, TaskId, WorkerTask
from headwater.runtime.worker import Worker
from headwater.sdk.errors import ConnectError

log = logging.getLogger(__name__)

Report = Callable[[str, "int | None", str], None]
"""Writes a status the worker itself decides (RESTARTING, STOPPED): connector, task or None, state."""


class Member:
    """The connectors and tasks of this worker's slots."""

    def __init__(
        self,
        worker: Worker,
        configs: ClusterConfigStore,
        statuses: KafkaStatusStore,
        offsets: KafkaOffsetStore,
        active_topics: ActiveTopics,
        report: Report,
    ) -> None:
        self.worker = worker
        self.configs = configs
        self.statuses = statuses
        self.offsets = offsets
        self.active_topics = active_topics
        self.report = report
        self.plan = EMPTY_PLAN
        self.connector_slots: dict[str, str | None] = {}
        """Owned connector slot topic -> the connector run for it (None until the configs name it)."""
        self.task_slots: dict[Slot, TaskId | None] = {}
        """Owned task slot -> the task run for it (None until the configs name it)."""
        self.applied: dict[str, tuple[dict[str, Any], str]] = {}
        """Connector -> the config and target state its instance here was last given."""

    # ---- the groups' decisions -------------------------------------------------------------------------------

    def connectors_assigned(self, slots: list[Slot]) -> None:
        self._read_configs()
        self._read_statuses()
        for slot in slots:
            self.connector_slots[slot.topic] = None
            name = self.plan.connectors.get(slot.topic)
            if name is not None:
                self.connector_slots[slot.topic] = name
                self._sync_connector(name)
                self._fence(name)

    def connectors_revoked(self, slots: list[Slot], lost: bool) -> None:
        for slot in slots:
            name = self.connector_slots.pop(slot.topic, None)
            if name is None:
                continue
            self.applied.pop(name, None)
            if self.configs.connector_config(name) is None:
                self.worker.delete_connector(name, self.configs.last_config(name))
                forget_deleted(name, self.active_topics, self.statuses)
            else:
                self.worker.stop_connector(name)

    def tasks_assigned(self, slots: list[Slot]) -> None:
        for slot in slots:
            self.task_slots[slot] = None
        self._start_tasks(slots)

    def tasks_revoked(self, slots: list[Slot], lost: bool) -> None:
        ids = [id for slot in slots if (id := self.task_slots.pop(slot, None)) is not None]
        deleted = {id.connector for id in ids if self.configs.connector_config(id.connector) is None}
        self.stop_tasks([id for id in ids if id.connector in deleted], connector_deleted=True)
        self.stop_tasks([id for id in ids if id.connector not in deleted])
        for name in sorted(deleted):
            forget_deleted(name, self.active_topics, self.statuses)

    # ---- the configs' changes --------------------------------------------------------------------------------

    def update(self, plan: SlotPlan) -> None:
        """Apply new configs: start what idle slots now stand for, restart connectors whose config changed, pause,
        resume or stop what runs here as the target states say."""
        self.plan = plan
        for topic, name in list(self.connector_slots.items()):
            if name is None and topic in plan.connectors:
                self.connector_slots[topic] = plan.connectors[topic]
        for name in [name for name in self.connector_slots.values() if name is not None]:
            if self.configs.connector_config(name) is not None:
                self._sync_connector(name)
                self._fence(name)
        self._start_tasks([slot for slot, id in self.task_slots.items() if id is None])
        for id, task in list(self.worker.tasks.items()):
            paused = self.configs.target_state(id.connector) == "PAUSED"
            if paused and not task.paused:
                task.pause()
            elif not paused and task.paused:
                task.resume()

    def serve_requests(self) -> None:
        """Act on restart requests read from the config topic and on connectors' reconfiguration requests."""
        for request in self.configs.restart_requests():
            if self.configs.connector_config(request.connector) is not None:
                self._restart(request)
        for name, connector in list(self.worker.connectors.items()):
            if connector.reconfiguration_requested.is_set():
                connector.reconfiguration_requested.clear()
                self._reconfigure(name)

    def running_tasks(self) -> list[WorkerTask]:
        """The tasks this worker runs for its slots (safe to call from other threads than the herder's)."""
        ids, tasks = list(self.task_slots.values()), dict(self.worker.tasks)
        return [tasks[id] for id in ids if id is not None and id in tasks]

    def stop_tasks(self, ids: list[TaskId], connector_deleted: bool = False) -> None:
        stop_tasks(self.worker, self.active_topics, ids, connector_deleted)

    def stop(self) -> None:
        """Stop whatever still runs (the groups were closed first, which revoked everything they could)."""
        self.stop_tasks([id for id in self.task_slots.values() if id is not None])
        for name in list(self.worker.connectors):
            self.worker.stop_connector(name)
        self.task_slots.clear()
        self.connector_slots.clear()
        self.applied.clear()

    # ---- connectors ------------------------------------------------------------------------------------------

    def _sync_connector(self, name: str) -> None:
        """Run the connector as its config and target state say, restarting it only when needed."""
        config, target = self.configs.connector_config(name), self.configs.target_state(name)
        if config is None or target is None:
            return
        applied = self.applied.get(name)
        if applied == (config, target):
            return
        self.applied[name] = (config, target)
        if applied is not None and applied[0] == config and "STOPPED" not in (applied[1], target):
            if target == "PAUSED":
                self.worker.pause(name)
            else:
                self.worker.resume(name)
                self._reconfigure(name)  # one created PAUSED, or paused from STOPPED, has no tasks yet
            return
        if name in self.worker.connectors:
            self.worker.stop_connector(name)
        if target == "STOPPED":
            self.report(name, None, "STOPPED")
            return
        connector = self.worker.start_connector(name, config, paused=target == "PAUSED")
        if connector.state is not State.FAILED:
            self._reconfigure(name)

    def _reconfigure(self, name: str) -> None:
        """Ask the running connector for task configs; commit them when they differ from the committed ones. Only
        a STARTED connector is asked (Kafka's ``DistributedHerder``): one created PAUSED, or paused from STOPPED, gets
        its tasks once resumed."""
        if self.configs.target_state(name) != TargetState.STARTED:
            return
        configs = generate_task_configs(self.worker, name)
        if configs is not None and configs != self.configs.task_configs(name):
            try:
                self.configs.put_task_configs(name, configs)
            except ConnectError as error:
                log.error("cannot store the task configs of connector %s: %s", name, error)
        self._fence(name)

    def _fence(self, name: str) -> None:
        """Fence the earlier generations of the connector's tasks when its latest task configs await it."""
        try:
            fence_zombies(self.worker, self.configs, name)
        except ConnectError as error:
            log.error("cannot fence the earlier tasks of connector %s; trying again at the next pass: %s", name, error)

    def _read_configs(self) -> None:
        """Read the config topic to its end before starting what was just assigned, as Connect's workers catch up
        with the config offset of an assignment: a slot given up by a worker that already read a connector's
        deletion must not start that connector's task on a worker that has not read it yet."""
        try:
            self.configs.refresh()
        except ConnectError as error:
            log.error("cannot read the config topic to its end; starting from what was read: %s", error)

    def _read_statuses(self) -> None:
        """Read the status topic to its end before starting what was just assigned, so that each run's status
        generation is one more than that of the status its previous owner wrote last."""
        try:
            self.statuses.refresh()
        except ConnectError as error:
            log.error("cannot read the status topic to its end; starting from what was read: %s", error)

    # ---- tasks -----------------------------------------------------------------------------------------------

    def _start_tasks(self, slots: list[Slot]) -> None:
        known = [(slot, found) for slot in slots if (found := self.plan.task(slot)) is not None]
        if not known:
            return
        self._read_configs()
        self._read_statuses()
        if not self.worker.exactly_once:  # a transactional task reads them once it has fenced its predecessor
            try:
                self.offsets.refresh()
            except ConnectError as error:
                log.error("cannot read the offsets topic before starting tasks; they start from its view: %s", error)
        for slot, (id, config) in known:
            self._start_task(slot, id, config)

    def _start_task(self, slot: Slot, id: TaskId, config: Mapping[str, Any]) -> None:
        connector_config, target = self.configs.connector_config(id.connector), self.configs.target_state(id.connector)
        if connector_config is None or target in (None, "STOPPED"):
            return
        if awaits_fencing(self.worker, self.configs, id.connector):
            log.debug("task %s waits until the earlier generation of its connector's tasks is fenced", id)
            return
        for other, running in list(self.task_slots.items()):
            if running == id and other != slot:  # an older task set's slot, not revoked yet
                self.stop_tasks([id])
                self.task_slots[other] = None
        settings = {k: str(v) for k, v in config.items()}
        self.worker.start_task(id, settings, paused=target == "PAUSED", connector_config=connector_config)
        self.task_slots[slot] = id

    def _restart(self, request: RestartRequest) -> None:
        """Carry out what the request's plan restarts of what runs here (the plan is built from this worker's
        statuses, as on the worker that answered the request)."""
        name = request.connector
        running = {id.task: slot for slot, id in self.task_slots.items() if id is not None and id.connector == name}
        statuses = self.statuses.tasks(name)
        plan = build_restart_plan(
            request, self.statuses.connector(name), {task: statuses.get(task) for task in running}
        )
        if plan.connector and name in self.applied:
            self.report(name, None, "RESTARTING")
            self.worker.stop_connector(name)
            self.applied.pop(name)
            self._sync_connector(name)
        for task in plan.tasks:
            slot = running.get(task)
            if slot is None:
                continue
            self.report(name, task, "RESTARTING")
            self.stop_tasks([TaskId(name, task)])
            self.task_slots[slot] = None
            self._start_tasks([slot])

    def __repr__(self) -> str:
        connectors = sorted(name for name in self.connector_slots.values() if name is not None)
        tasks = sorted(str(id) for id in self.task_slots.values() if id is not None)
        return f"Member(connectors={connectors}, tasks={tasks})"
