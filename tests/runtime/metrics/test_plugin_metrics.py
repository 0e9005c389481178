"""Metrics a connector and its tasks register through their contexts (KIP-877's plugin metrics), on a simulated
worker: the worker's collector serves them as ``headwater_connect_plugin_<name>`` labelled with the connector (and
the task, for a task's), the simulated worker hands them to a test, they go away when the task or connector stops,
one name keeps one kind across the worker, and a gauge whose read raises is counted while the rest is scraped."""

from __future__ import annotations

from collections.abc import Callable

from prometheus_client import CollectorRegistry
from prometheus_client.parser import text_string_to_metric_families

from headwater.harness import SimulatedWorker
from headwater.runtime.metrics import exposition, worker_registry
from headwater.runtime.tasks.base import State
from headwater.sdk import Counter
from support.metered import MeteredSource

Make = Callable[..., SimulatedWorker]
ROWS = "headwater_connect_plugin_rows_total"


def scraped(registry: CollectorRegistry) -> str:
    return exposition(registry)[0].decode()


def test_task_and_connector_metrics_are_served_with_their_labels(make_simulated_worker: Make) -> None:
    worker = make_simulated_worker()
    worker.add_connector("m", MeteredSource, topic="data", batch_size="2", max_messages="5")
    registry = worker_registry(worker.worker)
    worker.run_until(lambda: len(worker.values("data")) == 5, what="5 records")
    task = {"connector": "m", "task": "0"}
    assert registry.get_sample_value(ROWS, task) == 5
    assert registry.get_sample_value("headwater_connect_plugin_batch_rows_count", task) == 3, "batches of 2, 2, 1"
    assert registry.get_sample_value("headwater_connect_plugin_batch_rows_bucket", {**task, "le": "1.0"}) == 1
    assert registry.get_sample_value("headwater_connect_plugin_batch_rows_bucket", {**task, "le": "+Inf"}) == 3
    assert registry.get_sample_value("headwater_connect_plugin_batch_rows_sum", task) == 5
    assert registry.get_sample_value("headwater_connect_plugin_configured_tasks", {"connector": "m"}) == 1, (
        "a connector's metric has the connector label only"
    )
    families = {f.name: f for f in text_string_to_metric_families(scraped(registry))}
    assert families["headwater_connect_plugin_rows"].type == "counter"
    assert families["headwater_connect_plugin_rows"].documentation == "Records returned by poll."
    assert families["headwater_connect_plugin_batch_rows"].type == "histogram"
    rows = worker.plugin_metrics("m", 0)["rows"]
    assert isinstance(rows, Counter) and rows.value == 5, "the simulated worker hands a test the same metrics"
    assert worker.plugin_metrics("m")["configured_tasks"].kind.value == "gauge"


def test_metrics_go_away_when_their_task_and_connector_stop(make_simulated_worker: Make) -> None:
    worker = make_simulated_worker()
    worker.add_connector("m", MeteredSource, topic="data", max_messages="4")
    registry = worker_registry(worker.worker)
    worker.run_until(lambda: len(worker.values("data")) == 4, what="4 records")
    task_metrics = worker.plugin_metrics("m", 0)
    worker.restart_task("m", 0)
    worker.run_until(lambda: worker.task_state("m") is State.RUNNING, what="the task restarted")
    assert task_metrics.closed and len(task_metrics) == 0, "the stopped task's metrics were closed"
    assert worker.plugin_metrics("m", 0) is not task_metrics, "a restarted task counts afresh"
    worker.delete_connector("m")
    assert "headwater_connect_plugin_" not in scraped(registry), "no stale series once the connector is deleted"


def test_one_name_keeps_one_kind_across_the_worker(make_simulated_worker: Make) -> None:
    worker = make_simulated_worker()
    worker.add_connector("counts", MeteredSource, topic="a", max_messages="1")
    worker.run_until(lambda: len(worker.values("a")) == 1, what="a record")
    worker.add_connector("gauges", MeteredSource, topic="b", rows_kind="gauge")
    worker.run_until(lambda: worker.task_state("gauges") is State.FAILED, what="the second task failed")
    failure = worker.task("gauges").failure
    assert isinstance(failure, ValueError)
    assert "plugin metric rows cannot be a gauge: task counts-0 on this worker registered it as a counter" in str(
        failure
    )


def test_a_gauge_whose_read_raises_is_counted_and_the_rest_scraped(make_simulated_worker: Make) -> None:
    worker = make_simulated_worker()
    worker.add_connector("m", MeteredSource, topic="data", max_messages="2")
    worker.run_until(lambda: len(worker.values("data")) == 2, what="2 records")
    worker.plugin_metrics("m").gauge("broken", read=lambda: 1 / 0)
    samples = {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(scraped(worker_registry(worker.worker)))
        for sample in family.samples
    }
    assert samples[(ROWS, (("connector", "m"), ("task", "0")))] == 2
    assert samples[("headwater_metrics_read_errors_total", ())] == 1
    assert ("headwater_connect_plugin_broken", (("connector", "m"),)) not in samples
