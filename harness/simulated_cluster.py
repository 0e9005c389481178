"""Distributed mode on the simulated worker: several distributed workers of one cluster in one process, over the
in-memory broker and one virtual clock.

Each :class:`ClusterWorker` is what ``headwater distributed`` runs, minus the REST server and the broker check: a
:class:`~headwater.runtime.worker.Worker` in stepped mode, its config, offsets and status stores on the cluster's
internal topics, and a :class:`~headwater.runtime.distributed.herder.DistributedHerder` whose slot groups are the
in-memory broker's consumer groups. Nothing runs unless the cluster is stepped: every pass ticks each live worker's
herder (configs, restarts, rebalances) and runs its task loops once, then moves the clock. So joins, graceful
leaves, crashes and task moves happen in an order a test decides, and a run takes the same course every time.

A crash stops a worker where it is: no task stops, nothing is committed or handed over. The group coordinator
notices once ``session.timeout.ms`` of virtual time has passed without the worker (the in-memory group has no
clock of its own), and hands the worker's slots and sink partitions to the others. A worker can also die in the
middle of its pass: :class:`WorkerDied`, raised by anything the worker calls (a transport given to the cluster,
say), stops it at that very call, and the cluster crashes it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from headwater.harness.simulated import SIMULATED_DEFAULTS
from headwater.runtime.clock import VirtualClock
from headwater.runtime.distributed.cluster_configs import ClusterConfigStore
from headwater.runtime.distributed.herder import DistributedHerder
from headwater.runtime.storage.kafka_offsets import KafkaOffsetStore
from headwater.runtime.storage.kafka_status import KafkaStatusStore
from headwater.runtime.tasks.base import TaskId
from headwater.runtime.tasks.sink import WorkerSinkTask
from headwater.runtime.transport.base import Transport
from headwater.runtime.transport.memory import MemoryBroker, MemoryConsumer, MemoryGroupMember, MemoryTransport
from headwater.runtime.worker import Worker

CONFIG_TOPIC, OFFSETS_TOPIC, STATUS_TOPIC = "connect-configs", "connect-offsets", "connect-status"
GROUP_ID = "connect-cluster"

TransportFactory = Callable[[str, MemoryBroker], Transport]
"""Makes the transport of a worker, given its name and the cluster's broker."""


class WorkerDied(BaseException):
    """The worker's process dies at the call that raises this, in the middle of its pass: nothing after that call
    runs (a ``BaseException``, so that no ``except Exception`` of the runtime takes it for a failure it handles).
    :meth:`SimulatedCluster.step` crashes the worker."""


class ClusterWorker:
    """One worker of a :class:`SimulatedCluster`; its :attr:`herder` answers what the REST API would."""

    def __init__(
        self,
        name: str,
        broker: MemoryBroker,
        clock: VirtualClock,
        config: Mapping[str, Any],
        transport: Transport | None = None,
    ) -> None:
        self.name = name
        self.transport = transport or MemoryTransport(broker)
        self.config_store = ClusterConfigStore(self.transport, CONFIG_TOPIC)
        self.offset_store = KafkaOffsetStore(self.transport, OFFSETS_TOPIC, partitions=5)
        self.status_store = KafkaStatusStore(self.transport, STATUS_TOPIC, partitions=2)
        self.worker = Worker(
            {**SIMULATED_DEFAULTS, **config},
            self.transport,
            self.offset_store,
            clock=clock,
            threaded=False,
            group_id=GROUP_ID,
        )
        self.worker.worker_id = name
        self.herder = DistributedHerder(
            self.worker,
            self.config_store,
            self.status_store,
            self.offset_store,
            GROUP_ID,
            {},
            f"{CONFIG_TOPIC}.slots",
        )
        self.alive = True
        """False once the worker crashed or left."""
        for store in (self.offset_store, self.config_store, self.status_store):
            store.start()

    def step(self) -> None:
        """One pass of the worker's loop, then one pass of its task loops."""
        self.herder.tick(timeout_s=0)
        self.worker.step()

    def tasks(self) -> list[TaskId]:
        """The tasks this worker runs (a crashed worker's are stopped nowhere: they count as not running)."""
        return sorted(self.worker.tasks) if self.alive else []

    def members(self) -> list[tuple[str, str]]:
        """(group, member id) of every group membership of this worker: its slot groups and its sink tasks'."""
        found: list[tuple[str, str]] = []
        for group in (self.herder.connector_group, self.herder.task_group):
            member = group.member
            if isinstance(member, MemoryGroupMember) and member.member_id is not None:
                found.append((member.group_id, member.member_id))
        for task in self.worker.tasks.values():
            consumer = task.consumer if isinstance(task, WorkerSinkTask) else None
            if isinstance(consumer, MemoryConsumer) and consumer.group_id and consumer.member_id:
                found.append((consumer.group_id, consumer.member_id))
        return found

    def __repr__(self) -> str:
        state = "alive" if self.alive else "gone"
        return f"ClusterWorker({self.name}, {state}, tasks={[str(id) for id in self.tasks()]})"


