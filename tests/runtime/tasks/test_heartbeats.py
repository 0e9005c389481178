"""Source heartbeats (KIP-910), on the virtual clock: none at interval 0, one per interval while running and none
while paused, committed at the next flush, never past an unacknowledged predecessor of their partition, the
connector's topic and interval over the worker's, and the timer rules."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from headwater.harness import MonitorableSourceConnector, RuntimeHandles, SimulatedWorker
from headwater.sdk import SourceRecord, SourceTask

Make = Callable[..., SimulatedWorker]
P0 = {"task.id": "src-0"}


def idle_source(worker: SimulatedWorker, **props: Any) -> None:
    """A source that has no data: records only come from the handle's pending list."""
    worker.add_connector("src", MonitorableSourceConnector, {"topic": "data", "messages.per.poll": 0, **props})


def heartbeat_times(worker: SimulatedWorker, topic: str = "connect-heartbeats") -> list[int]:
    return [m.timestamp for m in worker.messages(topic)]


def test_interval_zero_sends_no_heartbeats(make_simulated_worker: Make, runtime_handles: RuntimeHandles) -> None:
    worker = make_simulated_worker({"heartbeat.interval.ms": 0})
    idle_source(worker)
    worker.advance(10_000)
    assert "connect-heartbeats" not in worker.broker.topics()
    assert "heartbeat" not in runtime_handles.task("src").names()


def test_heartbeats_arrive_every_interval_while_running_and_never_while_paused(
    make_simulated_worker: Make,
) -> None:
    worker = make_simulated_worker({"heartbeat.interval.ms": 1000}, tick_ms=10)
    idle_source(worker)
    start = worker.clock.now_ms()
    worker.advance(3000)
    assert [t - start for t in heartbeat_times(worker)] == [1000, 2000, 3000]
    worker.pause("src")
    worker.advance(5000)
    assert len(heartbeat_times(worker)) == 3, "no heartbeat while paused"
    worker.resume("src")
    worker.advance(1010)
    assert [t - start for t in heartbeat_times(worker)][3:] == [8010, 9010], (
        "the overdue heartbeat fires at the first pass after resume, the next one an interval later"
    )


def test_heartbeat_offset_is_committed_at_the_next_flush(
    make_simulated_worker: Make, runtime_handles: RuntimeHandles
) -> None:
    worker = make_simulated_worker({"heartbeat.interval.ms": 1000, "offset.flush.interval.ms": 5000})
    idle_source(worker)
    runtime_handles.task("src").log_position = 41
    worker.advance(1000)
    assert worker.values("connect-heartbeats") == [{"heartbeat": "src-0", "position": 41}]
    assert worker.source_offset("src", P0) is None, "committed at the flush interval, not at once"
    worker.advance(4000)
    worker.assert_source_offset("src", P0, {"saved": 41})
    runtime_handles.task("src").log_position = 99
    worker.advance(5000)
    worker.assert_source_offset("src", P0, {"saved": 99})


def test_heartbeat_waits_for_unacknowledged_predecessor_of_its_partition(
    make_simulated_worker: Make, runtime_handles: RuntimeHandles
) -> None:
    worker = make_simulated_worker({"heartbeat.interval.ms": 1000, "offset.flush.interval.ms": 1000})
    idle_source(worker)
    handle = runtime_handles.task("src")
    worker.broker.hold_acks("data")
    handle.pending.append("slow")
    worker.advance(100)
    handle.log_position = 50
    worker.advance(1900)
    assert len(worker.messages("connect-heartbeats")) == 2
    assert worker.source_offset("src", P0) is None, "the heartbeat must not overtake the unacked data record"
    worker.broker.release_acks("data")
    worker.advance(1000)
    worker.assert_source_offset("src", P0, {"saved": 50})


def test_connector_overrides_heartbeat_topic_and_interval(make_simulated_worker: Make) -> None:
    worker = make_simulated_worker({"heartbeat.interval.ms": 1000, "heartbeat.records.topic": "worker-beats"})
    idle_source(worker, **{"heartbeat.records.topic": "src-beats", "heartbeat.interval.ms": 250})
    worker.advance(1000)
    assert "worker-beats" not in worker.broker.topics()
    assert len(worker.messages("src-beats")) == 4


def test_worker_heartbeat_topic_is_the_default(make_simulated_worker: Make) -> None:
    worker = make_simulated_worker({"heartbeat.interval.ms": 500, "heartbeat.records.topic": "worker-beats"})
    idle_source(worker)
    worker.advance(1000)
    assert len(worker.messages("worker-beats")) == 2


def test_heartbeat_is_checked_before_poll(make_simulated_worker: Make, runtime_handles: RuntimeHandles) -> None:
    worker = make_simulated_worker({"heartbeat.interval.ms": 1000})
    worker.add_connector("src", MonitorableSourceConnector, {"topic": "data"})
    worker.advance(1000)
    names = runtime_handles.task("src").names()
    at_interval = names.index("heartbeat")
    assert names[at_interval - 1] == "poll" and names[at_interval + 1] == "poll"
    calls = [h for h, who, _ in worker.hook_calls if who == "src-0" and h == "produce_heartbeat_records"]
    assert len(calls) == 1


class SilentTask(SourceTask):
    """Implements no heartbeat hook: the built-in default returns no records."""

    def start(self, config: Any) -> None:
        pass

    def poll(self) -> list[SourceRecord]:
        return []


class SilentConnector(MonitorableSourceConnector):
    def task_class(self) -> type[SourceTask]:
        return SilentTask


def test_default_hook_sends_nothing_but_the_timer_still_runs(make_simulated_worker: Make) -> None:
    worker = make_simulated_worker({"heartbeat.interval.ms": 1000})
    worker.add_connector("quiet", SilentConnector, {"topic": "data"})
    worker.advance(3500)
    assert worker.messages("connect-heartbeats") == []
    calls = [h for h, who, _ in worker.hook_calls if h == "produce_heartbeat_records"]
    assert len(calls) == 3
    assert worker.source_task("quiet").heartbeat_calls == 3


def test_heartbeat_topic_is_an_active_topic(make_simulated_worker: Make) -> None:
    worker = make_simulated_worker({"heartbeat.interval.ms": 100})
    idle_source(worker)
    worker.advance(200)
    assert worker.source_task("src").active_topics == {"connect-heartbeats"}
