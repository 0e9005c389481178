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

import datetime
import decimal
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from headwater.reference_connectors.jdbc_cdc.column_types import UNSUPPORTED, ColumnType
from headwater.reference_connectors.jdbc_cdc.config import ADAPTIVE, DOUBLE, PRECISE
from headwater.reference_connectors.jdbc_cdc.json_rows import to_json
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

Convert = Callable[[Any], Any]


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

POSITIVE_INFINITY = 9223372036825200000
NEGATIVE_INFINITY = -9223372036832400000
"""PostgreSQL's ``infinity`` and ``-infinity`` timestamps, as Debezium's ``PostgresValueConverter`` writes them
(pgjdbc's ``PGStatement.DATE_POSITIVE_INFINITY``/``DATE_NEGATIVE_INFINITY``)."""

_AVRO_INVALID = re.compile(r"[^A-Za-z0-9_]")
_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)
_EPOCH_DAY = datetime.date(1970, 1, 1).toordinal()
_MICRO = datetime.timedelta(microseconds=1)
_DAY_US = 86_400_000_000
_TIME = re.compile(r"^(-)?(\d+):(\d{2}):(\d{2})(?:\.(\d{1,6}))?$")
_TIMETZ = re.compile(r"^(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,6}))?([+-])(\d{2})(?::?(\d{2}))?(?::?(\d{2}))?$")
_DIGITS = re.compile(r"^-?[0-9]+$")
_RANGES = {"int8": 1 << 7, "int16": 1 << 15, "int32": 1 << 31, "int64": 1 << 63}


def avro_name(text: str) -> str:
    """``text`` made a valid Avro name: other characters as ``_``, a leading digit after ``_``."""
    made = _AVRO_INVALID.sub("_", text)
    return f"_{made}" if not made or made[0].isdigit() else made


def full_name(*parts: str) -> str:
    """A dotted Avro full name of ``parts``, each dotted part made valid."""
    return ".".join(avro_name(part) for whole in parts for part in whole.split("."))


class UnfitValue(ValueError):
    """A value that does not fit its column's schema (the message says why)."""


def _refuse(value: Any, why: str) -> UnfitValue:
    shown = repr(value)
    return UnfitValue(f"{shown[:60]}{'...' if len(shown) > 60 else ''} {why}")


# ---- value conversions, from the images' JSON-shaped values -----------------------------------------------------


def _integer(kind: str) -> Convert:
    bound = _RANGES[kind]

    def convert(value: Any) -> int:
        if isinstance(value, str) and _DIGITS.match(value):  # an oid: to_jsonb writes its digits as a string
            value = int(value)
        if isinstance(value, int) and not isinstance(value, bool) and -bound <= value < bound:
            return value
        raise _refuse(value, f"is not an {kind} integer")

    return convert


def _unsigned(value: Any) -> decimal.Decimal:
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 1 << 64:
        return decimal.Decimal(value)
    raise _refuse(value, "is not an unsigned 64-bit integer")


def _float(value: Any) -> float:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, str) and value.lower().lstrip("+-") in ("nan", "infinity", "inf"):
        return float(value)
    raise _refuse(value, "is not a floating-point number")


def _bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if value in (0, 1) and isinstance(value, int):
        return bool(value)
    raise _refuse(value, "is not a boolean (true, false, 1 or 0)")


def _text(value: Any) -> str:
    """A string, or the JSON text of anything else (a MariaDB JSON column's document, a PostgreSQL array)."""
    return value if isinstance(value, str) else to_json(value).decode()


def _json(value: Any) -> str:
    return to_json(value).decode()


def _decimal_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)  # a column added after the triggers were made: its JSON number
    raise _refuse(value, "is not a decimal")


def _precise(scale: int, precision: int | None) -> Convert:
    exponent = decimal.Decimal(1).scaleb(-scale)

    def convert(value: Any) -> decimal.Decimal:
        if isinstance(value, (float, bool)):
            raise _refuse(
                value,
                "arrived as a JSON number, which may have lost digits (a column added since the connector "
                "started: restart the connector so its triggers write the column's text)",
            )
        try:
            exact = decimal.Decimal(value if isinstance(value, (str, int)) else str(value))
        except decimal.InvalidOperation:
            raise _refuse(value, "is not a decimal") from None
        if not exact.is_finite():
            raise _refuse(value, "is not a finite decimal: a Kafka Connect Decimal has no NaN or infinity")
        context = decimal.Context(prec=max(precision or 0, len(exact.as_tuple().digits)) + scale + 2)
        made = exact.quantize(exponent, context=context)
        if made != exact:
            raise _refuse(value, f"has more than {scale} digits after the point (never rounded)")
        if precision is not None and len(made.as_tuple().digits) > precision and made != 0:
            raise _refuse(value, f"has more than {precision} digits")
        return made

    return convert


