"""The record built-ins' behaviour the parity tests cannot observe through Kafka's JsonConverter (which fills a null
with its schema default on the way in): ``replace.null.with.default`` with schemas. In memory, no JVM."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from headwater.runtime.transforms import build_chain
from headwater.sdk.records import SourceRecord

T = "org.apache.kafka.connect.transforms."
DEFAULTED = {
    "type": "struct",
    "fields": [
        {"field": "ts", "type": "int64", "optional": True, "default": 86_400_000},
        {"field": "s", "type": "string", "optional": True, "default": "dflt"},
    ],
}


def applied(kind: str, settings: dict[str, str], value: Any, schema: dict[str, Any] = DEFAULTED) -> SourceRecord:
    config = {"transforms": "x", "transforms.x.type": T + kind, **{f"transforms.x.{k}": v for k, v in settings.items()}}
    out = build_chain(config).apply(SourceRecord(None, None, "t", value, None, None, 0, (), None, schema))
    assert isinstance(out, SourceRecord)
    return out


@pytest.mark.parametrize(("replace", "expected"), [("true", 1), ("false", None)])
def test_timestamp_converter_converts_a_null_fields_default_unless_told_not_to(replace: str, expected: Any) -> None:
    settings = {"field": "ts", "target.type": "Date", "replace.null.with.default": replace}
    out = applied("TimestampConverter$Value", settings, {"ts": None, "s": "x"})
    assert out.value == {"ts": expected, "s": "x"}  # a Date's payload: epoch days
    assert (
        out.value_schema is not None and out.value_schema["fields"][0]["name"] == "org.apache.kafka.connect.data.Date"
    )


@pytest.mark.parametrize(("replace", "expected"), [("true", "dflt"), ("false", None)])
def test_set_schema_metadata_fills_a_null_field_with_its_default_unless_told_not_to(
    replace: str, expected: Any
) -> None:
    out = applied("SetSchemaMetadata$Value", {"schema.name": "N", "replace.null.with.default": replace}, {"s": None})
    assert out.value == {"s": expected}
    assert out.value_schema is not None and out.value_schema["name"] == "N"


@pytest.mark.parametrize(
    ("replace", "expected"), [("true", [("h", dt.datetime(1970, 1, 2, tzinfo=dt.UTC))]), ("false", [("h", None)])]
)
def test_header_from_takes_a_null_fields_default_unless_told_not_to(replace: str, expected: Any) -> None:
    timestamp = {"type": "int64", "name": "org.apache.kafka.connect.data.Timestamp", "version": 1}
    schema = {"type": "struct", "fields": [{**timestamp, "field": "ts", "optional": True, "default": 86_400_000}]}
    settings = {"fields": "ts", "headers": "h", "operation": "copy", "replace.null.with.default": replace}
    out = applied("HeaderFrom$Value", settings, {"ts": None}, schema)
    assert list(out.headers) == expected
