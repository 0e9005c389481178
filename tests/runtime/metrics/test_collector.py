"""The metrics collector over a simulated worker (in memory, virtual clock): the record, heartbeat, commit and error
counters equal what the loops did, counts by state follow state changes, the offset age and the sink lag follow
the virtual clock and the log, a reader that raises is counted and logged while the rest is scraped, and every
defined metric is in a scrape."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from headwater.harness import (
    MonitorableSinkConnector,
    MonitorableSourceConnector,
    RuntimeHandles,
    SimulatedCluster,
    SimulatedWorker,
)
from headwater.runtime.metrics import METRICS, Kind, Metric, Scope, exposition, worker_registry
from headwater.runtime.metrics import collector as collector_module
from headwater.runtime.tasks.base import TaskId
from headwater.runtime.tasks.exactly_once_source import ExactlyOnceWorkerSourceTask

Make = Callable[..., SimulatedWorker]
SRC = {"connector": "src", "task": "0"}
SINK = {"connector": "sink", "task": "0"}


def value(registry: CollectorRegistry, name: str, **labels: str) -> float:
    found = registry.get_sample_value(name, labels)
    assert found is not None, f"no sample {name}{labels} in:\n{exposition(registry)[0].decode()}"
    return found


def test_source_counters_equal_what_the_loop_did(make_simulated_worker: Make) -> None:
    worker = make_simulated_worker({"heartbeat.interval.ms": 1000, "offset.flush.interval.ms": 500})
    worker.add_connector("src", MonitorableSourceConnector, topic="data", max_messages=5)
    registry = worker_registry(worker.worker)
    worker.run_until(lambda: worker.source_offset("src", {"task.id": "src-0"}) == {"saved": 4}, what="all committed")
    worker.advance(3000)
    heartbeats = len(worker.messages("connect-heartbeats"))
    assert heartbeats >= 3
    assert value(registry, "headwater_connect_source_task_record_poll_total", **SRC) == 5
    assert value(registry, "headwater_connect_source_task_heartbeat_records_total", **SRC) == heartbeats
    assert value(registry, "headwater_connect_source_task_heartbeat_calls_total", **SRC) == heartbeats, "one each"
    assert value(registry, "headwater_connect_source_task_record_write_total", **SRC) == 5 + heartbeats
    assert value(registry, "headwater_connect_source_task_record_active_count", **SRC) == 0
    assert value(registry, "headwater_connect_task_offset_commit_success_total", **SRC) >= 6
    assert value(registry, "headwater_connect_task_offset_commit_failure_total", **SRC) == 0
    polls = value(registry, "headwater_connect_source_task_poll_batch_seconds_count", **SRC)
    assert polls >= 5, "every poll that returned a list is timed"
    assert value(registry, "headwater_connect_source_task_poll_batch_seconds_bucket", le="+Inf", **SRC) == polls
    assert value(registry, "headwater_connect_task_offset_commit_seconds_count", **SRC) >= 6


def test_offset_age_grows_while_heartbeats_repeat_the_same_offset(
    make_simulated_worker: Make, runtime_handles: RuntimeHandles
) -> None:
    worker = make_simulated_worker({"heartbeat.interval.ms": 1000, "offset.flush.interval.ms": 500})
    worker.add_connector("src", MonitorableSourceConnector, topic="data", max_messages=3)
    registry = worker_registry(worker.worker)
    worker.run_until(lambda: worker.source_offset("src", {"task.id": "src-0"}) == {"saved": 2}, what="all committed")
    age = "headwater_connect_source_task_offset_unchanged_seconds"
    partition = '{"task.id":"src-0"}'
    assert value(registry, age, partition=partition, **SRC) == 0
    worker.advance(10_000)
    assert value(registry, age, partition=partition, **SRC) == 10.0, "heartbeats at {saved: 2} do not move it"
    runtime_handles.task("src").log_position = 7  # the source's log moved on: the next heartbeat carries it
    worker.advance(1500)
    assert worker.source_offset("src", {"task.id": "src-0"}) == {"saved": 7}
    assert value(registry, age, partition=partition, **SRC) < 1.5


def test_counts_by_state_follow_pause_and_resume(make_simulated_worker: Make) -> None:
    worker = make_simulated_worker()
    worker.add_connector("src", MonitorableSourceConnector, topic="data", tasks_max=2)
    registry = worker_registry(worker.worker)
    worker.advance(100)
    assert value(registry, "headwater_connect_worker_connector_count", state="running") == 1
    assert value(registry, "headwater_connect_worker_task_count", state="running") == 2
    assert value(registry, "headwater_connect_worker_connector_task_count", connector="src", state="running") == 2
    assert value(registry, "headwater_connect_task_status", state="running", **SRC) == 1
    assert value(registry, "headwater_connect_connector_status", connector="src", state="running") == 1
    worker.pause_connector("src")
    worker.advance(100)
    assert value(registry, "headwater_connect_worker_connector_count", state="running") == 0
    assert value(registry, "headwater_connect_worker_connector_count", state="paused") == 1
    assert value(registry, "headwater_connect_worker_task_count", state="paused") == 2
    assert value(registry, "headwater_connect_task_status", state="running", **SRC) == 0
    running = value(registry, "headwater_connect_task_state_seconds_total", state="running", **SRC)
    paused = value(registry, "headwater_connect_task_state_seconds_total", state="paused", **SRC)
    assert running > 0 and paused > 0, "measured in real seconds, however short"
    assert value(registry, "headwater_connect_task_state_seconds_total", state="paused", **SRC) > paused, "still paused"
    assert value(registry, "headwater_connect_worker_connector_startup_attempts_total") == 1
    assert value(registry, "headwater_connect_worker_connector_startup_success_total") == 1
    assert value(registry, "headwater_connect_worker_task_startup_success_total") == 2
    assert value(registry, "headwater_connect_worker_task_startup_failure_total") == 0
    info = registry.get_sample_value(
        "headwater_connect_connector_info",
        {
            "connector": "src",
            "type": "source",
            "class": "headwater.harness.monitorable.MonitorableSourceConnector",
            "version": MonitorableSourceConnector().version(),
        },
    )
    assert info == 1


def test_sink_counters_lag_and_a_skipped_bad_record(make_simulated_worker: Make) -> None:
    worker = make_simulated_worker({"offset.flush.interval.ms": 500})
    worker.create_topic("in", 2)
    for n in range(6):
        worker.produce("in", {"n": n}, partition=n % 2)
    worker.produce("in", b"{not json", partition=0)
    worker.add_connector("sink", MonitorableSinkConnector, topics="in", errors_tolerance="all")
    registry = worker_registry(worker.worker)
    worker.run_until(lambda: worker.group_offsets("sink") == {("in", 0): 4, ("in", 1): 3}, what="all committed")
    assert value(registry, "headwater_connect_sink_task_record_read_total", **SINK) == 7
    assert value(registry, "headwater_connect_sink_task_record_send_total", **SINK) == 6
    assert value(registry, "headwater_connect_task_error_record_errors_total", **SINK) == 1
    assert value(registry, "headwater_connect_task_error_records_skipped_total", **SINK) == 1
    assert value(registry, "headwater_connect_task_error_last_error_timestamp_seconds", **SINK) > 0
    assert value(registry, "headwater_connect_sink_task_record_active_count", **SINK) == 0
    assert value(registry, "headwater_connect_sink_task_partition_count", **SINK) == 2
    assert value(registry, "headwater_connect_task_offset_commit_success_total", **SINK) >= 1
    for partition in ("0", "1"):
        assert (
            value(
                registry, "headwater_connect_sink_task_partition_lag_records", topic="in", partition=partition, **SINK
            )
            == 0
        )
    assert value(registry, "headwater_connect_sink_task_put_batch_seconds_count", **SINK) >= 1
    worker.pause_connector("sink")  # nothing is fetched: the new records wait, and the lag says how many
    worker.advance(100)
    for n in range(3):
        worker.produce("in", {"n": n}, partition=1)
    assert value(registry, "headwater_connect_sink_task_partition_lag_records", topic="in", partition="1", **SINK) == 3
    assert value(registry, "headwater_connect_sink_task_partition_lag_records", topic="in", partition="0", **SINK) == 0


def test_a_reader_that_raises_is_counted_and_logged_and_the_rest_is_scraped(
    make_simulated_worker: Make, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(task: Any) -> Any:
        raise RuntimeError("boom")

    bad = Metric("headwater_test_broken", Kind.GAUGE, Scope.TASK, "Always raises.", broken)
    monkeypatch.setattr(collector_module, "METRICS", (*METRICS, bad))
    worker = make_simulated_worker()
    worker.add_connector("src", MonitorableSourceConnector, topic="data", max_messages=2)
    worker.advance(100)
    registry = worker_registry(worker.worker)
    with caplog.at_level(logging.ERROR):
        assert value(registry, "headwater_connect_source_task_record_poll_total", **SRC) == 2
    assert value(registry, "headwater_metrics_read_errors_total") >= 1
    assert "headwater_test_broken could not be read" in caplog.text and "boom" in caplog.text


def test_every_defined_metric_is_in_a_scrape(make_simulated_worker: Make) -> None:
    worker = make_simulated_worker({"offset.flush.interval.ms": 100})
    worker.add_connector("src", MonitorableSourceConnector, topic="data", max_messages=2)
    worker.add_connector("sink", MonitorableSinkConnector, topics="data")
    worker.advance(1000)
    text = exposition(worker_registry(worker.worker))[0].decode()
    for metric in METRICS:
        assert f"# TYPE {metric.exposed_name} {metric.kind.value}\n" in text, metric.name
    samples = [line.split("{")[0].split(" ")[0] for line in text.splitlines() if not line.startswith("#")]
    for metric in METRICS:
        if metric.name == "headwater_connect_task_error_last_error_timestamp_seconds" or "_transaction" in metric.name:
            continue  # absent until an error happened; of exactly-once source tasks only
        assert any(sample.startswith(metric.exposed_name) for sample in samples), metric.name


def test_names_follow_prometheus_conventions() -> None:
    names = [metric.name for metric in METRICS]
    assert len(names) == len(set(names)), "one definition per name"
    for metric in METRICS:
        assert metric.name.startswith("headwater_connect_"), metric.name
        assert not metric.name.endswith("_total"), "a counter's _total is added on exposition"
        assert "_ms" not in metric.name, "seconds, not milliseconds"
        assert metric.help.endswith("."), metric.name


def test_transaction_metrics_count_what_an_exactly_once_task_committed() -> None:
    cluster = SimulatedCluster(1, {"exactly.once.source.support": "enabled"})
    config = {"connector.class": "monitorable-source", "topic": "data", "max.messages": "7", "messages.per.poll": "3"}
    cluster.live[0].herder.put_connector_config("src", config)
    cluster.run_until(lambda: TaskId("src", 0) in cluster.live[0].worker.tasks, what="the task")
    task = cluster.live[0].worker.tasks[TaskId("src", 0)]
    assert isinstance(task, ExactlyOnceWorkerSourceTask)
    cluster.run_until(lambda: task.commits == 3, what="three transactions")
    registry = worker_registry(cluster.live[0].worker)
    assert value(registry, "headwater_connect_source_task_transactions_total", **SRC) == 3
    assert value(registry, "headwater_connect_source_task_transaction_records_total", **SRC) == 7
    assert value(registry, "headwater_connect_source_task_transaction_size_max", **SRC) == 3
    assert value(registry, "headwater_connect_source_task_transaction_size_min", **SRC) == 1
    assert value(registry, "headwater_connect_source_task_transaction_aborts_total", **SRC) == 0