def _bytes(value: Any) -> bytes:
    if isinstance(value, str) and value.startswith("\\x"):
        try:
            return bytes.fromhex(value[2:])
        except ValueError:
            pass
    elif isinstance(value, (bytes, bytearray)):
        return bytes(value)
    raise _refuse(value, "is not binary (\\x and hex digits)")


def _wall(value: Any) -> datetime.datetime:
    """A timestamp's text as an aware datetime; a wall time without a zone is taken as UTC."""
    if not isinstance(value, str):
        raise _refuse(value, "is not a timestamp")
    try:
        found = datetime.datetime.fromisoformat(value)
    except ValueError:
        raise _refuse(value, "is not a timestamp between years 1 and 9999") from None
    return found.replace(tzinfo=datetime.UTC) if found.tzinfo is None else found


def _epoch_us(value: Any) -> int:
    return (_wall(value) - _EPOCH) // _MICRO


def _infinite(value: Any) -> int | None:
    if value == "infinity":
        return POSITIVE_INFINITY
    if value == "-infinity":
        return NEGATIVE_INFINITY
    return None


def _micro_timestamp(value: Any) -> int:
    infinite = _infinite(value)
    return infinite if infinite is not None else _epoch_us(value)


def _milli_timestamp(value: Any) -> int:
    infinite = _infinite(value)
    if infinite is not None:
        return infinite
    micros = _epoch_us(value)
    if micros % 1000:
        raise _refuse(value, "has digits below the millisecond in a column of at most 3 fractional digits")
    return micros // 1000


def _connect_timestamp(value: Any) -> datetime.datetime:
    found = _wall(value).astimezone(datetime.UTC)
    return found.replace(microsecond=found.microsecond - found.microsecond % 1000)


def _zoned_timestamp(value: Any) -> str:
    if value in ("infinity", "-infinity"):
        return str(value)
    found = _wall(value).astimezone(datetime.UTC)
    text = found.replace(tzinfo=None).isoformat()
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return text + "Z"


def _date(value: Any) -> datetime.date:
    if isinstance(value, str) and len(value) == 10:
        try:
            return datetime.date.fromisoformat(value[:10])
        except ValueError:
            pass
    raise _refuse(value, "is not a date between years 1 and 9999")


def _days(value: Any) -> int:
    return _date(value).toordinal() - _EPOCH_DAY


def _time_us(value: Any) -> int:
    found = _TIME.match(value) if isinstance(value, str) else None
    if found is None:
        raise _refuse(value, "is not a time of day")
    sign, hours, minutes, seconds, fraction = found.groups()
    micros = ((int(hours) * 60 + int(minutes)) * 60 + int(seconds)) * 1_000_000 + int((fraction or "").ljust(6, "0"))
    return -micros if sign else micros


def _milli_time(value: Any) -> int:
    micros = _time_us(value)
    if micros % 1000:
        raise _refuse(value, "has digits below the millisecond in a column of at most 3 fractional digits")
    return micros // 1000


