"""The ``avro`` extra gives the Avro converter, and the core does without it: in a venv with the core and that extra
only (``pip install 'headwater[avro]'``), a record with a Decimal and a Timestamp goes through a real Schema Registry
and reads back equal, by the converter and by confluent-kafka's own ``AvroDeserializer``; in the core venv the
converters import all the same, and configuring the Avro converter names the install command."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from support.venvs import SERVER_STACK, TEST_TOOLS, Venv, Venvs

ROUND_TRIP = """
import datetime, decimal, json, sys
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer
from confluent_kafka.serialization import MessageField, SerializationContext
from headwater.runtime.converters import load_converter
from headwater.sdk.schemas import INT64, STRING, TIMESTAMP, decimal as decimal_schema, optional, struct

url, topic = sys.argv[1:]
ORDER = struct("shop.Order", id=INT64, amount=decimal_schema(2, 10), placed=TIMESTAMP, note=optional(STRING))
VALUE = {
    "id": 7,
    "amount": decimal.Decimal("-12.34"),
    "placed": datetime.datetime(2026, 11, 29, 4, 5, 6, 789000, tzinfo=datetime.timezone.utc),
    "note": None,
}
converter = load_converter("avro", {"schema.registry.url": url}, is_key=False)
try:
    data = converter.from_connect(topic, ORDER, VALUE)
    schema, read = converter.to_connect_data(topic, data)
finally:
    converter.close()
with SchemaRegistryClient({"url": url}) as client:
    theirs = AvroDeserializer(client)(data, SerializationContext(topic, MessageField.VALUE))
print(json.dumps({
    "equal": read == VALUE,
    "fields": {field["field"]: field.get("name", field["type"]) for field in schema["fields"]},
    "ours": {key: repr(value) for key, value in read.items()},
    "confluent": {key: repr(value) for key, value in theirs.items()},
}))
"""

READ = {
    "id": "7",
    "amount": "Decimal('-12.34')",
    "placed": "datetime.datetime(2026, 11, 29, 4, 5, 6, 789000, tzinfo=datetime.timezone.utc)",
    "note": "None",
}
"""The ``repr`` of each field of the record ``ROUND_TRIP`` writes, as it should read back."""

CONFIGURE = """
import json
import headwater.runtime.converters as converters
from headwater.sdk.errors import ConfigError

try:
    converters.load_converter("avro", {"schema.registry.url": "http://127.0.0.1:9/apis/ccompat/v7"}, is_key=False)
except ConfigError as error:
    print(json.dumps({"key": error.key, "message": str(error)}))
else:
    print(json.dumps({"key": None, "message": "configured"}))
"""


def test_the_avro_extra_writes_and_reads_through_the_registry(
    venvs: Venvs, schema_registry_url: str, unique_name: str, tmp_path: Path
) -> None:
    venv = venvs.get("avro", [venvs.headwater("avro")])
    installed = venv.distributions()
    assert {"headwater", "confluent-kafka", "fastavro"} <= installed
    # cryptography comes with the registry client (Authlib, for its OAuth), not with the worker extra
    assert installed & (SERVER_STACK - {"cryptography"} | TEST_TOOLS) == set()

    printed = venv.run([venv.python, "-c", ROUND_TRIP, schema_registry_url, unique_name], cwd=tmp_path)
    result: dict[str, Any] = json.loads(printed)
    assert result["fields"] == {
        "id": "int64",
        "amount": "org.apache.kafka.connect.data.Decimal",
        "placed": "org.apache.kafka.connect.data.Timestamp",
        "note": "string",
    }
    assert result["ours"] == READ
    assert result["equal"] is True
    assert result["confluent"] == READ


def test_the_core_imports_the_converters_and_names_the_avro_extra(core_venv: Venv, tmp_path: Path) -> None:
    assert "fastavro" not in core_venv.distributions()
    result = json.loads(core_venv.python_code(CONFIGURE, cwd=tmp_path))
    assert result["key"] == "value.converter.schema.registry.url"
    assert "pip install 'headwater[avro]'" in result["message"]