class SimulatedCluster:
    """Distributed workers sharing one in-memory broker and one virtual clock. ``config`` is every worker's config
    (worker keys, as in a worker file); ``session_timeout_ms`` is how long the group coordinator waits before it
    takes a crashed worker's slots; ``transport`` makes each worker's transport (by default the broker's own)."""

    def __init__(
        self,
        workers: int = 0,
        config: Mapping[str, Any] | None = None,
        *,
        tick_ms: int = 10,
        session_timeout_ms: int = 10_000,
        broker: MemoryBroker | None = None,
        transport: TransportFactory | None = None,
    ) -> None:
        self.broker = broker or MemoryBroker()
        self.make_transport = transport
        self.clock = VirtualClock()
        self.tick_ms = tick_ms
        self.session_timeout_ms = session_timeout_ms
        self.config = dict(config or {})
        self.workers: list[ClusterWorker] = []
        self._timeouts: list[tuple[int, ClusterWorker]] = []
        for _ in range(workers):
            self.join()

    # ---- membership ------------------------------------------------------------------------------------------

    def join(self) -> ClusterWorker:
        """Start one more worker; it joins the groups at its first pass."""
        name = f"worker-{len(self.workers) + 1}"
        transport = None if self.make_transport is None else self.make_transport(name, self.broker)
        worker = ClusterWorker(name, self.broker, self.clock, self.config, transport)
        self.workers.append(worker)
        return worker

    def leave(self, worker: ClusterWorker) -> None:
        """Stop ``worker`` gracefully: it gives up its tasks (committing) and connectors, and leaves the groups."""
        worker.herder.stop()
        worker.alive = False

    def crash(self, worker: ClusterWorker) -> None:
        """Stop ``worker`` where it is (no task stops or commits); its group memberships time out after the session
        timeout of virtual time."""
        worker.alive = False
        self._timeouts.append((self.clock.now_ms() + self.session_timeout_ms, worker))

    @property
    def live(self) -> list[ClusterWorker]:
        return [worker for worker in self.workers if worker.alive]

    # ---- time --------------------------------------------------------------------------------------------------

    def step(self) -> None:
        """One pass of every live worker, then ``tick_ms`` of virtual time. A worker whose pass raises
        :class:`WorkerDied` is crashed there."""
        for worker in self.live:
            try:
                worker.step()
            except WorkerDied:
                self.crash(worker)
        self.clock.advance(self.tick_ms)
        self._expire_sessions()

    def run_until(self, condition: Callable[[], bool], timeout_ms: int = 60_000, what: str = "condition") -> None:
        """Step until ``condition()`` holds; fail with the cluster's state after ``timeout_ms`` of virtual time."""
        end = self.clock.now_ms() + timeout_ms
        while not condition():
            if self.clock.now_ms() >= end:
                raise AssertionError(f"{what} did not hold within {timeout_ms} virtual ms\n{self!r}")
            self.step()

    def advance(self, ms: int) -> None:
        """Step for ``ms`` of virtual time."""
        end = self.clock.now_ms() + ms
        while self.clock.now_ms() < end:
            self.step()

    def _expire_sessions(self) -> None:
        due = [worker for at, worker in self._timeouts if at <= self.clock.now_ms()]
        self._timeouts = [(at, worker) for at, worker in self._timeouts if at > self.clock.now_ms()]
        for worker in due:
            for group, member in worker.members():
                self.broker.expel_member(group, member)

    # ---- reading what happened -------------------------------------------------------------------------------

    def assignment(self) -> dict[str, list[TaskId]]:
        """Live worker -> the tasks it runs."""
        return {worker.name: worker.tasks() for worker in self.live}

    def running(self, connectors: Sequence[str] | None = None) -> list[TaskId]:
        """Every task a live worker runs (of ``connectors``), once per worker running it, sorted."""
        return sorted(
            id for worker in self.live for id in worker.tasks() if connectors is None or id.connector in connectors
        )

    def __repr__(self) -> str:
        workers = ", ".join(repr(worker) for worker in self.workers)
        return f"SimulatedCluster(now_ms={self.clock.now_ms()}, [{workers}])"
