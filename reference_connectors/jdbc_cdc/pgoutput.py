"""Decoding PostgreSQL's ``pgoutput`` logical replication messages (protocol version 1, text values).

Each message is one tagged binary record: ``B`` begin, ``C`` commit, ``R`` relation (a table's columns, sent before
its first change in a session and after it changes), ``I``/``U``/``D`` row changes, and ``O``, ``Y``, ``T``, ``M``
(origin, type, truncate, logical message), which the connector does not turn into events. Column values arrive as
text and are turned into the JSON types ``to_jsonb`` gives, so log-mode images match snapshot images; a numeric is
its text (``decimal.handling.mode=string``) or a number (``double``).
"""

from __future__ import annotations

import functools
import json
import math
import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from headwater.reference_connectors.jdbc_cdc.config import DOUBLE, STRING
from headwater.reference_connectors.jdbc_cdc.json_rows import beyond_double

POSTGRES_EPOCH_MS = 946_684_800_000
"""2000-01-01 in Unix milliseconds: pgoutput timestamps count microseconds from there."""

_INT64 = struct.Struct(">q")
_UINT64 = struct.Struct(">Q")
_INT32 = struct.Struct(">i")
_INT16 = struct.Struct(">h")

_INTEGERS = frozenset({20, 21, 23, 26})
_FLOATS = frozenset({700, 701})
_NUMERIC = 1700
_BOOL = 16
_JSON = frozenset({114, 3802})
_TEXT, _BINARY, _NULL = ord("t"), ord("b"), ord("n")
_INSERT, _UPDATE, _DELETE = ord("I"), ord("U"), ord("D")
_CHANGES = frozenset({_INSERT, _UPDATE, _DELETE})
_KEY = ord("K")
_OLD = frozenset({_KEY, ord("O")})
_BEGIN, _COMMIT, _RELATION = ord("B"), ord("C"), ord("R")


def parse_lsn(text: str) -> int:
    """``'16/B374D848'`` as an integer."""
    high, low = text.split("/")
    return (int(high, 16) << 32) | int(low, 16)


def format_lsn(lsn: int) -> str:
    return f"{lsn >> 32:X}/{lsn & 0xFFFFFFFF:X}"


def unix_ms(postgres_us: int) -> int:
    return postgres_us // 1000 + POSTGRES_EPOCH_MS


def unix_us(postgres_us: int) -> int:
    return postgres_us + POSTGRES_EPOCH_MS * 1000


@dataclass(frozen=True)
class Relation:
    relid: int
    namespace: str
    name: str
    columns: tuple[str, ...]
    types: tuple[int, ...]
    keys: tuple[bool, ...]
    """Which columns are in the replica identity (the old image of ``K`` changes holds only those)."""
    decimals: str = STRING
    """How numeric values are written: the ``decimal.handling.mode`` of the decoder."""
    typmods: tuple[int, ...] = ()
    """Per column, its type modifier (``atttypmod``: a numeric's precision and scale, a time's fractional digits;
    -1 for none)."""

    @functools.cached_property
    def converters(self) -> tuple[Callable[[str], Any], ...]:
        """Per column, what turns its text value into the JSON value ``to_jsonb`` gives (numerics: see
        :func:`converter`)."""
        where = f"{self.namespace}.{self.name}."
        return tuple(
            converter(type_oid, self.decimals, where + column)
            for type_oid, column in zip(self.types, self.columns, strict=True)
        )


@dataclass(frozen=True)
class Begin:
    final_lsn: int
    commit_ms: int
    xid: int


@dataclass(frozen=True)
class Commit:
    commit_lsn: int
    end_lsn: int
    commit_ms: int
    commit_us: int
    """The commit time in Unix microseconds, as pgoutput sends it."""


@dataclass(frozen=True)
class RowChange:
    """An insert (``c``), update (``u``) or delete (``d``) of a row of ``relation``, with its images (the old one
    holds only the replica identity's columns under ``REPLICA IDENTITY DEFAULT``; unchanged TOASTed values are left
    out)."""

    op: str
    relation: Relation
    old: dict[str, Any] | None
    new: dict[str, Any] | None


Message = Relation | Begin | Commit | RowChange | None


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.at = 1

    def byte(self) -> str:
        value = chr(self.data[self.at])
        self.at += 1
        return value

    def int64(self) -> int:
        value: int = _INT64.unpack_from(self.data, self.at)[0]
        self.at += 8
        return value

    def uint64(self) -> int:
        value: int = _UINT64.unpack_from(self.data, self.at)[0]
        self.at += 8
        return value

    def int32(self) -> int:
        value: int = _INT32.unpack_from(self.data, self.at)[0]
        self.at += 4
        return value

    def int16(self) -> int:
        value: int = _INT16.unpack_from(self.data, self.at)[0]
        self.at += 2
        return value

    def string(self) -> str:
        end = self.data.index(0, self.at)
        value = self.data[self.at : end].decode()
        self.at = end + 1
        return value


