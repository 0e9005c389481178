"""A worker simulated in memory: the runtime's own task loops, herder and stores over the in-memory transport and
a virtual clock, driven step by step so every test is deterministic and never sleeps."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol, cast

from headwater.harness.recorder import HookRecorder
from headwater.runtime.clock import VirtualClock
from headwater.runtime.herder import StandaloneHerder
from headwater.runtime.storage.offsets import MemoryOffsetStore
from headwater.runtime.tasks.base import State, TaskId, WorkerTask
from headwater.runtime.tasks.sink import WorkerSinkTask
from headwater.runtime.tasks.source import WorkerSourceTask
from headwater.runtime.transport.base import Message, Producer, Transport
from headwater.runtime.transport.memory import MemoryBroker, MemoryTransport
from headwater.runtime.worker import Worker
from headwater.sdk.connector import Connector
from headwater.sdk.metrics import PluginMetrics
from headwater.sdk.records import SourceOffset, SourcePartition, TopicPartition

SIMULATED_DEFAULTS: dict[str, Any] = {
    "key.converter": "json",
    "value.converter": "json",
    "key.converter.schemas.enable": "false",
    "value.converter.schemas.enable": "false",
    "connector.class.allowed.modules": "*",
}
"""Worker config the simulated worker starts from: schemaless JSON keys and values, and connector classes from any
module (a test names its connector by class; the worker serves no REST API)."""


class BrokerView(Protocol):
    """What a worker's tests read back from the cluster its transport talks to (the in-memory broker is one)."""

    def topics(self) -> Mapping[str, int]: ...

    def topic_config(self, topic: str) -> Mapping[str, str]: ...

    def messages(self, topic: str) -> list[Message]: ...

    def committed(self, group: str) -> Mapping[TopicPartition, int]: ...

    def create_topic(self, name: str, partitions: int = 1, config: Mapping[str, str] | None = None) -> None: ...


