"""Commit edge cases of both loops: outstanding and stale sink commits, cancellation, failures in poll."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from headwater.harness import MonitorableSinkConnector, MonitorableSourceConnector, RuntimeHandles, SimulatedWorker
from headwater.runtime.tasks.base import State
from headwater.sdk import SourceRecord, SourceTask, TopicPartition

Make = Callable[..., SimulatedWorker]
TP0 = TopicPartition("in", 0)


def test_outstanding_commit_times_out_and_its_late_callback_is_ignored(
    make_simulated_worker: Make, runtime_handles: RuntimeHandles
) -> None:
    worker = make_simulated_worker({"offset.flush.interval.ms": 1000, "offset.flush.timeout.ms": 3000})
    worker.produce("in", {"n": 0})
    worker.add_connector("snk", MonitorableSinkConnector, {"topics": "in"})
    task = worker.sink_task("snk")
    swallowed: list[Callable[..., None]] = []
    real_commit = task.consumer.commit

    def commit_without_answer(offsets: Mapping[TopicPartition, int], asynchronous: bool, on_complete: Any = None):
        if asynchronous:
            swallowed.append(lambda: on_complete(None, offsets))
            return None
        return real_commit(offsets, asynchronous, on_complete)

    task.consumer.commit = commit_without_answer  # type: ignore[method-assign]
    worker.advance(1000)
    assert len(swallowed) == 1
    worker.produce("in", {"n": 1})
    worker.advance(2990)
    assert len(swallowed) == 1, "no new commit while one is outstanding and not timed out"
    assert task.commit_failures == 0
    worker.advance(10)
    assert task.commit_failures == 1, "the outstanding commit timed out"
    worker.advance(10)
    assert len(swallowed) == 2, "a new commit starts once the old one timed out"
    swallowed[0]()
    assert task.last_committed[TP0] == 0, "the first commit's late answer is stale and ignored"
    swallowed[1]()
    assert task.last_committed[TP0] == 2


def test_cancelled_sink_still_runs_pre_commit_and_close_but_does_not_commit(
    make_simulated_worker: Make, runtime_handles: RuntimeHandles
) -> None:
    worker = make_simulated_worker({"offset.flush.interval.ms": 60_000})
    worker.produce("in", {"n": 0})
    worker.add_connector("snk", MonitorableSinkConnector, {"topics": "in"})
    worker.advance(50)
    worker.sink_task("snk").cancel()
    worker.stop_connector("snk")
    names = runtime_handles.task("snk").names()
    assert names[-4:] == ["pre_commit", "flush", "close", "stop"]
    assert worker.group_offsets("snk") == {}


def test_cancelled_source_skips_its_final_commit(make_simulated_worker: Make) -> None:
    worker = make_simulated_worker({"offset.flush.interval.ms": 60_000})
    worker.add_connector("src", MonitorableSourceConnector, {"topic": "t", "max.messages": 2})
    worker.advance(50)
    worker.source_task("src").cancel()
    worker.stop_connector("src")
    assert worker.source_offset("src", {"task.id": "src-0"}) is None


class BrokenPollTask(SourceTask):
    def start(self, config: Any) -> None:
        pass

    def poll(self) -> list[SourceRecord]:
        raise ValueError("the source table is gone")


class BrokenPollConnector(MonitorableSourceConnector):
    def task_class(self) -> type[SourceTask]:
        return BrokenPollTask


def test_non_retriable_error_from_poll_fails_the_task_with_its_trace(make_simulated_worker: Make) -> None:
    worker = make_simulated_worker()
    worker.add_connector("broken", BrokenPollConnector, {"topic": "t"})
    worker.step()
    assert worker.task_state("broken") is State.FAILED
    state, trace = worker.herder.statuses[("broken", 0)]
    assert state is State.FAILED
    assert trace is not None and "the source table is gone" in trace
    assert worker.source_task("broken").stop_delivered is False, "a failed task is closed at once"
