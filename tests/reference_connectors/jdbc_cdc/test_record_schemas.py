"""``record.schemas=connect`` in trigger mode and the snapshot, on SQLite, PostgreSQL and MariaDB: each column type's
schema and its values converted to it (checked writable by fastavro with the Avro schema the Avro converter makes),
the key, row and envelope schemas named by table, one schema object per table version, the columns refused at start,
and PostgreSQL following a column added while the task runs."""

from __future__ import annotations

import datetime
import decimal
import io
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from fastavro import parse_schema, schemaless_writer

from headwater.reference_connectors.jdbc_cdc import CdcConfig, Envelope, TriggerProvisioner, TriggerStream, discover
from headwater.reference_connectors.jdbc_cdc.column_types import ColumnType
from headwater.reference_connectors.jdbc_cdc.database import make_engine
from headwater.reference_connectors.jdbc_cdc.envelope import Change
from headwater.reference_connectors.jdbc_cdc.record_schemas import column_schema
from headwater.reference_connectors.jdbc_cdc.task import record_schemas
from headwater.runtime.converters.avro_data import to_avro, to_datum
from headwater.sdk import ConnectError, SourceRecord
from support.rest_worker import wait_until
from support.scratch import ScratchDatabase

DAY = (datetime.date(2026, 11, 23) - datetime.date(1970, 1, 1)).days
NOON_US = (DAY * 86_400 + 12 * 3600) * 1_000_000
TIME_US = (12 * 3600 + 34 * 60 + 56) * 1_000_000