class SimulatedWorker:
    """One standalone worker in memory. ``tick_ms`` is the virtual time between two passes of the task loops."""

    def __init__(
        self,
        config: Mapping[str, Any] | None = None,
        *,
        tick_ms: int = 10,
        partitions: int = 1,
        plugins: Sequence[object] = (),
        broker: MemoryBroker | BrokerView | None = None,
        offset_store: MemoryOffsetStore | None = None,
        clock: VirtualClock | None = None,
        transport: Transport | None = None,
    ) -> None:
        """``transport`` replaces the in-memory one (then ``broker`` is whatever reads that cluster back: topics,
        messages, committed group offsets)."""
        if tick_ms <= 0:
            raise ValueError(f"tick_ms must be positive, got {tick_ms}")
        self.tick_ms = tick_ms
        """Virtual milliseconds between two passes of the task loops."""
        self.clock = clock or VirtualClock()
        """The virtual clock every task loop reads; only :meth:`advance` and :meth:`run_until` move it."""
        self.partitions = partitions
        """How many partitions a topic gets when the worker creates it."""
        self.broker: Any = broker or MemoryBroker(default_partitions=partitions)
        """The in-memory broker (or the ``broker`` given): topics, messages and committed group offsets."""
        self.transport: Transport = transport or MemoryTransport(cast(MemoryBroker, self.broker))
        """The transport the worker's producers and consumers use."""
        self.offset_store = offset_store or MemoryOffsetStore()
        """Where source offsets are committed; share it with a new worker to simulate a worker restart."""
        self.recorder = HookRecorder(self._owner_of)
        """Records every hook call (see :attr:`hook_calls`)."""
        worker_config = {**SIMULATED_DEFAULTS, **(config or {})}
        self.worker = Worker(
            worker_config,
            self.transport,
            self.offset_store,
            clock=self.clock,
            threaded=False,
            plugins=[self.recorder, *plugins],
        )
        """The runtime's worker, single-threaded: its task loops run only when the worker is stepped."""
        self.herder = StandaloneHerder(self.worker)
        """The runtime's standalone herder: connector configs, target states and statuses."""
        self._producer: Producer | None = None
        self.before_step: list[Callable[[], None]] = []
        """Called at the start of every pass, before the task loops run (a :class:`ConnectorTap` attaches here)."""
        self.closed = False
        """Whether :meth:`close` has been called."""

    # ---- managing connectors ---------------------------------------------------------------------------------

    def add_connector(
        self, name: str, connector_class: type[Connector] | str, config: Mapping[str, Any] | None = None, **props: Any
    ) -> None:
        """Create (or replace) a connector; keyword arguments use ``_`` for ``.`` (``tasks_max=2``)."""
        cls = (
            connector_class
            if isinstance(connector_class, str)
            else f"{connector_class.__module__}:{connector_class.__qualname__}"
        )
        merged = {"connector.class": cls, **(config or {}), **{k.replace("_", "."): v for k, v in props.items()}}
        self.herder.put_connector_config(name, merged)

    def delete_connector(self, name: str) -> None:
        """Delete a connector, as ``DELETE /connectors/{name}``: its tasks, then the connector, are stopped with
        ``connector_deleted=True``. Its committed source offsets stay."""
        self.herder.delete_connector(name)

    def pause_connector(self, name: str) -> None:
        """Pause a connector and its tasks, as ``PUT /connectors/{name}/pause``."""
        self.herder.pause_connector(name)

    def resume_connector(self, name: str) -> None:
        """Resume a paused or stopped connector, as ``PUT /connectors/{name}/resume``."""
        self.herder.resume_connector(name)

    def pause(self, name: str) -> None:
        """The old name of :meth:`pause_connector`, kept as an alias."""
        self.pause_connector(name)

    def resume(self, name: str) -> None:
        """The old name of :meth:`resume_connector`, kept as an alias."""
        self.resume_connector(name)

    def stop_connector(self, name: str) -> None:
        """Stop a connector, as ``PUT /connectors/{name}/stop``: no tasks, config kept, status STOPPED."""
        self.herder.stop_connector(name)

    def restart_connector(self, name: str) -> None:
        """Restart a connector and its tasks (each stopped with ``connector_deleted=False``)."""
        self.herder.restart(name, include_tasks=True)

    def restart_task(self, name: str, task: int = 0) -> None:
        """Restart one task of a connector, as ``POST /connectors/{name}/tasks/{task}/restart``."""
        self.herder.restart_task(TaskId(name, task))

    def task(self, name: str, task: int = 0) -> WorkerTask:
        """The runtime's running task ``task`` of connector ``name`` (its connector task is ``.task``)."""
        return self.worker.tasks[TaskId(name, task)]

    def source_task(self, name: str, task: int = 0) -> WorkerSourceTask:
        """:meth:`task`, asserting that it is a source task."""
        found = self.task(name, task)
        assert isinstance(found, WorkerSourceTask), f"{name}-{task} is not a source task"
        return found

    def sink_task(self, name: str, task: int = 0) -> WorkerSinkTask:
        """:meth:`task`, asserting that it is a sink task."""
        found = self.task(name, task)
        assert isinstance(found, WorkerSinkTask), f"{name}-{task} is not a sink task"
        return found

    def plugin_metrics(self, name: str, task: int | None = None) -> PluginMetrics:
        """The metrics connector ``name`` (``task=None``) or its task ``task`` registered through its context
        (KIP-877), by name: ``plugin_metrics("src", 0)["records_written"].value``. These are what the worker serves
        on ``/metrics`` as ``headwater_connect_plugin_<name>``; a stopped connector or task has none here (a
        ``KeyError`` says so)."""
        if task is None:
            connector = self.worker.connectors.get(name)
            if connector is None:
                raise KeyError(f"connector {name} does not run on this worker")
            return connector.plugin_metrics
        found = self.worker.tasks.get(TaskId(name, task))
        if found is None:
            raise KeyError(f"task {name}-{task} does not run on this worker")
        return found.plugin_metrics

    def task_state(self, name: str, task: int = 0) -> State | None:
        """The task's status (RUNNING, PAUSED, FAILED, ...), or ``None`` when the herder has none for it."""
        return self.herder.task_state(TaskId(name, task))

    # ---- driving time ----------------------------------------------------------------------------------------

    def step(self) -> bool:
        """One pass of every task loop at the current virtual time, then the herder's housekeeping."""
        for call in self.before_step:
            call()
        progressed = self.worker.step()
        self.herder.tick()
        return progressed

    def advance(self, ms: int) -> None:
        """Move the virtual clock ``ms`` forward: a pass of the task loops after every ``tick_ms`` and at the end.

        While every task idles (:meth:`~headwater.sdk.SourceTaskContext.idle`), the passes that would do nothing
        are skipped: the clock moves on to the last tick before the earliest task's next due pass, so that pass
        comes at the tick it would have come at anyway."""
        if ms < 0:
            raise ValueError(f"cannot advance by {ms} ms")
        tick = self.tick_ms
        end = self.clock.now_ms() + ms
        while (now := self.clock.now_ms()) < end:
            self.clock.advance(min(tick, end - now))
            if self.step():
                continue
            now = self.clock.now_ms()
            due = self.worker.next_pass_due()
            if due is not None and due > now + tick:
                skip = min((due - now - 1) // tick, (end - now - 1) // tick) * tick
                if skip > 0:
                    self.clock.advance(skip)

    def run_until(self, condition: Callable[[], bool], timeout_ms: int = 60_000, what: str = "condition") -> None:
        """Advance tick by tick until ``condition()`` holds; fail with the worker's state after ``timeout_ms``."""
        end = self.clock.now_ms() + timeout_ms
        while not condition():
            if self.clock.now_ms() >= end:
                raise AssertionError(f"{what} did not hold within {timeout_ms} virtual ms\n{self!r}")
            self.clock.advance(self.tick_ms)
            self.step()

    # ---- reading what happened -------------------------------------------------------------------------------

    def produce(
        self,
        topic: str,
        value: Any,
        key: Any = None,
        partition: int | None = None,
        headers: Sequence[tuple[str, bytes | None]] | None = None,
    ) -> None:
        """Write one record into the in-memory broker; non-bytes keys and values are written as JSON."""
        if self._producer is None:
            self._producer = self.transport.producer({})
        self._producer.produce(
            topic, _encode(value), _encode(key), partition, self.clock.now_ms(), list(headers) if headers else None
        )
        self._producer.flush(30_000)

    def create_topic(self, name: str, partitions: int | None = None) -> None:
        """Create ``name`` with ``partitions`` (the worker's default number when not given)."""
        self.broker.create_topic(name, partitions or self.partitions)

    def partition_count(self, topic: str) -> int:
        """How many partitions ``topic`` has; 0 when it does not exist."""
        return int(self.broker.topics().get(topic, 0))

    def topic_config(self, topic: str) -> dict[str, str]:
        """The topic-level configs of ``topic`` (``cleanup.policy``, say)."""
        return dict(self.broker.topic_config(topic))

    def messages(self, topic: str) -> list[Message]:
        """Every record of ``topic`` (partitions in order); none for a topic that does not exist."""
        return self.broker.messages(topic) if topic in self.broker.topics() else []

    def values(self, topic: str) -> list[Any]:
        """The JSON-decoded values of every record in ``topic`` (partitions in order)."""
        return [None if m.value is None else json.loads(m.value) for m in self.messages(topic)]

    def source_offset(self, connector: str, partition: SourcePartition | None) -> SourceOffset | None:
        """The committed source offset of one source partition, or ``None``."""
        return self.offset_store.get(connector, [partition])[0][1]

    def group_offsets(self, connector: str) -> dict[TopicPartition, int]:
        """The sink connector's committed consumer-group offsets (group ``connect-<connector>``)."""
        return dict(self.broker.committed(f"connect-{connector}"))

    @property
    def hook_calls(self) -> list[tuple[str, str, dict[str, Any]]]:
        """Every hook call in order: (hook, connector or task id, arguments)."""
        return self.recorder.calls

    # ---- assertions ------------------------------------------------------------------------------------------

    def assert_source_offset(self, connector: str, partition: SourcePartition | None, expected: Any) -> None:
        """The committed offset of ``partition`` equals ``expected``; the failure lists the stored partitions."""
        found = self.source_offset(connector, partition)
        if found != expected:
            stored = self.offset_store.connector_partitions(connector)
            raise AssertionError(
                f"committed offset of {connector} {partition!r} is {found!r}, expected {expected!r}\n"
                f"stored partitions: {stored!r}\n{self!r}"
            )

    def assert_group_offset(self, connector: str, partition: TopicPartition, expected: int | None) -> None:
        """The sink connector's committed offset of ``partition`` equals ``expected`` (``None``: nothing committed)."""
        found = self.group_offsets(connector).get(partition)
        if found != expected:
            raise AssertionError(
                f"committed offset of {connector} for {partition} is {found}, expected {expected}\n"
                f"group offsets: {self.group_offsets(connector)}\n{self!r}"
            )

    def assert_topic_values(self, topic: str, expected: Sequence[Any]) -> None:
        """The JSON-decoded values of ``topic`` (see :meth:`values`) equal ``expected``, in order."""
        found = self.values(topic)
        if found != list(expected):
            raise AssertionError(f"topic {topic} holds {found!r}\nexpected {list(expected)!r}")

    def assert_hook_order(self, owner: str, expected: Sequence[str]) -> None:
        """The hooks called for ``owner`` (a connector name or task id like ``c-0``), in order, equal ``expected``."""
        found = [hook for hook, who, _ in self.hook_calls if who == owner]
        if found != list(expected):
            raise AssertionError(f"hooks called for {owner}: {found}, expected {list(expected)}\n{self.hook_calls}")

    # ---- the end ---------------------------------------------------------------------------------------------

    def close(self) -> None:
        """Stop every task, then every connector (not deleted); also on leaving a ``with`` block."""
        if not self.closed:
            self.closed = True
            self.herder.stop()
            if self._producer is not None:
                self._producer.close()

    def __enter__(self) -> SimulatedWorker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _owner_of(self, instance: object) -> str:
        for id, task in self.worker.tasks.items():
            if task.task is instance:
                return str(id)
        for name, connector in self.worker.connectors.items():
            if connector.instance is instance:
                return name
        return f"{type(instance).__name__}"

    def __repr__(self) -> str:
        tasks = ", ".join(repr(t) for t in self.worker.tasks.values()) or "no tasks"
        topics = {name: len(self.broker.messages(name)) for name in self.broker.topics()}
        return (
            f"SimulatedWorker(now_ms={self.clock.now_ms()}, connectors={self.herder.connectors()}, "
            f"topics={topics}, tasks=[{tasks}])"
        )


def _encode(value: Any) -> bytes | None:
    if value is None or isinstance(value, bytes):
        return value
    return json.dumps(value, separators=(",", ":")).encode()
