"""pgoutput messages, built by hand as the server sends them, decoded into relations, transactions and row images
with the JSON types ``to_jsonb`` gives (numerics as their text, or with ``decimal.handling.mode=double`` as
numbers)."""

from __future__ import annotations

import struct
from typing import Any

import pytest

from headwater.reference_connectors.jdbc_cdc.column_types import from_relation
from headwater.reference_connectors.jdbc_cdc.pgoutput import (
    POSTGRES_EPOCH_MS,
    Begin,
    Commit,
    Decoder,
    Relation,
    RowChange,
    format_lsn,
    parse_lsn,
)
from headwater.sdk import ConnectError

COLUMNS = [("id", 23, True), ("price", 1700, False), ("paid", 16, False), ("at", 1184, False), ("doc", 3802, False)]


def string(text: str) -> bytes:
    return text.encode() + b"\0"


def relation_message(relid: int = 7, typmods: dict[str, int] | None = None, columns: list[Any] = COLUMNS) -> bytes:
    body = struct.pack(">ci", b"R", relid) + string("public") + string("orders") + b"d"
    body += struct.pack(">h", len(columns))
    for name, type_oid, key in columns:
        typmod = (typmods or {}).get(name, -1)
        body += bytes([1 if key else 0]) + string(name) + struct.pack(">ii", type_oid, typmod)
    return body


def tuple_data(*values: bytes | str | None) -> bytes:
    body = struct.pack(">h", len(values))
    for value in values:
        if value is None:
            body += b"n"
        elif value == "unchanged":
            body += b"u"
        else:
            assert isinstance(value, bytes)
            body += b"t" + struct.pack(">i", len(value)) + value
    return body


ROW = (b"3", b"12.50", b"t", b"2026-11-23 12:00:00+00", b'{"a": [1, 2]}')
IMAGE = {"id": 3, "price": "12.50", "paid": True, "at": "2026-11-23T12:00:00+00:00", "doc": {"a": [1, 2]}}


def decoder(decimals: str = "string") -> Decoder:
    found = Decoder(decimals)
    relation = found.decode(relation_message())
    assert isinstance(relation, Relation) and relation.keys == (True, False, False, False, False)
    return found


def test_lsn_text_round_trips() -> None:
    assert parse_lsn("16/B374D848") == 0x16B374D848
    assert format_lsn(parse_lsn("0/19226D8")) == "0/19226D8"


def test_begin_and_commit_carry_positions_and_unix_milliseconds() -> None:
    begin = Decoder().decode(struct.pack(">cQqi", b"B", 500, 1_000_000, 741))
    assert begin == Begin(500, POSTGRES_EPOCH_MS + 1000, 741)
    commit = Decoder().decode(struct.pack(">cbQQq", b"C", 0, 480, 520, 2_000))
    assert commit == Commit(480, 520, POSTGRES_EPOCH_MS + 2, POSTGRES_EPOCH_MS * 1000 + 2_000)


def test_an_insert_decodes_its_image_with_json_types() -> None:
    change = decoder().decode(struct.pack(">ci", b"I", 7) + b"N" + tuple_data(*ROW))
    assert isinstance(change, RowChange)
    assert (change.op, change.old, change.new) == ("c", None, IMAGE)


def test_an_update_with_a_full_old_image_and_an_unchanged_toasted_value() -> None:
    new = (b"3", b"13", b"f", None, "unchanged")
    change = decoder().decode(struct.pack(">ci", b"U", 7) + b"O" + tuple_data(*ROW) + b"N" + tuple_data(*new))
    assert isinstance(change, RowChange) and change.op == "u"
    assert change.old == IMAGE
    assert change.new == {"id": 3, "price": "13", "paid": False, "at": None}


def test_a_delete_under_the_default_replica_identity_carries_only_the_key() -> None:
    key_only = (b"3", None, None, None, None)
    change = decoder().decode(struct.pack(">ci", b"D", 7) + b"K" + tuple_data(*key_only))
    assert isinstance(change, RowChange)
    assert (change.op, change.old, change.new) == ("d", {"id": 3}, None)


def test_messages_the_connector_ignores_decode_to_none() -> None:
    assert Decoder().decode(b"M\x01" + struct.pack(">Q", 5) + string("headwater-cdc") + struct.pack(">i", 0)) is None


def test_a_numeric_is_its_exact_text_and_with_double_handling_the_number_it_was_before() -> None:
    exact = b"12345678901234567890.123456789012345678"
    for decimals, expected in (("string", exact.decode()), ("double", 12345678901234567890.123456789012345678)):
        for price in (exact, b"NaN", b"-7", b"0.10"):
            change = decoder(decimals).decode(struct.pack(">ci", b"I", 7) + b"N" + tuple_data(b"3", price, *ROW[2:]))
            assert isinstance(change, RowChange) and change.new is not None
            found = change.new["price"]
            if decimals == "string":
                assert found == price.decode()
            else:
                assert found == {exact: expected, b"NaN": "NaN", b"-7": -7, b"0.10": 0.1}[price]
                assert type(found) is {exact: float, b"NaN": str, b"-7": int, b"0.10": float}[price]


def test_with_double_handling_a_numeric_beyond_a_double_fails_naming_table_and_column() -> None:
    huge = b"1" + b"0" * 400 + b".5"
    message = struct.pack(">ci", b"I", 7) + b"N" + tuple_data(b"3", huge, *ROW[2:])
    with pytest.raises(ConnectError, match=r"^public\.orders\.price: numeric value 1000.*beyond the range of a double"):
        decoder("double").decode(message)
    change = decoder("string").decode(message)
    assert isinstance(change, RowChange) and change.new is not None and change.new["price"] == huge.decode()
    integral = b"1" + b"0" * 400  # no fraction: an int, exact, as before
    change = decoder("double").decode(struct.pack(">ci", b"I", 7) + b"N" + tuple_data(b"3", integral, *ROW[2:]))
    assert isinstance(change, RowChange) and change.new is not None and change.new["price"] == 10**400


def test_a_relation_keeps_its_type_modifiers_and_a_new_one_replaces_it() -> None:
    """``numeric(10,2)``'s modifier is ``(10 << 16 | 2) + 4``; ``timestamptz(3)``'s is 3 (as PostgreSQL sends them)."""
    decoder = Decoder()
    first = decoder.decode(relation_message(typmods={"price": (10 << 16 | 2) + 4, "at": 3}))
    assert isinstance(first, Relation) and first.typmods == (-1, (10 << 16 | 2) + 4, -1, 3, -1)
    types = {
        c.name: (c.kind, c.precision, c.scale, c.fsp, c.optional)
        for c in from_relation(first.columns, first.types, first.typmods, ["id"])
    }
    assert types == {
        "id": ("int32", None, None, None, False),
        "price": ("decimal", 10, 2, None, True),
        "paid": ("bool", None, None, None, True),
        "at": ("timestamptz", None, None, 3, True),
        "doc": ("json", None, None, None, True),
    }
    second = decoder.decode(relation_message(columns=[*COLUMNS, ("note", 25, False)]))
    assert isinstance(second, Relation) and second.columns[-1] == "note" and second.typmods[1] == -1
    assert decoder.relations[7] is second