TYPES: dict[str, tuple[str, str, dict[str, tuple[Any, str | None, Any]]]] = {
    "sqlite": (
        "id INTEGER PRIMARY KEY, n INTEGER NOT NULL DEFAULT 7, amount NUMERIC(10,2), r REAL, flag BOOLEAN, "
        "name VARCHAR(10), body TEXT, bin BLOB, day DATE, ts DATETIME, doc JSON",
        "1, 5, 12.5, 1.5, 1, 'ab', 'text', x'00ff', '2026-11-23', '2026-11-23 12:00:00.123', '{\"a\": 1}'",
        {
            "id": ("int64", None, 1),
            "n": ("int64", None, 5),
            "amount": ("string", None, "12.5"),
            "r": ("double", None, 1.5),
            "flag": ("boolean", None, True),
            "name": ("string", None, "ab"),
            "body": ("string", None, "text"),
            "bin": ("bytes", None, b"\x00\xff"),
            "day": ("int32", "io.debezium.time.Date", DAY),
            "ts": ("int64", "io.debezium.time.MicroTimestamp", NOON_US + 123_000),
            "doc": ("string", "io.debezium.data.Json", '{"a": 1}'),
        },
    ),
    "postgres": (
        "id integer PRIMARY KEY, i2 smallint, i8 bigint NOT NULL DEFAULT 7, amount numeric(10,2), free numeric, "
        "r real, d double precision, flag boolean, name varchar(10), code char(3), bin bytea, day date, t time, "
        "t3 time(3), ttz timetz, ts timestamp, ts3 timestamp(3), tstz timestamptz, span interval, doc jsonb, "
        "u uuid, arr int[], ip inet",
        "1, 2, 3, 12.5, 1.23456789, 1.5, 2.25, true, 'ab', 'ab', '\\x00ff', '2026-11-23', '12:34:56.789123', "
        "'12:34:56.789', '12:34:56+02', '2026-11-23 12:00:00.123456', '2026-11-23 12:00:00.123', "
        "'2026-11-23 06:30:00.5+00', '1 day 02:03:04', '{\"a\": 1.50}', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', "
        "'{1,2}', '10.0.0.1'",
        {
            "id": ("int32", None, 1),
            "i2": ("int16", None, 2),
            "i8": ("int64", None, 3),
            "amount": ("string", None, "12.50"),
            "free": ("string", None, "1.23456789"),
            "r": ("float", None, 1.5),
            "d": ("double", None, 2.25),
            "flag": ("boolean", None, True),
            "name": ("string", None, "ab"),
            "code": ("string", None, "ab "),
            "bin": ("bytes", None, b"\x00\xff"),
            "day": ("int32", "io.debezium.time.Date", DAY),
            "t": ("int64", "io.debezium.time.MicroTime", TIME_US + 789_123),
            "t3": ("int32", "io.debezium.time.Time", (TIME_US + 789_000) // 1000),
            "ttz": ("string", "io.debezium.time.ZonedTime", "10:34:56Z"),
            "ts": ("int64", "io.debezium.time.MicroTimestamp", NOON_US + 123_456),
            "ts3": ("int64", "io.debezium.time.Timestamp", (NOON_US + 123_000) // 1000),
            "tstz": ("string", "io.debezium.time.ZonedTimestamp", "2026-11-23T06:30:00.5Z"),
            "span": ("string", None, "1 day 02:03:04"),
            "doc": ("string", "io.debezium.data.Json", '{"a":1.5}'),
            "u": ("string", "io.debezium.data.Uuid", "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"),
            "arr": ("string", None, "[1,2]"),
            "ip": ("string", None, "10.0.0.1"),
        },
    ),
    "mariadb": (
        "id INT PRIMARY KEY, tiny TINYINT, flag BOOLEAN, small SMALLINT, big BIGINT UNSIGNED, amount DECIMAL(10,2), "
        "f FLOAT, d DOUBLE, name VARCHAR(10), body TEXT, day DATE, t TIME(3), dt DATETIME(3), dt6 DATETIME(6), "
        "ts TIMESTAMP(6) NULL, y YEAR, e ENUM('a','b')",
        "1, -3, 1, 300, 18446744073709551615, 12.5, 1.5, 2.25, 'ab', 'text', '2026-11-23', '12:34:56.789', "
        "'2026-11-23 12:00:00.123', '2026-11-23 12:00:00.123456', '2026-11-23 12:00:00.123456', 2026, 'b'",
        {
            "id": ("int32", None, 1),
            "tiny": ("int8", None, -3),
            "flag": ("int8", None, 1),  # MariaDB's BOOLEAN is TINYINT(1), which holds -128..127 (Debezium: INT8)
            "small": ("int16", None, 300),
            "big": ("bytes", "org.apache.kafka.connect.data.Decimal", decimal.Decimal(18446744073709551615)),
            "amount": ("string", None, "12.50"),
            "f": ("float", None, 1.5),
            "d": ("double", None, 2.25),
            "name": ("string", None, "ab"),
            "body": ("string", None, "text"),
            "day": ("int32", "io.debezium.time.Date", DAY),
            "t": ("int64", "io.debezium.time.MicroTime", TIME_US + 789_000),
            "dt": ("int64", "io.debezium.time.Timestamp", (NOON_US + 123_000) // 1000),
            "dt6": ("int64", "io.debezium.time.MicroTimestamp", NOON_US + 123_456),
            "ts": ("string", None, "2026-11-23 12:00:00.123456"),  # the writing session's zone, not written
            "y": ("int32", "io.debezium.time.Year", 2026),
            "e": ("string", None, "b"),
        },
    ),
}
"""Per database: the columns, one row's values, and per column (schema type, schema name, value in the record)."""


def table_topic(database: ScratchDatabase, table: str = "typed") -> str:
    if database.kind == "sqlite":
        return table
    return f"{'public' if database.kind == 'postgres' else database.name}.{table}"


@contextmanager
def capturing(database: ScratchDatabase, prefix: str, **extra: str) -> Iterator[tuple[TriggerStream, Envelope]]:
    """The trigger-mode stream and envelope of ``typed``, the triggers provisioned as the connector does."""
    config = {
        "connection.url": database.url,
        "topic.prefix": prefix,
        "table.include.list": "typed",
        "record.schemas": "connect",
        **{k.replace("_", "."): v for k, v in extra.items()},
    }
    cdc = CdcConfig.parse(config)
    engine = make_engine(cdc.url)
    try:
        tables = discover(engine, cdc.include, cdc.exclude, internal=[cdc.audit_table])
        schemas = record_schemas(cdc, tables)
        TriggerProvisioner(engine, cdc.audit_table, cdc.decimal_handling).provision(tables)
        stream = TriggerStream(
            engine, cdc.audit_table, tables, None, cdc.snapshot, "t", cdc.decimal_handling, typed=True
        )
        try:
            yield stream, Envelope(cdc.topic_prefix, cdc.mode, None, schemas)
        finally:
            stream.close()
    finally:
        engine.dispose()


def read_changes(stream: TriggerStream, count: int) -> list[tuple[Change, dict[str, Any]]]:
    """Read until ``count`` changes came (the stream returns none, at once, until the watermark passes them)."""
    changes: list[tuple[Change, dict[str, Any]]] = []

    def enough() -> bool:
        changes.extend(stream.read(100))
        return len(changes) >= count

    wait_until(enough, f"{count} changes read")
    return changes


def read(stream: TriggerStream, envelope: Envelope, count: int) -> list[SourceRecord]:
    return [envelope.record(c, {"server": "p"}, o, 1) for c, o in read_changes(stream, count)]


def assert_writable(record: SourceRecord) -> None:
    """The key and value written by fastavro with the Avro schemas of their Connect schemas."""
    for schema, value in ((record.key_schema, record.key), (record.value_schema, record.value)):
        assert schema is not None
        schemaless_writer(io.BytesIO(), parse_schema(to_avro(schema)), to_datum(schema, value))


def fields(schema: Any) -> dict[str, Any]:
    return {f["field"]: f for f in schema["fields"]}


def test_every_column_type_has_its_schema_and_values_convert_to_it(database: ScratchDatabase, prefix: str) -> None:
    columns, values, expected = TYPES[database.kind]
    database.execute(f"CREATE TABLE typed ({columns})", f"INSERT INTO typed VALUES ({values})")
    with capturing(database, prefix) as (stream, envelope):
        database.execute("UPDATE typed SET name = 'cd' WHERE id = 1")
        snapshot, update = read(stream, envelope, 2)
    base = f"{prefix}.{table_topic(database)}".replace("-", "_")
    assert update.value_schema is snapshot.value_schema  # one schema object per table version
    envelope_schema = update.value_schema
    assert envelope_schema is not None and envelope_schema["name"] == f"{base}.Envelope"
    assert list(fields(envelope_schema)) == ["op", "before", "after", "source", "ts_ms"]
    row = fields(envelope_schema)["after"]
    assert row["name"] == f"{base}.Value" and row["optional"] is True
    assert fields(envelope_schema)["before"] == {**row, "field": "before"}
    assert update.key_schema == {
        "type": "struct",
        "optional": False,
        "name": f"{base}.Key",
        "fields": [{**{k: v for k, v in fields(row)["id"].items() if k != "default"}, "optional": False}],
    }
    assert update.key == {"id": 1}
    got = {name: (f["type"], f.get("name"), snapshot.value["after"][name]) for name, f in fields(row).items()}
    assert got == expected
    assert update.value["before"] == snapshot.value["after"]
    assert update.value["after"] == {**snapshot.value["after"], "name": "cd"}
    assert fields(row)["id"]["optional"] is False  # a primary key column, even where SQLite says it is nullable
    for record in (snapshot, update):
        assert_writable(record)


def test_nullability_and_constant_defaults_come_from_the_table(sqlite_database: ScratchDatabase, prefix: str) -> None:
    sqlite_database.execute(
        "CREATE TABLE typed (id INTEGER PRIMARY KEY, n INTEGER NOT NULL DEFAULT 7, s TEXT NOT NULL DEFAULT 'x''y', "
        "m TEXT NOT NULL, o TEXT)"
    )
    with capturing(sqlite_database, prefix) as (stream, envelope):
        sqlite_database.execute("INSERT INTO typed VALUES (1, 2, 'a', 'b', NULL)")
        (record,) = read(stream, envelope, 1)
    assert record.value_schema is not None
    row = fields(fields(record.value_schema)["after"])
    shapes = {name: (f["optional"], f.get("default")) for name, f in row.items()}
    assert shapes == {"id": (False, None), "n": (False, 7), "s": (False, "x'y"), "m": (False, None), "o": (True, None)}
    assert_writable(record)


def test_connect_time_precision_and_precise_decimals(postgres_database: ScratchDatabase, prefix: str) -> None:
    postgres_database.execute(
        "CREATE TABLE typed (id integer PRIMARY KEY, amount numeric(10,2), day date, t time, ts timestamp)",
        "INSERT INTO typed VALUES (1, 12.5, '2026-11-23', '12:34:56.789123', '2026-11-23 12:00:00.123456')",
    )
    with capturing(postgres_database, prefix, time_precision_mode="connect", decimal_handling_mode="precise") as (
        stream,
        envelope,
    ):
        (record,) = read(stream, envelope, 1)
    assert record.value_schema is not None
    row = fields(fields(record.value_schema)["after"])
    assert {name: row[name].get("name") for name in ("amount", "day", "t", "ts")} == {
        "amount": "org.apache.kafka.connect.data.Decimal",
        "day": "org.apache.kafka.connect.data.Date",
        "t": "org.apache.kafka.connect.data.Time",
        "ts": "org.apache.kafka.connect.data.Timestamp",
    }
    assert row["amount"]["parameters"] == {"scale": "2", "connect.decimal.precision": "10"}
    after = record.value["after"]
    assert after["amount"] == decimal.Decimal("12.50") and after["amount"].as_tuple().exponent == -2
    assert after["day"] == datetime.date(2026, 11, 23)
    assert after["t"] == datetime.time(12, 34, 56, 789_000)  # Kafka Connect's Time: milliseconds
    assert after["ts"] == datetime.datetime(2026, 11, 23, 12, 0, 0, 123_000, tzinfo=datetime.UTC)
    assert_writable(record)


def test_a_precise_decimal_with_more_digits_than_its_scale_fails_rather_than_rounds(
    sqlite_database: ScratchDatabase, prefix: str
) -> None:
    sqlite_database.execute("CREATE TABLE typed (id INTEGER PRIMARY KEY, amount NUMERIC(10,2))")
    with capturing(sqlite_database, prefix, decimal_handling_mode="precise") as (stream, envelope):
        sqlite_database.execute("INSERT INTO typed VALUES (1, 12.5)", "INSERT INTO typed VALUES (2, 12.345)")
        changes = read_changes(stream, 2)
        assert envelope.record(changes[0][0], None, {}, 1).value["after"]["amount"] == decimal.Decimal("12.50")
        with pytest.raises(ConnectError, match=r"typed\.amount: the value '12\.345' has more than 2 digits after"):
            envelope.record(changes[1][0], None, {}, 1)


@pytest.mark.parametrize(
    ("value", "why"),
    [
        ("123456789.5", "more than 10 digits"),
        ("NaN", "not a finite decimal"),
        (1.5, "arrived as a JSON number"),
        ("abc", "is not a decimal"),
    ],
)
def test_precise_decimals_refuse_what_a_decimal_of_the_column_cannot_hold(value: Any, why: str) -> None:
    _, convert = column_schema(ColumnType("amount", "decimal", True, 10, 2), "precise", "adaptive", "t.amount")
    with pytest.raises(ValueError, match=why):
        convert(value)


@pytest.mark.parametrize(
    ("kind", "value", "why"),
    [
        ("date", "2026-11-23 BC", "is not a date"),
        ("date", "infinity", "is not a date"),
        ("timestamp", "10000-01-01T00:00:00", "is not a timestamp"),
        ("int32", 1 << 31, "is not an int32 integer"),
        ("int64", "\\x00", "is not an int64 integer"),  # SQLite lets an INTEGER column hold a BLOB
        ("bool", 2, "is not a boolean"),
        ("bytes", "text", "is not binary"),
    ],
)
def test_values_a_schema_cannot_hold_are_refused_never_changed(kind: str, value: Any, why: str) -> None:
    _, convert = column_schema(ColumnType("c", kind), "string", "adaptive", "t.c")
    with pytest.raises(ValueError, match=why):
        convert(value)


def test_postgres_infinity_timestamps_are_debeziums_sentinels() -> None:
    _, convert = column_schema(ColumnType("c", "timestamp"), "string", "adaptive", "t.c")
    assert (convert("infinity"), convert("-infinity")) == (9223372036825200000, -9223372036832400000)
    _, connect = column_schema(ColumnType("c", "timestamp"), "string", "connect", "t.c")
    with pytest.raises(ValueError, match="is not a timestamp"):
        connect("infinity")


def test_an_unconstrained_numeric_is_refused_with_precise_decimals(
    postgres_database: ScratchDatabase, prefix: str
) -> None:
    postgres_database.execute("CREATE TABLE typed (id integer PRIMARY KEY, free numeric)")
    with (
        pytest.raises(ConnectError, match=r"public\.typed\.free: a NUMERIC/DECIMAL column without a declared scale"),
        capturing(postgres_database, prefix, decimal_handling_mode="precise"),
    ):
        pass


@pytest.mark.mariadb
@pytest.mark.parametrize("column", ["bits BIT(4)", "bin VARBINARY(4)", "blob_column BLOB"])
def test_mariadb_binary_columns_are_refused_at_start(
    mariadb_database: ScratchDatabase, prefix: str, column: str
) -> None:
    mariadb_database.execute(f"CREATE TABLE typed (id INT PRIMARY KEY, {column})")
    name = column.split()[0]
    with (
        pytest.raises(ConnectError, match=rf"\.typed\.{name}: a MariaDB/MySQL binary or BIT column"),
        capturing(mariadb_database, prefix),
    ):
        pass


def test_postgres_trigger_mode_follows_a_column_added_while_it_runs(
    postgres_database: ScratchDatabase, prefix: str
) -> None:
    database = postgres_database
    database.execute("CREATE TABLE typed (id integer PRIMARY KEY, name text)")
    with capturing(database, prefix, snapshot_mode="never") as (stream, envelope):
        database.execute("INSERT INTO typed VALUES (1, 'a')")
        database.execute("ALTER TABLE typed ADD COLUMN added integer NOT NULL DEFAULT 7, ADD COLUMN note text")
        database.execute("INSERT INTO typed VALUES (2, 'b', 8, 'n')", "UPDATE typed SET name = 'c' WHERE id = 1")
        first, second, third = read(stream, envelope, 3)
    assert first.value_schema is not None and second.value_schema is not None
    assert list(fields(fields(first.value_schema)["after"])) == ["id", "name"]
    row = fields(fields(second.value_schema)["after"])
    assert {k: (f["type"], f["optional"], f.get("default")) for k, f in row.items()} == {
        "id": ("int32", False, None),
        "name": ("string", True, None),
        "added": ("int32", False, 7),
        "note": ("string", True, None),
    }
    assert second.value["after"] == {"id": 2, "name": "b", "added": 8, "note": "n"}
    assert third.value_schema is second.value_schema
    assert third.value["before"] == {"id": 1, "name": "a", "added": 7, "note": None}
    for record in (first, second, third):
        assert_writable(record)
