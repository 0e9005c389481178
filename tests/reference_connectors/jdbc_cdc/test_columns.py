"""Log-mode events written straight as JSON bytes (``json_rows``, ``columns``) are byte for byte what the dict path
gives through the worker's JSON converter: every supported column type (numerics in both decimal handling modes),
NULLs, unchanged TOASTed values, unicode, quotes and backslashes; inserts, updates and deletes under both replica
identities; runs of one topic; restarts."""

from __future__ import annotations

import random
import struct
from typing import Any

import pytest

from headwater.reference_connectors.jdbc_cdc.columns import ChangeColumns, ColumnWriter, LogOffsets
from headwater.reference_connectors.jdbc_cdc.envelope import Change, Envelope, JsonEnvelope, change_key
from headwater.reference_connectors.jdbc_cdc.json_rows import RowEncoder, json_number, to_json
from headwater.reference_connectors.jdbc_cdc.pgoutput import Begin, Commit, Decoder, Relation, RowChange, converter
from headwater.reference_connectors.jdbc_cdc.tables import CapturedTable
from headwater.runtime.converters import JsonConverter
from headwater.sdk import ConnectError, SourceBatch

from .test_pgoutput import string, tuple_data

CONVERTER = JsonConverter()
CONVERTER.configure({"schemas.enable": False}, False)

TEXTS = [
    b"plain",
    "h\u00e9llo w\u00f6rld \u65e5\u672c \U0001f600".encode(),
    b'say "hi"',
    b"back\\slash",
    b"tab\tnew\nline\r\x01\x1f",
    b"",
    b"\\u0041 not an escape",
    "\u2028\u2029".encode(),
]
VALUES: dict[int, list[bytes]] = {
    20: [b"0", b"-9223372036854775808", b"9223372036854775807"],  # int8
    21: [b"-32768", b"7"],  # int2
    23: [b"2147483647", b"-1"],  # int4
    26: [b"4294967295"],  # oid
    16: [b"t", b"f"],  # bool
    700: [b"1.5", b"-0", b"3.4028235e+38", b"NaN", b"Infinity", b"-Infinity", b"1e-05"],  # float4
    701: [b"0.1", b"1e+100", b"-2.5e-300", b"123456789012345680", b"NaN", b"-Infinity"],  # float8
    1700: [
        b"12.50",
        b"0.00",
        b"-7",
        b"123456789012345678901234567890",
        b"0.000001",
        b"NaN",
        b"Infinity",
        b"99999999.99",
        b"12345678901234567890.123456789012345678",
        b"-1" + b"0" * 400,
    ],  # numeric
    114: [b'{"a": [1, 2.50, "x\\"y"], "b": null}', b"[]", b'"\\u00e9"'],  # json
    3802: [b'{"a": {"b": true}, "c": 1e3}', b"3"],  # jsonb
    1114: [b"2026-11-23 12:00:00", b"2026-11-23 12:00:00.123456", b"infinity", b"0044-03-15 00:00:00 BC"],
    1184: [b"2026-11-23 12:00:00+00", b"2026-11-23 12:00:00.5+05:30", b"2026-11-23 12:00:00-08", b"-infinity"],
    25: TEXTS,  # text
    1043: TEXTS[:3],  # varchar
    1082: [b"2026-11-23"],  # date
    2950: [b"a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"],  # uuid
    17: [b"\\x00ff"],  # bytea
    1186: [b"1 day 02:03:04"],  # interval
    1009: [b'{a,"b c",NULL}'],  # text[]
}


def relation_message(relid: int, table: str, columns: list[tuple[str, int, bool]]) -> bytes:
    body = struct.pack(">ci", b"R", relid) + string("public") + string(table) + b"d" + struct.pack(">h", len(columns))
    for name, type_oid, key in columns:
        body += bytes([1 if key else 0]) + string(name) + struct.pack(">ii", type_oid, -1)
    return body


def binary_tuple(*values: bytes) -> bytes:
    return struct.pack(">h", len(values)) + b"".join(b"b" + struct.pack(">i", len(v)) + v for v in values)


def decoded_image(decoder: Decoder, relid: int, data: bytes) -> dict[str, Any] | None:
    change = decoder.decode(struct.pack(">ci", b"I", relid) + b"N" + data)
    assert isinstance(change, RowChange)
    return change.new


