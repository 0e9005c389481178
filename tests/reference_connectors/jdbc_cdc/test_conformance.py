"""The conformance suite and a stateful machine on the CDC source's trigger mode, on SQLite: no record lost at any
commit-then-crash point (with one and two rows per poll), offsets resumed after a restart and a crash, heartbeats
that move the committed offset past audit rows of tables no longer captured, and cleanup on delete.
``make mutants`` runs this module against the generated mutants of trigger mode's offset code."""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

from sqlalchemy import text

from headwater.harness import ConformanceContext, SourceMachine, machine_test, source_conformance
from headwater.harness.guarantees import json_value
from headwater.harness.stateful import machine_settings
from headwater.reference_connectors.jdbc_cdc import JdbcCdcSourceConnector
from headwater.runtime.transport.base import Message
from support.scratch import ScratchDatabase

AUDIT = "cdc_audit"


def database(config: Mapping[str, Any]) -> ScratchDatabase:
    return ScratchDatabase("sqlite", str(config["connection.url"]))


def config(context: ConformanceContext) -> dict[str, Any]:
    """A fresh SQLite file (WAL mode) with the captured ``orders`` and the uncaptured ``notes``."""
    made = ScratchDatabase.sqlite(context.tmp_path / "cdc.db")
    made.execute(
        "CREATE TABLE orders (id INTEGER PRIMARY KEY, item VARCHAR(40))",
        "CREATE TABLE notes (id INTEGER PRIMARY KEY, body VARCHAR(40))",
    )
    made.engine.dispose()
    return {
        "connection.url": made.url,
        "topic.prefix": context.topic,
        "table.include.list": "orders",
        "audit.table.name": AUDIT,
        "poll.interval.ms": 0,
    }


def feed(config: Mapping[str, Any], count: int) -> list[Any]:
    """``count`` inserts into ``orders``, each its own transaction, then an audit row of a table not captured (so
    the stream's position moves past the last change without data, and heartbeats carry it); the rows as the change
    events carry them."""
    db = database(config)
    first = int(db.scalar("SELECT coalesce(max(id), 0) FROM orders")) + 1
    rows = [{"id": n, "item": f"item{n}"} for n in range(first, first + count)]
    for row in rows:
        db.execute(f"INSERT INTO orders VALUES ({row['id']}, '{row['item']}')")
    db.engine.dispose()
    advance_without_data(config)
    return rows


def advance_without_data(config: Mapping[str, Any]) -> None:
    """An audit row of a table the connector does not capture (as a table dropped from ``table.include.list``
    leaves): the stream's position moves with no change to send. None before the connector made its audit table."""
    db = database(config)
    if AUDIT in db.tables():
        db.execute(
            f'INSERT INTO {AUDIT} (txid, table_name, op, "before", "after", ts_ms) '
            "VALUES (NULL, 'notes', 'c', NULL, '{\"id\": 1}', 0)"
        )
    db.engine.dispose()


def provisioned(config: Mapping[str, Any]) -> list[str]:
    """The connector's triggers and its audit table."""
    db = database(config)
    try:
        return [*(t for t in db.triggers() if t.startswith(AUDIT)), *(t for t in db.tables() if t == AUDIT)]
    finally:
        db.engine.dispose()


def read(message: Any) -> Any:
    """The row a change event carries (``after``)."""
    return json_value(message)["after"]


class TriggerModeConformance(
    source_conformance(
        JdbcCdcSourceConnector,
        config,
        feed=feed,
        advance_without_data=advance_without_data,
        provisioned=provisioned,
        batch_size_key="batch.max.rows",
        bad_configs=[({"batch.max.rows": "0"}, "batch.max.rows"), ({"connection.url": None}, "connection.url")],
    )
):
    # an audit id, and within one snapshot's id its rows before its last (the only complete offset of the snapshot)
    offset_order = staticmethod(lambda offset: (offset["change_id"], offset.get("snapshot") != "incomplete"))

    def read(self, message: Any) -> Any:
        return read(message)


TestTriggerMode = TriggerModeConformance


class TriggerModeMachine(SourceMachine):
    """Random inserts, time and faults on trigger mode over SQLite, two rows a poll, heartbeats on; every insert
    must arrive at least once."""

    connector = JdbcCdcSourceConnector
    worker_config: ClassVar[Mapping[str, Any]] = {"offset.flush.interval.ms": 500, "heartbeat.interval.ms": 700}

    def setup(self) -> dict[str, Any]:
        self.directory = Path(tempfile.mkdtemp(prefix="cdc-machine-"))
        self.db = ScratchDatabase.sqlite(self.directory / "cdc.db")
        self.db.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY, item TEXT)")
        return {
            "connection.url": self.db.url,
            "topic.prefix": "machine",
            "table.include.list": "orders",
            "audit.table.name": AUDIT,
            "poll.interval.ms": 0,
            "snapshot.mode": "never",
            "batch.max.rows": 2,
        }

    def write(self, value: Any) -> None:
        with self.db.engine.begin() as connection:
            connection.execute(text("INSERT INTO orders (item) VALUES (:item)"), {"item": json.dumps(value)})

    def read(self, message: Message) -> Any:
        return json.loads(read(message)["item"])

    def cleanup(self) -> None:
        self.db.close()
        shutil.rmtree(self.directory, ignore_errors=True)


TestTriggerModeMachine = machine_test(TriggerModeMachine)
TestTriggerModeMachine.settings = machine_settings(10, 12, database=None, derandomize=True)  # type: ignore[attr-defined]
