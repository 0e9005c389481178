from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import pytest

from headwater.runtime.converters import (
    ByteArrayConverter,
    JsonConverter,
    SimpleHeaderConverter,
    StringConverter,
    converter_config,
    infer_schema,
    load_converter,
    load_header_converter,
)
from headwater.sdk.errors import ConfigError, ConnectError


def json_converter(schemas_enable: str = "true") -> JsonConverter:
    converter = JsonConverter()
    converter.configure({"schemas.enable": schemas_enable}, False)
    return converter


class UpperConverter:
    """A converter loaded by import path in the tests below."""

    def __init__(self) -> None:
        self.is_key: bool | None = None

    def configure(self, config: Mapping[str, Any], is_key: bool) -> None:
        self.is_key = is_key

    def from_connect(self, topic: str, schema: Mapping[str, Any] | None, value: Any) -> bytes | None:
        return None if value is None else str(value).upper().encode()

    def to_connect(self, topic: str, data: bytes | None) -> Any:
        return None if data is None else data.decode().lower()


class ConfiguredHeaderConverter:
    def __init__(self) -> None:
        self.config: Mapping[str, Any] = {}

    def configure(self, config: Mapping[str, Any]) -> None:
        self.config = config

    def from_connect(self, topic: str, header_key: str, value: Any) -> bytes | None:
        return f"{header_key}={value}".encode()

    def to_connect(self, topic: str, header_key: str, data: bytes | None) -> Any:
        return data


class NeedsArguments:
    def __init__(self, required: str) -> None:
        self.required = required

    def configure(self, config: Mapping[str, Any], is_key: bool) -> None:
        pass

    def from_connect(self, topic: str, schema: Mapping[str, Any] | None, value: Any) -> bytes | None:
        return None

    def to_connect(self, topic: str, data: bytes | None) -> Any:
        return None


NOT_A_CONVERTER = 42


# ByteArrayConverter


def test_byte_array_passes_bytes_through_as_the_same_object() -> None:
    data = b"\x00\xffraw"
    converter = ByteArrayConverter()
    assert converter.from_connect("t", None, data) is data
    assert converter.to_connect("t", data) is data


@pytest.mark.parametrize("value", [bytearray(b"abc"), memoryview(b"abc")])
def test_byte_array_copies_other_bytes_like_values_to_bytes(value: bytearray | memoryview) -> None:
    converted = ByteArrayConverter().from_connect("t", None, value)
    assert converted == b"abc"
    assert type(converted) is bytes


def test_byte_array_keeps_none() -> None:
    converter = ByteArrayConverter()
    assert converter.from_connect("t", None, None) is None
    assert converter.to_connect("t", None) is None


def test_byte_array_rejects_other_types_naming_topic_and_type() -> None:
    with pytest.raises(ConnectError, match=r"'orders'.*str"):
        ByteArrayConverter().from_connect("orders", None, "text")


# StringConverter


def test_string_round_trips_utf8() -> None:
    converter = StringConverter()
    converter.configure({}, False)
    assert converter.from_connect("t", None, "héllo ✓") == "héllo ✓".encode()
    assert converter.to_connect("t", "héllo ✓".encode()) == "héllo ✓"


def test_string_writes_other_values_with_str() -> None:
    converter = StringConverter()
    assert converter.from_connect("t", None, 42) == b"42"
    assert converter.from_connect("t", None, 1.5) == b"1.5"


def test_string_keeps_none() -> None:
    converter = StringConverter()
    assert converter.from_connect("t", None, None) is None
    assert converter.to_connect("t", None) is None


def test_string_uses_the_configured_encoding() -> None:
    converter = StringConverter()
    converter.configure({"converter.encoding": "utf-16-le"}, True)
    assert converter.from_connect("t", None, "hé") == "hé".encode("utf-16-le")
    assert converter.to_connect("t", "hé".encode("utf-16-le")) == "hé"


def test_string_errors_name_the_topic() -> None:
    converter = StringConverter()
    converter.configure({"converter.encoding": "ascii"}, False)
    with pytest.raises(ConnectError, match="'prices'"):
        converter.from_connect("prices", None, "€")
    with pytest.raises(ConnectError, match="'prices'"):
        converter.to_connect("prices", b"\xff")


def test_string_rejects_an_unknown_encoding() -> None:
    with pytest.raises(ConfigError, match="no-such-codec") as caught:
        StringConverter().configure({"converter.encoding": "no-such-codec"}, False)
    assert caught.value.key == "converter.encoding"


