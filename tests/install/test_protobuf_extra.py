"""The ``protobuf`` extra gives the Protobuf converter, and the core does without it: in a venv with the core and
that extra only (``pip install 'headwater[protobuf]'``), a record with a Decimal, a Date and a Timestamp goes through
a real Schema Registry (its ``.proto`` text compiled by the extra's protoc) and reads back equal; in the core venv
configuring the Protobuf converter names the install command."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from support.venvs import SERVER_STACK, TEST_TOOLS, Venv, Venvs

ROUND_TRIP = """
import datetime, decimal, json, sys
from headwater.runtime.converters import load_converter
from headwater.sdk.schemas import DATE, INT64, STRING, TIMESTAMP, decimal as decimal_schema, optional, struct

url, topic = sys.argv[1:]
ORDER = struct("shop.Order", id=INT64, amount=decimal_schema(2, 10), day=DATE, placed=TIMESTAMP, note=optional(STRING))
VALUE = {
    "id": 7,
    "amount": decimal.Decimal("-12.34"),
    "day": datetime.date(2026, 11, 29),
    "placed": datetime.datetime(2026, 11, 29, 4, 5, 6, 789000, tzinfo=datetime.timezone.utc),
    "note": "fragile",
}
writer = load_converter("protobuf", {"schema.registry.url": url}, is_key=False)
reader = load_converter("protobuf", {"schema.registry.url": url}, is_key=False)
try:
    data = writer.from_connect(topic, ORDER, VALUE)
    schema, read = reader.to_connect_data(topic, data)
finally:
    writer.close()
    reader.close()
print(json.dumps({
    "equal": read == VALUE,
    "fields": {field["field"]: field.get("name", field["type"]) for field in schema["fields"]},
}))
"""

CONFIGURE = """
import json
import headwater.runtime.converters as converters
from headwater.sdk.errors import ConfigError

try:
    converters.load_converter("protobuf", {"schema.registry.url": "http://127.0.0.1:9/apis/ccompat/v7"}, is_key=False)
except ConfigError as error:
    print(json.dumps({"key": error.key, "message": str(error)}))
else:
    print(json.dumps({"key": None, "message": "configured"}))
"""


def test_the_protobuf_extra_writes_and_reads_through_the_registry(
    venvs: Venvs, schema_registry_url: str, unique_name: str, tmp_path: Path
) -> None:
    venv = venvs.get("protobuf", [venvs.headwater("protobuf")])
    installed = venv.distributions()
    assert {"headwater", "confluent-kafka", "protobuf", "grpcio-tools", "googleapis-common-protos"} <= installed
    # cryptography comes with the registry client (Authlib, for its OAuth), not with the worker extra
    assert installed & (SERVER_STACK - {"cryptography"} | TEST_TOOLS) == set()

    printed = venv.run([venv.python, "-c", ROUND_TRIP, schema_registry_url, unique_name], cwd=tmp_path)
    result: dict[str, Any] = json.loads(printed)
    assert result["fields"] == {
        "id": "int64",
        "amount": "org.apache.kafka.connect.data.Decimal",
        "day": "org.apache.kafka.connect.data.Date",
        "placed": "org.apache.kafka.connect.data.Timestamp",
        "note": "string",
    }
    assert result["equal"] is True


def test_the_core_names_the_protobuf_extra(core_venv: Venv, tmp_path: Path) -> None:
    assert "grpcio-tools" not in core_venv.distributions()
    result = json.loads(core_venv.python_code(CONFIGURE, cwd=tmp_path))
    assert result["key"] == "value.converter.schema.registry.url"
    assert "pip install 'headwater[protobuf]'" in result["message"]
