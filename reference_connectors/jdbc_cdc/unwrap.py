"""The JDBC-CDC unwrap transform (entry point ``jdbc-cdc-unwrap`` under ``headwater.transforms``): a change event
becomes the plain row, so a CDC topic can feed a table. It plays the role of Debezium's ``ExtractNewRecordState``
for this connector's envelope (:mod:`.envelope`), without claiming its name: the envelope's ``source`` fields are
this connector's, not Debezium's."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from headwater.reference_connectors.jdbc_cdc.envelope import CONNECTOR
from headwater.sdk import ConfigDef, ConfigError, ConnectError, Importance, SourceRecord, Transformation, Type, one_of
from headwater.sdk.schemas import STRING, Schema, optional

DELETE_MODES = ("drop", "rewrite", "none")
ENVELOPE_FIELDS = ("op", "ts_ms")
SOURCE_FIELDS = ("connector", "name", "mode", "db", "schema", "table", "change_id", "lsn", "txid", "snapshot", "ts_ms")
"""What ``add.fields`` may name: the envelope's own fields, and the ``source`` block's (``source.ts_ms`` for the
database's change time; a bare name that is not an envelope field is a ``source`` field)."""


def _known_fields(key: str, value: Any) -> None:
    """Each one of: op, ts_ms, or a source field (table, lsn, change_id, source.ts_ms, ...)."""
    for name in value or []:
        bare = name.removeprefix("source.")
        if not (name in ENVELOPE_FIELDS or bare in SOURCE_FIELDS):
            known = ", ".join([*ENVELOPE_FIELDS, *(f"source.{field}" for field in SOURCE_FIELDS)])
            raise ConfigError(key, ",".join(value), f"Unknown field {name}; known: {known}")


def is_heartbeat(value: Any) -> bool:
    """Whether a record value is the connector's heartbeat (its ``produce_heartbeat_records``, KIP-910): the
    connector's name and offset, no ``op``."""
    return isinstance(value, Mapping) and value.get("connector") == CONNECTOR and "op" not in value


CONFIG = (
    ConfigDef()
    .define(
        "delete.handling.mode",
        Type.STRING,
        "drop",
        Importance.MEDIUM,
        "What a delete event becomes: drop (nothing), none (a tombstone: the key with a null value, so a compacted "
        "topic or an upserting sink forgets the row), rewrite (the before row with __deleted=true; other rows get "
        "__deleted=false).",
        one_of(*DELETE_MODES),
    )
    .define(
        "drop.tombstones",
        Type.BOOLEAN,
        True,
        Importance.LOW,
        "Whether a record that already has a null value (a tombstone) is dropped; false passes it on.",
    )
    .define(
        "add.fields",
        Type.LIST,
        "",
        Importance.LOW,
        "Envelope fields added to the row, each as <prefix><name> with dots as underscores: op, ts_ms (when the "
        "connector read the change), or a source field (table, lsn, change_id, txid, snapshot, source.ts_ms for "
        "when the database made the change).",
        _known_fields,
    )
    .define("add.fields.prefix", Type.STRING, "__", Importance.LOW, "Put before each added field's name and __deleted.")
)


class JdbcCdcUnwrap(Transformation[SourceRecord]):
    """Turns a JDBC-CDC change event into the row it carries: the ``after`` image of an insert, update or snapshot
    read; a delete as ``delete.handling.mode`` says. The key (the primary key), its schema and the topic stay. A
    value given as JSON bytes (the connector's ``bytes`` converters) is unwrapped into JSON bytes; a value with a
    schema (``record.schemas=connect``) gets the row's schema, with the added fields (optional)."""

    def __init__(self) -> None:
        self.delete_mode = "drop"
        self.drop_tombstones = True
        self.fields: list[str] = []
        self.prefix = "__"
        self._schemas: dict[int, tuple[Any, Schema]] = {}

    def config_def(self) -> ConfigDef:
        return CONFIG

    def configure(self, config: Mapping[str, Any]) -> None:
        self.delete_mode = config["delete.handling.mode"]
        self.drop_tombstones = config["drop.tombstones"]
        self.fields = list(config["add.fields"] or [])
        self.prefix = config["add.fields.prefix"]
        self._schemas = {}

    def apply(self, record: SourceRecord) -> SourceRecord | None:
        value = record.value
        if value is None:
            return None if self.drop_tombstones else record
        encoded = isinstance(value, bytes | bytearray)
        envelope = json.loads(value) if encoded else value
        if not (isinstance(envelope, Mapping) and envelope.get("op") in ("c", "u", "d", "r")):
            if is_heartbeat(envelope):  # as Debezium's transform passes its heartbeats, which are no envelopes
                return record
            raise ConnectError(f"Not a JDBC-CDC change event (no op of c, u, d or r) on topic {record.topic}")
        row = self._row(envelope)
        if row is None:  # a tombstone has no value schema (as Debezium's), so the JSON converter writes null
            return None if self.delete_mode == "drop" else replace(record, value=None, value_schema=None)
        if encoded:
            return replace(record, value=json.dumps(row, separators=(",", ":"), ensure_ascii=False).encode())
        return replace(record, value=row, value_schema=self._schema(record.value_schema))

    def _schema(self, envelope: Any) -> Schema | None:
        """The row's schema of an envelope's schema (the ``after`` field's struct, with the added fields), made once
        per envelope schema; ``None`` for a record without one."""
        if envelope is None:
            return None
        if not isinstance(envelope, Mapping):
            raise ConnectError(f"A JDBC-CDC change event's schema must be a Kafka Connect schema, not {envelope!r}")
        found = self._schemas.get(id(envelope))
        if found is not None and found[0] is envelope:
            return found[1]
        fields = {f.get("field"): f for f in (envelope.get("fields") or ()) if isinstance(f, Mapping)}
        after, source = fields.get("after"), fields.get("source")
        if after is None or after.get("type") != "struct" or source is None:
            raise ConnectError(f"Not a JDBC-CDC envelope schema (no after and source structs): {envelope.get('name')}")
        row = {key: value for key, value in after.items() if key != "field"}
        added = [dict(f) for f in row.get("fields", ())]
        source_fields = {f["field"]: f for f in source.get("fields", ())}
        for name in self.fields:
            schema = fields[name] if name in ENVELOPE_FIELDS else source_fields[name.removeprefix("source.")]
            added.append({**optional(schema), "field": self.prefix + name.replace(".", "_")})
        if self.delete_mode == "rewrite":
            added.append({**optional(STRING), "field": f"{self.prefix}deleted"})
        made = {**row, "fields": added}
        self._schemas[id(envelope)] = (envelope, made)
        return made

    def _row(self, envelope: Mapping[str, Any]) -> dict[str, Any] | None:
        """The plain row, or ``None`` for a delete that is not rewritten."""
        deleted = envelope["op"] == "d"
        if deleted and self.delete_mode != "rewrite":
            return None
        image = envelope.get("before" if deleted else "after")
        if not isinstance(image, Mapping):
            raise ConnectError(f"A change event with op {envelope['op']} has no row image")
        row = dict(image)
        source = envelope.get("source") or {}
        for name in self.fields:
            found = envelope.get(name) if name in ENVELOPE_FIELDS else source.get(name.removeprefix("source."))
            row[self.prefix + name.replace(".", "_")] = found
        if self.delete_mode == "rewrite":
            row[f"{self.prefix}deleted"] = "true" if deleted else "false"
        return row
