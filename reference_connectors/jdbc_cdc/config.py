"""The CDC connector's configuration: where the database is, which tables, which capture mode, and the names of what
the connector provisions (audit table and triggers, or replication slot and publication)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from headwater.reference_connectors.jdbc_cdc.connection_url import CONNECTION_URL, check_url
from headwater.reference_connectors.jdbc_cdc.debezium_keys import DEBEZIUM_KEYS
from headwater.sdk import ConfigDef, ConfigError, Importance, Type, at_least, one_of

CAPTURE_MODE = "capture.mode"
TABLE_INCLUDE = "table.include.list"
TABLE_EXCLUDE = "table.exclude.list"
TOPIC_PREFIX = "topic.prefix"
SNAPSHOT_MODE = "snapshot.mode"
SNAPSHOT_FETCH_SIZE = "snapshot.fetch.size"
BATCH_MAX_ROWS = "batch.max.rows"
POLL_INTERVAL_MS = "poll.interval.ms"
AUDIT_TABLE = "audit.table.name"
PURGE_AUDIT = "audit.purge.committed"
SLOT_NAME = "slot.name"
PUBLICATION_NAME = "publication.name"
REPLICA_IDENTITY_FULL = "replica.identity.full"
DECIMAL_HANDLING_MODE = "decimal.handling.mode"
RECORD_SCHEMAS = "record.schemas"
TIME_PRECISION_MODE = "time.precision.mode"
ENVELOPE = "envelope"
TOMBSTONES_ON_DELETE = "tombstones.on.delete"
KEY_CONVERTER, VALUE_CONVERTER = "key.converter", "value.converter"

TRIGGER, LOG = "trigger", "log"
INITIAL, NEVER = "initial", "never"
STRING, DOUBLE, PRECISE = "string", "double", "precise"
NONE, CONNECT = "none", "connect"
ADAPTIVE = "adaptive"
HEADWATER, DEBEZIUM = "headwater", "debezium"

BYTES_CONVERTERS = frozenset(
    {
        "bytes",
        "org.apache.kafka.connect.converters.ByteArrayConverter",
        "headwater.runtime.converters.ByteArrayConverter",
    }
)
"""``key.converter``/``value.converter`` names of the pass-through converter: with both in the connector's config,
the task writes keys and values as JSON bytes itself."""

_IDENTIFIER = re.compile(r"[a-z_][a-z0-9_]{0,47}")
_NAME_CHARS = re.compile(r"[^a-z0-9_]+")


def default_object_name(connector: str) -> str:
    """``headwater_cdc_<connector name>`` in lower case, other characters as ``_``, cut to 48 characters."""
    return ("headwater_cdc_" + _NAME_CHARS.sub("_", connector.lower())).rstrip("_")[:48]


def _identifier(key: str, value: Any) -> None:
    if value and not _IDENTIFIER.fullmatch(value):
        raise ConfigError(key, value, "Use at most 48 lower-case letters, digits and '_', not starting with a digit")


def _patterns(key: str, value: Any) -> None:
    for item in value or ():
        try:
            re.compile(item)
        except re.error as error:
            raise ConfigError(key, value, f"{item!r} is not a regular expression: {error}") from None


CONFIG_DEF = (
    ConfigDef()
    .define(
        CONNECTION_URL,
        Type.PASSWORD,
        importance=Importance.HIGH,
        documentation="SQLAlchemy URL of the database: sqlite:///path (an existing file), postgresql+psycopg2://..., "
        "mysql+pymysql://...; query parameters that read local files or load code (sslkey, passfile, local_infile, "
        "read_default_file...) are refused, and so is any query parameter of a SQLite URL (see docs/security.md).",
        validator=check_url,
    )
    .define(
        CAPTURE_MODE,
        Type.STRING,
        TRIGGER,
        Importance.HIGH,
        "trigger (audit table and row triggers; SQLite, PostgreSQL, MariaDB/MySQL) or log (PostgreSQL logical "
        "replication with pgoutput).",
        one_of(TRIGGER, LOG),
    )
    .define(
        TABLE_INCLUDE,
        Type.LIST,
        "",
        Importance.HIGH,
        "Regular expressions matched against whole table names (schema.table or table); empty captures every table. "
        "Each expression must match a table.",
        _patterns,
    )
    .define(
        TABLE_EXCLUDE,
        Type.LIST,
        "",
        Importance.MEDIUM,
        "Regular expressions of tables left out, matched like the include list.",
        _patterns,
    )
    .define(TOPIC_PREFIX, Type.STRING, "", Importance.HIGH, "Topics are <prefix>.<schema>.<table>; empty: the name.")
    .define(
        SNAPSHOT_MODE,
        Type.STRING,
        INITIAL,
        Importance.MEDIUM,
        "initial: on first start, emit every existing row (op r), then stream; never: stream changes only.",
        one_of(INITIAL, NEVER),
    )
    .define(SNAPSHOT_FETCH_SIZE, Type.INT, 1000, Importance.LOW, "Rows per poll while snapshotting.", at_least(1))
    .define(BATCH_MAX_ROWS, Type.INT, 2000, Importance.LOW, "Most change events one poll returns.", at_least(1))
    .define(
        POLL_INTERVAL_MS,
        Type.INT,
        100,
        Importance.LOW,
        "How long the task idles after a poll that found nothing before it is polled again (on the worker's "
        "clock; a stop ends the wait at once).",
        at_least(0),
    )
    .define(
        AUDIT_TABLE,
        Type.STRING,
        "",
        Importance.LOW,
        "Trigger mode: the audit table, also the prefix of the triggers; empty: headwater_cdc_<name>.",
        _identifier,
    )
    .define(
        PURGE_AUDIT,
        Type.BOOLEAN,
        True,
        Importance.LOW,
        "Trigger mode: delete audit rows up to the committed offset after each offset commit.",
    )
    .define(SLOT_NAME, Type.STRING, "", Importance.LOW, "Log mode: replication slot; empty: headwater_cdc_<name>.")
    .define(PUBLICATION_NAME, Type.STRING, "", Importance.LOW, "Log mode: publication; empty: headwater_cdc_<name>.")
    .define(
        REPLICA_IDENTITY_FULL,
        Type.BOOLEAN,
        False,
        Importance.LOW,
        "Log mode: set REPLICA IDENTITY FULL on captured tables so updates and deletes carry the whole before image.",
    )
    .define(
        DECIMAL_HANDLING_MODE,
        Type.STRING,
        STRING,
        Importance.MEDIUM,
        "How NUMERIC/DECIMAL column values are written. string: a JSON string with the database's exact text of the "
        'value (12.500 as "12.500"), no precision lost; double: a JSON number, a float where the value has a '
        "fraction or an exponent (precision beyond 15-17 digits is lost; a value outside a double's range fails the "
        "task, naming table and column); precise (needs record.schemas=connect): Kafka Connect's Decimal with the "
        "column's scale and precision, a value with more digits fails the task (never rounded), a column without a "
        "declared scale is refused at start. Float and integer columns are JSON numbers either way. With "
        "envelope=debezium the default is precise, Debezium's.",
        one_of(STRING, DOUBLE, PRECISE),
    )
    .define(
        RECORD_SCHEMAS,
        Type.STRING,
        NONE,
        Importance.MEDIUM,
        "none: schemaless change events (JSON-shaped values); connect: every record carries a Kafka Connect key and "
        "value schema derived from the captured table's columns (values converted to the schema's types), as a "
        "schema-needing converter such as Avro with a Schema Registry wants. Not with the bytes converters.",
        one_of(NONE, CONNECT),
    )
    .define(
        TIME_PRECISION_MODE,
        Type.STRING,
        ADAPTIVE,
        Importance.LOW,
        "With record.schemas=connect: adaptive (Debezium's io.debezium.time.Date, Time, MicroTime, Timestamp, "
        "MicroTimestamp integers by the column's precision) or connect (Kafka Connect's Date, Time, Timestamp; "
        "timestamps and times to the millisecond).",
        one_of(ADAPTIVE, CONNECT),
    )
    .define(
        ENVELOPE,
        Type.STRING,
        HEADWATER,
        Importance.MEDIUM,
        "headwater: this connector's change events; debezium: exactly the events of Debezium's PostgreSQL "
        "connector (its envelope, source block and schemas, a tombstone after each delete), so consumers and "
        "ExtractNewRecordState written for Debezium topics read them unchanged. debezium needs capture.mode=log and "
        "record schemas (record.schemas=connect, its default there; none is refused), and makes "
        "decimal.handling.mode default to precise, Debezium's default.",
        one_of(HEADWATER, DEBEZIUM),
    )
    .define(
        TOMBSTONES_ON_DELETE,
        Type.BOOLEAN,
        True,
        Importance.LOW,
        "With envelope=debezium: a tombstone (the key, a null value) follows each delete event, as Debezium's "
        "option of the same name; false leaves it out. envelope=headwater sends none (true is refused there: use "
        "the jdbc-cdc-unwrap transform's delete.handling.mode=none).",
    )
    .merge(DEBEZIUM_KEYS)
)
"""Every option of the CDC connector with its default and validator, and Debezium's keys answered with what to write
instead."""


@dataclass(frozen=True)
class CdcConfig:
    """A parsed connector or task config."""

    name: str
    url: str
    mode: str
    include: tuple[re.Pattern[str], ...]
    exclude: tuple[re.Pattern[str], ...]
    topic_prefix: str
    snapshot: bool
    snapshot_fetch_size: int
    batch_max_rows: int
    poll_interval_ms: int
    audit_table: str
    purge: bool
    slot: str
    publication: str
    replica_identity_full: bool
    decimal_handling: str = STRING
    record_schemas: str = NONE
    time_precision: str = ADAPTIVE
    envelope: str = HEADWATER
    tombstones: bool = False
    """Whether a tombstone follows each delete (``tombstones.on.delete``, with ``envelope=debezium``)."""

    @classmethod
    def parse(cls, props: Mapping[str, Any]) -> CdcConfig:
        """Parse ``props``; raises :class:`ConfigError` naming the bad key."""
        parsed = CONFIG_DEF.parse(props)
        name = str(props.get("name", "")) or "jdbc-cdc"
        default = default_object_name(name)
        for key in (SLOT_NAME, PUBLICATION_NAME):
            _identifier(key, parsed[key])
        envelope = _envelope(props, parsed)
        return cls(
            name=name,
            url=parsed[CONNECTION_URL],
            mode=parsed[CAPTURE_MODE].lower(),
            include=tuple(re.compile(p) for p in parsed[TABLE_INCLUDE] if p),
            exclude=tuple(re.compile(p) for p in parsed[TABLE_EXCLUDE] if p),
            topic_prefix=parsed[TOPIC_PREFIX] or name,
            snapshot=parsed[SNAPSHOT_MODE].lower() == INITIAL,
            snapshot_fetch_size=parsed[SNAPSHOT_FETCH_SIZE],
            batch_max_rows=parsed[BATCH_MAX_ROWS],
            poll_interval_ms=parsed[POLL_INTERVAL_MS],
            audit_table=parsed[AUDIT_TABLE] or default,
            purge=parsed[PURGE_AUDIT],
            slot=parsed[SLOT_NAME] or default,
            publication=parsed[PUBLICATION_NAME] or default,
            replica_identity_full=parsed[REPLICA_IDENTITY_FULL],
            decimal_handling=parsed[DECIMAL_HANDLING_MODE].lower(),
            record_schemas=_schemas_mode(props, parsed, envelope),
            time_precision=parsed[TIME_PRECISION_MODE].lower(),
            envelope=envelope,
            tombstones=envelope == DEBEZIUM and bool(parsed[TOMBSTONES_ON_DELETE]),
        )


def _given(props: Mapping[str, Any], key: str) -> bool:
    value = props.get(key)
    return value is not None and str(value).strip() != ""


def _envelope(props: Mapping[str, Any], parsed: dict[str, Any]) -> str:
    """``envelope``, checked against the keys it needs; under ``debezium`` the unset ``record.schemas`` and
    ``decimal.handling.mode`` take Debezium's defaults (schemas always; ``precise``) in ``parsed``."""
    envelope = str(parsed[ENVELOPE]).lower()
    if envelope != DEBEZIUM:
        if _given(props, TOMBSTONES_ON_DELETE) and parsed[TOMBSTONES_ON_DELETE]:
            raise ConfigError(
                TOMBSTONES_ON_DELETE,
                props[TOMBSTONES_ON_DELETE],
                "tombstones.on.delete applies to envelope=debezium; with envelope=headwater a delete sends no "
                "tombstone (the jdbc-cdc-unwrap transform's delete.handling.mode=none turns a delete into one)",
            )
        return envelope
    if str(parsed[CAPTURE_MODE]).lower() != LOG:
        raise ConfigError(
            CAPTURE_MODE,
            parsed[CAPTURE_MODE],
            "envelope=debezium needs capture.mode=log: Debezium's PostgreSQL events carry the WAL positions (lsn, "
            "sequence) and commit times only the replication stream gives; trigger mode cannot fill them, and "
            "Debezium's MySQL/MariaDB source block (binlog file, position, GTID) has no counterpart here",
        )
    if str(parsed[RECORD_SCHEMAS]).lower() == NONE and _given(props, RECORD_SCHEMAS):
        raise ConfigError(
            RECORD_SCHEMAS,
            parsed[RECORD_SCHEMAS],
            "envelope=debezium needs record schemas: Debezium's events always carry their key and value schemas "
            "(use record.schemas=connect, or leave it unset; the JSON converter with schemas.enable=false still "
            "writes payloads only)",
        )
    parsed[RECORD_SCHEMAS] = CONNECT
    if not _given(props, DECIMAL_HANDLING_MODE):
        parsed[DECIMAL_HANDLING_MODE] = PRECISE
    return envelope


