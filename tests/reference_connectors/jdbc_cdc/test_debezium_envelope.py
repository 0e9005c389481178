"""``envelope=debezium``, without a database: the config's rules, and the events through Headwater's JSON converter
(``schemas.enable=true``) against Debezium's PostgreSQL change event, field for field and byte for byte; snapshot
markers, update, delete and its tombstone; the Debezium-style unwrap reading them."""

from __future__ import annotations

import json
from typing import Any

import pytest

from headwater.reference_connectors.jdbc_cdc import CdcConfig, Change
from headwater.reference_connectors.jdbc_cdc.column_types import from_oid
from headwater.reference_connectors.jdbc_cdc.debezium import DebeziumEnvelope
from headwater.reference_connectors.jdbc_cdc.record_schemas import RecordSchemas
from headwater.reference_connectors.jdbc_cdc.tables import CapturedTable
from headwater.reference_connectors.jdbc_cdc.task import transaction_ends
from headwater.runtime.converters.builtin import JsonConverter
from headwater.sdk import ConfigError, SourceRecord
from support.debezium_unwrap import table_rows, unwrap

PG = {"connection.url": "postgresql+psycopg2://cdc@db/postgres", "capture.mode": "log"}
DEBEZIUM = {**PG, "envelope": "debezium"}


def test_debezium_takes_its_defaults_and_headwater_stays_as_it_was() -> None:
    config = CdcConfig.parse(DEBEZIUM)
    assert (config.envelope, config.record_schemas, config.decimal_handling) == ("debezium", "connect", "precise")
    assert (config.time_precision, config.tombstones) == ("adaptive", True)
    chosen = CdcConfig.parse({**DEBEZIUM, "decimal.handling.mode": "string", "tombstones.on.delete": "false"})
    assert (chosen.decimal_handling, chosen.tombstones) == ("string", False)
    plain = CdcConfig.parse(PG)
    assert (plain.envelope, plain.record_schemas, plain.decimal_handling, plain.tombstones) == (
        "headwater",
        "none",
        "string",
        False,
    )
    assert CdcConfig.parse({**PG, "tombstones.on.delete": "false"}).tombstones is False


@pytest.mark.parametrize(
    ("config", "reason"),
    [
        ({**DEBEZIUM, "capture.mode": "trigger"}, r"capture\.mode: envelope=debezium needs capture\.mode=log"),
        ({**DEBEZIUM, "record.schemas": "none"}, r"record\.schemas: envelope=debezium needs record schemas"),
        ({**DEBEZIUM, "value.converter": "bytes"}, r"envelope: the bytes converters .*envelope=debezium"),
        ({**PG, "tombstones.on.delete": "true"}, r"tombstones\.on\.delete applies to envelope=debezium"),
        ({**PG, "envelope": "avro"}, r"envelope: String must be one of: headwater, debezium"),
    ],
)
def test_what_cannot_be_debeziums_is_refused_naming_both_keys(config: dict[str, str], reason: str) -> None:
    with pytest.raises(ConfigError, match=reason):
        CdcConfig.parse(config)