@pytest.mark.parametrize("decimals", ["string", "double"])
@pytest.mark.parametrize("type_oid", sorted(VALUES))
def test_every_type_writes_the_json_the_dict_path_converts_to(type_oid: int, decimals: str) -> None:
    columns = [("id", 23, True), ("v", type_oid, False)]
    decoder = Decoder(decimals)
    relation = decoder.decode(relation_message(7, "t", columns))
    assert isinstance(relation, Relation)
    encoder = RowEncoder(relation.columns, relation.types, ("id",), decimals, "public.t")
    for raw in [*VALUES[type_oid], None, "unchanged"]:
        data = tuple_data(b"1", raw)
        expected = to_json(decoded_image(decoder, 7, data))
        image, key, end = encoder.image(data, 0, b"<")
        assert (image, key, end) == (b"<" + expected, b'{"id":1}', len(data)), raw
        assert encoder.general(data, 0, b"<") == (image, key, end)  # the compiled function and the general loop


def test_a_null_or_absent_key_column_writes_a_null_key_and_a_table_without_one_no_key() -> None:
    encoder = RowEncoder(("id", "name"), (23, 25), ("id",))
    assert encoder.image(tuple_data(None, b"x"), 0, b"")[:2] == (b'{"id":null,"name":"x"}', b'{"id":null}')
    assert encoder.image(tuple_data("unchanged", b"x"), 0, b"")[:2] == (b'{"name":"x"}', b'{"id":null}')
    assert RowEncoder(("id",), (23,), ()).image(tuple_data(b"1"), 0, b"")[:2] == (b'{"id":1}', None)


def test_binary_values_and_a_subset_of_columns_take_the_general_path() -> None:
    encoder = RowEncoder(("id", "name", "note"), (23, 25, 25), ("id",))
    assert encoder.image(binary_tuple(b"\x01", b"\xff", b"n"), 0, b"")[:2] == (
        b'{"id":"01","name":"ff","note":"6e"}',
        b'{"id":"01"}',
    )
    image = encoder.general(tuple_data(b"3", None, None), 0, b"", (True, False, False))
    assert image[:2] == (b'{"id":3}', b'{"id":3}')


def test_a_wide_relation_and_odd_column_names() -> None:
    names = [f"c{i}" for i in range(300)] + ['we"ird\\name', "\u00fcml"]
    encoder = RowEncoder(names, [23] * 300 + [25, 25], ["c299", 'we"ird\\name'])
    data = tuple_data(*[str(i).encode() for i in range(300)], b"q", b"r")
    expected = {**{f"c{i}": i for i in range(300)}, 'we"ird\\name': "q", "\u00fcml": "r"}
    assert encoder.image(data, 0, b"") == (to_json(expected), to_json({"c299": 299, 'we"ird\\name': "q"}), len(data))


# ---- whole events: the column writer against the dict path ---------------------------------------------------

ORDERS = [("id", 20, True), ("item", 25, False), ("price", 1700, False), ("at", 1184, False), ("doc", 3802, False)]
NOTES = [("id", 23, True), ("body", 25, False)]
TABLES = {
    "public.orders": CapturedTable("public", "orders", ("id", "item", "price", "at", "doc"), ("id",)),
    "public.notes": CapturedTable("public", "notes", ("id", "body"), ("id",)),
    "public.nokey": CapturedTable("public", "nokey", ("id", "body"), ()),
}
ROW = (b"3", 'fig "\u00e9"\\'.encode(), b"12.50", b"2026-11-23 12:00:00+00", b'{"a": [1]}')


def begin(xid: int) -> bytes:
    return struct.pack(">cQqi", b"B", 0, 1_000_000, xid)


def commit(end: int) -> bytes:
    return struct.pack(">cbQQq", b"C", 0, end - 8, end, 2_000_000)


def change(tag: bytes, relid: int, *images: tuple[bytes, tuple[Any, ...]]) -> bytes:
    return struct.pack(">ci", tag, relid) + b"".join(kind + tuple_data(*values) for kind, values in images)


