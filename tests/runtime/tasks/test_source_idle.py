"""A source task idling through ``SourceTaskContext.idle``: on the simulated worker the idle is virtual time (``poll``
is called only as often as the task asked, the passes in between are skipped) while offset commits and heartbeats
(KIP-910) keep their intervals; on a real task thread the idle is a wait that a stop ends at once."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any, ClassVar

import pytest

from headwater.harness import SimulatedCluster, SimulatedWorker
from headwater.runtime.clock import SystemClock
from headwater.runtime.herder import StandaloneHerder
from headwater.runtime.storage.offsets import MemoryOffsetStore
from headwater.runtime.tasks.base import State
from headwater.runtime.tasks.exactly_once_source import ExactlyOnceWorkerSourceTask
from headwater.runtime.tasks.source import WorkerSourceTask
from headwater.runtime.transport.memory import MemoryBroker, MemoryTransport
from headwater.runtime.worker import Worker
from headwater.sdk import SourceConnector, SourceRecord, SourceTask, hookimpl
from support.connectors import ALLOWED_MODULES
from support.rest_worker import wait_until

Make = Callable[..., SimulatedWorker]
PARTITION = {"source": "idle"}
TEN_MINUTES_MS = 600_000


class IdleTask(SourceTask):
    """Returns one record on its first poll, then nothing, idling ``idle.ms`` before each empty return; its
    heartbeats carry the number of polls so far as their offset."""

    polls: ClassVar[list[int]] = []
    """The clock time of every poll."""
    polled = threading.Event()

    def start(self, config: Any) -> None:
        self.idle_ms = int(config["idle.ms"])

    def poll(self) -> list[SourceRecord] | None:
        IdleTask.polls.append(self.context.clock.now_ms())
        IdleTask.polled.set()
        if len(IdleTask.polls) == 1:
            return [SourceRecord(PARTITION, {"polls": 1}, "data", {"n": 1})]
        self.context.idle(self.idle_ms)
        return None

    @hookimpl
    def produce_heartbeat_records(self, topic: str) -> list[SourceRecord]:
        offset = {"polls": len(IdleTask.polls)}
        return [SourceRecord(PARTITION, offset, topic, offset, key=PARTITION)]

    def stop(self) -> None:
        pass


class IdleSource(SourceConnector):
    def start(self, config: Any) -> None:
        self.config = dict(config)

    def task_class(self) -> type[SourceTask]:
        return IdleTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [self.config]

    def stop(self) -> None:
        pass


@pytest.fixture(autouse=True)
def fresh_task() -> Iterator[None]:
    IdleTask.polls = []
    IdleTask.polled.clear()
    yield


def idling(worker: SimulatedWorker, idle_ms: int) -> WorkerSourceTask:
    """Start the idling source; return its task once its first idle has begun."""
    worker.add_connector("idle", IdleSource, {"idle.ms": idle_ms})
    worker.run_until(lambda: len(IdleTask.polls) == 2, what="the first empty poll")
    return worker.source_task("idle")


INTERVALS = {"offset.flush.interval.ms": 10_000, "heartbeat.interval.ms": 5_000}


def test_ten_virtual_minutes_of_idling_poll_once_a_second_while_commits_and_heartbeats_go_on(
    make_simulated_worker: Make,
) -> None:
    worker = make_simulated_worker(INTERVALS)
    task = idling(worker, 1000)
    start, commits = IdleTask.polls[-1], task.commits
    passes: list[int] = []
    worker.before_step.append(lambda: passes.append(worker.clock.now_ms()))
    worker.advance(TEN_MINUTES_MS)
    assert len(passes) <= 600 + 60 + 2 * 120 + 1, (
        f"{len(passes)} passes: the passes between polls, commits and heartbeats (and their acks) are skipped"
    )
    polls = [at - start for at in IdleTask.polls[2:]]
    assert len(polls) == 600, f"one poll per idle second, not one per {worker.tick_ms} ms tick: {len(polls)} polls"
    assert polls == list(range(1000, TEN_MINUTES_MS + 1, 1000)), "each poll comes right as its idle ends"
    assert task.commits - commits == 60, "an offset commit every offset.flush.interval.ms while idling"
    heartbeats = [m for m in worker.messages("connect-heartbeats") if m.timestamp > start]
    assert len(heartbeats) == TEN_MINUTES_MS // 5_000, "a heartbeat every heartbeat.interval.ms while idling"
    committed = worker.source_offset("idle", PARTITION)
    assert committed is not None and committed["polls"] >= len(IdleTask.polls) - 10, (
        f"the committed offset {committed} is a heartbeat's of the last flush interval (10 idle seconds)"
    )


def test_skipping_the_idle_passes_changes_nothing_the_passes_would_have_done(make_simulated_worker: Make) -> None:
    """The same run, once advanced (idle passes skipped) and once stepped tick by tick: the same polls, heartbeats
    and committed offsets at the same virtual times."""
    seen = []
    for skipping in (True, False):
        IdleTask.polls = []
        worker = make_simulated_worker({"offset.flush.interval.ms": 3_000, "heartbeat.interval.ms": 700})
        task = idling(worker, 450)
        if skipping:
            worker.advance(20_000)
        else:
            for _ in range(20_000 // worker.tick_ms):
                worker.clock.advance(worker.tick_ms)
                worker.step()
        polls = [at - IdleTask.polls[0] for at in IdleTask.polls]
        heartbeats = [m.timestamp - IdleTask.polls[0] for m in worker.messages("connect-heartbeats")]
        seen.append((polls, heartbeats, task.commits, worker.source_offset("idle", PARTITION)))
        worker.close()
    assert seen[0] == seen[1]
    assert len(seen[0][0]) == 2 + 20_000 // 450, "the first polls, then one every 450 ms"


def test_a_task_that_stops_idling_is_polled_every_pass_again(make_simulated_worker: Make) -> None:
    worker = make_simulated_worker()
    idling(worker, 0)
    before = len(IdleTask.polls)
    worker.advance(100 * worker.tick_ms)
    assert len(IdleTask.polls) - before == 100, "idle(0) asks for no wait: a poll every pass"


def test_a_negative_idle_is_refused(make_simulated_worker: Make) -> None:
    worker = make_simulated_worker()
    task = idling(worker, 10)
    with pytest.raises(ValueError, match="cannot idle for -1 ms"):
        task.context.idle(-1)


def test_a_task_thread_idling_waits_for_heartbeats_only_and_a_stop_ends_its_idle_at_once() -> None:
    """On a real worker thread: while the task idles for a minute, the thread wakes for each heartbeat (every 50 ms)
    and not every few milliseconds; a stop then ends the idle at once, well before the minute is over."""
    clock = SystemClock()
    worker = Worker(
        {"key.converter": "json", "value.converter": "json", "heartbeat.interval.ms": 50, **ALLOWED_MODULES},
        MemoryTransport(MemoryBroker()),
        MemoryOffsetStore(),
        clock=clock,
        threaded=True,
    )
    herder = StandaloneHerder(worker)
    try:
        herder.put_connector_config("idle", {"connector.class": f"{__name__}:IdleSource", "idle.ms": 60_000})
        wait_until(lambda: len(IdleTask.polls) >= 2, "the task's second poll, which starts its idle")
        task = worker.tasks[next(iter(worker.tasks))]
        assert isinstance(task, WorkerSourceTask)
        passes = 0
        iteration = task.iteration

        def counted() -> bool:
            nonlocal passes
            passes += 1
            return iteration()

        task.iteration = counted  # type: ignore[method-assign]
        heartbeats = task.heartbeat_calls
        wait_until(lambda: task.heartbeat_calls >= heartbeats + 5, "five heartbeats while the task idles")
        assert passes <= 2 * (task.heartbeat_calls - heartbeats) + 2, (
            f"{passes} passes for {task.heartbeat_calls - heartbeats} heartbeats (a pass to send each, one to "
            "serve its ack): the idling thread spins"
        )
        herder.delete_connector("idle")
        assert clock.now_ms() < task.context.idle_until - 30_000, "the stop came while the idle had long to run"
        assert worker.cancelled == [], "the idling task did not stop within its graceful timeout"
        assert task.state is State.STOPPED and task.stop_delivered is True
        assert len(IdleTask.polls) == 2, "no poll during the idle"
    finally:
        worker.stop()


def test_an_exactly_once_task_idles_too_and_commits_its_heartbeats_transactions_meanwhile() -> None:
    cluster = SimulatedCluster(
        1, {"exactly.once.source.support": "enabled", "offset.flush.interval.ms": 1000, "heartbeat.interval.ms": 500}
    )
    config = {"connector.class": f"{__name__}:IdleSource", "idle.ms": 1000, "tasks.max": 1}
    cluster.live[0].herder.put_connector_config("idle", config)
    cluster.run_until(lambda: len(IdleTask.polls) == 2, what="the first empty poll")
    (task,) = cluster.live[0].worker.tasks.values()
    assert isinstance(task, ExactlyOnceWorkerSourceTask)
    start, commits = IdleTask.polls[-1], task.commits
    cluster.advance(5_000)
    assert [at - start for at in IdleTask.polls[2:]] == list(range(1000, 5_001, 1000))
    assert task.commits - commits >= 4, "the heartbeats' transactions commit while the task idles"
    assert len(cluster.broker.messages("connect-heartbeats", committed_only=True)) >= 9
    cluster.live[0].herder.stop()
