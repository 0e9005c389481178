"""Table columns: the value columns (from a Spark-SQL-like column list, or inferred), and the record metadata columns.

A configured schema is a comma-separated list of ``name TYPE [NOT NULL]`` with the flat Spark SQL types
``STRING, BOOLEAN, TINYINT, SMALLINT, INT, BIGINT, FLOAT, DOUBLE, DECIMAL(p,s), DATE, TIMESTAMP``. The Arrow types
they become are what the JSON reader parses values into and what Spark writes (``TIMESTAMP`` is microseconds, UTC).
"""

from __future__ import annotations

import re

import pyarrow as pa

from headwater.sdk import ConfigError

METADATA_FIELDS = ("topic", "partition", "offset", "timestamp", "key")
"""Record metadata that can be written as columns, in column order."""

_TYPES: dict[str, pa.DataType] = {
    "STRING": pa.string(),
    "BOOLEAN": pa.bool_(),
    "TINYINT": pa.int8(),
    "BYTE": pa.int8(),
    "SMALLINT": pa.int16(),
    "SHORT": pa.int16(),
    "INT": pa.int32(),
    "INTEGER": pa.int32(),
    "BIGINT": pa.int64(),
    "LONG": pa.int64(),
    "FLOAT": pa.float32(),
    "REAL": pa.float32(),
    "DOUBLE": pa.float64(),
    "DATE": pa.date32(),
    "TIMESTAMP": pa.timestamp("us", tz="UTC"),
}
_COLUMN = re.compile(
    r"\s*`?(?P<name>[A-Za-z_][A-Za-z0-9_]*)`?\s+(?P<type>[A-Za-z]+)"
    r"(?:\s*\(\s*(?P<precision>\d+)\s*(?:,\s*(?P<scale>\d+)\s*)?\))?(?P<not_null>\s+NOT\s+NULL)?\s*",
    re.IGNORECASE,
)


def parse_schema(key: str, text: str) -> pa.Schema:
    """The Arrow schema of a column list; raises :class:`ConfigError` naming ``key`` for anything else."""
    fields: list[pa.Field] = []
    for part in _split(text):
        match = _COLUMN.fullmatch(part)
        if match is None:
            raise ConfigError(key, text, f"{part.strip()!r} is not 'name TYPE [NOT NULL]'")
        name, kind = match["name"], match["type"].upper()
        if kind == "DECIMAL":
            precision, scale = int(match["precision"] or 10), int(match["scale"] or 0)
            if not 0 < precision <= 38 or scale > precision:
                raise ConfigError(key, text, f"DECIMAL({precision},{scale}) of {name} is out of range")
            arrow_type: pa.DataType = pa.decimal128(precision, scale)
        elif kind in _TYPES and match["precision"] is None:
            arrow_type = _TYPES[kind]
        else:
            raise ConfigError(key, text, f"Unsupported type {part.split()[1]!r} of {name}; supported: {supported()}")
        if name in (f.name for f in fields):
            raise ConfigError(key, text, f"Column {name} is defined twice")
        fields.append(pa.field(name, arrow_type, nullable=match["not_null"] is None))
    if not fields:
        raise ConfigError(key, text, "A schema needs at least one column")
    return pa.schema(fields)


def _split(text: str) -> list[str]:
    """Split at the commas that are not inside parentheses (``DECIMAL(10,2)``)."""
    parts, depth, start = [], 0, 0
    for i, char in enumerate(text):
        depth += {"(": 1, ")": -1}.get(char, 0)
        if char == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [part for part in parts if part.strip()]


def supported() -> str:
    return ", ".join([*_TYPES, "DECIMAL(p,s)"])


def metadata_type(field: str, key_type: str) -> pa.DataType:
    """The Arrow type of a metadata column."""
    if field == "key":
        return pa.binary() if key_type == "binary" else pa.string()
    return {
        "topic": pa.string(),
        "partition": pa.int32(),
        "offset": pa.int64(),
        "timestamp": pa.timestamp("ms", tz="UTC"),
    }[field]


def writable(schema: pa.Schema) -> pa.Schema:
    """An inferred schema Spark can write: columns that held only nulls become strings, and timestamps are
    microseconds in UTC like a configured ``TIMESTAMP``."""
    fields = []
    for field in schema:
        if pa.types.is_null(field.type):
            field = field.with_type(pa.string())
        elif pa.types.is_timestamp(field.type):
            field = field.with_type(pa.timestamp("us", tz="UTC"))
        fields.append(field)
    return pa.schema(fields)


def table_schema(value_schema: pa.Schema, metadata: tuple[str, ...], prefix: str, key_type: str) -> pa.Schema:
    """The value columns followed by the metadata columns; a clash of names is a :class:`ConfigError`."""
    names = set(value_schema.names)
    fields = list(value_schema)
    for field in metadata:
        name = prefix + field
        if name in names:
            raise ConfigError("metadata.column.prefix", prefix, f"Metadata column {name} clashes with a value column")
        fields.append(pa.field(name, metadata_type(field, key_type), nullable=field in ("timestamp", "key")))
    return pa.schema(fields)
