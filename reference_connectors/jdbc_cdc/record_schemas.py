"""Kafka Connect schemas of the change events (``record.schemas=connect``), and the values that fit them.

Per captured table *version* (its columns as the inspector or the latest ``pgoutput`` Relation message describe
them) the connector builds, once, and hands the same objects with every record (so the Avro converter's writer cache
hits):

- the key: a struct ``<prefix>.<schema>.<table>.Key`` of the primary key columns (none without a primary key);
- the row: an optional struct ``<prefix>.<schema>.<table>.Value``, the schema of both ``before`` and ``after``;
- the envelope: a struct ``<prefix>.<schema>.<table>.Envelope`` of ``op``, ``before``, ``after``, ``source``
  (:data:`SOURCE`, this connector's fields, not Debezium's) and ``ts_ms``, in the order the events have them.

Names follow Debezium's (``TableSchemaBuilder``: ``<topic prefix>.<schema>.<table>.Key``/``.Value``, the envelope
``.Envelope``), with each dotted part and each field name made a valid Avro name (other characters as ``_``, a
leading digit after ``_``), as Debezium's ``schema.name.adjustment.mode=avro`` does. The column types map as
Debezium's defaults map them (its PostgreSQL and MySQL connectors' "Data type mappings"), except where the images
cannot carry what the type needs (see ``docs/jdbc-cdc.md``, "Record schemas"). A value that does not fit its column's
schema fails with an error naming the table, the column and the value: it is never rounded or replaced.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from headwater.reference_connectors.jdbc_cdc import column_values as values
from headwater.reference_connectors.jdbc_cdc.column_types import UNSUPPORTED, ColumnType
from headwater.reference_connectors.jdbc_cdc.column_values import Convert
from headwater.reference_connectors.jdbc_cdc.config import ADAPTIVE, DOUBLE, PRECISE
from headwater.reference_connectors.jdbc_cdc.debezium_schemas import envelope_schema, json_order
from headwater.reference_connectors.jdbc_cdc.tables import CapturedTable
from headwater.sdk import ConnectError
from headwater.sdk.schemas import (
    BOOLEAN,
    BYTES,
    DATE,
    FLOAT32,
    FLOAT64,
    INT8,
    INT16,
    INT32,
    INT64,
    STRING,
    TIME,
    TIMESTAMP,
    Schema,
    optional,
    struct,
)
from headwater.sdk.schemas import decimal as decimal_schema


def named(base: Schema, name: str) -> dict[str, Any]:
    """``base`` as one of Debezium's semantic types (a named primitive, version 1)."""
    return {**base, "name": name, "version": 1}


JSON = named(STRING, "io.debezium.data.Json")
UUID = named(STRING, "io.debezium.data.Uuid")
DEBEZIUM_DATE = named(INT32, "io.debezium.time.Date")
"""Days since the epoch."""
DEBEZIUM_TIME = named(INT32, "io.debezium.time.Time")
"""Milliseconds past midnight."""
MICRO_TIME = named(INT64, "io.debezium.time.MicroTime")
"""Microseconds past midnight."""
DEBEZIUM_TIMESTAMP = named(INT64, "io.debezium.time.Timestamp")
"""Milliseconds since the epoch, the wall time taken as UTC."""
MICRO_TIMESTAMP = named(INT64, "io.debezium.time.MicroTimestamp")
"""Microseconds since the epoch, the wall time taken as UTC."""
ZONED_TIMESTAMP = named(STRING, "io.debezium.time.ZonedTimestamp")
"""ISO-8601 in UTC (``2026-11-23T06:30:00.5Z``)."""
ZONED_TIME = named(STRING, "io.debezium.time.ZonedTime")
YEAR = named(INT32, "io.debezium.time.Year")

SOURCE = struct(
    "headwater.jdbc_cdc.Source",
    connector=STRING,
    name=STRING,
    mode=STRING,
    db=optional(STRING),
    schema=optional(STRING),
    table=STRING,
    change_id=optional(INT64),
    lsn=optional(INT64),
    txid=optional(INT64),
    snapshot=BOOLEAN,
    ts_ms=optional(INT64),
)
"""The envelope's ``source`` block."""

HEARTBEAT_KEY = struct("headwater.jdbc_cdc.HeartbeatKey", connector=STRING, name=STRING, server=STRING)

_AVRO_INVALID = re.compile(r"[^A-Za-z0-9_]")


def avro_name(text: str) -> str:
    """``text`` made a valid Avro name: other characters as ``_``, a leading digit after ``_``."""
    made = _AVRO_INVALID.sub("_", text)
    return f"_{made}" if not made or made[0].isdigit() else made


