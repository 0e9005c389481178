"""Each Schema Registry extra gives its converter, and the core does without them: in a venv with the core and one
extra only (``pip install 'headwater[avro]'``, ``[protobuf]``, ``[jsonschema]``), a record with a Decimal and a
Timestamp goes through a real Schema Registry and reads back equal, by the converter and by confluent-kafka's own
deserializer for the format (Protobuf's by the converter alone: confluent-kafka's deserializer cannot fetch a schema
importing Confluent's types from this registry, see docs/schema-registry.md); in the core venv the converters import
all the same, and configuring one names its install command."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from support.venvs import SERVER_STACK, TEST_TOOLS, Venv, Venvs

ROUND_TRIP = """
import datetime, decimal, json, sys
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.serialization import MessageField, SerializationContext
from headwater.runtime.converters import load_converter
from headwater.sdk.schemas import INT64, STRING, TIMESTAMP, decimal as decimal_schema, optional, struct

converter_name, url, topic = sys.argv[1:]
ORDER = struct("shop.Order", id=INT64, amount=decimal_schema(2, 10), placed=TIMESTAMP, note=optional(STRING))
VALUE = {
    "id": 7,
    "amount": decimal.Decimal("-12.34"),
    "placed": datetime.datetime(2026, 11, 29, 4, 5, 6, 789000, tzinfo=datetime.timezone.utc),
    "note": "fragile",
}
converter = load_converter(converter_name, {"schema.registry.url": url}, is_key=False)
try:
    data = converter.from_connect(topic, ORDER, VALUE)
    schema, read = converter.to_connect_data(topic, data)
finally:
    converter.close()
with SchemaRegistryClient({"url": url}) as client:
    context = SerializationContext(topic, MessageField.VALUE)
    if converter_name == "protobuf":
        theirs = None
    elif converter_name == "avro":
        from confluent_kafka.schema_registry.avro import AvroDeserializer

        theirs = AvroDeserializer(client)(data, context)
    else:
        from confluent_kafka.schema_registry.json_schema import JSONDeserializer

        theirs = JSONDeserializer(None, schema_registry_client=client)(data, context)
print(json.dumps({
    "equal": read == VALUE,
    "fields": {field["field"]: field.get("name", field["type"]) for field in schema["fields"]},
    "ours": {key: repr(value) for key, value in read.items()},
    "confluent": theirs and {key: repr(value) for key, value in theirs.items()},
}))
"""

OURS = {
    "id": "7",
    "amount": "Decimal('-12.34')",
    "placed": "datetime.datetime(2026, 11, 29, 4, 5, 6, 789000, tzinfo=datetime.timezone.utc)",
    "note": "'fragile'",
}
"""The ``repr`` of each field of the record ``ROUND_TRIP`` writes, as it should read back."""
THEIRS = {
    "avro": OURS,
    # Confluent's JSON deserializer gives the JSON as it is: the Decimal in base64 (decimal.format=BASE64, the
    # default) and the Timestamp in epoch milliseconds
    "jsonschema": {"id": "7", "amount": "'+y4='", "placed": "1795925106789", "note": "'fragile'"},
    "protobuf": None,
}
"""The same fields as confluent-kafka's own deserializer for the format reads them."""
EXTRAS = {
    "avro": ("fastavro",),
    "jsonschema": ("jsonschema",),
    "protobuf": ("grpcio-tools", "googleapis-common-protos"),
}
"""Each extra and the distributions it brings beside confluent-kafka."""

CONFIGURE = """
import json, sys
import headwater.runtime.converters as converters
from headwater.sdk.errors import ConfigError

try:
    converters.load_converter(sys.argv[1], {"schema.registry.url": "http://127.0.0.1:9/apis/ccompat/v7"}, is_key=False)
except ConfigError as error:
    print(json.dumps({"key": error.key, "message": str(error)}))
else:
    print(json.dumps({"key": None, "message": "configured"}))
"""


@pytest.mark.parametrize("extra", EXTRAS)
def test_each_extra_writes_and_reads_through_the_registry(
    extra: str, venvs: Venvs, schema_registry_url: str, unique_name: str, tmp_path: Path
) -> None:
    venv = venvs.get(extra, [venvs.headwater(extra)])
    installed = venv.distributions()
    assert {"headwater", "confluent-kafka", *EXTRAS[extra]} <= installed
    assert installed & {other for name, brings in EXTRAS.items() if name != extra for other in brings} == set()
    # cryptography comes with the registry client (Authlib, for its OAuth), not with the worker extra
    assert installed & (SERVER_STACK - {"cryptography"} | TEST_TOOLS) == set()

    printed = venv.run([venv.python, "-c", ROUND_TRIP, extra, schema_registry_url, unique_name], cwd=tmp_path)
    result: dict[str, Any] = json.loads(printed)
    assert result["fields"] == {
        "id": "int64",
        "amount": "org.apache.kafka.connect.data.Decimal",
        "placed": "org.apache.kafka.connect.data.Timestamp",
        "note": "string",
    }
    assert result["ours"] == OURS
    assert result["equal"] is True
    assert result["confluent"] == THEIRS[extra]


@pytest.mark.parametrize("extra", EXTRAS)
def test_the_core_imports_the_converters_and_names_the_extra(extra: str, core_venv: Venv, tmp_path: Path) -> None:
    assert core_venv.distributions() & set(EXTRAS[extra]) == set()
    result = json.loads(core_venv.run([core_venv.python, "-c", CONFIGURE, extra], cwd=tmp_path))
    assert result["key"] == "value.converter.schema.registry.url"
    assert f"pip install 'headwater[{extra}]'" in result["message"]