def _schemas_mode(props: Mapping[str, Any], parsed: Mapping[str, Any], envelope: str) -> str:
    """``record.schemas``, checked against the keys that need it or refuse it."""
    mode = str(parsed[RECORD_SCHEMAS]).lower()
    if mode == CONNECT:
        converters = {key: props.get(key) for key in (KEY_CONVERTER, VALUE_CONVERTER)}
        if any(value in BYTES_CONVERTERS for value in converters.values()):
            shown = ", ".join(f"{key}={value}" for key, value in converters.items() if value is not None)
            key, value = (ENVELOPE, DEBEZIUM) if envelope == DEBEZIUM else (RECORD_SCHEMAS, parsed[RECORD_SCHEMAS])
            raise ConfigError(
                key,
                value,
                f"the bytes converters ({shown}) write schemaless JSON bytes, and {key}={value} needs record "
                "schemas: use record.schemas=none and envelope=headwater with them, or a converter that writes "
                "schemas (avro, json) in key.converter and value.converter",
            )
        return mode
    if str(parsed[DECIMAL_HANDLING_MODE]).lower() == PRECISE:
        raise ConfigError(
            DECIMAL_HANDLING_MODE,
            parsed[DECIMAL_HANDLING_MODE],
            "precise needs record.schemas=connect (a Decimal "
            "is a schema type; schemaless events hold a decimal as its text with string)",
        )
    if str(parsed[TIME_PRECISION_MODE]).lower() != ADAPTIVE:
        raise ConfigError(
            TIME_PRECISION_MODE,
            parsed[TIME_PRECISION_MODE],
            "time.precision.mode applies to record schemas only: set record.schemas=connect, or leave it unset",
        )
    return mode
