"""What a captured column holds, told apart as finely as its record schema needs (``record.schemas=connect``): its
kind, whether it may be null, a decimal's precision and scale, a time's fractional digits and a constant default.

Trigger mode and its snapshot read the columns from SQLAlchemy's inspector (:func:`from_inspector`); log mode, its
snapshot included, from type OIDs and type modifiers (:func:`from_relation`: ``pgoutput``'s Relation message, or
the catalog's ``pg_attribute`` at start, the same values), where every column but the primary key's is optional:
a before image holds only the replica identity under ``REPLICA IDENTITY DEFAULT``, an unchanged TOASTed value is
left out, and the message says nothing of ``NOT NULL``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import types as sa
from sqlalchemy.dialects import mysql, postgresql

INTEGERS = ("int8", "int16", "int32", "int64")
FLOATS = ("float32", "float64")
UNSUPPORTED = "unsupported"
"""A column the connector cannot capture with schemas (MariaDB's binary and BIT columns in trigger mode)."""


@dataclass(frozen=True)
class ColumnType:
    """One column as its record schema sees it. ``kind`` is one of ``int8``..``int64``, ``uint64`` (MySQL's
    ``BIGINT UNSIGNED``), ``float32``, ``float64``, ``bool``, ``decimal``, ``string``, ``text`` (a type written as
    the text the images hold), ``bytes``, ``date``, ``time``, ``timetz``, ``timestamp``, ``timestamptz``, ``json``
    (a parsed document), ``json_text`` (SQLite's JSON: the stored text), ``uuid``, ``year`` or ``unsupported``."""

    name: str
    kind: str
    optional: bool = True
    precision: int | None = None
    scale: int | None = None
    fsp: int | None = None
    """Fractional digits of a time or timestamp; ``None`` when not declared (up to microseconds)."""
    default: Any = None
    """The column's constant default, as a value of the schema (``None`` when it has none, or none we can read)."""
    detail: str = field(default="", compare=False)
    """The SQL type, for error messages."""


# ---- from the inspector ---------------------------------------------------------------------------------------

_CAST = re.compile(r"^\(?(.*?)\)?(::[\w \[\]\".]+)+$", re.DOTALL)
_INTEGER = re.compile(r"^-?\d+$")
_FLOAT = re.compile(r"^-?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$")


def _literal(text: str) -> Any:
    """A constant SQL default's value (``'abc'::character varying``, ``7``, ``true``), else ``None``."""
    text = text.strip()
    cast = _CAST.match(text)
    if cast:
        text = cast.group(1).strip()
    if len(text) >= 2 and text[0] == text[-1] == "'":
        return text[1:-1].replace("''", "'")
    if _INTEGER.match(text):
        return int(text)
    if _FLOAT.match(text):
        return float(text)
    if text.lower() in ("true", "false"):
        return text.lower() == "true"
    return None


def _default(kind: str, text: Any) -> Any:
    """``text``, an inspector's default, as a value of a column of ``kind``; ``None`` unless it is a constant of
    an integer, float, boolean or text kind."""
    if not isinstance(text, str):
        return None
    value = _literal(text)
    if value is None:
        return None
    try:
        if kind in INTEGERS:
            return int(value) if not isinstance(value, float) else None
        if kind in FLOATS:
            return float(value)
        if kind == "bool":
            return value if isinstance(value, bool) else {"1": True, "0": False, 1: True, 0: False}.get(value)
        if kind in ("string", "text", "uuid"):
            return str(value) if isinstance(value, str) else None
    except (TypeError, ValueError):
        return None
    return None


def _integer_kind(column_type: Any, dialect: str) -> str:
    unsigned = bool(getattr(column_type, "unsigned", False))
    if dialect == "sqlite":
        return "int64"  # SQLite's integers are 64-bit whatever the declared type
    if isinstance(column_type, mysql.TINYINT):
        return "int16" if unsigned else "int8"
    if isinstance(column_type, sa.SmallInteger):
        return "int32" if unsigned else "int16"
    if isinstance(column_type, sa.BigInteger):
        return "uint64" if unsigned else "int64"
    return "int64" if unsigned and not isinstance(column_type, mysql.MEDIUMINT) else "int32"


def kind_of(column_type: Any, dialect: str) -> tuple[str, int | None, int | None, int | None]:
    """``(kind, precision, scale, fsp)`` of a column of SQLAlchemy type ``column_type`` on ``dialect``
    (``sqlite``, ``postgresql``, ``mysql`` or ``mariadb``)."""
    mariadb = dialect in ("mysql", "mariadb")
    if isinstance(column_type, sa.Boolean):
        return "bool", None, None, None
    if isinstance(column_type, sa.Integer):
        return _integer_kind(column_type, dialect), None, None, None
    if isinstance(column_type, sa.Float):
        single = isinstance(column_type, (postgresql.REAL, mysql.FLOAT)) or type(column_type) is sa.REAL
        return ("float32" if single and dialect != "sqlite" else "float64"), None, None, None
    if isinstance(column_type, sa.Numeric):
        return "decimal", column_type.precision, column_type.scale, None
    if isinstance(column_type, (sa.LargeBinary, sa._Binary, mysql.BIT)):
        return (UNSUPPORTED if mariadb else "bytes"), None, None, None
    if isinstance(column_type, sa.JSON):
        return ("json_text" if dialect == "sqlite" else "json"), None, None, None
    if isinstance(column_type, sa.Uuid):
        return "uuid", None, None, None
    if isinstance(column_type, mysql.YEAR):
        return "year", None, None, None
    if isinstance(column_type, sa.DateTime):
        if mariadb:  # TIMESTAMP: the writing session's time zone, which the images do not say
            fsp = getattr(column_type, "fsp", None) or 0
            return ("text" if isinstance(column_type, mysql.TIMESTAMP) else "timestamp"), None, None, fsp
        zoned = bool(getattr(column_type, "timezone", False))
        return ("timestamptz" if zoned else "timestamp"), None, None, getattr(column_type, "precision", None)
    if isinstance(column_type, sa.Date):
        return "date", None, None, None
    if isinstance(column_type, sa.Time):
        if mariadb:  # Debezium's adaptive_time_microseconds: a MySQL TIME is always MicroTime (it exceeds a day)
            return "time", None, None, 6
        zoned = bool(getattr(column_type, "timezone", False))
        return ("timetz" if zoned else "time"), None, None, getattr(column_type, "precision", None)
    if isinstance(column_type, (sa.String, sa.Enum)) and not isinstance(column_type, sa.ARRAY):
        return "string", None, None, None
    return "text", None, None, None


def from_inspector(
    described: Sequence[Mapping[str, Any]], primary_key: Sequence[str], dialect: str
) -> tuple[ColumnType, ...]:
    """The columns ``inspector.get_columns()`` described; primary key columns are never optional (SQLite reports
    ``id INTEGER PRIMARY KEY`` nullable)."""
    made = []
    for column in described:
        name = str(column["name"])
        kind, precision, scale, fsp = kind_of(column["type"], dialect)
        optional = bool(column.get("nullable", True)) and name not in primary_key
        default = None if optional else _default(kind, column.get("default"))
        made.append(ColumnType(name, kind, optional, precision, scale, fsp, default, str(column["type"])))
    return tuple(made)


# ---- from pgoutput ----------------------------------------------------------------------------------------------

_OID_KINDS = {
    16: "bool",
    17: "bytes",
    20: "int64",
    21: "int16",
    23: "int32",
    26: "int64",
    700: "float32",
    701: "float64",
    1700: "decimal",
    18: "string",
    19: "string",
    25: "string",
    1042: "string",
    1043: "string",
    1082: "date",
    1083: "time",
    1266: "timetz",
    1114: "timestamp",
    1184: "timestamptz",
    114: "json",
    3802: "json",
    2950: "uuid",
}
"""PostgreSQL's built-in type OIDs (``pg_type.oid``, fixed in ``pg_type.dat``) and their kinds; any other is
``text``."""
_FRACTIONAL = frozenset({1083, 1266, 1114, 1184})


def from_oid(name: str, type_oid: int, typmod: int, optional: bool) -> ColumnType:
    """A column of a Relation message: its kind from the OID, precision and scale (``numeric``: ``typmod - 4`` holds
    the precision in the high 16 bits, the scale in the low) or fractional digits from the type modifier."""
    kind = _OID_KINDS.get(type_oid, "text")
    precision = scale = fsp = None
    if kind == "decimal" and typmod >= 4:
        precision, scale = ((typmod - 4) >> 16) & 0xFFFF, (typmod - 4) & 0xFFFF
    elif type_oid in _FRACTIONAL and typmod >= 0:
        fsp = typmod
    return ColumnType(name, kind, optional, precision, scale, fsp, None, f"oid {type_oid}")


def from_relation(
    columns: Sequence[str], types: Sequence[int], typmods: Sequence[int], primary_key: Sequence[str]
) -> tuple[ColumnType, ...]:
    """The columns of a Relation message (typmods ``-1`` where the message had none)."""
    mods = list(typmods) or [-1] * len(columns)
    made = [from_oid(n, t, m, n not in primary_key) for n, t, m in zip(columns, types, mods, strict=True)]
    return tuple(made)
