"""Kafka Connect record schemas as table columns: the Arrow type of each Connect schema (what Spark writes to Delta
and Parquet), and how a table's columns follow a record schema that changed (compatible evolution) or refuse it.

The mapping (Connect's types as its ``JsonConverter`` names them, see :mod:`headwater.sdk.schemas`):

====================================================  ===========================================================
Connect                                               column (Arrow; Spark SQL)
====================================================  ===========================================================
``int8``, ``int16``, ``int32``, ``int64``             ``int8`` .. ``int64``; TINYINT, SMALLINT, INT, BIGINT
``float``, ``double``                                 ``float32``, ``float64``; FLOAT, DOUBLE
``boolean``, ``string``, ``bytes``                    ``bool``, ``string``, ``binary``; BOOLEAN, STRING, BINARY
Decimal (``scale``, ``connect.decimal.precision``)    ``decimal128(p, s)``; DECIMAL(p,s), p 38 when not given
Date                                                  ``date32``; DATE
Timestamp                                             ``timestamp(us, UTC)``; TIMESTAMP
Time                                                  ``int32``, milliseconds since midnight (Spark has no TIME)
``array``, ``map``, ``struct``                        ``list``, ``map``, ``struct``; ARRAY, MAP, STRUCT
====================================================  ===========================================================

``optional`` makes a nullable column (or element, map value, struct field). Other named types keep their
underlying type: Debezium's ``io.debezium.time.*`` integers stay integers (as Debezium's own JDBC sink reads them
without its temporal conversions), its ``VariableScaleDecimal`` stays a struct. Refused, with the field named: a
Decimal of precision above 38 (Spark's largest) or a scale above its precision, a map whose keys are optional (Spark's
map keys are never null), a struct without fields, a type this table does not know.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from headwater.sdk import ConnectError
from headwater.sdk.schemas import DATE_NAME, DECIMAL_NAME, PRECISION, SCALE, TIME_NAME, TIMESTAMP_NAME, Schema

MAX_PRECISION = 38
"""Spark's largest decimal precision (``DecimalType.MAX_PRECISION``), taken for a Decimal that gives none."""

_PRIMITIVES: dict[str, pa.DataType] = {
    "int8": pa.int8(),
    "int16": pa.int16(),
    "int32": pa.int32(),
    "int64": pa.int64(),
    "float": pa.float32(),
    "double": pa.float64(),
    "boolean": pa.bool_(),
    "string": pa.string(),
    "bytes": pa.binary(),
}
_INTS = (pa.int8(), pa.int16(), pa.int32(), pa.int64())


class UnsupportedSchema(ConnectError):
    """A record schema that has no table column: the task fails with it."""


class IncompatibleSchema(ConnectError):
    """A record schema the table's columns cannot follow: the task fails with it, nothing of the flush written."""


def arrow_schema(schema: Schema) -> pa.Schema:
    """The columns of a Connect struct schema (a record value's), each nullable when its field is optional."""
    if schema.get("type") != "struct":
        raise UnsupportedSchema(
            f"the record's value schema is a {schema.get('type')!r}, not a struct: only struct values become rows"
        )
    return pa.schema(_fields(schema, ""))


def _fields(schema: Schema, path: str) -> list[pa.Field]:
    fields = schema.get("fields") or ()
    if not fields:
        raise UnsupportedSchema(f"{_where(path)} is a struct without fields: Spark cannot write one")
    return [pa.field(f["field"], arrow_type(f, _join(path, f["field"])), nullable=_optional(f)) for f in fields]


def arrow_type(schema: Schema, path: str) -> pa.DataType:
    """The Arrow type of the Connect schema of field ``path`` (dotted, for the errors)."""
    name, kind = schema.get("name"), schema.get("type")
    if name == DECIMAL_NAME:
        parameters = schema.get("parameters") or {}
        scale = int(parameters.get(SCALE, 0))
        precision = int(parameters.get(PRECISION, MAX_PRECISION))
        if precision > MAX_PRECISION or not 0 <= scale <= precision:
            raise UnsupportedSchema(
                f"{_where(path)} is a Decimal of precision {precision} and scale {scale}: Spark's decimals hold at "
                f"most {MAX_PRECISION} digits, the scale no more than the precision"
            )
        return pa.decimal128(precision, scale)
    if name == DATE_NAME:
        return pa.date32()
    if name == TIMESTAMP_NAME:
        return pa.timestamp("us", tz="UTC")
    if name == TIME_NAME:
        return pa.int32()
    if kind in _PRIMITIVES:
        return _PRIMITIVES[kind]
    if kind == "array":
        items = schema["items"]
        return pa.list_(pa.field("element", arrow_type(items, f"{path}[]"), nullable=_optional(items)))
    if kind == "map":
        keys, values = schema["keys"], schema["values"]
        if _optional(keys):
            raise UnsupportedSchema(f"{_where(path)} is a map with optional keys: Spark's map keys are never null")
        key_type = arrow_type(keys, f"{path}{{key}}")
        value = pa.field("value", arrow_type(values, f"{path}{{value}}"), nullable=_optional(values))
        return pa.map_(key_type, value)
    if kind == "struct":
        return pa.struct(_fields(schema, path))
    raise UnsupportedSchema(f"{_where(path)} has the type {kind!r}, which no table column holds")


