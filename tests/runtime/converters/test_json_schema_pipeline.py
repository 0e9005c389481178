"""A source's records with their schemas through the JSON Schema converter and a real Schema Registry to a sink in a
running task: the sink gets every value field for field with the schema it was written with (an unreachable registry:
test_registry_failures.py)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from headwater.harness import SimulatedWorker
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
