"""A source's records with their schemas through the Protobuf converter and a real Schema Registry to a sink, on the
in-memory transport and on a real broker: the sink gets every value field for field (a null string as proto3's
empty string, as Confluent's ProtobufConverter reads it), with the Connect schema the message reads as."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from headwater.harness import SimulatedWorker
from support.recording_sink import RECEIVED, RecordingSink
from support.schema_source import SchemaSource, order

Make = Callable[..., SimulatedWorker]
COUNT = 12

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def test_records_keep_their_values_through_protobuf(
    make_worker: Make, schema_registry_url: str, unique_name: str
) -> None:
    protobuf = {
        "key.converter": "string",
        "value.converter": "io.confluent.connect.protobuf.ProtobufConverter",
        "value.converter.schema.registry.url": schema_registry_url,
    }
    worker = make_worker()
    topic, sink = f"{unique_name}-orders", f"{unique_name}-sink"
    worker.create_topic(topic, 1)
    worker.add_connector(f"{unique_name}-source", SchemaSource, {**protobuf, "topic": topic, "count": str(COUNT)})
    worker.add_connector(sink, RecordingSink, {**protobuf, "topics": topic})
    worker.run_until(lambda: len(RECEIVED.get(sink, [])) >= COUNT, what=f"{COUNT} orders at the sink")

    received = RECEIVED.pop(sink)
    expected = [{**order(n), "note": order(n)["note"] or ""} for n in range(COUNT)]
    assert [record.value for record in received] == expected
    assert [record.key for record in received] == [f"order-{n}" for n in range(COUNT)]
    schema = received[0].value_schema
    assert schema is not None and schema["name"] == "Order"
    assert [field["field"] for field in schema["fields"]] == list(order(0))
    assert all(record.value_schema == schema for record in received)
