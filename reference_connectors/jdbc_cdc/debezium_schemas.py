"""The Kafka Connect schemas of Debezium's PostgreSQL change events (``envelope=debezium``), as Debezium's own
classes build them (as of :data:`DEBEZIUM_VERSION`): ``io.debezium.schema.SchemaFactory`` (the envelope's fields after
the record's, the ``source`` block's common fields, the ``event.block`` transaction struct, the heartbeat's key and
value), ``io.debezium.data.Envelope`` (version 2), ``io.debezium.connector.postgresql.PostgresSourceInfoStructMaker``
(the ``source`` block's PostgreSQL fields) and ``io.debezium.data.Enum`` with ``io.debezium.connector.SnapshotRecord``
(``source.snapshot``). Each is written with its keys in the order Kafka's ``JsonConverter`` writes them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from headwater.sdk.schemas import INT64, STRING, optional, struct

DEBEZIUM_VERSION = "3.6.1.Final"
"""The Debezium release whose PostgreSQL events these are, and the ``source.version`` they carry."""
CONNECTOR = "postgresql"


def versioned(schema: Mapping[str, Any], version: int) -> dict[str, Any]:
    return {**schema, "version": version}


SNAPSHOT_RECORDS = (
    "true",
    "first",
    "first_in_data_collection",
    "last_in_data_collection",
    "last",
    "false",
    "incremental",
)
"""``io.debezium.connector.SnapshotRecord``'s values, in its order (the enum schema's ``allowed`` parameter)."""
SNAPSHOT = {
    "type": "string",
    "optional": True,
    "name": "io.debezium.data.Enum",
    "version": 1,
    "parameters": {"allowed": ",".join(SNAPSHOT_RECORDS)},
    "default": "false",
}
SOURCE = versioned(
    struct(
        "io.debezium.connector.postgresql.Source",
        version=STRING,
        connector=STRING,
        name=STRING,
        ts_ms=INT64,
        snapshot=SNAPSHOT,
        db=STRING,
        sequence=optional(STRING),
        ts_us=optional(INT64),
        ts_ns=optional(INT64),
        schema=STRING,
        table=STRING,
        txId=optional(INT64),
        lsn=optional(INT64),
        xmin=optional(INT64),
        origin=optional(STRING),
        origin_lsn=optional(INT64),
    ),
    1,
)
"""Debezium's PostgreSQL ``source`` block."""
TRANSACTION = optional(versioned(struct("event.block", id=STRING, total_order=INT64, data_collection_order=INT64), 1))
"""``SchemaFactory.transactionBlockSchema()``: the envelope's ``transaction``, null here."""
_JSON_ORDER = ("type", "fields", "items", "keys", "values", "optional", "name", "version", "doc", "parameters")
_JSON_LAST = ("default", "field")


def json_order(schema: Mapping[str, Any]) -> dict[str, Any]:
    """``schema`` with its keys in the order Kafka's ``JsonConverter.asJsonSchema`` writes them (``type``, then
    ``fields``/``items``/``keys``/``values``, ``optional``, ``name``, ``version``, ``doc``, ``parameters``,
    ``default``, and a struct member's ``field`` last), so the JSON converter's text is Debezium's byte for byte."""
    made: dict[str, Any] = {}
    for key in (*_JSON_ORDER, *(k for k in schema if k not in _JSON_ORDER and k not in _JSON_LAST), *_JSON_LAST):
        if key not in schema:
            continue
        value = schema[key]
        if key == "fields":
            value = [json_order(member) for member in value]
        elif key in ("items", "keys", "values") and isinstance(value, Mapping):
            value = json_order(value)
        made[key] = value
    return made


HEARTBEAT_KEY = json_order(versioned(struct("io.debezium.connector.common.ServerNameKey", serverName=STRING), 1))
HEARTBEAT = json_order(versioned(struct("io.debezium.connector.common.Heartbeat", ts_ms=INT64), 1))


def envelope_schema(name: str, row: Mapping[str, Any]) -> dict[str, Any]:
    """The envelope struct ``name`` (``<prefix>.<schema>.<table>.Envelope``) of tables whose row struct is ``row``."""
    fields = {
        "before": row,
        "after": row,
        "source": SOURCE,
        "transaction": TRANSACTION,
        "op": STRING,
        "ts_ms": optional(INT64),
        "ts_us": optional(INT64),
        "ts_ns": optional(INT64),
    }
    return json_order(versioned(struct(name, **fields), 2))