# Debezium's PostgreSQL "create" event example (documentation, connectors/postgresql.adoc: topic prefix
# PostgreSQL_server, table inventory.customers with NOT NULL columns), with the schema as Debezium's classes
# build it today where that page's example predates them: `source` as PostgresSourceInfoStructMaker builds it (16
# fields; `snapshot` the io.debezium.data.Enum string, `sequence`, `origin`), the `transaction` block
# (SchemaFactory.transactionBlockSchema) and the envelope's version 2 (Envelope.SCHEMA_VERSION).
ROW_FIELDS = [
    {"type": "int32", "optional": False, "field": "id"},
    {"type": "string", "optional": False, "field": "first_name"},
    {"type": "string", "optional": False, "field": "last_name"},
    {"type": "string", "optional": False, "field": "email"},
]
ALLOWED = "true,first,first_in_data_collection,last_in_data_collection,last,false,incremental"
SOURCE_FIELDS = [
    {"type": "string", "optional": False, "field": "version"},
    {"type": "string", "optional": False, "field": "connector"},
    {"type": "string", "optional": False, "field": "name"},
    {"type": "int64", "optional": False, "field": "ts_ms"},
    {
        "type": "string",
        "optional": True,
        "name": "io.debezium.data.Enum",
        "version": 1,
        "parameters": {"allowed": ALLOWED},
        "default": "false",
        "field": "snapshot",
    },
    {"type": "string", "optional": False, "field": "db"},
    {"type": "string", "optional": True, "field": "sequence"},
    {"type": "int64", "optional": True, "field": "ts_us"},
    {"type": "int64", "optional": True, "field": "ts_ns"},
    {"type": "string", "optional": False, "field": "schema"},
    {"type": "string", "optional": False, "field": "table"},
    {"type": "int64", "optional": True, "field": "txId"},
    {"type": "int64", "optional": True, "field": "lsn"},
    {"type": "int64", "optional": True, "field": "xmin"},
    {"type": "string", "optional": True, "field": "origin"},
    {"type": "int64", "optional": True, "field": "origin_lsn"},
]
VALUE = "PostgreSQL_server.inventory.customers.Value"
ENVELOPE_SCHEMA = {
    "type": "struct",
    "fields": [
        {"type": "struct", "fields": ROW_FIELDS, "optional": True, "name": VALUE, "field": "before"},
        {"type": "struct", "fields": ROW_FIELDS, "optional": True, "name": VALUE, "field": "after"},
        {
            "type": "struct",
            "fields": SOURCE_FIELDS,
            "optional": False,
            "name": "io.debezium.connector.postgresql.Source",
            "version": 1,
            "field": "source",
        },
        {
            "type": "struct",
            "fields": [
                {"type": "string", "optional": False, "field": "id"},
                {"type": "int64", "optional": False, "field": "total_order"},
                {"type": "int64", "optional": False, "field": "data_collection_order"},
            ],
            "optional": True,
            "name": "event.block",
            "version": 1,
            "field": "transaction",
        },
        {"type": "string", "optional": False, "field": "op"},
        {"type": "int64", "optional": True, "field": "ts_ms"},
        {"type": "int64", "optional": True, "field": "ts_us"},
        {"type": "int64", "optional": True, "field": "ts_ns"},
    ],
    "optional": False,
    "name": "PostgreSQL_server.inventory.customers.Envelope",
    "version": 2,
}
ANNE = {"id": 1, "first_name": "Anne", "last_name": "Kretchmar", "email": "annek@noanswer.org"}
CREATE_PAYLOAD = {
    "before": None,
    "after": ANNE,
    "source": {
        "version": "3.6.1.Final",
        "connector": "postgresql",
        "name": "PostgreSQL_server",
        "ts_ms": 1559033904863,
        "snapshot": "false",
        "db": "postgres",
        "sequence": '["24023119","24023128"]',
        "ts_us": 1559033904863123,
        "ts_ns": 1559033904863123000,
        "schema": "inventory",
        "table": "customers",
        "txId": 555,
        "lsn": 24023128,
        "xmin": None,
        "origin": None,
        "origin_lsn": None,
    },
    "transaction": None,
    "op": "c",
    "ts_ms": 1559033904869,
    "ts_us": 1559033904869000,
    "ts_ns": 1559033904869000000,
}
KEY = {
    "schema": {
        "type": "struct",
        "fields": [{"type": "int32", "optional": False, "field": "id"}],
        "optional": False,
        "name": "PostgreSQL_server.inventory.customers.Key",
    },
    "payload": {"id": 1},
}
COLUMNS = ("id", "first_name", "last_name", "email")
CUSTOMERS = CapturedTable(
    "inventory",
    "customers",
    COLUMNS,
    ("id",),
    types=(from_oid("id", 23, -1, False), *(from_oid(c, 1043, 259, False) for c in COLUMNS[1:])),
)


def envelope(tombstones: bool = True) -> DebeziumEnvelope:
    schemas = RecordSchemas("PostgreSQL_server", "precise", "adaptive", debezium=True)
    return DebeziumEnvelope("PostgreSQL_server", "postgres", schemas, tombstones)


def as_json(records: list[SourceRecord]) -> list[tuple[bytes | None, bytes | None]]:
    """Each record's key and value as Headwater's JSON converter writes them with ``schemas.enable=true``."""
    key_converter, value_converter = JsonConverter(), JsonConverter()
    key_converter.configure({"schemas.enable": "true"}, True)
    value_converter.configure({"schemas.enable": "true"}, False)
    return [
        (
            key_converter.from_connect(r.topic, r.key_schema, r.key),
            value_converter.from_connect(r.topic, r.value_schema, r.value),
        )
        for r in records
    ]


def decoded(records: list[SourceRecord]) -> list[tuple[Any, Any]]:
    return [(json.loads(k) if k else None, json.loads(v) if v else None) for k, v in as_json(records)]


