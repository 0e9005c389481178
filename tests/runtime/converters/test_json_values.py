"""The JSON converter with schemas: a source's values with logical types written as Kafka's JsonConverter writes
them, envelopes a Java worker wrote read as the SDK's values, and the schema handed to the sink."""

from __future__ import annotations

import datetime
import decimal
import json
from collections.abc import Callable

from headwater.harness import SimulatedWorker
from headwater.runtime.converters import JsonConverter, load_converter
from headwater.sdk import AvroSchema
from headwater.sdk.schemas import BYTES, DATE, INT32, STRING, TIME, TIMESTAMP, map_of, struct
from headwater.sdk.schemas import decimal as decimal_schema
from support.recording_sink import RECEIVED, RecordingSink
from support.schema_source import ORDER, SchemaSource, order

Make = Callable[..., SimulatedWorker]
SCHEMA = struct(
    "shop.Line",
    amount=decimal_schema(2),
    day=DATE,
    at_time=TIME,
    placed=TIMESTAMP,
    blob=BYTES,
    codes=map_of(INT32, STRING),
)
VALUE = {
    "amount": decimal.Decimal("12.34"),
    "day": datetime.date(1970, 1, 11),
    "at_time": datetime.time(0, 0, 1, 500000),
    "placed": datetime.datetime(1970, 1, 1, 0, 0, 2, tzinfo=datetime.UTC),
    "blob": b"\x01\x02",
    "codes": {7: "seven"},
}
PAYLOAD = {
    "amount": "BNI=",
    "day": 10,
    "at_time": 1500,
    "placed": 2000,
    "blob": "AQI=",
    "codes": [[7, "seven"]],
}
"""What Kafka's JsonConverter writes for VALUE (decimal.format=BASE64)."""


def converter() -> JsonConverter:
    made = load_converter("json", {}, is_key=False)
    assert isinstance(made, JsonConverter)
    return made


def test_values_with_logical_types_are_written_as_kafkas_json_converter_writes_them() -> None:
    written = json.loads(converter().from_connect("t", SCHEMA, VALUE) or b"")
    assert written == {"schema": SCHEMA, "payload": PAYLOAD}


def test_an_envelope_kafka_wrote_reads_as_the_sdks_values_with_its_schema() -> None:
    envelope = json.dumps({"schema": SCHEMA, "payload": PAYLOAD}).encode()
    assert converter().to_connect_data("t", envelope) == (SCHEMA, VALUE)


def test_a_sources_payload_forms_are_written_as_they_are() -> None:
    written = json.loads(converter().from_connect("t", SCHEMA, PAYLOAD) or b"")
    assert written["payload"] == PAYLOAD


def test_an_avro_schema_is_written_as_its_connect_schema() -> None:
    avro = {"type": "record", "name": "Ping", "namespace": "app", "fields": [{"name": "n", "type": "long"}]}
    written = json.loads(converter().from_connect("t", AvroSchema(avro), {"n": 5}) or b"")
    assert written == {
        "schema": {
            "type": "struct",
            "optional": False,
            "name": "app.Ping",
            "fields": [{"type": "int64", "optional": False, "field": "n"}],
        },
        "payload": {"n": 5},
    }


def test_a_sink_gets_each_value_with_the_schema_it_was_written_with(make_worker: Make, unique_name: str) -> None:
    json_envelopes = {"value.converter": "json", "value.converter.schemas.enable": "true", "key.converter": "string"}
    worker = make_worker()
    topic, sink = f"{unique_name}-orders", f"{unique_name}-sink"
    worker.create_topic(topic, 1)
    worker.add_connector(f"{unique_name}-source", SchemaSource, {**json_envelopes, "topic": topic, "count": "6"})
    worker.add_connector(sink, RecordingSink, {**json_envelopes, "topics": topic})
    worker.run_until(lambda: len(RECEIVED.get(sink, [])) >= 6, what="6 orders at the sink")
    received = RECEIVED.pop(sink)
    assert [record.value for record in received] == [order(n) for n in range(6)]
    assert all(record.value_schema == ORDER for record in received)
