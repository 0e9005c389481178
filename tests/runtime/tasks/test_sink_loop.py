"""The sink task loop on the simulated worker: pre_commit, request_commit, rebalances, pause, redelivery.

Kafka Connect's ``WorkerSinkTaskTest`` and ``WorkerSinkTaskThreadedTest`` checks, as black-box checks on the virtual
clock.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import pytest

from headwater.harness import MonitorableSinkConnector, RuntimeHandles, SimulatedWorker
from headwater.runtime.tasks.base import State
from headwater.sdk import IllegalWorkerStateError, RetriableError, TopicPartition

Make = Callable[..., SimulatedWorker]
TP0 = TopicPartition("in", 0)
TP1 = TopicPartition("in", 1)
CONFIG = {"offset.flush.interval.ms": 1000}


def sink(worker: SimulatedWorker, **props: Any) -> None:
    worker.add_connector("snk", MonitorableSinkConnector, {"topics": "in", **props})


def fill(worker: SimulatedWorker, count: int, partition: int = 0, start: int = 0) -> None:
    for i in range(start, start + count):
        worker.produce("in", {"n": i}, partition=partition)


def delivered(handles: RuntimeHandles, task: int = 0) -> list[int]:
    return [r.value["n"] for r in handles.task("snk", task).records]


def test_default_pre_commit_flushes_then_commits_everything(
    make_simulated_worker: Make, runtime_handles: RuntimeHandles
) -> None:
    worker = make_simulated_worker(CONFIG)
    fill(worker, 10)
    sink(worker)
    worker.advance(990)
    assert worker.group_offsets("snk") == {}
    worker.advance(20)
    assert ("flush", {TP0: 10}) in runtime_handles.task("snk").events
    worker.assert_group_offset("snk", TP0, 10)
    names = runtime_handles.task("snk").names()
    assert names.index("pre_commit") < names.index("flush") < names.index("committed")


def test_empty_pre_commit_result_commits_nothing(make_simulated_worker: Make, runtime_handles: RuntimeHandles) -> None:
    worker = make_simulated_worker(CONFIG)
    runtime_handles.task("snk").pre_commit = lambda offsets: {}
    fill(worker, 10)
    sink(worker)
    worker.advance(5000)
    assert runtime_handles.task("snk").names().count("pre_commit") >= 5
    assert worker.group_offsets("snk") == {}
    assert worker.broker.commit_count("connect-snk") == 0


def test_lower_offset_is_committed_and_the_rest_redelivered_after_restart(
    make_simulated_worker: Make, runtime_handles: RuntimeHandles
) -> None:
    worker = make_simulated_worker(CONFIG)
    runtime_handles.task("snk").pre_commit = lambda offsets: {TP0: 5}
    fill(worker, 10)
    sink(worker)
    worker.advance(1000)
    worker.assert_group_offset("snk", TP0, 5)
    runtime_handles.task("snk").records.clear()
    worker.restart_connector("snk")
    runtime_handles.task("snk").pre_commit = None
    worker.advance(100)
    assert delivered(runtime_handles) == [5, 6, 7, 8, 9]


def test_offset_above_what_was_consumed_is_ignored(
    make_simulated_worker: Make, runtime_handles: RuntimeHandles
) -> None:
    worker = make_simulated_worker(CONFIG)
    fill(worker, 4)
    sink(worker)
    worker.advance(1000)
    worker.assert_group_offset("snk", TP0, 4)
    runtime_handles.task("snk").pre_commit = lambda offsets: {TP0: 999}
    fill(worker, 2, start=4)
    worker.advance(1000)
    worker.assert_group_offset("snk", TP0, 4)


def test_offset_for_an_unassigned_partition_is_ignored(
    make_simulated_worker: Make, runtime_handles: RuntimeHandles
) -> None:
    worker = make_simulated_worker(CONFIG)
    runtime_handles.task("snk").pre_commit = lambda offsets: {**offsets, TopicPartition("other", 0): 3}
    fill(worker, 4)
    sink(worker)
    worker.advance(1000)
    assert worker.group_offsets("snk") == {TP0: 4}


def test_failing_pre_commit_rewinds_to_the_last_committed_offsets(
    make_simulated_worker: Make, runtime_handles: RuntimeHandles
) -> None:
    worker = make_simulated_worker(CONFIG)
    handle = runtime_handles.task("snk")
    fill(worker, 3)
    sink(worker)
    worker.advance(1000)
    worker.assert_group_offset("snk", TP0, 3)
    fill(worker, 3, start=3)

    def boom(offsets: Mapping[TopicPartition, int]) -> None:
        raise RuntimeError("cannot flush")

    handle.pre_commit = boom
    worker.advance(1000)
    handle.pre_commit = None
    worker.advance(100)
    assert delivered(runtime_handles) == [0, 1, 2, 3, 4, 5, 3, 4, 5]
    assert worker.task_state("snk") is State.RUNNING


def test_request_commit_commits_at_the_next_pass_and_restarts_the_timer(
    make_simulated_worker: Make, runtime_handles: RuntimeHandles
) -> None:
    worker = make_simulated_worker({"offset.flush.interval.ms": 10_000}, tick_ms=10)
    handle = runtime_handles.task("snk")
    sink(worker)
    worker.advance(3000)
    handle.request_commit_after_put = True
    fill(worker, 1)
    worker.step()
    assert worker.group_offsets("snk") == {}, "the request is served at the next pass"
    worker.advance(10)
    worker.assert_group_offset("snk", TP0, 1)
    committed_at = worker.clock.now_ms()
    handle.request_commit_after_put = False
    fill(worker, 1, start=1)
    worker.run_until(lambda: worker.group_offsets("snk").get(TP0) == 2, timeout_ms=20_000)
    assert worker.clock.now_ms() == committed_at + 10_000, "the next periodic commit is a full interval later"


def test_revoked_partitions_see_pre_commit_close_commit_and_kept_ones_nothing(
    make_simulated_worker: Make, runtime_handles: RuntimeHandles
) -> None:
    first = make_simulated_worker(CONFIG, partitions=2)
    for p in (0, 1):
        fill(first, 3, partition=p, start=10 * p)
    sink(first)
    first.advance(100)
    assert first.sink_task("snk").consumer.assignment() == {TP0, TP1}
    second = make_simulated_worker(CONFIG, broker=first.broker, clock=first.clock)
    second.add_connector("snk", MonitorableSinkConnector, {"topics": "in"})
    runtime_handles.task("snk").events.clear()
    for _ in range(3):
        first.step()
        second.step()
    kept = first.sink_task("snk").consumer.assignment()
    (moved,) = {TP0, TP1} - kept
    events = runtime_handles.task("snk").events
    assert [e for e, _ in events if e in ("pre_commit", "close", "committed")] == ["pre_commit", "close", "committed"]
    assert events[[e for e, _ in events].index("pre_commit")][1] == {moved: 3}
    assert ("close", [moved]) in events
    assert first.broker.committed("connect-snk")[moved] == 3
    assert not any(e == "close" and kept_tp in d for e, d in events for kept_tp in kept)


def test_lost_partitions_are_closed_without_pre_commit_or_commit(
    make_simulated_worker: Make, runtime_handles: RuntimeHandles
) -> None:
    worker = make_simulated_worker(CONFIG)
    fill(worker, 3)
    sink(worker)
    worker.advance(100)
    handle = runtime_handles.task("snk")
    handle.events.clear()
    commits = worker.broker.commit_count("connect-snk")
    worker.broker.expel_member("connect-snk", worker.sink_task("snk").consumer.member_id)
    worker.step()
    assert handle.names()[:1] == ["close"]
    assert "pre_commit" not in handle.names()
    assert worker.broker.commit_count("connect-snk") == commits


def test_shutdown_runs_pre_commit_close_commit_then_stop(
    make_simulated_worker: Make, runtime_handles: RuntimeHandles
) -> None:
    worker = make_simulated_worker(CONFIG)
    fill(worker, 3)
    sink(worker)
    worker.advance(100)
    worker.stop_connector("snk")
    tail = [e for e in runtime_handles.task("snk").names() if e != "put"][-5:]
    assert tail == ["pre_commit", "flush", "close", "committed", "stop"]
    assert ("stop", False) in runtime_handles.task("snk").events
    worker.assert_group_offset("snk", TP0, 3)


def test_pausing_triggers_a_commit(make_simulated_worker: Make, runtime_handles: RuntimeHandles) -> None:
    worker = make_simulated_worker({"offset.flush.interval.ms": 60_000})
    fill(worker, 3)
    sink(worker)
    worker.advance(100)
    assert worker.group_offsets("snk") == {}
    worker.pause("snk")
    worker.advance(20)
    worker.assert_group_offset("snk", TP0, 3)
    fill(worker, 2, start=3)
    worker.advance(1000)
    assert delivered(runtime_handles) == [0, 1, 2], "a paused task gets no records"
    worker.resume("snk")
    worker.advance(20)
    assert delivered(runtime_handles) == [0, 1, 2, 3, 4]


def test_retriable_put_error_redelivers_the_same_batch(
    make_simulated_worker: Make, runtime_handles: RuntimeHandles
) -> None:
    worker = make_simulated_worker(CONFIG)
    handle = runtime_handles.task("snk")
    handle.put_error = RetriableError("downstream busy")
    fill(worker, 3)
    sink(worker)
    worker.step()
    assert handle.names().count("put_failed") == 1
    fill(worker, 2, start=3)
    worker.step()
    assert next(e for e in handle.events if e[0] == "put")[1] == [("in", 0, 0), ("in", 0, 1), ("in", 0, 2)]
    worker.advance(100)
    assert delivered(runtime_handles) == [0, 1, 2, 3, 4]


def test_non_retriable_put_error_fails_the_task_and_closes_its_partitions(
    make_simulated_worker: Make, runtime_handles: RuntimeHandles
) -> None:
    worker = make_simulated_worker(CONFIG)
    runtime_handles.task("snk").put_error = ValueError("bad row")
    fill(worker, 1)
    sink(worker)
    worker.step()
    assert worker.task_state("snk") is State.FAILED
    assert runtime_handles.task("snk").names()[-2:] == ["close", "stop"]


def test_commit_equal_to_the_last_one_is_skipped(make_simulated_worker: Make) -> None:
    worker = make_simulated_worker(CONFIG)
    fill(worker, 2)
    sink(worker)
    worker.advance(1000)
    commits = worker.broker.commit_count("connect-snk")
    worker.advance(3000)
    assert worker.broker.commit_count("connect-snk") == commits
    assert worker.sink_task("snk").commits_skipped >= 3


def test_failed_consumer_commit_is_retried_at_the_next_interval(make_simulated_worker: Make) -> None:
    worker = make_simulated_worker(CONFIG)
    fill(worker, 2)
    sink(worker)
    worker.broker.fail_next_commits("connect-snk", 1)
    worker.advance(1010)
    assert worker.group_offsets("snk") == {}
    assert worker.sink_task("snk").commit_failures == 1
    worker.advance(1000)
    worker.assert_group_offset("snk", TP0, 2)


def test_rewind_from_open_takes_effect(make_simulated_worker: Make, runtime_handles: RuntimeHandles) -> None:
    worker = make_simulated_worker(CONFIG)
    fill(worker, 6)
    sink(worker)
    worker.step()
    task = worker.sink_task("snk")
    task.context.offset({TP0: 4})
    runtime_handles.task("snk").records.clear()
    worker.advance(30)
    assert delivered(runtime_handles) == [4, 5]
    assert task.current_offsets[TP0] == 6


def test_task_pauses_and_resumes_its_own_partitions(
    make_simulated_worker: Make, runtime_handles: RuntimeHandles
) -> None:
    worker = make_simulated_worker(CONFIG)
    worker.broker.create_topic("in", 2)
    sink(worker)
    worker.step()
    task = worker.sink_task("snk")
    task.context.pause(TP1)
    fill(worker, 2, partition=0)
    fill(worker, 2, partition=1, start=10)
    worker.advance(50)
    assert delivered(runtime_handles) == [0, 1]
    assert task.context.paused() == {TP1}
    task.context.resume(TP1)
    worker.advance(50)
    assert delivered(runtime_handles) == [0, 1, 10, 11]
    with pytest.raises(IllegalWorkerStateError, match="in-7"):
        task.context.pause(TopicPartition("in", 7))


def test_sink_records_the_topics_it_consumed(make_simulated_worker: Make) -> None:
    worker = make_simulated_worker(CONFIG)
    sink(worker, topics="in,quiet")
    fill(worker, 1)
    worker.advance(50)
    assert worker.sink_task("snk").active_topics == {"in"}


def test_conversion_failure_names_topic_partition_and_offset(make_simulated_worker: Make) -> None:
    worker = make_simulated_worker(CONFIG)
    worker.broker.create_topic("in", 1)
    worker.transport.producer({}).produce("in", b"not json")
    sink(worker)
    worker.advance(50)
    assert worker.task_state("snk") is State.FAILED
    assert "topic 'in' partition 0 offset 0" in str(worker.sink_task("snk").failure)


def test_tolerated_conversion_failure_is_skipped_and_its_offset_committed(
    make_simulated_worker: Make, runtime_handles: RuntimeHandles
) -> None:
    worker = make_simulated_worker(CONFIG)
    producer = worker.transport.producer({})
    producer.produce("in", b"not json")
    producer.produce("in", b'{"n": 1}')
    sink(worker, **{"errors.tolerance": "all"})
    worker.advance(1000)
    assert delivered(runtime_handles) == [1]
    worker.assert_group_offset("snk", TP0, 2)


def test_bytes_converters_hand_over_the_consumed_records(
    make_simulated_worker: Make, runtime_handles: RuntimeHandles
) -> None:
    worker = make_simulated_worker(CONFIG)
    worker.produce("in", b"raw", key=b"k")
    sink(worker, **{"key.converter": "bytes", "value.converter": "bytes"})
    worker.advance(20)
    (record,) = runtime_handles.task("snk").records
    assert (record.key, record.value, record.offset) == (b"k", b"raw", 0)
