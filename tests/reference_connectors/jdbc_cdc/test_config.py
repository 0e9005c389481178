"""The CDC connector's config: defaults, derived names, and the values it refuses."""

from __future__ import annotations

import pytest

from headwater.reference_connectors.jdbc_cdc import CdcConfig, Change, Envelope
from headwater.reference_connectors.jdbc_cdc.tables import CapturedTable
from headwater.sdk import ConfigError

URL = {"connection.url": "sqlite:///tmp/x.db"}


def test_defaults_derive_names_from_the_connector() -> None:
    config = CdcConfig.parse({"name": "Shop CDC", **URL})
    assert (config.mode, config.snapshot, config.topic_prefix) == ("trigger", True, "Shop CDC")
    assert config.audit_table == config.slot == config.publication == "headwater_cdc_shop_cdc"
    assert config.decimal_handling == "string"
    assert CdcConfig.parse({**URL, "decimal.handling.mode": "DOUBLE"}).decimal_handling == "double"


@pytest.mark.parametrize(
    ("key", "value", "reason"),
    [
        ("connection.url", "not a url", "SQLAlchemy URL"),
        ("capture.mode", "binlog", "capture.mode"),
        ("table.include.list", "orders,(", "not a regular expression"),
        ("audit.table.name", "Audit-Table", "lower-case"),
        ("snapshot.mode", "always", "snapshot.mode"),
        ("decimal.handling.mode", "exact", "decimal.handling.mode: String must be one of: string, double, precise"),
        ("decimal.handling.mode", "precise", "decimal.handling.mode: precise needs record.schemas=connect"),
        ("record.schemas", "avro", "record.schemas: String must be one of: none, connect"),
        ("time.precision.mode", "connect", "time.precision.mode applies to record schemas only"),
        ("time.precision.mode", "adaptive_time_microseconds", "String must be one of: adaptive, connect"),
    ],
)
def test_bad_values_are_refused_naming_the_key(key: str, value: str, reason: str) -> None:
    with pytest.raises(ConfigError, match=reason):
        CdcConfig.parse({**URL, key: value})


def test_the_envelope_keys_by_primary_key_and_names_the_topic_by_table() -> None:
    table = CapturedTable("public", "orders", ("id", "item"), ("id",))
    change = Change(table, "d", {"id": 4, "item": "x"}, None, 1_000, lsn=77, txid=9)
    record = Envelope("shop", "log", "db").record(change, {"server": "shop"}, {"lsn": 77}, 2_000)
    assert (record.topic, record.key, record.timestamp) == ("shop.public.orders", {"id": 4}, 1_000)
    assert record.value["op"] == "d" and record.value["after"] is None and record.value["ts_ms"] == 2_000
    assert record.value["source"] == {
        "connector": "jdbc-cdc",
        "name": "shop",
        "mode": "log",
        "db": "db",
        "schema": "public",
        "table": "orders",
        "change_id": None,
        "lsn": 77,
        "txid": 9,
        "snapshot": False,
        "ts_ms": 1_000,
    }
    keyless = CapturedTable(None, "log", ("line",), ())
    assert Envelope("p", "trigger", None).record(Change(keyless, "c", None, {"line": 1}, None), None, {}, 5).key is None


def test_record_schemas_are_off_by_default_and_switch_on_the_typed_modes() -> None:
    config = CdcConfig.parse(URL)
    assert (config.record_schemas, config.time_precision) == ("none", "adaptive")
    typed = {**URL, "record.schemas": "connect", "time.precision.mode": "connect", "decimal.handling.mode": "precise"}
    parsed = CdcConfig.parse(typed)
    assert (parsed.record_schemas, parsed.time_precision, parsed.decimal_handling) == ("connect", "connect", "precise")


@pytest.mark.parametrize(
    "converters",
    [
        {"key.converter": "bytes", "value.converter": "bytes"},
        {"value.converter": "org.apache.kafka.connect.converters.ByteArrayConverter"},
        {"key.converter": "bytes", "value.converter": "avro"},
    ],
)
def test_record_schemas_are_refused_with_the_bytes_converters_naming_both_keys(converters: dict[str, str]) -> None:
    with pytest.raises(ConfigError, match=r"record\.schemas.*bytes converters \(.*converter=") as refused:
        CdcConfig.parse({**URL, "record.schemas": "connect", **converters})
    for key, value in converters.items():
        assert f"{key}={value}" in str(refused.value)
