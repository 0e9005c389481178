"""The Schema Registry converters' failures in a running task: for each of them, a registry that does not answer is
retried under the task's ``errors.retry.timeout`` and then fails the task naming the registry; under
``errors.tolerance=all`` a message the Avro converter cannot read goes to the dead-letter queue with the reason, and
the rest reach the sink."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from headwater.harness import SimulatedWorker
from headwater.runtime.converters import load_converter
from headwater.runtime.tasks.base import State
from support.databases import free_port
from support.recording_sink import RECEIVED, RecordingSink
from support.schema_source import ORDER, SchemaSource, order

Make = Callable[..., SimulatedWorker]

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


@pytest.mark.parametrize("converter", ["avro", "protobuf", "jsonschema"])
def test_an_unreachable_registry_is_retried_then_fails_the_task_naming_it(
    converter: str, make_simulated_worker: Make, unique_name: str
) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    worker = make_simulated_worker()
    topic = f"{unique_name}-orders"
    worker.create_topic(topic, 1)
    worker.add_connector(
        unique_name,
        SchemaSource,
        {
            "topic": topic,
            "value.converter": converter,
            "value.converter.schema.registry.url": url,
            "errors.retry.timeout": "5000",
            "errors.retry.delay.max.ms": "1000",
        },
    )
    worker.run_until(lambda: worker.task_state(unique_name) is not None, what="the task starting")
    started = worker.clock.now_ms()
    worker.run_until(lambda: worker.task_state(unique_name) is State.FAILED, what="the task failing")
    assert worker.clock.now_ms() - started >= 5000, "failed before errors.retry.timeout had passed"
    trace = str(worker.task(unique_name).failure)
    assert f"cannot reach the Schema Registry at {url}" in trace
    assert worker.messages(topic) == []


def test_an_unreadable_message_goes_to_the_dead_letter_queue_and_the_rest_to_the_sink(
    make_worker: Make, schema_registry_url: str, unique_name: str
) -> None:
    avro = {"value.converter": "avro", "value.converter.schema.registry.url": schema_registry_url}
    topic, dlq, sink = f"{unique_name}-in", f"{unique_name}-dlq", f"{unique_name}-sink"
    worker = make_worker()
    worker.create_topic(topic, 1)
    good = load_converter("avro", {"schema.registry.url": schema_registry_url}, is_key=False)
    try:
        worker.produce(topic, good.from_connect(topic, ORDER, order(1)), partition=0)
        worker.produce(topic, b"\x00" + (2**31 - 7).to_bytes(4, "big") + b"\x02", partition=0)  # no such id
        worker.produce(topic, json.dumps(order(0), default=str).encode(), partition=0)  # no framing
        worker.produce(topic, good.from_connect(topic, ORDER, order(2)), partition=0)
    finally:
        good.close()
    worker.add_connector(
        sink,
        RecordingSink,
        {
            **avro,
            "topics": topic,
            "key.converter": "string",
            "errors.tolerance": "all",
            "errors.deadletterqueue.topic.name": dlq,
            "errors.deadletterqueue.topic.replication.factor": "1",
            "errors.deadletterqueue.context.headers.enable": "true",
        },
    )
    worker.run_until(lambda: len(worker.messages(dlq)) >= 2 and len(RECEIVED.get(sink, [])) >= 2, what="both")
    assert [record.value for record in RECEIVED.pop(sink)] == [order(1), order(2)]
    reasons = [dict(message.headers or ())["__connect.errors.exception.message"] for message in worker.messages(dlq)]
    assert b"could not find the schema of id 2147483641" in reasons[0]
    assert b"unknown magic byte 7b" in reasons[1]
