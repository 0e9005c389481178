"""One connector on a simulated worker, with a tap on it, driven through the faults a worker meets in production:
crashes, restarts, rebalances, failing commits and sends, slow acknowledgements.

The conformance suite, the fault schedules and the stateful test all drive connectors through a
:class:`ConnectorDriver`; every fault is applied the way the runtime would meet it, never by reaching into a task.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from headwater.harness.simulated import SimulatedWorker
from headwater.harness.tap import ConnectorTap
from headwater.runtime.plugins import resolve_connector_class
from headwater.runtime.tasks.base import State, TaskId
from headwater.runtime.transport.memory import MemoryBroker
from headwater.sdk.connector import Connector, SinkConnector

WorkerFactory = Callable[..., SimulatedWorker]
"""Makes a worker from a worker config and options (``plugins``, ``tick_ms``), like the ``make_worker`` fixture."""


class ConnectorDriver:
    """Runs ``connector`` under ``name`` with ``config`` on a worker made by ``make`` (a plain
    :class:`SimulatedWorker` by default); :attr:`tap` records everything it does, across worker crashes."""

    def __init__(
        self,
        connector: type[Connector] | str,
        config: Mapping[str, Any],
        *,
        name: str = "connector",
        worker_config: Mapping[str, Any] | None = None,
        tick_ms: int = 10,
        make: WorkerFactory = SimulatedWorker,
    ) -> None:
        self.connector = connector
        self.config = dict(config)
        self.name = name
        self.worker_config = dict(worker_config or {})
        self.tick_ms = tick_ms
        self.tap = ConnectorTap(name)
        self.crashes = 0
        self.dead: list[SimulatedWorker] = []
        """Workers that crashed: never stepped again; reaped (tasks stopped without commits) by :meth:`close`."""
        self._make = make
        self.worker = self._new_worker()
        self.sink = _is_sink(connector)

    def _new_worker(self, **shared: Any) -> SimulatedWorker:
        worker = self._make(self.worker_config, plugins=[self.tap.hooks], tick_ms=self.tick_ms, **shared)
        self.tap.attach(worker)
        return worker

    @property
    def memory_broker(self) -> MemoryBroker:
        """The in-memory broker; faults that need one fail on a real broker with this message."""
        broker = self.worker.broker
        if not isinstance(broker, MemoryBroker):
            raise TypeError(f"this fault needs the in-memory broker; the worker runs on {type(broker).__name__}")
        return broker

    @property
    def group(self) -> str:
        return f"connect-{self.name}"

    # ---- lifecycle -------------------------------------------------------------------------------------------

    def start(self) -> None:
        """Create the connector. A class is handed to the herder as it is (no lookup by name on every start)."""
        self.worker.herder.put_connector_config(self.name, {**self.config, "connector.class": self.connector})

    def advance(self, ms: int) -> None:
        self.worker.advance(ms)

    def run_until(self, condition: Callable[[], bool], timeout_ms: int = 60_000, what: str = "condition") -> None:
        self.worker.run_until(condition, timeout_ms, what)

    def settle(self, done: Callable[[], bool], timeout_ms: int = 10_000, quiet_ms: int = 2_000) -> bool:
        """Run tick by tick until ``done()`` holds (return ``True``), or nothing has moved for ``quiet_ms``, or
        ``timeout_ms`` has passed (return ``False``)."""
        clock = self.worker.clock
        end = last_moved = clock.now_ms()
        end += timeout_ms
        while not done():
            now = clock.now_ms()
            if now >= end or now - last_moved >= quiet_ms:
                return False
            clock.advance(self.tick_ms)
            if self.worker.step():
                last_moved = clock.now_ms()
        return True

    def restart(self) -> None:
        """A graceful restart of the connector and its tasks: final commits, then ``stop``, then start again."""
        self.worker.restart_connector(self.name)

    def restart_task(self, task: int = 0) -> None:
        if task < len(self.worker.worker.task_ids(self.name)):
            self.worker.restart_task(self.name, task)

    def crash_tasks(self) -> None:
        """The tasks die without their final commit (their graceful timeout ran out) and are started again."""
        for task_id in self.worker.worker.task_ids(self.name):
            self.worker.worker.tasks[task_id].cancel()
        self.worker.restart_connector(self.name)

    def crash_worker(self) -> None:
        """The worker process dies: nothing is committed, closed or stopped. A new worker on the same broker, offset
        store and clock takes the connector over; the dead one's group members are expelled (session timeout)."""
        broker = self.memory_broker
        dead, self.crashes = self.worker, self.crashes + 1
        self.dead.append(dead)
        for member in broker.group_members(self.group):
            broker.expel_member(self.group, member)
        self.worker = self._new_worker(broker=broker, offset_store=dead.offset_store, clock=dead.clock)
        self.start()

    def rebalance(self) -> None:
        """Sinks: every member of the group loses its partitions (as on a session timeout) and rejoins; on a real
        broker each task is restarted instead, so its consumer leaves the group and its partitions are revoked.
        Sources: the tasks are stopped and started again, as when a rebalance moves them to another worker."""
        if self.sink and isinstance(self.worker.broker, MemoryBroker):
            broker = self.worker.broker
            for member in broker.group_members(self.group):
                broker.expel_member(self.group, member)
        elif self.sink:
            for n in range(len(self.worker.worker.task_ids(self.name))):
                self.worker.restart_task(self.name, n)
        else:
            self.start()

    # ---- failures --------------------------------------------------------------------------------------------

    def fail_commits(self, n: int) -> None:
        """The next ``n`` offset commits fail (the offset store for a source, the group coordinator for a sink)."""
        if self.sink:
            self.memory_broker.fail_next_commits(self.group, n)
        else:
            self.worker.offset_store.fail_next_sets(n)

    def fail_sends(self, n: int) -> None:
        """The next ``n`` sends of any producer raise a retriable error."""
        self.memory_broker.fail_next_sends(n, retriable=True)

    def fail_puts(self, n: int) -> None:
        """The sink's next ``n`` non-empty ``put`` calls raise a retriable error before the task sees them."""
        self.tap.fail_next_puts(n)

    def hold_acks(self) -> None:
        """Slow acknowledgements: the broker stores records but holds every ack until :meth:`release_acks`."""
        self.memory_broker.hold_acks()

    def release_acks(self) -> None:
        self.memory_broker.release_acks()

    def heal(self) -> None:
        """End every fault: acks released, no pending failures, failed tasks (or connector) restarted."""
        if isinstance(self.worker.broker, MemoryBroker):
            broker = self.worker.broker
            broker.release_acks()
            broker.fail_next_sends(0)
            broker.fail_next_deliveries(0)
            broker.fail_next_commits(self.group, 0)
            self.worker.offset_store.fail_next_sets(0)
        self.tap.fail_next_puts(0)
        herder = self.worker.herder
        failed = herder.connector_state(self.name) is State.FAILED or any(
            herder.task_state(task_id) is State.FAILED for task_id in _task_ids(self)
        )
        if failed or not self.worker.worker.task_ids(self.name):
            self.restart()

    def close(self) -> None:
        """Close the worker; then reap the crashed ones, whose tasks' ``stop`` releases what they hold (files,
        connections) as the end of a process would, and commits nothing."""
        self.worker.close()
        for dead in self.dead:
            for task in dead.worker.tasks.values():
                task.cancel()
            dead.close()

    def __repr__(self) -> str:
        kind = "sink" if self.sink else "source"
        return f"ConnectorDriver({self.name!r}, {kind}, crashes={self.crashes}, {self.tap!r}, {self.worker!r})"


def _task_ids(driver: ConnectorDriver) -> list[TaskId]:
    """Every task the connector should have now, running or not."""
    return [TaskId(driver.name, n) for n in range(len(driver.worker.herder.task_configs.get(driver.name, [])))]


def _is_sink(connector: type[Connector] | str) -> bool:
    return issubclass(resolve_connector_class(connector), SinkConnector)