# JsonConverter without schemas


def test_json_schemaless_writes_compact_utf8() -> None:
    converter = json_converter("false")
    assert converter.from_connect("t", None, {"a": [1, 2.5, True, None], "b": "é"}) == (
        '{"a":[1,2.5,true,null],"b":"é"}'.encode()
    )


def test_json_schemaless_round_trips() -> None:
    converter = json_converter("false")
    value = {"name": "x", "n": 3, "items": [{"k": None}], "ok": False}
    data = converter.from_connect("t", None, value)
    assert data is not None
    assert converter.to_connect("t", data) == value


def test_json_schemaless_writes_bytes_as_base64_and_reads_them_back_as_strings() -> None:
    converter = json_converter("false")
    data = converter.from_connect("t", None, {"blob": b"\x00\x01\xff"})
    assert data == b'{"blob":"AAH/"}'
    assert converter.to_connect("t", data) == {"blob": "AAH/"}


def test_json_keeps_tombstones() -> None:
    for converter in (json_converter("true"), json_converter("false")):
        assert converter.from_connect("t", None, None) is None
        assert converter.to_connect("t", None) is None


def test_json_rejects_invalid_json_naming_the_topic() -> None:
    for converter in (json_converter("true"), json_converter("false")):
        with pytest.raises(ConnectError, match="'events'"):
            converter.to_connect("events", b"{not json")


@pytest.mark.parametrize("value", [object(), {"x": {1, 2}}, float("nan")])
def test_json_rejects_values_it_cannot_write_naming_the_topic(value: Any) -> None:
    for converter in (json_converter("true"), json_converter("false")):
        with pytest.raises(ConnectError, match="'events'"):
            converter.from_connect("events", None, value)


# JsonConverter with schemas


def test_json_schemas_are_enabled_by_default() -> None:
    assert JsonConverter().from_connect("t", None, 1) == b'{"schema":{"type":"int64","optional":false},"payload":1}'


def test_json_envelope_of_a_dict_matches_kafka_byte_for_byte() -> None:
    # Kafka's JsonConverter writes "type", then "fields"/"items", then "optional", then a struct field's name.
    assert json_converter().from_connect("t", None, {"a": 1}) == (
        b'{"schema":{"type":"struct","fields":[{"type":"int64","optional":true,"field":"a"}],"optional":false},'
        b'"payload":{"a":1}}'
    )


@pytest.mark.parametrize(
    ("value", "schema"),
    [
        (True, {"type": "boolean", "optional": False}),
        (7, {"type": "int64", "optional": False}),
        (0.5, {"type": "double", "optional": False}),
        ("s", {"type": "string", "optional": False}),
        (b"b", {"type": "bytes", "optional": False}),
        ([1, 2], {"type": "array", "items": {"type": "int64", "optional": False}, "optional": False}),
        ([], {"type": "array", "items": {"type": "string", "optional": False}, "optional": False}),
        ([None, "x"], {"type": "array", "items": {"type": "string", "optional": True}, "optional": False}),
        (
            {"n": None, "inner": {"f": 1.0}},
            {
                "type": "struct",
                "fields": [
                    {"type": "string", "optional": True, "field": "n"},
                    {
                        "type": "struct",
                        "fields": [{"type": "double", "optional": True, "field": "f"}],
                        "optional": True,
                        "field": "inner",
                    },
                ],
                "optional": False,
            },
        ),
    ],
)
def test_json_infers_connect_schemas(value: Any, schema: dict[str, Any]) -> None:
    assert infer_schema(value) == schema
    data = json_converter().from_connect("t", None, value)
    assert data is not None
    assert json.loads(data)["schema"] == schema


def test_json_inferred_schema_keeps_key_order_of_kafka() -> None:
    assert list(infer_schema([{"a": 1}])) == ["type", "items", "optional"]
    assert list(infer_schema({"a": 1})["fields"][0]) == ["type", "optional", "field"]


def test_json_rejects_struct_field_names_that_are_not_strings() -> None:
    with pytest.raises(ConnectError, match=r"'t'.*field names must be strings"):
        json_converter().from_connect("t", None, {1: "one"})


def test_json_writes_the_given_schema_instead_of_inferring_one() -> None:
    schema = {"type": "int32", "optional": True, "name": "count"}
    data = json_converter().from_connect("t", schema, 5)
    assert data == b'{"schema":{"type":"int32","optional":true,"name":"count"},"payload":5}'


