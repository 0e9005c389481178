"""Decoding PostgreSQL's ``pgoutput`` logical replication messages (protocol version 1, text values).

Each message is one tagged binary record: ``B`` begin, ``C`` commit, ``R`` relation (a table's columns, sent before
its first change in a session and after it changes), ``I``/``U``/``D`` row changes, and ``O``, ``Y``, ``T``, ``M``
(origin, type, truncate, logical message), which the connector does not turn into events. Column values arrive as
text and are turned into the JSON types ``to_jsonb`` gives, so log-mode images match snapshot images.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

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
_TIMESTAMPS = frozenset({1114, 1184})


def parse_lsn(text: str) -> int:
    """``'16/B374D848'`` as an integer."""
    high, low = text.split("/")
    return (int(high, 16) << 32) | int(low, 16)


def format_lsn(lsn: int) -> str:
    return f"{lsn >> 32:X}/{lsn & 0xFFFFFFFF:X}"


def unix_ms(postgres_us: int) -> int:
    return postgres_us // 1000 + POSTGRES_EPOCH_MS


@dataclass(frozen=True)
class Relation:
    relid: int
    namespace: str
    name: str
    columns: tuple[str, ...]
    types: tuple[int, ...]
    keys: tuple[bool, ...]
    """Which columns are in the replica identity (the old image of ``K`` changes holds only those)."""


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


@dataclass(frozen=True)
class RowChange:
    """An insert (``c``), update (``u``) or delete (``d``) of a row of relation ``relid``; images as raw tuples."""

    op: str
    relid: int
    old: tuple[tuple[str, bytes | None], ...] | None
    new: tuple[tuple[str, bytes | None], ...] | None
    old_is_key: bool = False
    """The old image holds only the replica identity's columns (``REPLICA IDENTITY DEFAULT``)."""


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

    def tuple(self) -> tuple[tuple[str, bytes | None], ...]:
        values: list[tuple[str, bytes | None]] = []
        for _ in range(self.int16()):
            kind = self.byte()
            if kind in ("t", "b"):
                length = self.int32()
                values.append((kind, self.data[self.at : self.at + length]))
                self.at += length
            else:
                values.append((kind, None))  # n: null, u: unchanged TOASTed value
        return tuple(values)


def decode(data: bytes) -> Message:
    """One pgoutput message; ``None`` for the kinds the connector ignores."""
    tag = chr(data[0])
    reader = _Reader(data)
    if tag in "IUD":
        relid = reader.int32()
        old = None
        kind = reader.byte()
        is_key = kind == "K"
        if kind in ("K", "O"):
            old = reader.tuple()
            if tag == "D":
                return RowChange("d", relid, old, None, is_key)
            kind = reader.byte()
        return RowChange("c" if tag == "I" else "u", relid, old, reader.tuple(), is_key)
    if tag == "B":
        return Begin(reader.uint64(), unix_ms(reader.int64()), reader.int32())
    if tag == "C":
        reader.byte()  # flags
        return Commit(reader.uint64(), reader.uint64(), unix_ms(reader.int64()))
    if tag == "R":
        relid, namespace, name = reader.int32(), reader.string(), reader.string()
        reader.byte()  # replica identity setting
        columns, types, keys = [], [], []
        for _ in range(reader.int16()):
            keys.append(reader.byte() == "\x01")
            columns.append(reader.string())
            types.append(reader.int32())
            reader.int32()  # type modifier
        return Relation(relid, namespace, name, tuple(columns), tuple(types), tuple(keys))
    return None


def _value(type_oid: int, raw: bytes) -> Any:
    text = raw.decode()
    if type_oid in _INTEGERS:
        return int(text)
    if type_oid == _BOOL:
        return text == "t"
    if type_oid in _FLOATS or type_oid == _NUMERIC:
        try:
            return json.loads(text)
        except ValueError:
            return text  # NaN, Infinity: to_jsonb writes them as strings too
    if type_oid in _JSON:
        return json.loads(text)
    if type_oid in _TIMESTAMPS:
        text = text.replace(" ", "T", 1)
        if type_oid == 1184 and len(text) > 3 and text[-3] in "+-":
            text += ":00"
        return text
    return text


def image(
    relation: Relation, values: tuple[tuple[str, bytes | None], ...] | None, key_only: bool = False
) -> Mapping[str, Any] | None:
    """A row image as ``{column: value}``; unchanged TOASTed columns are left out, key-only images hold the key."""
    if values is None:
        return None
    found: dict[str, Any] = {}
    for column, type_oid, is_key, (kind, raw) in zip(
        relation.columns, relation.types, relation.keys, values, strict=False
    ):
        if key_only and not is_key:
            continue
        if kind == "n":
            found[column] = None
        elif raw is not None:
            found[column] = _value(type_oid, bytes(raw)) if kind == "t" else bytes(raw).hex()
    return found
