"""The founding proposals' guarantees, each shown twice from the same test code: on the in-memory transport and on a
real Kafka broker (the ``make_worker`` fixture runs every test once per backend; see harness/kafka_worker.py).

Source and heartbeat checks are exact on both backends: a source record is acknowledged before the next pass of
the loop on either. Records reach a sink after real network time on Kafka, so sink checks wait with ``run_until``
and then assert exact offsets.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import pytest

from headwater.harness import MonitorableSinkConnector, MonitorableSourceConnector, RuntimeHandles, SimulatedWorker
from headwater.sdk import TopicPartition

Make = Callable[..., SimulatedWorker]


@pytest.fixture
def names(unique_name: str) -> dict[str, str]:
    """Topic and connector names of this test alone (a real broker is shared by every test of the session)."""
    return {
        "data": f"data-{unique_name}",
        "beats": f"beats-{unique_name}",
        "src": f"src-{unique_name}",
        "snk": f"snk-{unique_name}",
    }


def source(worker: SimulatedWorker, names: Mapping[str, str], **props: Any) -> dict[str, str]:
    """Start the monitorable source; return its source partition."""
    config = {"topic": names["data"], "heartbeat.records.topic": names["beats"], **props}
    worker.add_connector(names["src"], MonitorableSourceConnector, config)
    return {"task.id": f"{names['src']}-0"}


def fill(worker: SimulatedWorker, topic: str, n: int, partitions: int = 1) -> None:
    worker.create_topic(topic, partitions)
    for i in range(n):
        worker.produce(topic, {"n": i}, partition=i % partitions)


# ---- source offsets and heartbeats (KIP-910) ---------------------------------------------------------------------


def test_source_commits_the_acked_offsets_at_the_interval(make_worker: Make, names: dict[str, str]) -> None:
    worker = make_worker({"offset.flush.interval.ms": 1000})
    partition = source(worker, names, **{"max.messages": 5})
    worker.advance(990)
    assert [v["seq"] for v in worker.values(names["data"])] == [0, 1, 2, 3, 4]
    assert worker.source_offset(names["src"], partition) is None, "nothing is committed before the interval"
    worker.advance(10)
    worker.assert_source_offset(names["src"], partition, {"saved": 4})


def test_stopping_a_source_commits_its_last_acked_offset(make_worker: Make, names: dict[str, str]) -> None:
    worker = make_worker({"offset.flush.interval.ms": 60_000})
    partition = source(worker, names, **{"max.messages": 3})
    worker.advance(100)
    assert worker.source_offset(names["src"], partition) is None
    worker.stop_connector(names["src"])
    worker.assert_source_offset(names["src"], partition, {"saved": 2})
    assert len(worker.values(names["data"])) == 3


def test_idle_source_moves_its_offset_with_heartbeats_and_never_while_paused(
    make_worker: Make, runtime_handles: RuntimeHandles, names: dict[str, str]
) -> None:
    worker = make_worker({"heartbeat.interval.ms": 1000, "offset.flush.interval.ms": 1000})
    partition = source(worker, names, **{"messages.per.poll": 0})
    handle = runtime_handles.task(names["src"])
    handle.log_position = 41
    worker.advance(2000)
    beats = worker.values(names["beats"])
    assert beats == [{"heartbeat": partition["task.id"], "position": 41}] * 2
    assert worker.values(names["data"]) == [], "heartbeats go to their own topic only"
    worker.assert_source_offset(names["src"], partition, {"saved": 41})
    worker.pause(names["src"])
    handle.log_position = 77
    worker.advance(3000)
    assert len(worker.values(names["beats"])) == 2, "no heartbeat while paused"
    worker.resume(names["src"])
    worker.advance(1000)
    assert worker.values(names["beats"])[-1]["position"] == 77
    worker.assert_source_offset(names["src"], partition, {"saved": 77})


def test_heartbeats_are_off_by_default(
    make_worker: Make, runtime_handles: RuntimeHandles, names: dict[str, str]
) -> None:
    worker = make_worker()
    source(worker, names, **{"messages.per.poll": 0})
    worker.advance(5000)
    assert worker.messages(names["beats"]) == []
    assert "heartbeat" not in runtime_handles.task(names["src"]).names()


def test_source_records_active_topics_once_acknowledged(make_worker: Make, names: dict[str, str]) -> None:
    worker = make_worker({"heartbeat.interval.ms": 500})
    source(worker, names, **{"max.messages": 1})
    worker.advance(490)
    assert worker.source_task(names["src"]).active_topics == {names["data"]}
    worker.advance(20)
    assert worker.source_task(names["src"]).active_topics == {names["data"], names["beats"]}


# ---- sink commits (KIP-89) --------------------------------------------------------------------------------------


def test_sink_commits_what_pre_commit_returns_not_what_was_consumed(
    make_worker: Make, runtime_handles: RuntimeHandles, names: dict[str, str]
) -> None:
    worker = make_worker({"offset.flush.interval.ms": 1000})
    fill(worker, names["data"], 10)
    tp = TopicPartition(names["data"], 0)
    handle = runtime_handles.task(names["snk"])
    handle.pre_commit = lambda current: {tp: 4}
    worker.add_connector(names["snk"], MonitorableSinkConnector, {"topics": names["data"]})
    worker.run_until(lambda: len(handle.records) == 10, timeout_ms=60_000, what="all 10 records put")
    worker.run_until(lambda: worker.group_offsets(names["snk"]) == {tp: 4}, what="offset 4 committed")
    assert "flush" not in handle.names(), "a sink that overrides pre_commit is not flushed by the default"
    assert [r.value for r in handle.records] == [{"n": i} for i in range(10)]
    handle.pre_commit = None
    worker.run_until(lambda: worker.group_offsets(names["snk"]) == {tp: 10}, what="the default commits all")
    assert "flush" in handle.names()


def test_request_commit_commits_before_the_interval(
    make_worker: Make, runtime_handles: RuntimeHandles, names: dict[str, str]
) -> None:
    worker = make_worker({"offset.flush.interval.ms": 3_600_000})
    fill(worker, names["data"], 3)
    handle = runtime_handles.task(names["snk"])
    handle.request_commit_after_put = True
    worker.add_connector(names["snk"], MonitorableSinkConnector, {"topics": names["data"]})
    started = worker.clock.now_ms()
    worker.run_until(lambda: worker.group_offsets(names["snk"]) == {TopicPartition(names["data"], 0): 3})
    assert worker.clock.now_ms() - started < 3_600_000, "committed long before the hour-long interval"


def test_rewind_redelivers_from_the_given_offset(
    make_worker: Make, runtime_handles: RuntimeHandles, names: dict[str, str]
) -> None:
    worker = make_worker()
    fill(worker, names["data"], 5)
    handle = runtime_handles.task(names["snk"])
    worker.add_connector(names["snk"], MonitorableSinkConnector, {"topics": names["data"]})
    worker.run_until(lambda: len(handle.records) == 5)
    worker.sink_task(names["snk"]).context.offset({TopicPartition(names["data"], 0): 2})
    worker.run_until(lambda: len(handle.records) == 8)
    assert [r.offset for r in handle.records] == [0, 1, 2, 3, 4, 2, 3, 4]


def test_sink_spreads_over_partitions_and_commits_each(
    make_worker: Make, runtime_handles: RuntimeHandles, names: dict[str, str]
) -> None:
    worker = make_worker({"offset.flush.interval.ms": 500})
    fill(worker, names["data"], 9, partitions=3)
    handle = runtime_handles.task(names["snk"])
    worker.add_connector(names["snk"], MonitorableSinkConnector, {"topics": names["data"]})
    expected = {TopicPartition(names["data"], p): 3 for p in range(3)}
    worker.run_until(lambda: worker.group_offsets(names["snk"]) == expected, what="3 per partition committed")
    assert sorted(r.value["n"] for r in handle.records) == list(range(9))


# ---- delete (KIP-901) --------------------------------------------------------------------------------------------


def test_delete_tells_tasks_then_connector_and_plain_stop_does_not(
    make_worker: Make, runtime_handles: RuntimeHandles, names: dict[str, str]
) -> None:
    worker = make_worker()
    kept = f"{names['src']}-kept"
    for name in (names["src"], kept):
        worker.add_connector(name, MonitorableSourceConnector, {"topic": names["data"], "messages.per.poll": 0})
    worker.advance(100)
    worker.delete_connector(names["src"])
    worker.stop_connector(kept)

    def stops(connector: str) -> list[tuple[int | None, Any]]:
        return [
            (task, detail) for c, task, event, detail in runtime_handles.events if event == "stop" and c == connector
        ]

    assert stops(names["src"]) == [(0, True), (None, True)], "tasks learn of the delete before their connector"
    assert stops(kept) == [(0, False), (None, False)], "a plain stop says the connector was not deleted"


def test_worker_creates_a_missing_heartbeat_topic_compacted(make_worker: Make, names: dict[str, str]) -> None:
    worker = make_worker({"heartbeat.interval.ms": 1000, "heartbeat.records.topic.partitions": 2})
    source(worker, names, **{"messages.per.poll": 0})
    assert names["beats"] in worker.broker.topics(), "created when the task starts, before any heartbeat"
    worker.advance(1000)
    assert worker.messages(names["beats"])
    assert worker.topic_config(names["beats"]).get("cleanup.policy") == "compact"
    assert worker.partition_count(names["beats"]) == 2