def _optional(schema: Schema) -> bool:
    return bool(schema.get("optional", False))


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _where(path: str) -> str:
    return f"field {path}" if path else "the value"


def is_time(schema: Schema) -> bool:
    return schema.get("name") == TIME_NAME


def describe(schema: Schema) -> str:
    """A record schema as its JSON text, for errors."""
    return json.dumps(schema, separators=(",", ":"), sort_keys=False, default=str)


# ---- evolution --------------------------------------------------------------------------------------------------


def widened(column: pa.DataType, record: pa.DataType) -> pa.DataType | None:
    """The type of a column of type ``column`` that also holds every value of ``record`` exactly: ``column`` when
    it does already, a wider one (a safe widening: a larger integer or float, a decimal with more digits), or
    ``None`` when no such column type exists here. Structs, lists and maps widen field by field; a struct gains the
    record's new fields, which must be nullable, and a field the record makes optional becomes nullable."""
    if column.equals(record):
        return column
    if column in _INTS and record in _INTS:
        return column if column.bit_width >= record.bit_width else record
    if pa.types.is_floating(column) and pa.types.is_floating(record):
        return column if column.bit_width >= record.bit_width else record
    if pa.types.is_floating(column) and record in _INTS:  # exactly when the float's significand holds the integer
        return column if record.bit_width <= (16 if column.bit_width == 32 else 32) else None
    if pa.types.is_decimal(column) and pa.types.is_decimal(record):
        scale = max(column.scale, record.scale)
        digits = max(column.precision - column.scale, record.precision - record.scale)
        if scale + digits > MAX_PRECISION:
            return None
        merged = pa.decimal128(scale + digits, scale)
        return column if merged.equals(column) else merged
    if pa.types.is_struct(column) and pa.types.is_struct(record):
        return _widened_struct(column, record)
    if pa.types.is_list(column) and pa.types.is_list(record):
        item = widened(column.value_type, record.value_type)
        if item is None or (record.value_field.nullable and not column.value_field.nullable):
            return None
        return column if item.equals(column.value_type) else pa.list_(column.value_field.with_type(item))
    if pa.types.is_map(column) and pa.types.is_map(record):
        if not column.key_type.equals(record.key_type):
            return None
        item = widened(column.item_type, record.item_type)
        if item is None or (record.item_field.nullable and not column.item_field.nullable):
            return None
        return column if item.equals(column.item_type) else pa.map_(column.key_type, column.item_field.with_type(item))
    return None


def _widened_struct(column: pa.StructType, record: pa.StructType) -> pa.DataType | None:
    fields = [column.field(i) for i in range(column.num_fields)]
    by_name = {f.name: f for f in (record.field(i) for i in range(record.num_fields))}
    merged = []
    for field in fields:
        found = by_name.pop(field.name, None)
        if found is None:
            if not field.nullable:
                return None
            merged.append(field)
            continue
        kind = widened(field.type, found.type)
        if kind is None:
            return None
        merged.append(field.with_type(kind).with_nullable(field.nullable or found.nullable))
    if any(not f.nullable for f in by_name.values()):
        return None
    merged += by_name.values()
    made = pa.struct(merged)
    return column if made.equals(column) else made


@dataclass(frozen=True)
class SchemaChange:
    """How a write changes its table's columns, one line per column."""

    added: tuple[str, ...] = ()
    """New nullable columns (or struct fields), at the end."""
    widened: tuple[str, ...] = ()
    """Columns whose type becomes a wider one."""

    def __bool__(self) -> bool:
        return bool(self.added or self.widened)

    def __add__(self, other: SchemaChange) -> SchemaChange:
        return SchemaChange(self.added + other.added, self.widened + other.widened)

    def __str__(self) -> str:
        return "; ".join(self.added + self.widened)


