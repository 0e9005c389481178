"""Making a task's loop with its clients (Kafka Connect's ``Worker.TaskBuilder``): a sink's consumer and, with a
dead-letter topic, its producer; a source's producer (transactional when the worker delivers exactly once, KIP-618),
its heartbeat topic (KIP-910), its topic creation (KIP-158) and its offset store; every task's transforms. Each client
gets the worker's settings for its kind with the connector's overrides (KIP-458) on top."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

from headwater.runtime.config import exactly_once_support, topic_creation
from headwater.runtime.config.clients import client_settings, override_prefix
from headwater.runtime.config.connector import TaskSettings
from headwater.runtime.config.topic_creation import TopicCreation
from headwater.runtime.error_handling.dead_letter import create_topic as create_dead_letter_topic
from headwater.runtime.storage.offsets import OffsetStore
from headwater.runtime.tasks.base import StateListener, TaskId, WorkerTask
from headwater.runtime.tasks.exactly_once_source import ExactlyOnceWorkerSourceTask
from headwater.runtime.tasks.sink import WorkerSinkTask
from headwater.runtime.tasks.source import WorkerSourceTask
from headwater.runtime.transforms.stages import build_chain
from headwater.runtime.transport.base import NewTopic, Transport
from headwater.runtime.worker_connector import WorkerConnector
from headwater.sdk.connector import SinkConnector, SourceConnector
from headwater.sdk.context import Clock
from headwater.sdk.task import SinkTask, SourceTask
from headwater.sdk.transactions import ExactlyOnceSupport

log = logging.getLogger(__name__)


class TaskBuilder:
    """Makes the task loops of one worker: its parsed ``worker_config``, ``transport``, ``clock`` and ``plugins``;
    ``offsets_for`` gives a source connector's offset store from its config; ``listener`` hears each task's state;
    ``group_id`` is the cluster's on a distributed worker and ``exactly_once`` whether sources run in transactions."""

    def __init__(
        self,
        worker_config: Mapping[str, Any],
        transport: Transport,
        clock: Clock,
        plugins: list[object] | None,
        offsets_for: Callable[[Mapping[str, Any]], OffsetStore],
        listener: StateListener,
        group_id: str | None,
        exactly_once: bool,
    ) -> None:
        self.worker_config = worker_config
        self.transport = transport
        self.clock = clock
        self.plugins = plugins
        self.offsets_for = offsets_for
        self.listener = listener
        self.group_id = group_id
        self.exactly_once = exactly_once
        self.heartbeat_topics: set[str] = set()
        """The heartbeat topics this worker created or found, each checked once."""

    def build(self, id: TaskId, connector: WorkerConnector, task_config: Mapping[str, str]) -> WorkerTask:
        """The loop of task ``id`` of ``connector``, with its clients and ``task_config`` (references resolved)."""
        task_class = connector.instance.task_class()
        task = task_class()
        sink = isinstance(connector.instance, SinkConnector)
        settings = TaskSettings.resolve(self.worker_config, connector.config, sink=sink)
        listener = self.listener
        worker_task: WorkerTask
        if sink:
            assert isinstance(task, SinkTask), f"{task_class} is not a SinkTask"
            dead_letters = None
            if settings.errors.dlq_topic and not settings.errors.tolerate:
                log.warning(
                    "task %s: errors.deadletterqueue.topic.name is set but errors.tolerance=none: a failed record "
                    "fails the task and goes to no dead-letter topic; set errors.tolerance=all to use it",
                    id,
                )
            elif settings.errors.dlq_topic:
                create_dead_letter_topic(
                    self.transport.admin(), settings.errors.dlq_topic, settings.errors.dlq_replication_factor
                )
                dead_letters = self.transport.producer(self._client_config(connector, "producer"))
            consumer = self.transport.consumer(f"connect-{id.connector}", self._client_config(connector, "consumer"))
            worker_task = WorkerSinkTask(
                id, task, task_config, settings, consumer, self.clock, listener, self.plugins, dead_letters
            )
        else:
            assert isinstance(connector.instance, SourceConnector)
            assert isinstance(task, SourceTask), f"{task_class} is not a SourceTask"
            if settings.heartbeat_interval_ms > 0:
                self._ensure_heartbeat_topic(settings.heartbeat_topic)
            creation = TopicCreation.for_connector(
                connector.config, bool(self.worker_config[topic_creation.ENABLE]), self.transport.admin
            )
            worker_task = self._source_task(id, connector, task, task_config, settings)
            worker_task.topic_creation = creation
        worker_task.transforms = build_chain(connector.config)
        worker_task.config_def = connector.instance.config_def()
        return worker_task

    def _source_task(
        self,
        id: TaskId,
        connector: WorkerConnector,
        task: SourceTask,
        config: Mapping[str, str],
        settings: TaskSettings,
    ) -> WorkerSourceTask:
        """A source task: in transactions when the worker delivers exactly once."""
        producer_config = self._client_config(connector, "producer")
        offsets = self.offsets_for(connector.config)
        if not self.exactly_once:
            if exactly_once_support.worker_support(self.worker_config) == "preparing":
                log.info("task %s delivers at least once: exactly-once source support is only preparing here", id)
            producer = self.transport.producer(producer_config)
            return WorkerSourceTask(
                id, task, config, settings, producer, offsets, self.clock, self.listener, self.plugins
            )
        assert self.group_id is not None
        transactions = exactly_once_support.Transactions.of(
            connector.config, self.worker_config, self.group_id, str(id)
        )
        instance = connector.instance
        assert isinstance(instance, SourceConnector)
        if instance.exactly_once_support({k: str(v) for k, v in connector.config.items()}) is (
            ExactlyOnceSupport.UNSUPPORTED
        ):
            log.warning(
                "task %s runs in transactions, but its connector says it cannot deliver exactly once with this config: "
                "records may still be duplicated (set exactly.once.support=required to refuse such a config)",
                id,
            )
        transactional = self.transport.transactional_producer(transactions.transactional_id, producer_config)
        return ExactlyOnceWorkerSourceTask(
            id,
            task,
            config,
            settings,
            transactional,
            offsets,
            transactions,
            self.clock,
            self.listener,
            self.plugins,
        )

    def _ensure_heartbeat_topic(self, topic: str) -> None:
        """Create a heartbeat topic once per worker, compacted (the latest heartbeat per source partition is what
        matters), like Connect creates its internal topics; an existing topic is left as it is."""
        if topic in self.heartbeat_topics:
            return
        partitions = int(self.worker_config["heartbeat.records.topic.partitions"])
        replication = int(self.worker_config["heartbeat.records.topic.replication.factor"])
        self.transport.admin().create_topics([NewTopic(topic, partitions, replication, {"cleanup.policy": "compact"})])
        self.heartbeat_topics.add(topic)

    def _client_config(self, connector: WorkerConnector, client: str) -> dict[str, Any]:
        override = override_prefix(client)
        found = client_settings(self.worker_config, client)
        found.update({k[len(override) :]: v for k, v in connector.config.items() if k.startswith(override)})
        found["clock"] = self.clock
        return found