def full_name(*parts: str) -> str:
    """A dotted Avro full name of ``parts``, each dotted part made valid."""
    return ".".join(avro_name(part) for whole in parts for part in whole.split("."))


def column_schema(column: ColumnType, decimals: str, temporal: str, where: str) -> tuple[dict[str, Any], Convert]:
    """The (non-optional) schema of ``column`` and what turns its image values into values of it; ``where`` is
    ``table.column`` for errors. Raises :class:`ConnectError` for a column no schema can hold."""
    kind, adaptive = column.kind, temporal == ADAPTIVE
    fsp = 6 if column.fsp is None else column.fsp
    if kind in values.INTEGER_RANGES:
        return dict({"int8": INT8, "int16": INT16, "int32": INT32, "int64": INT64}[kind]), values.integer(kind)
    if kind == "uint64":
        return decimal_schema(0, 20), values.unsigned
    if kind in ("float32", "float64"):
        return dict(FLOAT32 if kind == "float32" else FLOAT64), values.floating
    if kind == "bool":
        return dict(BOOLEAN), values.boolean
    if kind == "decimal":
        if decimals == DOUBLE:
            return dict(FLOAT64), values.floating
        if decimals != PRECISE:
            return dict(STRING), values.decimal_text
        if column.scale is None:
            raise ConnectError(
                f"{where}: a NUMERIC/DECIMAL column without a declared scale ({column.detail}) has no Kafka Connect "
                "Decimal schema (decimal.handling.mode=precise); declare its precision and scale, or use "
                "decimal.handling.mode=string"
            )
        return decimal_schema(column.scale, column.precision), values.precise(column.scale, column.precision)
    if kind in ("string", "text"):
        return dict(STRING), values.text
    if kind == "json":
        return dict(JSON), values.json_text
    if kind == "json_text":
        return dict(JSON), values.text
    if kind == "uuid":
        return dict(UUID), values.uuid
    if kind == "bytes":
        return dict(BYTES), values.binary
    if kind == "year":
        return dict(YEAR), values.year
    if kind == "date":
        return (dict(DEBEZIUM_DATE), values.days) if adaptive else (dict(DATE), values.calendar_date)
    if kind == "time":
        if not adaptive:
            return dict(TIME), values.connect_time
        return (dict(DEBEZIUM_TIME), values.milli_time) if fsp <= 3 else (dict(MICRO_TIME), values.time_us)
    if kind == "timetz":
        return dict(ZONED_TIME), values.zoned_time
    if kind == "timestamp":
        if not adaptive:
            return dict(TIMESTAMP), values.connect_timestamp
        return (
            (dict(DEBEZIUM_TIMESTAMP), values.milli_timestamp)
            if fsp <= 3
            else (dict(MICRO_TIMESTAMP), values.micro_timestamp)
        )
    if kind == "timestamptz":
        return dict(ZONED_TIMESTAMP), values.zoned_timestamp
    if kind == UNSUPPORTED:
        raise ConnectError(
            f"{where}: a MariaDB/MySQL binary or BIT column ({column.detail}) cannot be captured with "
            "record.schemas=connect: the triggers' JSON_OBJECT loses its bytes or writes invalid JSON. Leave the "
            "table out (table.exclude.list), or use record.schemas=none"
        )
    raise ConnectError(f"{where}: no schema for a column of kind {kind}")


# ---- per table ------------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class TableSchemas:
    """The schemas of one table version, and what turns its images and keys into values of them."""

    table: str
    key: dict[str, Any] | None
    """A struct of the primary key columns; ``None`` for a table without a primary key."""
    row: dict[str, Any]
    """The optional struct of a row, ``before`` and ``after``."""
    envelope: dict[str, Any]
    fields: tuple[tuple[str, str, Convert, Any], ...]
    """Per column: its name, its field's name, its conversion, and the value of a column an image leaves out."""
    key_fields: tuple[tuple[str, str, Convert], ...]

    def image(self, image: Mapping[str, Any] | None) -> dict[str, Any] | None:
        """A row image as a value of :attr:`row` (a column the image leaves out, an unchanged TOASTed value or one
        outside a key-only before image, is null, or its default)."""
        if image is None:
            return None
        made: dict[str, Any] = {}
        for column, field, convert, missing in self.fields:
            value = image.get(column, missing)
            made[field] = None if value is None else self._convert(convert, value, column)
        return made

    def key_of(self, key: Mapping[str, Any] | None) -> dict[str, Any] | None:
        if key is None or self.key is None:
            return None
        made: dict[str, Any] = {}
        for column, field, convert in self.key_fields:
            value = key.get(column)
            made[field] = None if value is None else self._convert(convert, value, column)
        return made

    def _convert(self, convert: Convert, value: Any, column: str) -> Any:
        try:
            return convert(value)
        except values.UnfitValue as error:
            raise ConnectError(f"{self.table}.{column}: the value {error}") from None