def _connect_time(value: Any) -> datetime.time:
    micros = _time_us(value)
    if not 0 <= micros < _DAY_US:
        raise _refuse(value, "is outside a day, which Kafka Connect's Time cannot hold")
    millis = micros // 1000
    return datetime.time(millis // 3_600_000, millis // 60_000 % 60, millis // 1000 % 60, millis % 1000 * 1000)


def _zoned_time(value: Any) -> str:
    found = _TIMETZ.match(value) if isinstance(value, str) else None
    if found is None:
        raise _refuse(value, "is not a time of day with a UTC offset")
    hours, minutes, seconds, fraction, sign, off_h, off_m, off_s = found.groups()
    offset = int(off_h) * 3600 + int(off_m or 0) * 60 + int(off_s or 0)
    utc = (int(hours) * 3600 + int(minutes) * 60 + int(seconds) - (offset if sign == "+" else -offset)) % 86_400
    fraction = (fraction or "").rstrip("0")
    return f"{utc // 3600:02d}:{utc // 60 % 60:02d}:{utc % 60:02d}{'.' + fraction if fraction else ''}Z"


def _uuid(value: Any) -> str:
    if isinstance(value, str):
        return value
    raise _refuse(value, "is not a UUID's text")


def _year(value: Any) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    raise _refuse(value, "is not a year")


def column_schema(column: ColumnType, decimals: str, temporal: str, where: str) -> tuple[dict[str, Any], Convert]:
    """The (non-optional) schema of ``column`` and what turns its image values into values of it; ``where`` is
    ``table.column`` for errors. Raises :class:`ConnectError` for a column no schema can hold."""
    kind, adaptive = column.kind, temporal == ADAPTIVE
    fsp = 6 if column.fsp is None else column.fsp
    if kind in _RANGES:
        return dict({"int8": INT8, "int16": INT16, "int32": INT32, "int64": INT64}[kind]), _integer(kind)
    if kind == "uint64":
        return decimal_schema(0, 20), _unsigned
    if kind in ("float32", "float64"):
        return dict(FLOAT32 if kind == "float32" else FLOAT64), _float
    if kind == "bool":
        return dict(BOOLEAN), _bool
    if kind == "decimal":
        if decimals == DOUBLE:
            return dict(FLOAT64), _float
        if decimals != PRECISE:
            return dict(STRING), _decimal_text
        if column.scale is None:
            raise ConnectError(
                f"{where}: a NUMERIC/DECIMAL column without a declared scale ({column.detail}) has no Kafka Connect "
                "Decimal schema (decimal.handling.mode=precise); declare its precision and scale, or use "
                "decimal.handling.mode=string"
            )
        return decimal_schema(column.scale, column.precision), _precise(column.scale, column.precision)
    if kind in ("string", "text"):
        return dict(STRING), _text
    if kind == "json":
        return dict(JSON), _json
    if kind == "json_text":
        return dict(JSON), _text
    if kind == "uuid":
        return dict(UUID), _uuid
    if kind == "bytes":
        return dict(BYTES), _bytes
    if kind == "year":
        return dict(YEAR), _year
    if kind == "date":
        return (dict(DEBEZIUM_DATE), _days) if adaptive else (dict(DATE), _date)
    if kind == "time":
        if not adaptive:
            return dict(TIME), _connect_time
        return (dict(DEBEZIUM_TIME), _milli_time) if fsp <= 3 else (dict(MICRO_TIME), _time_us)
    if kind == "timetz":
        return dict(ZONED_TIME), _zoned_time
    if kind == "timestamp":
        if not adaptive:
            return dict(TIMESTAMP), _connect_timestamp
        return (dict(DEBEZIUM_TIMESTAMP), _milli_timestamp) if fsp <= 3 else (dict(MICRO_TIMESTAMP), _micro_timestamp)
    if kind == "timestamptz":
        return dict(ZONED_TIMESTAMP), _zoned_timestamp
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
        except UnfitValue as error:
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


def table_schemas(table: CapturedTable, prefix: str, decimals: str, temporal: str) -> TableSchemas:
    """The schemas of ``table``'s current version (its :attr:`~CapturedTable.types`)."""
    base = full_name(prefix, table.qualified)
    columns = table.types
    names = _field_names(columns, table.qualified)
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
    envelope = struct(f"{base}.Envelope", op=STRING, before=row, after=row, source=SOURCE, ts_ms=INT64)
    converts = {name: convert for name, _, convert, _ in conversions}
    key_fields = tuple((c, by_column[c], converts[c]) for c in key_columns)
    return TableSchemas(table.qualified, key, row, envelope, tuple(conversions), key_fields)


class RecordSchemas:
    """The schemas of one connector's records: each table version's built once and handed out again (by the table
    object, then by its columns), and the heartbeats'."""

    def __init__(self, prefix: str, decimals: str, temporal: str) -> None:
        self.prefix = prefix
        self.decimals = decimals
        self.temporal = temporal
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
            made = self._by_columns[content] = table_schemas(table, self.prefix, self.decimals, self.temporal)
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