def _row(relation: Relation, data: bytes, at: int, key_only: bool) -> tuple[dict[str, Any], int]:
    """The row image starting at ``data[at]`` (TupleData), and where it ends."""
    columns, converters, keys = relation.columns, relation.converters, relation.keys
    count = (data[at] << 8) | data[at + 1]
    at += 2
    row: dict[str, Any] = {}
    for index in range(count):
        kind = data[at]
        at += 1
        if kind in (_TEXT, _BINARY):
            length = _INT32.unpack_from(data, at)[0]
            at += 4
            if not key_only or keys[index]:
                raw = data[at : at + length]
                row[columns[index]] = converters[index](raw.decode()) if kind == _TEXT else raw.hex()
            at += length
        elif kind == _NULL and (not key_only or keys[index]):
            row[columns[index]] = None
    return row, at


class Decoder:
    """Decodes one replication session's messages; remembers the relations it was told about. ``decimals`` is the
    ``decimal.handling.mode``: numerics as their text (``string``) or as numbers (``double``)."""

    def __init__(self, decimals: str = STRING) -> None:
        self.relations: dict[int, Relation] = {}
        self.decimals = decimals

    def decode(self, data: bytes) -> Message:
        """One pgoutput message; ``None`` for the kinds the connector ignores."""
        tag = data[0]
        if tag in _CHANGES:
            relation = self.relations[_INT32.unpack_from(data, 1)[0]]
            kind, at, old = data[5], 6, None
            if kind in _OLD:
                old, at = _row(relation, data, at, kind == _KEY)
                if tag == _DELETE:
                    return RowChange("d", relation, old, None)
                kind, at = data[at], at + 1
            return RowChange("c" if tag == _INSERT else "u", relation, old, _row(relation, data, at, False)[0])
        reader = _Reader(data)
        if tag == _BEGIN:
            return Begin(reader.uint64(), unix_ms(reader.int64()), reader.int32())
        if tag == _COMMIT:
            reader.byte()  # flags
            commit_lsn, end_lsn, at = reader.uint64(), reader.uint64(), reader.int64()
            return Commit(commit_lsn, end_lsn, unix_ms(at), unix_us(at))
        if tag == _RELATION:
            relid, namespace, name = reader.int32(), reader.string(), reader.string()
            reader.byte()  # replica identity setting
            columns, types, keys, typmods = [], [], [], []
            for _ in range(reader.int16()):
                keys.append(reader.byte() == "\x01")
                columns.append(reader.string())
                types.append(reader.int32())
                typmods.append(reader.int32())
            relation = Relation(
                relid, namespace, name, tuple(columns), tuple(types), tuple(keys), self.decimals, tuple(typmods)
            )
            self.relations[relid] = relation
            return relation
        return None


def _number(text: str) -> Any:
    try:
        return float(text) if "." in text or "e" in text else int(text)
    except ValueError:
        return text  # NaN, Infinity: to_jsonb writes them as strings too


def _double(column: str) -> Callable[[str], Any]:
    """A numeric as a number (``decimal.handling.mode=double``); one beyond a double's range fails, naming
    ``column``."""

    def number(text: str) -> Any:
        value = _number(text)
        if isinstance(value, float) and math.isinf(value):
            raise beyond_double(column, text)
        return value

    return number


def _timestamp(text: str) -> str:
    return text.replace(" ", "T", 1)


def _timestamptz(text: str) -> str:
    text = text.replace(" ", "T", 1)
    return text + ":00" if len(text) > 3 and text[-3] in "+-" else text


def _bool(text: str) -> bool:
    return text == "t"


def converter(type_oid: int, decimals: str = STRING, column: str = "") -> Callable[[str], Any]:
    """What turns a text value of type ``type_oid`` into its JSON value. A numeric stays its text with ``decimals``
    ``string``; with ``double`` it becomes an int or a float, and one beyond a double's range fails naming
    ``column`` (``schema.table.column``)."""
    if type_oid in _INTEGERS:
        return int
    if type_oid == _BOOL:
        return _bool
    if type_oid == _NUMERIC:
        return _double(column) if decimals == DOUBLE else str
    if type_oid in _FLOATS:
        return _number
    if type_oid in _JSON:
        return json.loads
    if type_oid == 1114:
        return _timestamp
    if type_oid == 1184:
        return _timestamptz
    return str
