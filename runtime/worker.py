"""The Worker: instantiates connectors and tasks and runs them, on threads or stepped by a simulated worker.

It knows nothing of where configs come from; a herder tells it what to start and stop.
"""

from __future__ import annotations

import logging
import threading
import time
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from headwater.runtime.clock import SystemClock
from headwater.runtime.config import exactly_once_support, sink_topics, topic_creation
from headwater.runtime.config.connector import connector_config_def
from headwater.runtime.config.override_policy import check_client_settings
from headwater.runtime.config.references import ConfigTransformer, hide_values, references, restore_references
from headwater.runtime.config.worker import WORKER_CONFIG
from headwater.runtime.logs.context import for_connector, for_task
from headwater.runtime.plugins import plugin_manager, resolve_connector_class
from headwater.runtime.storage.connector_offsets import ConnectorOffsetStore, OffsetTopics
from headwater.runtime.storage.kafka_offsets import KafkaOffsetStore
from headwater.runtime.storage.offsets import OffsetStore
from headwater.runtime.task_builder import TaskBuilder
from headwater.runtime.tasks.base import State, TaskId, WorkerTask
from headwater.runtime.transport.base import Transport
from headwater.runtime.transport.reachability import BrokerReachability
from headwater.runtime.worker_connector import LifecycleThread, Listener, WorkerConnector, WorkerConnectorContext
from headwater.sdk.connector import Connector, SinkConnector, SourceConnector
from headwater.sdk.context import Clock
from headwater.sdk.errors import ConfigError, ConnectError
from headwater.sdk.metrics import MetricKind, PluginMetrics
from headwater.sdk.providers import has_reference

log = logging.getLogger(__name__)


@dataclass
class Startups:
    """How many connector and task starts this worker attempted and how they went (Kafka Connect's
    ``connect-worker-metrics`` startup totals). A connector start succeeded when its ``start`` returned; a task start
    when the task was created and handed to its thread (its ``start`` failing later makes it FAILED, as in Kafka
    Connect, where the start counts as a success too)."""

    connector_attempts: int = 0
    connector_successes: int = 0
    connector_failures: int = 0
    task_attempts: int = 0
    task_successes: int = 0
    task_failures: int = 0


