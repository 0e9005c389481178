"""Debezium's PostgreSQL connector keys the CDC connector does not read, each answered with what to write instead
(docs/migration.md has the whole table). Keys and defaults are Debezium's ``PostgresConnectorConfig``,
``RelationalDatabaseConnectorConfig`` and ``CommonConnectorConfig``."""

from __future__ import annotations

from headwater.sdk.config import ConfigDef

_DBZ = "Debezium's key (see docs/migration.md)"
_URL = "postgresql+psycopg2://user:password@host:port/dbname"

DEBEZIUM_KEYS = (
    ConfigDef()
    .define_replaced(
        ("database.hostname", "database.port", "database.user", "database.password", "database.dbname"),
        f"{_DBZ}; the CDC connector reads one SQLAlchemy URL, connection.url={_URL} (a config provider keeps the "
        "password out of the file)",
    )
    .define_replaced(
        ("database.sslmode", "database.sslrootcert", "database.sslcert"),
        f"{_DBZ}; give it as a query parameter of connection.url (?sslmode=verify-full&sslrootcert=...)",
    )
    .define_replaced("plugin.name", f"{_DBZ}; capture.mode=log always decodes with pgoutput")
    .define_replaced(
        "publication.autocreate.mode", f"{_DBZ}; the publication holds the captured tables only (Debezium's filtered)"
    )
    .define_replaced(
        ("schema.include.list", "schema.exclude.list"), f"{_DBZ}; choose schemas with table.include.list (schema.table)"
    )
    .define_replaced(
        ("column.include.list", "column.exclude.list", "message.key.columns"),
        f"{_DBZ}; drop columns with the ReplaceField transform; the key is the primary key",
    )
    .define_replaced("max.batch.size", f"{_DBZ}; the CDC connector reads batch.max.rows")
    .define_replaced(
        "heartbeat.topics.prefix", f"{_DBZ}; set the whole topic: heartbeat.records.topic=__debezium-heartbeat.<prefix>"
    )
    .define_replaced("replica.identity.autoset.values", f"{_DBZ}; replica.identity.full=true sets FULL on every table")
    .define_replaced(
        "slot.drop.on.stop", f"{_DBZ}; the slot is dropped when the connector is deleted (KIP-901), never on a stop"
    )
    .define_replaced(
        "provide.transaction.metadata", f"{_DBZ}; the CDC connector sends no transaction metadata (transaction is null)"
    )
    .define_replaced("skipped.operations", f"{_DBZ}; the CDC connector sends no truncate or message events")
    .define_replaced(
        (
            "heartbeat.action.query",
            "status.update.interval.ms",
            "hstore.handling.mode",
            "interval.handling.mode",
            "money.fraction.digits",
            "include.unknown.datatypes",
            "schema.name.adjustment.mode",
        ),
        f"{_DBZ}; the CDC connector has no equivalent",
    )
)
"""The keys, as a definition the CDC connector's own merges."""