def change(op: str, before: dict[str, Any] | None, after: dict[str, Any] | None, **fields: Any) -> Change:
    made = Change(CUSTOMERS, op, before, after, 1559033904863, lsn=24023200, txid=555, ts_us=1559033904863123)
    made.event_lsn, made.previous_end = 24023128, 24023119
    for name, value in fields.items():
        setattr(made, name, value)
    return made


def test_an_insert_is_debeziums_create_event_field_for_field_and_byte_for_byte() -> None:
    records = envelope().records(change("c", None, ANNE), {"server": "x"}, {"lsn": 1}, 1559033904869)
    assert len(records) == 1 and records[0].topic == "PostgreSQL_server.inventory.customers"
    ((key, value),) = as_json(records)
    assert json.loads(value or b"") == {"schema": ENVELOPE_SCHEMA, "payload": CREATE_PAYLOAD}
    assert json.loads(key or b"") == KEY
    compact = {"separators": (",", ":"), "ensure_ascii": False}  # Kafka's JsonConverter: keys in its order
    assert value == json.dumps({"schema": ENVELOPE_SCHEMA, "payload": CREATE_PAYLOAD}, **compact).encode()
    assert key == json.dumps(KEY, **compact).encode()
    assert records[0].timestamp is None  # Debezium leaves it to the producer


def test_snapshot_update_and_delete_then_its_tombstone() -> None:
    made = envelope()
    read = change("r", None, ANNE, snapshot=True, snapshot_record="first", previous_end=None)
    renamed = {**ANNE, "last_name": "K."}
    events = [read, change("u", ANNE, renamed), change("d", renamed, None)]
    records = [r for e in events for r in made.records(e, {"server": "x"}, {"lsn": 1}, 1559033904869)]
    values = decoded(records)
    assert [v["payload"]["op"] if v else None for _, v in values] == ["r", "u", "d", None]
    snapshot_source = values[0][1]["payload"]["source"]
    assert (snapshot_source["snapshot"], snapshot_source["sequence"]) == ("first", '[null,"24023128"]')
    assert values[1][1]["payload"]["before"] == ANNE and values[1][1]["payload"]["after"] == renamed
    assert values[2][1]["payload"]["before"] == renamed and values[2][1]["payload"]["after"] is None
    delete, tombstone = records[2:]
    assert (tombstone.key, tombstone.key_schema, tombstone.value, tombstone.value_schema) == (
        delete.key,
        delete.key_schema,
        None,
        None,
    )
    assert tombstone.source_offset is delete.source_offset and tombstone.topic == delete.topic
    assert as_json([tombstone])[0][1] is None  # the JSON converter writes a real tombstone
    assert len(envelope(tombstones=False).records(events[2], None, {}, 1)) == 1


def test_the_debezium_unwrap_reads_the_events_as_rows() -> None:
    made = envelope()
    bob = {"id": 2, "first_name": "Bob", "last_name": "B", "email": "b@x"}
    events = [
        change("r", None, ANNE, snapshot=True, snapshot_record="first"),
        change("r", None, bob, snapshot=True, snapshot_record="last"),
        change("u", ANNE, {**ANNE, "email": "anne@x"}),
        change("d", bob, None),
    ]
    messages = decoded([r for e in events for r in made.records(e, {"server": "x"}, {}, 1)])
    assert list(table_rows(messages).values()) == [{**ANNE, "email": "anne@x"}]
    delete, tombstone = messages[-2:]
    unwrapped = unwrap(*delete)
    assert unwrapped is not None and unwrapped.value is None and unwrapped.key == {"id": 2}
    assert unwrapped.value_schema is not None and unwrapped.value_schema["name"] == VALUE  # the schema is kept
    assert unwrap(*tombstone) is None  # Debezium's tombstone is dropped by default
    assert unwrap(*delete, mode="drop") is None
    assert unwrap({"payload": 1}, {"schema": {"type": "string", "optional": False}, "payload": "x"}) is not None


def test_a_transaction_ending_in_a_delete_commits_after_its_tombstone() -> None:
    made, ends = envelope(), {"lsn": 90, "seq": 1, "flush": 90}
    records = [
        *made.records(change("u", ANNE, ANNE), None, {"lsn": 90, "seq": 0, "flush": 80}, 1),
        *made.records(change("d", ANNE, None), None, ends, 1),
    ]
    assert [r.value is None for r in records] == [False, False, True]
    assert transaction_ends(records) == [records[2]]  # not the delete: its tombstone would open the next one