def test_json_writes_a_null_payload_when_a_schema_is_given() -> None:
    schema = {"type": "string", "optional": True}
    data = json_converter().from_connect("t", schema, None)
    assert data == b'{"schema":{"type":"string","optional":true},"payload":null}'
    assert json_converter().to_connect("t", data) is None
    assert json_converter().to_connect("t", b'{"schema":null,"payload":null}') is None


def test_json_with_schemas_round_trips_bytes_at_every_depth() -> None:
    converter = json_converter()
    value = {"blob": b"\x00\xff", "list": [b"a", b"bc"], "nested": {"raw": b"\x01"}, "text": "AAH/"}
    data = converter.from_connect("t", None, value)
    assert data is not None
    assert json.loads(data)["payload"]["blob"] == "AP8="
    assert converter.to_connect("t", data) == value


def test_json_decodes_bytes_inside_maps_written_by_kafka() -> None:
    converter = json_converter()
    string_keys = {
        "schema": {"type": "map", "keys": {"type": "string"}, "values": {"type": "bytes"}},
        "payload": {"k": "AQI="},
    }
    assert converter.to_connect("t", json.dumps(string_keys).encode()) == {"k": b"\x01\x02"}
    bytes_keys = {
        "schema": {"type": "map", "keys": {"type": "bytes"}, "values": {"type": "int32"}},
        "payload": [["AQI=", 7]],
    }
    assert converter.to_connect("t", json.dumps(bytes_keys).encode()) == {b"\x01\x02": 7}


def test_json_leaves_payloads_without_bytes_as_parsed() -> None:
    data = b'{"schema":{"type":"string","optional":false},"payload":"AQI="}'
    assert json_converter().to_connect("t", data) == "AQI="


def test_json_rejects_bad_base64_for_a_bytes_schema_naming_the_topic() -> None:
    with pytest.raises(ConnectError, match="'blobs'"):
        json_converter().to_connect("blobs", b'{"schema":{"type":"bytes"},"payload":"not base64!"}')


@pytest.mark.parametrize(
    "data",
    [b'{"a":1}', b"[1,2]", b'"text"', b'{"schema":null}', b'{"schema":null,"payload":1,"extra":2}'],
)
def test_json_with_schemas_requires_exactly_schema_and_payload(data: bytes) -> None:
    with pytest.raises(ConnectError, match=r'requires "schema" and "payload" fields.*\'plain\'') as caught:
        json_converter().to_connect("plain", data)
    assert "schemas.enable=false" in str(caught.value)


def test_json_without_schemas_reads_an_envelope_as_plain_json() -> None:
    data = b'{"schema":{"type":"bytes"},"payload":"AQI="}'
    assert json_converter("false").to_connect("t", data) == {"schema": {"type": "bytes"}, "payload": "AQI="}


@pytest.mark.parametrize(("raw", "expected"), [("TRUE", True), ("False", False), (" false ", False), (False, False)])
def test_json_parses_schemas_enable(raw: Any, expected: bool) -> None:
    converter = JsonConverter()
    converter.configure({"schemas.enable": raw}, False)
    assert converter.schemas_enable is expected


# SimpleHeaderConverter


def test_header_converter_writes_bytes_strings_and_json() -> None:
    converter = SimpleHeaderConverter()
    converter.configure({})
    data = b"\xff\x00"
    assert converter.from_connect("t", "h", data) is data
    assert converter.from_connect("t", "h", bytearray(b"ab")) == b"ab"
    assert converter.from_connect("t", "h", "héllo") == "héllo".encode()
    assert converter.from_connect("t", "h", {"a": [1, True, None], "é": 1.5}) == '{"a":[1,true,null],"é":1.5}'.encode()
    assert converter.from_connect("t", "h", 12) == b"12"
    assert converter.from_connect("t", "h", None) is None


def test_header_converter_reads_utf8_as_str_and_other_bytes_raw() -> None:
    converter = SimpleHeaderConverter()
    assert converter.to_connect("t", "h", "héllo".encode()) == "héllo"
    assert converter.to_connect("t", "h", b"\xff\x00") == b"\xff\x00"
    assert converter.to_connect("t", "h", None) is None


def test_header_converter_errors_name_topic_and_header() -> None:
    with pytest.raises(ConnectError, match=r"'trace-id'.*'orders'"):
        SimpleHeaderConverter().from_connect("orders", "trace-id", object())


