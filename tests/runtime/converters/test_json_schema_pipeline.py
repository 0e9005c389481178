"""A source's records with their schemas through the JSON Schema converter and a real Schema Registry to a sink in a
running task: the sink gets every value field for field with the schema it was written with; a registry that does
not answer is retried under ``errors.retry.timeout`` and then fails the task naming it."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from headwater.harness import SimulatedWorker
from headwater.runtime.tasks.base import State
from support.databases import free_port
from support.recording_sink import RECEIVED, RecordingSink
from support.schema_source import KEY, ORDER, SchemaSource, order

Make = Callable[..., SimulatedWorker]
COUNT = 6

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def test_records_keep_their_values_and_schemas_through_json_schema(
    make_simulated_worker: Make, schema_registry_url: str, unique_name: str
) -> None:
    converters = {
        "key.converter": "jsonschema",
        "key.converter.schema.registry.url": schema_registry_url,
        "value.converter": "io.confluent.connect.json.JsonSchemaConverter",
        "value.converter.schema.registry.url": schema_registry_url,
    }
    worker = make_simulated_worker()
    topic, sink = f"{unique_name}-orders", f"{unique_name}-sink"
    worker.create_topic(topic, 1)
    worker.add_connector(f"{unique_name}-source", SchemaSource, {**converters, "topic": topic, "count": str(COUNT)})
    worker.add_connector(sink, RecordingSink, {**converters, "topics": topic})
    worker.run_until(lambda: len(RECEIVED.get(sink, [])) >= COUNT, what=f"{COUNT} orders at the sink")
    received = RECEIVED.pop(sink)
    assert [record.value for record in received] == [order(n) for n in range(COUNT)]
    assert [record.key for record in received] == [f"order-{n}" for n in range(COUNT)]
    assert all(record.value_schema == ORDER for record in received)
    assert all(record.key_schema == KEY for record in received)


def test_an_unreachable_registry_is_retried_then_fails_the_task_naming_it(
    make_simulated_worker: Make, unique_name: str
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
            "value.converter": "jsonschema",
            "value.converter.schema.registry.url": url,
            "errors.retry.timeout": "5000",
            "errors.retry.delay.max.ms": "1000",
        },
    )
    worker.run_until(lambda: worker.task_state(unique_name) is not None, what="the task starting")
    started = worker.clock.now_ms()
    worker.run_until(lambda: worker.task_state(unique_name) is State.FAILED, what="the task failing")
    assert worker.clock.now_ms() - started >= 5000, "failed before errors.retry.timeout had passed"
    assert f"cannot reach the Schema Registry at {url}" in str(worker.task(unique_name).failure)
    assert worker.messages(topic) == []
