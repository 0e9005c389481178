"""Error handling in the source loop (KIP-298): a record the producer refuses and a record a converter fails on go
through errors.tolerance and errors.log.*, on the in-memory transport and on a real broker."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

import pytest

from headwater.harness import SimulatedWorker
from headwater.runtime.tasks.base import State
from headwater.sdk import SourceConnector, SourceRecord, SourceTask

Make = Callable[..., SimulatedWorker]
CONFIG = {"offset.flush.interval.ms": 500, "value.converter": "bytes", "key.converter": "string"}
HUGE = b"x" * 2_000_000  # over the producer's message.max.bytes (1000000 by default)
PARTITION = {"p": "0"}


class ThreeRecordsTask(SourceTask):
    """Hands over a small record, a huge one (or one the bytes converter refuses), and a small one, once."""

    def start(self, config: Mapping[str, str]) -> None:
        self.topic = config["topic"]
        middles: dict[str, Any] = {"unconvertible": {"not": "bytes"}, "huge": HUGE, "small": b"middle"}
        self.middle = middles[config.get("middle", "huge")]
        self.sent = False

    def poll(self) -> list[SourceRecord] | None:
        if self.sent:
            return None
        self.sent = True
        values = [b"first", self.middle, b"last"]
        return [SourceRecord(PARTITION, {"at": n}, self.topic, value, key=f"k{n}") for n, value in enumerate(values)]


class ThreeRecordsConnector(SourceConnector):
    def start(self, config: Mapping[str, Any]) -> None:
        self.config = {key: str(value) for key, value in config.items() if value is not None}

    def task_class(self) -> type[SourceTask]:
        return ThreeRecordsTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [dict(self.config)]


@pytest.fixture
def topic(request: pytest.FixtureRequest) -> str:
    return f"out-{abs(hash(request.node.nodeid)) % 10**8}"


@pytest.mark.parametrize("middle", ["huge", "unconvertible"])
def test_a_tolerated_record_is_skipped_logged_and_its_offset_committed(
    make_worker: Make, topic: str, middle: str, caplog: pytest.LogCaptureFixture
) -> None:
    worker = make_worker(CONFIG)
    worker.create_topic(topic, 1)
    props = {"topic": topic, "middle": middle, "errors.tolerance": "all", "errors.log.enable": "true"}
    props["errors.log.include.messages"] = "true"
    with caplog.at_level(logging.ERROR, logger="headwater.runtime.error_handling.tolerance"):
        worker.add_connector("src", ThreeRecordsConnector, props)
        worker.run_until(lambda: worker.source_offset("src", PARTITION) == {"at": 2}, what="offset 2 committed")
    assert worker.task_state("src") is State.RUNNING
    assert [m.value for m in worker.messages(topic)] == [b"first", b"last"]
    stage = "KAFKA_PRODUCE" if middle == "huge" else "VALUE_CONVERTER"
    (line,) = [r.getMessage() for r in caplog.records if "Error encountered in task src-0" in r.getMessage()]
    assert f"Executing stage '{stage}'" in line
    assert f"for topic '{topic}' from source partition {PARTITION} offset {{'at': 1}}" in line
    assert "key='k1'" in line, "errors.log.include.messages shows the record"
    counters = worker.source_task("src").errors.counters
    assert (counters.records_skipped, counters.errors_logged) == (1, 1)


@pytest.mark.parametrize("middle", ["huge", "unconvertible"])
def test_with_tolerance_none_the_task_fails_naming_the_record(make_worker: Make, topic: str, middle: str) -> None:
    worker = make_worker(CONFIG)
    worker.create_topic(topic, 1)
    worker.add_connector("src", ThreeRecordsConnector, {"topic": topic, "middle": middle})
    worker.run_until(lambda: worker.task_state("src") is State.FAILED, what="the task to fail")
    failure = str(worker.source_task("src").failure)
    assert f"for topic '{topic}' from source partition {PARTITION} offset {{'at': 1}}" in failure
    assert "errors.tolerance=none" in failure
    assert worker.source_offset("src", PARTITION) in (None, {"at": 0})
    assert [m.value for m in worker.messages(topic)] in ([], [b"first"])


@pytest.mark.parametrize("retry_timeout", ["5000", "0"])
def test_a_retriable_conversion_failure_is_retried_within_the_retry_timeout(
    make_simulated_worker: Make, topic: str, retry_timeout: str
) -> None:
    worker = make_simulated_worker(CONFIG)
    worker.create_topic(topic, 1)
    props = {
        "topic": topic,
        "middle": "small",
        "value.converter": "support.errant_sink.FlakyConverter",
        "value.converter.fail.calls": "2",
        "errors.retry.timeout": retry_timeout,
    }
    worker.add_connector("src", ThreeRecordsConnector, props)
    worker.advance(2000)
    if retry_timeout == "0":
        assert worker.task_state("src") is State.FAILED
        assert worker.messages(topic) == []
    else:
        assert [m.value for m in worker.messages(topic)] == [b"first", b"middle", b"last"]
        assert worker.source_task("src").errors.counters.retries == 2
