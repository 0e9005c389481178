"""A distributed worker serves its metrics like a standalone one: at ``/metrics`` on its REST listener and on its
``metrics.port`` listener, counting the connectors and tasks it runs."""

from __future__ import annotations

from collections.abc import Callable

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from support.rest_worker import RestWorker, source_config, wait_until

pytestmark = pytest.mark.kafka

MakeWorker = Callable[..., RestWorker]


def value(url: str, name: str, **labels: str) -> float | None:
    response = httpx.get(url, timeout=30)
    assert response.status_code == 200, response.text
    for family in text_string_to_metric_families(response.text):
        for sample in family.samples:
            if sample.name == name and sample.labels == labels:
                return float(sample.value)
    return None


def test_a_distributed_worker_serves_its_metrics(make_worker: MakeWorker, unique_name: str) -> None:
    worker = make_worker(metrics_port=0)
    worker.create(unique_name, source_config(f"{unique_name}-t", max_messages=5))
    polled = "headwater_connect_source_task_record_poll_total"
    task = {"connector": unique_name, "task": "0"}
    wait_until(lambda: value(f"{worker.url}/metrics", polled, **task) == 5, "5 records polled, over REST")
    listener = worker.standalone.metrics
    assert listener is not None
    assert value(listener.url, polled, **task) == 5
    assert value(listener.url, "headwater_connect_worker_connector_count", state="running") == 1
    assert value(listener.url, "headwater_connect_worker_task_count", state="running") == 1