class Worker:
    """Runs connectors and tasks over one transport, offset store and clock.

    ``threaded=True`` runs every task on a thread of its own; ``threaded=False`` leaves them to :meth:`step`, which
    a simulated worker calls as its virtual clock moves.
    """

    def __init__(
        self,
        config: Mapping[str, Any],
        transport: Transport,
        offset_store: OffsetStore,
        clock: Clock | None = None,
        threaded: bool = True,
        plugins: list[object] | None = None,
        listener: Listener | None = None,
        worker_id: str = "headwater",
        group_id: str | None = None,
        reachability: BrokerReachability | None = None,
    ) -> None:
        self.config = WORKER_CONFIG.parse(config)
        exactly_once_support.check_distributed(self.config, group_id is not None)
        self.group_id = group_id
        """The cluster's ``group.id`` on a distributed worker, which names its tasks' transactional ids."""
        self.exactly_once = exactly_once_support.worker_support(self.config) == "enabled"
        """Whether source tasks deliver exactly once, in transactions (KIP-618)."""
        self.config_transformer = ConfigTransformer.from_worker_config(self.config)
        self.transport = transport
        self.reachability = reachability or BrokerReachability()
        """Whether the Kafka cluster answers (``GET /health``, the broker metrics); the worker commands watch it."""
        self.offset_store = offset_store
        self.clock: Clock = clock or SystemClock()
        self.threaded = threaded
        self.plugins = plugins
        self.listener = listener
        self.starting: Callable[[str, int | None], object] | None = None
        """Told, on the caller's thread, that a run of a connector (task ``None``) or task begins, before the run
        reports any state: the herder gives each run its status generation
        (:class:`~headwater.runtime.herder.generations.Generations`)."""
        self.worker_id = worker_id
        self.connectors: dict[str, WorkerConnector] = {}
        self.tasks: dict[TaskId, WorkerTask] = {}
        self._threads: dict[TaskId, threading.Thread] = {}
        self._offset_topics = OffsetTopics(offset_store) if isinstance(offset_store, KafkaOffsetStore) else None
        """The stores of connectors' own offsets topics, shared by their tasks, connectors and REST calls."""
        self.builder = TaskBuilder(
            self.config,
            transport,
            self.clock,
            plugins,
            lambda config: self.connector_offset_store(config) or self.offset_store,
            self._task_listener,
            group_id,
            self.exactly_once,
        )
        """Makes each task's loop with its clients."""
        self.startups = Startups()
        self.cancelled: list[TaskId] = []
        """Tasks that outlived the graceful timeout: no final commit, and their stop hook may never run."""
        self.cleanup_errors: list[tuple[str, str]] = []
        """Deleted connectors whose cleanup may be incomplete, with why: ``stop(connector_deleted=True)`` raised or
        could not be delivered, or the instance started to receive it failed to start (see :meth:`delete_connector`).
        Each is also logged as an error."""

    # ---- connectors ------------------------------------------------------------------------------------------

    def validate(self, props: Mapping[str, Any]) -> tuple[type[Connector], dict[str, Any]]:
        """Resolve the connector class and parse ``props`` against its full config definition; a client setting
        the worker does not let connectors set (a stored config from before the rule) is refused here too."""
        if "connector.class" not in props:
            raise ConfigError("connector.class", None, "Missing required configuration with no default value")
        check_client_settings(props, self.config)
        cls = resolve_connector_class(props["connector.class"])
        probe = cls()
        parsed = connector_config_def(probe, props).parse(props)
        if isinstance(probe, SinkConnector):
            wrong = sink_topics.problems(props)  # Kafka's SinkConnectorConfig.validate: the first problem
            if wrong:
                name = next(iter(wrong))
                raise ConfigError(name, props.get(name), wrong[name][0])
        else:
            # what the worker does not enable is logged when a task starts; a key that would be ignored is refused
            ignored = topic_creation.problems(props, True)
            if ignored:
                name = min(ignored)
                raise ConfigError(name, props[name], ignored[name])
            assert isinstance(probe, SourceConnector)
            wrong = exactly_once_support.problems(props, probe, self.config, {}, self.group_id is not None)
            if wrong:  # a key this worker would ignore, or a connector that cannot do what is required
                name = min(wrong)
                raise ConfigError(name, props.get(name), wrong[name][0])
        if type(probe).validate is not Connector.validate:
            parsed.update(probe.validate(props))
        return cls, parsed

    def start_connector(
        self, name: str, props: Mapping[str, Any], paused: bool = False, report: bool = True
    ) -> WorkerConnector:
        """Create a connector instance and start it on its lifecycle thread (:class:`WorkerConnector`): on a threaded
        worker this returns at once, and ``started`` is set, and ``reconfiguration_requested`` too when it started,
        once its ``start`` returns; stepped, it has started when this returns. One whose ``start`` raises is kept,
        FAILED. ``report=False`` keeps its state changes from the listener (an instance started only to be told it
        is deleted).

        The instance gets ``props`` with its ``${provider:path:key}`` references resolved; one that cannot be
        resolved, or a resolved value that is not valid, leaves the connector FAILED, its trace naming the key and
        the reference (not the value)."""
        listener = self.listener if report else None
        if report and self.starting is not None:
            self.starting(name, None)
        found: dict[str, str] = {}
        try:
            resolved = self.config_transformer.transform({**props, "name": name})
            found = references(props, resolved)
            cls, parsed = self.validate(resolved)
        except ConfigError as error:
            if not any(has_reference(value) for value in props.values()):
                raise
            cls = resolve_connector_class(props.get("connector.class", ""))
            connector = WorkerConnector(name, cls(), {**props, "name": name}, listener=listener)
            self.connectors[name] = connector
            self.startups.connector_attempts += 1
            self.startups.connector_failures += 1
            connector.started_as(None, hide_values(error, found))
            return connector
        connector = WorkerConnector(name, cls(), parsed, listener=listener, references=found, paused=paused)
        connector.lifecycle = LifecycleThread(f"connector-{name}", inline=not self.threaded)
        self.connectors[name] = connector
        self.startups.connector_attempts += 1
        connector.start_began = time.monotonic()
        connector.lifecycle.submit(lambda: self._start_instance(connector, {k: str(v) for k, v in resolved.items()}))
        return connector

    def _start_instance(self, connector: WorkerConnector, props: dict[str, str]) -> None:
        """On the connector's lifecycle thread: initialize and start the instance, then report its state; its lines
        are logged as ``[name|worker]`` (Kafka Connect's ``WorkerConnector`` runs in
        ``LoggingContext.forConnector``)."""
        with for_connector(connector.name):
            self._start_in_context(connector, props)

    def _start_in_context(self, connector: WorkerConnector, props: dict[str, str]) -> None:
        try:
            instance = connector.instance
            connector.hooks = plugin_manager(instance, self.plugins).hook
            offsets = self.connector_offset_store(connector.config) or self.offset_store
            connector.plugin_metrics = PluginMetrics(self._check_plugin_metric)
            instance.initialize(WorkerConnectorContext(connector, self.clock, offsets))
            instance.start(props)
        except Exception as error:
            connector.plugin_metrics.close()
            self.startups.connector_failures += 1
            connector.started_as(None, error)
            return
        self.startups.connector_successes += 1
        connector.started_as(State.PAUSED if connector.paused else State.RUNNING)
        if self.threaded:  # the herder asks it for task configs at its next pass
            connector.reconfiguration_requested.set()

    def connector_task_configs(self, name: str) -> list[dict[str, str]]:
        connector = self.connectors[name]
        max_tasks = int(connector.config["tasks.max"])
        with for_connector(name):
            configs = connector.instance.task_configs(max_tasks)
        if len(configs) > max_tasks:
            raise ConnectError(f"connector {name} returned {len(configs)} task configs for tasks.max={max_tasks}")
        found = connector.references
        return [restore_references({str(k): str(v) for k, v in c.items()}, found) for c in configs]

    def stop_connector(self, name: str, connector_deleted: bool = False) -> None:
        """Stop the connector instance running here, if any, with the ``stop`` hook; a deleted connector is
        stopped through :meth:`delete_connector`, which covers the states where none runs.

        ``stop`` runs on the connector's lifecycle thread, after its ``start`` returned; this waits for it up to
        ``task.shutdown.graceful.timeout.ms`` (Kafka Connect waits for a connector's shutdown the same way). One
        that takes longer is left to finish on its own thread and reports nothing more: it is logged as an error,
        and, for a deleted connector, kept in :attr:`cleanup_errors`."""
        connector = self.connectors.get(name)
        if connector is None or connector.stop_delivered is not None:
            self.connectors.pop(name, None)
            return
        stopped = connector.lifecycle.submit(lambda: self._stop_instance(connector, connector_deleted))
        connector.lifecycle.close()
        timeout_s = int(self.config["task.shutdown.graceful.timeout.ms"]) / 1000
        try:
            stopped.result(timeout_s)
        except TimeoutError:
            connector.listener = None  # a newer instance of it may run by the time this one finishes
            why = "start() has not returned" if connector.start_began is not None else "stop() has not returned"
            log.error(
                "connector %s did not stop within %.1f s (its %s); it is left to finish on its own thread, and "
                "stop(connector_deleted=%s) is delivered when it can be",
                name,
                timeout_s,
                why,
                connector_deleted,
            )
            if connector_deleted:
                self.cleanup_errors.append((name, f"stop(connector_deleted=True) not done within {timeout_s} s"))
        finally:
            del self.connectors[name]

    def _stop_instance(self, connector: WorkerConnector, connector_deleted: bool) -> None:
        """On the connector's lifecycle thread: deliver ``stop`` and report the connector STOPPED; its lines are
        logged as ``[name|worker]``."""
        with for_connector(connector.name):
            self._stop_in_context(connector, connector_deleted)

    def _stop_in_context(self, connector: WorkerConnector, connector_deleted: bool) -> None:
        name = connector.name
        try:
            if connector.hooks is not None:
                connector.hooks.stop(instance=connector.instance, connector_deleted=connector_deleted)
            elif connector_deleted:
                self._cleanup_failed(name, "stop(connector_deleted=True) not delivered: its hooks were never set up")
        except Exception as error:
            log.exception("connector %s failed in stop", name)
            if connector_deleted:
                self._cleanup_failed(name, f"stop(connector_deleted=True) raised {error!r}")
        connector.stop_delivered = connector_deleted
        connector.plugin_metrics.close()
        if connector.state is not State.FAILED:
            connector.set_state(State.STOPPED)

    def delete_connector(self, name: str, props: Mapping[str, Any] | None) -> None:
        """Deliver ``stop(connector_deleted=True)`` to the connector whatever its state, after the herder stopped
        its tasks (they get the flag from :meth:`stop_tasks`).

        The instance running here gets it: RUNNING, PAUSED, FAILED (a connector whose ``start`` raised keeps
        its instance), or still starting (it gets it once its ``start`` returns). When none runs here (a STOPPED
        connector, which Kafka Connect runs no instance of), a fresh instance is started from ``props``, the
        connector's last config, without reporting its state, and stopped with the flag at once; no task is
        started. When that ``start`` raises, the instance still gets ``stop(connector_deleted=True)``, to remove
        what it can, as a FAILED connector's instance does. Nothing here raises: the delete goes through, and
        whatever kept the cleanup from running or completing is logged as an error and kept in
        :attr:`cleanup_errors`."""
        if name not in self.connectors:
            if props is None:
                self._cleanup_failed(name, "stop(connector_deleted=True) not delivered: its config is not known here")
                return
            log.info(
                "connector %s deleted while no instance of it runs here: starting one with its config to deliver "
                "stop(connector_deleted=True)",
                name,
            )
            try:
                connector = self.start_connector(name, props, report=False)
            except Exception as error:  # its class or config no longer loads: there is no instance to tell
                self._cleanup_failed(name, f"stop(connector_deleted=True) not delivered: {error!r}")
                return
            connector.started.wait(int(self.config["task.shutdown.graceful.timeout.ms"]) / 1000)
            if connector.state is State.FAILED:
                reason = (connector.trace or "").strip().splitlines()[-1:] or ["?"]
                self._cleanup_failed(
                    name,
                    f"the instance started to deliver stop(connector_deleted=True) failed in start ({reason[0]}); "
                    "it is stopped with connector_deleted=True all the same",
                )
        self.stop_connector(name, connector_deleted=True)

    def _cleanup_failed(self, name: str, why: str) -> None:
        log.error("connector %s deleted, but what it provisioned may remain: %s", name, why)
        self.cleanup_errors.append((name, why))

    # ---- tasks -----------------------------------------------------------------------------------------------

    def start_task(
        self,
        id: TaskId,
        task_config: Mapping[str, str],
        paused: bool = False,
        connector_config: Mapping[str, Any] | None = None,
    ) -> WorkerTask | None:
        """Create and start one task; ``None`` when it could not be created (bad client settings, a task class that
        cannot be made, a heartbeat topic that cannot be created), in which case it is reported FAILED, as Connect
        does, rather than raised to the herder. When its connector does not run on this worker (a distributed
        worker runs tasks of connectors other workers run), ``connector_config`` says what it is. The task gets
        ``task_config`` with its ``${provider:path:key}`` references resolved."""
        self.startups.task_attempts += 1
        if self.starting is not None:
            self.starting(id.connector, id.task)
        try:
            with for_task(id.connector, id.task):  # the task's class and clients are made in its context
                worker_task = self._create_task(id, task_config, connector_config)
        except Exception as error:
            self.startups.task_failures += 1
            log.error("task %s could not be created: %s", id, error)
            self._task_listener(id, State.FAILED, "".join(traceback.format_exception(error)))
            return None
        self.startups.task_successes += 1
        if paused:
            worker_task.pause()
        self.tasks[id] = worker_task
        if self.threaded:
            thread = threading.Thread(target=worker_task.execute, name=f"task-{id}", daemon=True)
            self._threads[id] = thread
            thread.start()
        else:
            worker_task.start()
        return worker_task

    def _create_task(
        self, id: TaskId, task_config: Mapping[str, str], connector_config: Mapping[str, Any] | None = None
    ) -> WorkerTask:
        task_config = self.config_transformer.transform(task_config)
        connector = self.connectors.get(id.connector)
        if connector is None:
            if connector_config is None:
                raise ConnectError(f"connector {id.connector} does not run on this worker and its config is unknown")
            # Kafka Connect's Worker.startTask does the same: a new, never started instance says the task class
            resolved = self.config_transformer.transform({**connector_config, "name": id.connector})
            try:
                cls, parsed = self.validate(resolved)
            except ConfigError as error:
                raise hide_values(error, references(connector_config, resolved)) from None
            connector = WorkerConnector(id.connector, cls(), parsed)
        worker_task = self.builder.build(id, connector, task_config)
        worker_task.plugin_metrics = PluginMetrics(self._check_plugin_metric)
        return worker_task

    def _check_plugin_metric(self, name: str, kind: MetricKind) -> None:
        """Refuse a plugin metric ``name`` that a connector or task of this worker registered as another kind:
        they share one ``/metrics`` family per name (KIP-877's metrics differ by their tags only)."""
        owners: list[tuple[str, PluginMetrics]] = [
            (f"connector {c.name}", c.plugin_metrics) for c in list(self.connectors.values())
        ]
        owners += [(f"task {t.id}", t.plugin_metrics) for t in list(self.tasks.values())]
        for owner, metrics in owners:
            found = metrics.get(name)
            if found is not None and found.kind is not kind:
                raise ValueError(
                    f"plugin metric {name} cannot be a {kind.value}: {owner} on this worker registered it as a "
                    f"{found.kind.value}, and one name has one kind on a worker's /metrics"
                )

    def connector_offset_store(self, connector_config: Mapping[str, Any]) -> ConnectorOffsetStore | None:
        """The offsets of a source connector whose ``offsets.storage.topic`` names a topic of its own (KIP-618):
        that topic first, the worker's offsets topic as fallback (:mod:`~headwater.runtime.storage.connector_offsets`).
        ``None`` when its offsets go to the worker's offset store: no such key, or the worker's own topic named (Kafka
        Connect then uses that topic alone). The connector's tasks, the connector and the REST offsets endpoints all
        get their store here.

        The topic is on the worker's Kafka cluster (a ``producer.override.bootstrap.servers`` naming another cluster
        is refused by :func:`.exactly_once_support.problems`); it is created when missing with the
        worker's offsets topic partitions and replication factor; one store of it per worker
        (:class:`~headwater.runtime.storage.connector_offsets.OffsetTopics`), stopped by :meth:`stop`."""
        topic = connector_config.get(exactly_once_support.OFFSETS_TOPIC)
        if not topic:
            return None
        topics = self._offset_topics
        if self.group_id is None or topics is None:
            raise ConnectError(
                f"{exactly_once_support.OFFSETS_TOPIC}={topic}: a connector's own offsets topic needs a distributed "
                f"worker with an offsets topic, and this worker keeps its offsets in {self.offset_store!r}"
            )
        return None if topic == topics.worker_store.topic else topics.store(str(topic))

    def stop_tasks(self, ids: list[TaskId], connector_deleted: bool = False) -> None:
        """Stop tasks and wait for them: each finishes its pass, commits, closes and gets the ``stop`` hook."""
        stopping = [self.tasks[i] for i in ids if i in self.tasks]
        for task in stopping:
            task.stop(connector_deleted)
        timeout_s = int(self.config["task.shutdown.graceful.timeout.ms"]) / 1000
        deadline = time.monotonic() + timeout_s  # one for all, as Kafka Connect awaits its tasks
        for task in stopping:
            thread = self._threads.pop(task.id, None)
            if thread is None:
                task.shutdown()
            else:
                thread.join(max(0.0, deadline - time.monotonic()))
                if thread.is_alive():
                    log.error(
                        "task %s did not stop within %.1f s; cancelling it; stop(connector_deleted=%s) "
                        "has not been delivered",
                        task.id,
                        timeout_s,
                        connector_deleted,
                    )
                    task.cancel()
                    self.cancelled.append(task.id)
            del self.tasks[task.id]

    def task_ids(self, connector: str) -> list[TaskId]:
        return sorted(i for i in self.tasks if i.connector == connector)

    def pause(self, connector: str) -> None:
        self._set_paused(connector, True)
        for id in self.task_ids(connector):
            self.tasks[id].pause()

    def resume(self, connector: str) -> None:
        self._set_paused(connector, False)
        for id in self.task_ids(connector):
            self.tasks[id].resume()

    def _set_paused(self, name: str, paused: bool) -> None:
        """Pause or resume the connector instance; one still starting takes that state once started."""
        connector = self.connectors.get(name)
        if connector is None:
            return
        connector.paused = paused
        if connector.started.is_set() and connector.state is not State.FAILED:
            connector.set_state(State.PAUSED if paused else State.RUNNING)

    def report_starting(self) -> None:
        """Report the connectors whose ``start`` is taking long, and where each waits
        (:meth:`WorkerConnector.report_starting`); the herders' loops call this."""
        for connector in list(self.connectors.values()):
            connector.report_starting()

    def step(self) -> bool:
        """One pass of every task (stepped mode); return whether any moved records."""
        progressed = False
        for task in list(self.tasks.values()):
            progressed |= task.step()
        return progressed

    def next_pass_due(self) -> int | None:
        """The earliest :meth:`~headwater.runtime.tasks.base.WorkerTask.next_pass_due` of the tasks (stepped mode):
        before then, a pass would only serve delivery reports. ``None`` when no task runs."""
        if not self.tasks:
            return None
        now = self.clock.now_ms()
        due = None
        for task in list(self.tasks.values()):
            at = task.next_pass_due()
            if at <= now:
                return now
            due = at if due is None else min(due, at)
        return due

    def stop(self) -> None:
        """Stop every task, then every connector (not deleted), then the stores of connectors' own offsets topics,
        then close the config providers."""
        self.stop_tasks(list(self.tasks))
        for name in list(self.connectors):
            self.stop_connector(name)
        if self._offset_topics is not None:
            self._offset_topics.stop()
        self.config_transformer.close()

    def _task_listener(self, id: TaskId, state: State, trace: str | None) -> None:
        if self.listener is not None:
            self.listener(id.connector, id.task, state, trace)