STREAM = [
    relation_message(7, "orders", ORDERS),
    relation_message(8, "notes", NOTES),
    relation_message(9, "nokey", NOTES),
    relation_message(10, "uncaptured", NOTES),
    begin(741),
    change(b"I", 7, (b"N", ROW)),
    change(b"U", 7, (b"N", (b"3", b"fig", b"13", None, "unchanged"))),
    change(b"U", 7, (b"O", ROW), (b"N", (b"4", *ROW[1:]))),
    change(b"U", 7, (b"K", (b"3", None, None, None, None)), (b"N", (b"5", *ROW[1:]))),
    change(b"I", 10, (b"N", (b"1", b"not captured"))),
    change(b"D", 7, (b"K", (b"5", None, None, None, None))),
    commit(1000),
    begin(742),
    change(b"I", 8, (b"N", (b"1", b"a"))),
    change(b"I", 8, (b"N", (b"2", b"b"))),
    change(b"I", 7, (b"N", ROW)),
    change(b"D", 7, (b"O", ROW)),
    change(b"I", 9, (b"N", (b"1", b"no key"))),
    relation_message(7, "orders", ORDERS[:2]),  # ALTER TABLE in the middle of a transaction
    change(b"I", 7, (b"N", (b"6", b"after alter"))),
    commit(2000),
    begin(743),
    change(b"I", 10, (b"N", (b"2", b"only uncaptured"))),
    commit(3000),
]


def dict_path(
    messages: list[bytes], now_ms: int, skip_to: tuple[int, int] = (0, -1), decimals: str = "string"
) -> list[tuple[Any, ...]]:
    """What ``LogStream.read`` and the task give, through the worker's JSON converter: (topic, value, key,
    offset, timestamp)."""
    decoder, envelope, found, transaction, last_end, xid = (
        Decoder(decimals),
        Envelope("shop", "log", "db"),
        [],
        [],
        0,
        None,
    )
    for data in messages:
        message = decoder.decode(data)
        if isinstance(message, RowChange):
            table = TABLES.get(f"{message.relation.namespace}.{message.relation.name}")
            if table is not None:
                transaction.append((message, table))
        elif isinstance(message, Begin):
            xid = message.xid
        elif isinstance(message, Commit):
            end, last = message.end_lsn, len(transaction) - 1
            for seq, (row, table) in enumerate(transaction):
                if (end, seq) <= skip_to:
                    continue
                event = Change(table, row.op, row.old, row.new, message.commit_ms, lsn=end, txid=xid)
                record = envelope.record(
                    event, {}, {"lsn": end, "seq": seq, "flush": end if seq == last else last_end}, now_ms
                )
                value = CONVERTER.from_connect(record.topic, None, record.value)
                key = None if change_key(event) is None else CONVERTER.from_connect(record.topic, None, record.key)
                found.append((record.topic, value, key, record.source_offset, record.timestamp))
            last_end, transaction = max(end, last_end), []
    return found


def column_path(
    messages: list[bytes], now_ms: int, skip_to: tuple[int, int] = (0, -1), decimals: str = "string"
) -> ChangeColumns:
    decoder = Decoder(decimals)
    writer = ColumnWriter(decoder, TABLES, JsonEnvelope(Envelope("shop", "log", "db")))
    columns, last_end, xid = ChangeColumns(), 0, None
    for data in messages:
        if data[:1] in (b"I", b"U", b"D"):
            writer.change(data)
            continue
        message = decoder.decode(data)
        if isinstance(message, Relation):
            writer.relation(message)
        elif isinstance(message, Begin):
            xid = message.xid
            writer.begin()
        elif isinstance(message, Commit):
            end = message.end_lsn
            first = 0 if end > skip_to[0] else skip_to[1] + 1 if end == skip_to[0] else len(messages)
            writer.commit(columns, end, last_end, first, xid, message.commit_ms, lambda: now_ms)
            last_end = max(end, last_end)
    return columns


def rows(columns: ChangeColumns) -> list[tuple[Any, ...]]:
    found = []
    for batch in columns.batches({}):
        assert isinstance(batch, SourceBatch) and batch.keys is not None and batch.timestamps is not None
        for index in range(len(batch)):
            found.append(
                (batch.topic, batch.values[index], batch.keys[index], batch.offsets[index], batch.timestamps[index])
            )
    return found


@pytest.mark.parametrize("decimals", ["string", "double"])
def test_the_column_writer_writes_the_events_keys_offsets_and_timestamps_of_the_dict_path(decimals: str) -> None:
    expected = dict_path(STREAM, 1795440207115, decimals=decimals)
    assert len(expected) == 11
    assert b'"price":' + (b'"12.50"' if decimals == "string" else b"12.5") + b"," in expected[0][1]
    assert rows(column_path(STREAM, 1795440207115, decimals=decimals)) == expected


