"""Error handling in the sink loop (KIP-298, KIP-610), on the in-memory transport and on a real broker: tolerance,
the dead-letter queue with Kafka Connect's context headers, ErrantRecordReporter and retries."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from headwater.harness import SimulatedWorker
from headwater.runtime.error_handling.dead_letter import CONTEXT_HEADERS
from headwater.runtime.tasks.base import State
from headwater.sdk import TopicPartition
from support.errant_sink import WRITTEN, ErrantSinkConnector

Make = Callable[..., SimulatedWorker]
CONFIG = {"offset.flush.interval.ms": 1000}
SCHEMA = {"type": "struct", "fields": [{"field": "n", "type": "int64"}, {"field": "reject", "type": "boolean"}]}


def envelope(n: int, reject: bool = False) -> bytes:
    payload = {"n": n, "reject": reject}
    return json.dumps({"schema": SCHEMA, "payload": payload}).encode()


POISON = [
    (envelope(0), []),
    (b"{not json", [("origin", b"\x00raw")]),  # bad JSON: VALUE_CONVERTER
    (envelope(2), []),
    (b'{"n": 3}', []),  # plain JSON where the converter expects a schema envelope: VALUE_CONVERTER
    (envelope(4, reject=True), [("origin", b"put")]),  # reported by the task: TASK_PUT
    (envelope(5), []),
]


@pytest.fixture
def names(request: pytest.FixtureRequest) -> dict[str, str]:
    suffix = str(abs(hash(request.node.nodeid)) % 10**8)
    return {"in": f"in-{suffix}", "dlq": f"dlq-{suffix}", "snk": f"snk-{suffix}"}


def sink_config(names: dict[str, str], **extra: Any) -> dict[str, Any]:
    return {
        "topics": names["in"],
        "value.converter": "json",
        "value.converter.schemas.enable": "true",
        "key.converter": "string",
        **extra,
    }


def produce_poison(worker: SimulatedWorker, topic: str) -> None:
    worker.create_topic(topic, 1)
    for n, (value, headers) in enumerate(POISON):
        worker.produce(topic, value, key=f"k{n}".encode(), partition=0, headers=headers)


def written(name: str) -> list[int]:
    return [value["n"] for value in WRITTEN.get(name, [])]


def header(message: Any, name: str) -> str:
    values = [value for key, value in message.headers or () if key == name]
    assert len(values) == 1, f"{name} in {message.headers}"
    return values[0].decode()


def test_tolerated_failures_go_to_the_dead_letter_topic_with_their_bytes_and_context(
    make_worker: Make, names: dict[str, str]
) -> None:
    worker = make_worker(CONFIG)
    produce_poison(worker, names["in"])
    tp = TopicPartition(names["in"], 0)
    worker.add_connector(
        names["snk"],
        ErrantSinkConnector,
        sink_config(
            names,
            **{
                "errors.tolerance": "all",
                "errors.deadletterqueue.topic.name": names["dlq"],
                "errors.deadletterqueue.topic.replication.factor": "1",
                "errors.deadletterqueue.context.headers.enable": "true",
            },
        ),
    )
    worker.run_until(lambda: worker.group_offsets(names["snk"]) == {tp: 6}, what="every offset committed")
    assert worker.task_state(names["snk"]) is State.RUNNING
    assert written(names["snk"]) == [0, 2, 5]
    dead = worker.messages(names["dlq"])
    assert [(m.key, m.value) for m in dead] == [(f"k{n}".encode(), POISON[n][0]) for n in (1, 3, 4)]
    for message, offset, stage in zip(dead, (1, 3, 4), ("VALUE_CONVERTER", "VALUE_CONVERTER", "TASK_PUT"), strict=True):
        own = [(key, value) for key, value in message.headers or () if not key.startswith("__connect.errors.")]
        assert own == POISON[offset][1], "the record's own headers are kept as they arrived"
        assert [key for key, _ in message.headers or () if key.startswith("__connect.")] == list(CONTEXT_HEADERS)
        assert header(message, "__connect.errors.topic") == names["in"]
        assert header(message, "__connect.errors.partition") == "0"
        assert header(message, "__connect.errors.offset") == str(offset)
        assert header(message, "__connect.errors.connector.name") == names["snk"]
        assert header(message, "__connect.errors.task.id") == "0"
        assert header(message, "__connect.errors.stage") == stage
        trace = header(message, "__connect.errors.exception.stacktrace")
        assert "Traceback" in trace if stage != "TASK_PUT" else trace.startswith("support.errant_sink.RejectedRecord")
    converter = "headwater.runtime.converters.builtin.JsonConverter"  # the class that failed, where it is defined
    assert header(dead[0], "__connect.errors.class.name") == converter
    assert "Invalid JSON" in header(dead[0], "__connect.errors.exception.message")
    assert '"schema" and "payload"' in header(dead[1], "__connect.errors.exception.message")
    assert header(dead[2], "__connect.errors.class.name") == "support.errant_sink.ErrantSinkTask"
    assert header(dead[2], "__connect.errors.exception.class.name") == "support.errant_sink.RejectedRecord"
    counters = worker.sink_task(names["snk"]).errors.counters
    assert (counters.records_skipped, counters.dlq_produce_requests, counters.dlq_produce_failures) == (3, 3, 0)


@pytest.mark.parametrize("poison", [1, 4], ids=["bad-json", "reported"])
def test_with_tolerance_none_the_task_fails_naming_the_record_and_commits_nothing_past_it(
    make_worker: Make, names: dict[str, str], poison: int
) -> None:
    worker = make_worker(CONFIG)
    worker.create_topic(names["in"], 1)
    for n in range(poison):
        worker.produce(names["in"], envelope(n), partition=0)
    worker.produce(names["in"], POISON[poison][0], partition=0)
    worker.produce(names["in"], envelope(9), partition=0)
    worker.add_connector(names["snk"], ErrantSinkConnector, sink_config(names, **{"errors.tolerance": "none"}))
    worker.run_until(lambda: worker.task_state(names["snk"]) is State.FAILED, what="the task to fail")
    failure = str(worker.sink_task(names["snk"]).failure)
    assert f"topic '{names['in']}' partition 0 offset {poison}" in failure
    assert "errors.tolerance=none" in failure
    committed = worker.group_offsets(names["snk"]).get(TopicPartition(names["in"], 0), 0)
    assert committed <= poison
    assert 9 not in written(names["snk"])


def test_a_refused_dead_letter_write_fails_the_task_and_its_offset_is_not_committed(
    make_worker: Make, names: dict[str, str]
) -> None:
    worker = make_worker(CONFIG)
    worker.create_topic(names["in"], 1)
    worker.broker.create_topic(names["dlq"], 1, {"max.message.bytes": "2000"})
    worker.produce(names["in"], envelope(0), partition=0)
    worker.produce(names["in"], b"x" * 5000, partition=0)  # bad JSON, and too large for the dead-letter topic
    worker.produce(names["in"], envelope(2), partition=0)
    extra = {
        "errors.tolerance": "all",
        "errors.deadletterqueue.topic.name": names["dlq"],
        "errors.deadletterqueue.topic.replication.factor": "1",
    }
    worker.add_connector(names["snk"], ErrantSinkConnector, sink_config(names, **extra))
    worker.run_until(lambda: worker.task_state(names["snk"]) is State.FAILED, what="the task to fail")
    assert "dead-letter topic" in str(worker.sink_task(names["snk"]).failure)
    assert worker.group_offsets(names["snk"]).get(TopicPartition(names["in"], 0), 0) <= 1
    assert worker.messages(names["dlq"]) == []


def test_put_recovers_from_retriable_errors_within_the_retry_timeout(
    make_simulated_worker: Make, names: dict[str, str]
) -> None:
    worker = make_simulated_worker(CONFIG)
    worker.create_topic(names["in"], 1)
    for n in range(5):
        worker.produce(names["in"], envelope(n), partition=0)
    extra = {"errors.retry.timeout": "10000", "errors.retry.delay.max.ms": "1000", "retriable.for.ms": "3000"}
    worker.add_connector(names["snk"], ErrantSinkConnector, sink_config(names, **extra))
    worker.advance(2900)
    assert written(names["snk"]) == []
    worker.advance(1200)
    assert written(names["snk"]) == [0, 1, 2, 3, 4]
    assert worker.task_state(names["snk"]) is State.RUNNING
    counters = worker.sink_task(names["snk"]).errors.counters
    assert counters.retries >= 4  # waits of 300, 600, 1000, 1000 ms cover 3 s
    assert counters.records_skipped == 0


@pytest.mark.parametrize("tolerance", ["none", "all"])
def test_put_failing_past_the_retry_timeout_fails_or_is_tolerated(
    make_simulated_worker: Make, names: dict[str, str], tolerance: str
) -> None:
    worker = make_simulated_worker(CONFIG)
    worker.create_topic(names["in"], 1)
    for n in range(3):
        worker.produce(names["in"], envelope(n), partition=0)
    extra = {
        "errors.tolerance": tolerance,
        "errors.retry.timeout": "2000",
        "retriable.for.ms": "60000",
        "errors.deadletterqueue.topic.name": names["dlq"],
        "errors.deadletterqueue.topic.replication.factor": "1",
    }
    worker.add_connector(names["snk"], ErrantSinkConnector, sink_config(names, **extra))
    worker.advance(1900)
    assert worker.task_state(names["snk"]) is State.RUNNING
    worker.advance(2000)
    if tolerance == "none":
        assert worker.task_state(names["snk"]) is State.FAILED
        assert "errors.retry.timeout=2000" in str(worker.sink_task(names["snk"]).failure)
        assert worker.group_offsets(names["snk"]) == {}
    else:
        assert worker.task_state(names["snk"]) is State.RUNNING
        assert [m.value for m in worker.messages(names["dlq"])] == [envelope(n) for n in range(3)]
        worker.advance(1000)
        assert worker.group_offsets(names["snk"]) == {TopicPartition(names["in"], 0): 3}
    assert written(names["snk"]) == []


@pytest.mark.parametrize(("failures", "survives"), [(3, True), (8, False)])
def test_a_retriable_conversion_failure_is_retried_within_the_retry_timeout(
    make_simulated_worker: Make, names: dict[str, str], failures: int, survives: bool
) -> None:
    worker = make_simulated_worker(CONFIG)
    worker.create_topic(names["in"], 1)
    for n in range(3):
        worker.produce(names["in"], f"v{n}".encode(), partition=0)
    extra = {
        "value.converter": "support.errant_sink.FlakyConverter",
        "value.converter.fail.calls": str(failures),
        "errors.retry.timeout": "5000",
        "errors.retry.delay.max.ms": "1000",
    }
    worker.add_connector(names["snk"], ErrantSinkConnector, {**sink_config(names), **extra})
    worker.advance(250)
    assert WRITTEN[names["snk"]] == [], "the first attempt failed; the next one is 300 ms later"
    worker.advance(6000)  # attempts at 0, 300, 900, 1900, 2900, 3900, 4900 and 5000 ms: the timeout
    if survives:
        assert WRITTEN[names["snk"]] == [b"v0", b"v1", b"v2"]
        assert worker.sink_task(names["snk"]).errors.counters.retries == failures
    else:
        assert worker.task_state(names["snk"]) is State.FAILED
        failure = str(worker.sink_task(names["snk"]).failure)
        converter = "VALUE_CONVERTER with class 'support.errant_sink.FlakyConverter'"
        assert f"{converter} failed for the record at topic" in failure
        assert "schema registry is unavailable" in failure
        assert WRITTEN[names["snk"]] == []
