"""The JDBC-CDC unwrap transform (entry point ``jdbc-cdc-unwrap`` under ``headwater.transforms``): a change event
becomes the plain row, so a CDC topic can feed a table. It plays the role of Debezium's ``ExtractNewRecordState``
for this connector's envelope (:mod:`.envelope`), without claiming its name: the envelope's ``source`` fields are
this connector's, not Debezium's."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from headwater.sdk import ConfigDef, ConfigError, ConnectError, Importance, SourceRecord, Transformation, Type, one_of

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
    read; a delete as ``delete.handling.mode`` says. The key (the primary key) and topic stay. A value given as
    JSON bytes (the connector's ``bytes`` converters) is unwrapped into JSON bytes."""

    def __init__(self) -> None:
        self.delete_mode = "drop"
        self.drop_tombstones = True
        self.fields: list[str] = []
        self.prefix = "__"

    def config_def(self) -> ConfigDef:
        return CONFIG

    def configure(self, config: Mapping[str, Any]) -> None:
        self.delete_mode = config["delete.handling.mode"]
        self.drop_tombstones = config["drop.tombstones"]
        self.fields = list(config["add.fields"] or [])
        self.prefix = config["add.fields.prefix"]

    def apply(self, record: SourceRecord) -> SourceRecord | None:
        value = record.value
        if value is None:
            return None if self.drop_tombstones else record
        encoded = isinstance(value, bytes | bytearray)
        envelope = json.loads(value) if encoded else value
        if not (isinstance(envelope, Mapping) and envelope.get("op") in ("c", "u", "d", "r")):
            raise ConnectError(f"Not a JDBC-CDC change event (no op of c, u, d or r) on topic {record.topic}")
        row = self._row(envelope)
        if row is None:
            return None if self.delete_mode == "drop" else replace(record, value=None)
        if encoded:
            return replace(record, value=json.dumps(row, separators=(",", ":"), ensure_ascii=False).encode())
        return replace(record, value=row)

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
