"""The Hypothesis strategies draw what they promise, each fault does to a running connector what it says, and a
drawn fault schedule played against a correct source loses no record (the ``@given`` way an author would use it)."""

from __future__ import annotations

import json
from typing import Any

import conformance_samples as samples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from headwater.harness import (
    SINK_FAULTS,
    SOURCE_FAULTS,
    ConnectorDriver,
    Fault,
    fault_schedules,
    increasing_offsets,
    json_values,
    play_schedule,
    source_offsets,
    source_partitions,
    source_records,
    topic_records,
)
from headwater.harness import guarantees as g
from headwater.runtime.storage.offsets import MemoryOffsetStore
from headwater.sdk.records import validate_offset_map

FAST = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# ---- strategies --------------------------------------------------------------------------------------------------


@FAST
@given(partition=source_partitions(), offset=source_offsets())
def test_source_partitions_and_offsets_are_storable(partition: dict[str, Any], offset: dict[str, Any]) -> None:
    validate_offset_map("partition", partition)
    validate_offset_map("offset", offset)
    store = MemoryOffsetStore()
    store.set("c", [(partition, offset)], 1000)
    assert store.get("c", [partition]) == [(partition, json.loads(json.dumps(offset)))]


@FAST
@given(value=json_values())
def test_json_values_round_trip_through_json(value: Any) -> None:
    assert json.loads(json.dumps(value)) == value


@FAST
@given(offsets=increasing_offsets("lsn"))
def test_increasing_offsets_increase(offsets: list[dict[str, int]]) -> None:
    positions = [o["lsn"] for o in offsets]
    assert positions == sorted(set(positions))


@FAST
@given(record=source_records(topics=st.just("t")), produced=topic_records(partitions=3))
def test_records_carry_what_was_drawn(record: Any, produced: Any) -> None:
    assert record.topic == "t" and record.source_partition and record.source_offset is not None
    assert produced.partition is None or 0 <= produced.partition < 3


@FAST
@given(schedule=fault_schedules(SINK_FAULTS, max_faults=6, horizon_ms=5_000))
def test_schedules_are_in_time_order_within_the_horizon(schedule: list[tuple[int, Fault]]) -> None:
    times = [at for at, _ in schedule]
    assert times == sorted(times) and all(0 <= at <= 5_000 for at in times) and len(schedule) <= 6
    assert {fault.kind for _, fault in schedule} <= set(SINK_FAULTS)


# ---- faults on a running connector -------------------------------------------------------------------------------


def log_source(name: str, **worker_config: Any) -> ConnectorDriver:
    config = {"log": name, "topic": "data", "partitions": 1}
    driver = ConnectorDriver(
        samples.LogSource, config, worker_config={"offset.flush.interval.ms": 500, **worker_config}
    )
    driver.start()
    return driver


def stored(driver: ConnectorDriver) -> Any:
    return driver.worker.source_offset(driver.name, {"log": f"{driver.config['log']}/0"})


def test_slow_acks_hold_the_commit_until_released() -> None:
    driver = log_source("slow-acks")
    samples.feed_log(driver.config, 3)
    driver.advance(500)
    assert stored(driver) == {"position": 2}
    driver.hold_acks()
    samples.feed_log(driver.config, 3)
    driver.advance(2_000)
    assert len(driver.worker.values("data")) == 6, "stored, not acknowledged"
    assert stored(driver) == {"position": 2}, "nothing unacknowledged is committed"
    driver.release_acks()
    driver.advance(500)
    assert stored(driver) == {"position": 5}


def test_failing_offset_commits_keep_the_offsets_for_the_next_attempt() -> None:
    driver = log_source("failing-commits")
    driver.fail_commits(2)
    samples.feed_log(driver.config, 2)
    driver.advance(1_000)
    assert stored(driver) is None, "two commits failed"
    driver.advance(500)
    assert stored(driver) == {"position": 1}


def test_a_crashed_worker_loses_nothing_and_runs_no_shutdown() -> None:
    driver = log_source("crash")
    samples.feed_log(driver.config, 2)
    driver.advance(500)
    samples.feed_log(driver.config, 2)
    driver.advance(100)  # sent, not committed
    dead = driver.worker
    driver.crash_worker()
    assert driver.worker is not dead and driver.dead == [dead]
    assert driver.tap.stops == [], "a dead process runs no stop"
    driver.advance(500)
    values = [v["n"] for v in driver.worker.values("data")]
    assert values == [0, 1, 2, 3, 2, 3], "the records after the committed offset are sent again"
    assert stored(driver) == {"position": 3}
    driver.close()
    assert stored(driver) == {"position": 3}, "reaping the dead worker commits nothing"
    assert dead.closed and ("connector-0", False) in driver.tap.stops


def test_a_sink_rebalance_revokes_and_reassigns_and_commits_everything() -> None:
    driver = ConnectorDriver(samples.TableSink, {"table": "rebalanced", "topics": "in"})
    driver.worker.create_topic("in", 2)
    driver.start()
    for n in range(4):
        driver.worker.produce("in", {"n": n}, partition=n % 2)
    driver.advance(100)
    member = driver.worker.sink_task(driver.name).consumer.member_id
    driver.rebalance()
    for n in range(4, 8):
        driver.worker.produce("in", {"n": n}, partition=n % 2)
    driver.advance(2_000)
    assert {v["n"] for v in samples.table({"table": "rebalanced"})} == set(range(8))
    assert sum(driver.worker.group_offsets(driver.name).values()) == 8
    assert driver.tap.stops == [], "a rebalance stops no task"
    assert driver.worker.sink_task(driver.name).consumer.member_id != member, "it lost its partitions and rejoined"


def test_play_schedule_applies_faults_at_their_time_and_releases_held_acks() -> None:
    driver = log_source("schedule")
    samples.feed_log(driver.config, 2)
    start = driver.worker.clock.now_ms()
    log = play_schedule(driver, [(300, Fault("slow_acks", ms=400)), (1_000, Fault("restart"))], until_ms=2_000)
    assert log == ["300 ms: slow_acks(400 ms)", "1000 ms: restart"]
    assert driver.worker.clock.now_ms() == start + 2_000
    assert not driver.memory_broker.faults.holding
    assert ("connector-0", False) in driver.tap.stops, "the restart stopped the task"
    fed = [{"log": "schedule/0", "n": 0}, {"log": "schedule/0", "n": 1}]
    assert [(s.value, s.incarnation) for s in driver.tap.sent] == [(fed[0], 1), (fed[1], 1)]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    schedule=fault_schedules(SOURCE_FAULTS, max_faults=4, horizon_ms=3_000),
    batches=st.lists(st.integers(0, 4), min_size=1, max_size=4),
)
def test_no_record_is_lost_whatever_the_schedule(schedule: list[tuple[int, Fault]], batches: list[int]) -> None:
    name = f"given-{id(schedule)}-{len(samples.LOGS)}"
    driver = log_source(name, **{"heartbeat.interval.ms": 700})
    try:
        expected = []
        for count in batches:
            expected += samples.feed_log(driver.config, count)
            play_schedule(driver, schedule, until_ms=1_000)
        driver.heal()
        driver.settle(lambda: len(driver.worker.values("data")) >= len(expected))
        g.assert_at_least_once(expected, driver.worker.values("data"), "source to Kafka", driver.tap)
        g.assert_committed_offsets_were_sent(driver.tap)
        g.assert_source_offsets_monotonic(driver.tap)
    finally:
        driver.close()
        samples.LOGS.pop(f"{name}/0", None)
