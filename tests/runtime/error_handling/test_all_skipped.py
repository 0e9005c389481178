"""A task that skips every record it sees says so (the alarm of :mod:`headwater.runtime.error_handling.all_skipped`),
on the simulated worker: one ERROR naming the task, the stage and the last error once ``ALL_SKIPPED_AFTER`` records
in a row were skipped, the ``all_records_skipped`` metric 1 until a record gets through; for a source (a header the
``bytes`` header converter refuses) and a sink (values the JSON converter cannot read, records its put reports)."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable

import pytest
from prometheus_client import CollectorRegistry

from headwater.harness import MonitorableSinkConnector, MonitorableSourceConnector, SimulatedWorker
from headwater.runtime.error_handling.all_skipped import ALL_SKIPPED_AFTER
from headwater.runtime.metrics import worker_registry
from headwater.runtime.tasks.base import State
from support.errant_sink import ErrantSinkConnector

Make = Callable[..., SimulatedWorker]
METRIC = "headwater_connect_task_error_all_records_skipped"
ALARM = "has skipped every record it has seen"


def alarm(registry: CollectorRegistry, connector: str) -> float | None:
    return registry.get_sample_value(METRIC, {"connector": connector, "task": "0"})


def alarms(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.levelno == logging.ERROR and ALARM in r.getMessage()]


def test_a_source_whose_every_record_fails_at_header_conversion_says_so_once_until_one_gets_through(
    make_simulated_worker: Make, caplog: pytest.LogCaptureFixture
) -> None:
    worker = make_simulated_worker({"header.converter": "bytes", "heartbeat.interval.ms": 60_000})
    worker.add_connector(
        "src",
        MonitorableSourceConnector,
        {
            "topic": "data",
            "messages.per.poll": ALL_SKIPPED_AFTER - 1,
            "max.messages": 2 * (ALL_SKIPPED_AFTER - 1),
            "errors.tolerance": "all",
            # the bytes header converter refuses the string header InsertHeader adds; heartbeats are left alone
            "transforms": "origin",
            "transforms.origin.type": "org.apache.kafka.connect.transforms.InsertHeader",
            "transforms.origin.header": "origin",
            "transforms.origin.value.literal": "hw",
            "transforms.origin.predicate": "data",
            "predicates": "data",
            "predicates.data.type": "TopicNameMatches",
            "predicates.data.pattern": "data",
        },
    )
    registry = worker_registry(worker.worker)
    task = worker.source_task("src")
    worker.run_until(lambda: task.errors.counters.records_skipped == ALL_SKIPPED_AFTER - 1, what="499 skipped")
    worker.step()
    assert alarm(registry, "src") == 0 and not alarms(caplog), "one short of the threshold"
    worker.run_until(lambda: task.errors.counters.records_skipped == 2 * (ALL_SKIPPED_AFTER - 1), what="all skipped")
    worker.advance(100)
    assert worker.messages("data") == []
    assert worker.task_state("src") is State.RUNNING
    assert alarm(registry, "src") == 1
    (record,) = alarms(caplog)
    message = record.getMessage()
    assert "task src-0 " in message and "since it started" in message and "misconfiguration, not bad data" in message
    assert "Stage: header conversion;" in message and "ByteArrayConverter" in message
    assert worker.messages("connect-heartbeats") == []
    worker.run_until(lambda: task.records_acked == 1, 120_000, "a heartbeat record acknowledged")
    worker.advance(100)
    assert alarm(registry, "src") == 0, "a record got through"
    assert len(alarms(caplog)) == 1, "logged once, not per record"


def test_a_sink_whose_every_value_fails_to_convert_says_so_until_a_good_one_comes(
    make_simulated_worker: Make, caplog: pytest.LogCaptureFixture
) -> None:
    worker = make_simulated_worker({"consumer.max.poll.records": 100})
    for n in range(ALL_SKIPPED_AFTER + 20):
        worker.produce("in", f"not json {n}".encode())
    worker.add_connector(
        "snk", MonitorableSinkConnector, {"topics": "in", "value.converter": "json", "errors.tolerance": "all"}
    )
    registry = worker_registry(worker.worker)
    task = worker.sink_task("snk")
    worker.run_until(lambda: task.records_read == ALL_SKIPPED_AFTER + 20, what="every record read")
    worker.advance(100)
    assert task.errors.counters.records_skipped == ALL_SKIPPED_AFTER + 20
    assert alarm(registry, "snk") == 1
    (record,) = alarms(caplog)
    assert "task snk-0 " in record.getMessage() and "Stage: value conversion" in record.getMessage()
    worker.produce("in", json.dumps({"n": 1}).encode())
    worker.run_until(lambda: task.records_put == 1, what="the good record put")
    worker.advance(100)
    assert alarm(registry, "snk") == 0
    assert len(alarms(caplog)) == 1


def test_records_a_sinks_put_reports_back_count_as_skipped(
    make_simulated_worker: Make, caplog: pytest.LogCaptureFixture
) -> None:
    worker = make_simulated_worker({"consumer.max.poll.records": 100})
    for n in range(ALL_SKIPPED_AFTER):
        worker.produce("in", json.dumps({"n": n, "reject": True}).encode())
    worker.add_connector(
        "errant",
        ErrantSinkConnector,
        {
            "topics": "in",
            "value.converter": "json",
            "value.converter.schemas.enable": "false",
            "errors.tolerance": "all",
        },
    )
    registry = worker_registry(worker.worker)
    task = worker.sink_task("errant")
    worker.run_until(lambda: task.records_put == ALL_SKIPPED_AFTER, what="every record put")
    worker.advance(100)
    assert task.errors.counters.records_skipped == ALL_SKIPPED_AFTER, "each one reported"
    assert alarm(registry, "errant") == 1
    (record,) = alarms(caplog)
    assert "Stage: put" in record.getMessage()