def test_a_transaction_over_several_tables_is_cut_into_runs_of_one_topic() -> None:
    columns = column_path(STREAM, 5)
    assert columns.runs == [
        ("shop.public.orders", 5),
        ("shop.public.notes", 7),
        ("shop.public.orders", 9),
        ("shop.public.nokey", 10),
        ("shop.public.orders", 11),
    ]
    assert [len(b) for b in columns.batches({"server": "shop"})] == [5, 2, 2, 1, 1]


@pytest.mark.parametrize("skip_to", [(1000, 2), (1000, 4), (2000, 0), (2000, 6), (999, 0), (5000, 0)])
def test_after_a_restart_the_events_up_to_the_committed_one_are_left_out(skip_to: tuple[int, int]) -> None:
    assert rows(column_path(STREAM, 5, skip_to)) == dict_path(STREAM, 5, skip_to)


def test_numbers_written_from_their_text_match_float_and_int_over_many_shapes() -> None:
    rng = random.Random(6)
    texts = [b"0.0", b"-0.0", b"100.00", b"0.0001", b"0.00001", b"-0.00010", b"999999999999999.9", b"1e5"]
    for _ in range(20_000):
        digits = "".join(rng.choice("0123456789") for _ in range(rng.randint(1, 20)))
        point = rng.randint(0, len(digits))
        whole, fraction = digits[:point].lstrip("0") or "0", digits[point:]
        sign = rng.choice(["", "-"])
        texts.append(f"{sign}{whole}.{fraction}".encode() if fraction else f"{sign}{whole}".encode())
    for raw in texts:
        assert json_number(raw) == to_json(converter(1700, "double")(raw.decode())), raw


def test_with_double_handling_a_numeric_beyond_a_double_fails_as_in_the_dict_path_naming_table_and_column() -> None:
    huge = b"-1" + b"0" * 400 + b".25"
    data = tuple_data(b"1", huge)
    decoder = Decoder("double")
    decoder.decode(relation_message(7, "t", [("id", 23, True), ("v", 1700, False)]))
    with pytest.raises(ConnectError) as expected:
        decoded_image(decoder, 7, data)
    encoder = RowEncoder(("id", "v"), (23, 1700), ("id",), "double", "public.t")
    for image in (encoder.image, encoder.general):
        with pytest.raises(ConnectError) as raised:
            image(data, 0, b"")
        assert str(raised.value) == str(expected.value)
    assert str(expected.value).startswith("public.t.v: numeric value -1000")
    assert "beyond the range of a double" in str(expected.value) and "decimal.handling.mode=string" in str(
        expected.value
    )
    string = RowEncoder(("id", "v"), (23, 1700), ("id",))
    assert string.image(data, 0, b"")[0] == b'{"id":1,"v":"' + huge + b'"}'


def test_log_offsets_are_made_on_access_like_a_list() -> None:
    offsets = LogOffsets()
    offsets.add(1000, 0, 3, 500)
    offsets.add(2000, 2, 4, 1000)
    expected = [
        {"lsn": 1000, "seq": 0, "flush": 500},
        {"lsn": 1000, "seq": 1, "flush": 500},
        {"lsn": 1000, "seq": 2, "flush": 1000},
        {"lsn": 2000, "seq": 2, "flush": 1000},
        {"lsn": 2000, "seq": 3, "flush": 2000},
    ]
    assert len(offsets) == 5 and list(offsets) == expected and offsets[-1] == expected[-1]
    assert offsets[1:4] == expected[1:4] and offsets[::-2] == expected[::-2]
    with pytest.raises(IndexError):
        offsets[5]


def test_a_snapshot_or_trigger_mode_record_with_the_bytes_converters_is_the_json_of_the_envelope_record() -> None:
    envelope = Envelope("shop", "trigger", "db")
    table = TABLES["public.orders"]
    event = Change(table, "u", {"id": 3, "item": "\u00e9"}, {"id": 3, "item": 'a"b'}, 1795440207102, change_id=9)
    expected = envelope.record(event, {"server": "shop"}, {"change_id": 9}, 5)
    record = JsonEnvelope(envelope).record(event, {"server": "shop"}, {"change_id": 9}, 5)
    assert record.value == CONVERTER.from_connect(record.topic, None, expected.value)
    assert record.key == CONVERTER.from_connect(record.topic, None, expected.key) == b'{"id":3}'
    assert (record.topic, record.source_offset, record.timestamp) == (
        expected.topic,
        expected.source_offset,
        expected.timestamp,
    )