def evolve(table: pa.Schema, record: pa.Schema, metadata: set[str]) -> tuple[pa.Schema, SchemaChange]:
    """The table's columns (``table``, with its metadata columns named in ``metadata``) made to hold the values of
    ``record``, and what changed. Raises :class:`IncompatibleSchema` for a change the table cannot follow (its
    message names the field; the caller adds both schemas)."""
    columns = {f.name: f for f in table}
    fields = list(table)
    added: list[str] = []
    widened_columns: list[str] = []
    given = set(record.names)
    for field in table:
        if field.name not in given and field.name not in metadata and not field.nullable:
            raise IncompatibleSchema(f"the NOT NULL column {field.name} is missing from the record schema")
    for field in record:
        if field.name in metadata:
            raise IncompatibleSchema(f"field {field.name} has the name of a metadata column")
        column = columns.get(field.name)
        if column is None:
            if not field.nullable:
                raise IncompatibleSchema(
                    f"field {field.name} is new and required: the table's earlier rows have no value for it"
                )
            fields.append(field)
            added.append(f"new column {field.name} {field.type}")
            continue
        kind = widened(column.type, field.type)
        if kind is None:
            raise IncompatibleSchema(
                f"field {field.name} is {field.type} in the record schema and {column.type} in the table: not a "
                "safe widening (a larger integer or float, a decimal with more digits, new optional struct fields)"
            )
        if not kind.equals(column.type):
            fields[fields.index(column)] = column.with_type(kind)
            if _same_kind(column.type, kind):
                added.append(f"column {field.name} {column.type} -> {kind}")
            else:
                widened_columns.append(f"column {field.name} {column.type} -> {kind}")
    return pa.schema(fields), SchemaChange(tuple(added), tuple(widened_columns))


def _same_kind(column: pa.DataType, merged: pa.DataType) -> bool:
    """Whether ``merged`` only adds struct fields to ``column`` (at any depth), its leaf types all kept."""
    if pa.types.is_struct(column) and pa.types.is_struct(merged):
        kept = {merged.field(i).name: merged.field(i).type for i in range(merged.num_fields)}
        return all(_same_kind(column.field(i).type, kept[column.field(i).name]) for i in range(column.num_fields))
    if pa.types.is_list(column) and pa.types.is_list(merged):
        return _same_kind(column.value_type, merged.value_type)
    if pa.types.is_map(column) and pa.types.is_map(merged):
        return _same_kind(column.item_type, merged.item_type)
    return bool(column.equals(merged))


def fit_reason(column: pa.DataType, record: pa.DataType, path: str) -> str | None:
    """Why values of ``record`` cannot be written into a configured column of type ``column`` (``None``: they can;
    Arrow checks each value, so an integer out of range or a decimal that would lose digits does not fit)."""
    if column.equals(record) or _narrowing(column, record):
        return None
    found = widened(column, record)
    if found is not None and found.equals(column):
        return None
    return f"field {path} is {record} in the record schema, {column} in value.schema"


def _narrowing(column: pa.DataType, record: pa.DataType) -> bool:
    """Integers into a smaller integer, decimals into a smaller decimal: each value checked by Arrow."""
    ints = column in _INTS and record in _INTS
    return ints or (pa.types.is_decimal(column) and pa.types.is_decimal(record))


def configured_fit(columns: pa.Schema, record: pa.Schema) -> str | None:
    """Why values of ``record`` cannot be written into the configured value ``columns`` (flat, from
    ``value.schema``), else ``None``. The record's fields that no column names are dropped, as a JSON value's are;
    the columns that the record lacks are null, and a NOT NULL one fails every value."""
    given = {f.name: f for f in record}
    for column in columns:
        found = given.get(column.name)
        if found is None:
            if not column.nullable:
                return f"the NOT NULL column {column.name} is missing from the record schema"
            continue
        reason = fit_reason(column.type, found.type, column.name)
        if reason is not None:
            return reason
    return None


def schema_text(schema: pa.Schema | Mapping[str, Any]) -> str:
    """A schema on one line, for errors: Arrow's columns, or a Connect schema's JSON."""
    if isinstance(schema, pa.Schema):
        return ", ".join(f"{f.name} {f.type}{'' if f.nullable else ' NOT NULL'}" for f in schema)
    return describe(schema)