# converter_config


def test_converter_config_strips_the_prefix_and_keeps_only_its_keys() -> None:
    props = {
        "value.converter": "json",
        "value.converter.schemas.enable": "false",
        "value.converter.converter.encoding": "utf-8",
        "key.converter.schemas.enable": "true",
        "value.converterx": "no",
    }
    assert converter_config(props, "value.converter") == {"schemas.enable": "false", "converter.encoding": "utf-8"}
    assert converter_config(props, "header.converter") == {}


# load_converter


@pytest.mark.parametrize(
    ("spec", "cls"),
    [
        ("bytes", ByteArrayConverter),
        ("STRING", StringConverter),
        (" Json ", JsonConverter),
        ("org.apache.kafka.connect.converters.ByteArrayConverter", ByteArrayConverter),
        ("org.apache.kafka.connect.storage.StringConverter", StringConverter),
        ("org.apache.kafka.connect.json.JsonConverter", JsonConverter),
        ("headwater.runtime.converters:JsonConverter", JsonConverter),
        ("headwater.runtime.converters.StringConverter", StringConverter),
    ],
)
def test_load_converter_by_alias_kafka_class_or_import_path(spec: str, cls: type) -> None:
    assert type(load_converter(spec, {}, is_key=False)) is cls


def test_load_converter_configures_the_converter() -> None:
    converter = load_converter("json", {"schemas.enable": "false"}, is_key=True, key="key.converter")
    assert converter.from_connect("t", None, {"a": 1}) == b'{"a":1}'


def test_load_converter_loads_and_configures_a_user_class() -> None:
    converter = load_converter(f"{__name__}:UpperConverter", {}, is_key=True)
    assert isinstance(converter, UpperConverter)
    assert converter.is_key is True
    assert converter.from_connect("t", None, "abc") == b"ABC"


@pytest.mark.parametrize(
    "spec",
    [
        "org.apache.kafka.connect.storage.SimpleHeaderConverter",
        "headwater.runtime.converters:NoSuchConverter",
        f"{__name__}:NOT_A_CONVERTER",
        f"{__name__}:NeedsArguments",
    ],
)
def test_load_converter_rejects_a_bad_spec_naming_key_and_value(spec: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load_converter(spec, {}, is_key=True, key="key.converter")
    assert caught.value.key == "key.converter"
    assert caught.value.value == spec
    assert f"Invalid value {spec!r} for configuration key.converter" in str(caught.value)


def test_load_converter_names_the_full_key_of_a_bad_setting() -> None:
    with pytest.raises(ConfigError) as caught:
        load_converter("json", {"schemas.enable": "yes"}, is_key=False)
    assert caught.value.key == "value.converter.schemas.enable"
    assert "'yes'" in str(caught.value)
    assert "value.converter.schemas.enable" in str(caught.value)


# load_header_converter


@pytest.mark.parametrize("spec", ["org.apache.kafka.connect.storage.SimpleHeaderConverter", "Simple"])
def test_load_header_converter_by_kafka_class_or_alias(spec: str) -> None:
    assert type(load_header_converter(spec, {})) is SimpleHeaderConverter


def test_load_header_converter_accepts_value_converters_like_kafka() -> None:
    strings = load_header_converter("org.apache.kafka.connect.storage.StringConverter", {})
    assert strings.from_connect("t", "h", 5) == b"5"
    assert strings.to_connect("t", "h", b"5") == "5"
    schemaless = load_header_converter("json", {"schemas.enable": "false"})
    assert schemaless.from_connect("t", "h", {"a": b"\x01"}) == b'{"a":"AQ=="}'
    assert schemaless.to_connect("t", "h", b"[1]") == [1]


def test_load_header_converter_loads_and_configures_a_user_class() -> None:
    converter = load_header_converter(f"{__name__}.ConfiguredHeaderConverter", {"x": "1"})
    assert isinstance(converter, ConfiguredHeaderConverter)
    assert converter.config == {"x": "1"}
    assert converter.from_connect("t", "k", "v") == b"k=v"


def test_load_header_converter_errors_name_the_key() -> None:
    with pytest.raises(ConfigError, match=r"Invalid value 'nope' for configuration header\.converter"):
        load_header_converter("nope", {})
    with pytest.raises(ConfigError) as caught:
        load_header_converter("json", {"schemas.enable": "maybe"})
    assert caught.value.key == "header.converter.schemas.enable"