def _field_names(columns: Sequence[ColumnType], where: str) -> list[str]:
    names = [avro_name(c.name) for c in columns]
    seen: dict[str, str] = {}
    for column, name in zip(columns, names, strict=True):
        if name in seen:
            raise ConnectError(
                f"{where}: columns {seen[name]!r} and {column.name!r} are both the field {name!r} once made valid "
                "Avro names (letters, digits and _)"
            )
        seen[name] = column.name
    return names


def table_schemas(
    table: CapturedTable, prefix: str, decimals: str, temporal: str, debezium: bool = False
) -> TableSchemas:
    """The schemas of ``table``'s current version (its :attr:`~CapturedTable.types`); ``debezium``: the envelope is
    Debezium's (:mod:`.debezium`) and names are left as they are (Debezium's ``schema.name.adjustment.mode=none``)."""
    columns = table.types
    if debezium:
        base, names = f"{prefix}.{table.qualified}", [c.name for c in columns]
    else:
        base, names = full_name(prefix, table.qualified), _field_names(columns, table.qualified)
    fields: dict[str, dict[str, Any]] = {}
    conversions: list[tuple[str, str, Convert, Any]] = []
    for column, name in zip(columns, names, strict=True):
        schema, convert = column_schema(column, decimals, temporal, f"{table.qualified}.{column.name}")
        if column.optional:
            schema = optional(schema)
        elif column.default is not None:
            schema["default"] = column.default
        fields[name] = schema
        conversions.append((column.name, name, convert, column.default))
    row = optional(struct(f"{base}.Value", **fields))
    by_column = dict(zip((c.name for c in columns), names, strict=True))
    key_columns = [c for c in table.primary_key if c in by_column]
    key = None
    if key_columns:
        key = struct(f"{base}.Key", **{by_column[c]: {**fields[by_column[c]], "optional": False} for c in key_columns})
        key = {**key, "fields": [{k: v for k, v in f.items() if k != "default"} for f in key["fields"]]}
    if debezium:
        row, key = json_order(row), None if key is None else json_order(key)
        envelope = envelope_schema(f"{base}.Envelope", row)
    else:
        envelope = struct(f"{base}.Envelope", op=STRING, before=row, after=row, source=SOURCE, ts_ms=INT64)
    converts = {name: convert for name, _, convert, _ in conversions}
    key_fields = tuple((c, by_column[c], converts[c]) for c in key_columns)
    return TableSchemas(table.qualified, key, row, envelope, tuple(conversions), key_fields)


class RecordSchemas:
    """The schemas of one connector's records: each table version's built once and handed out again (by the table
    object, then by its columns), and the heartbeats'."""

    def __init__(self, prefix: str, decimals: str, temporal: str, debezium: bool = False) -> None:
        self.prefix = prefix
        self.decimals = decimals
        self.temporal = temporal
        self.debezium = debezium
        self._by_object: dict[int, tuple[CapturedTable, TableSchemas]] = {}
        self._by_columns: dict[tuple[str, tuple[str, ...], tuple[ColumnType, ...]], TableSchemas] = {}
        self._heartbeats: dict[tuple[str, ...], dict[str, Any]] = {}

    def table(self, table: CapturedTable) -> TableSchemas:
        """The schemas of ``table``'s version."""
        found = self._by_object.get(id(table))
        if found is not None and found[0] is table:
            return found[1]
        content = (table.qualified, table.primary_key, table.types)
        made = self._by_columns.get(content)
        if made is None:
            made = self._by_columns[content] = table_schemas(
                table, self.prefix, self.decimals, self.temporal, self.debezium
            )
        self._by_object[id(table)] = (table, made)
        return made

    def check(self, tables: Sequence[CapturedTable]) -> None:
        """Build every table's schemas: raises :class:`ConnectError` for a column none can hold."""
        for table in tables:
            self.table(table)

    def heartbeat(self, offset: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        """The key and value schemas of a heartbeat carrying ``offset`` (its integer fields)."""
        names = tuple(offset)
        value = self._heartbeats.get(names)
        if value is None:
            fields = {"connector": STRING, "name": STRING, "server": STRING, **dict.fromkeys(names, INT64)}
            value = self._heartbeats[names] = struct("headwater.jdbc_cdc.Heartbeat", **fields, ts_ms=INT64)
        return HEARTBEAT_KEY, value
