"""Trigger mode end to end, on SQLite, PostgreSQL and MariaDB, inside the simulated worker (and, through
``make_worker``, on a real Kafka broker): snapshot, then inserts, updates and deletes in order; a restart resumes
without loss; the audit table is purged only up to the committed offset; a delete removes every trigger and the
audit table, a plain stop none."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import pytest

from headwater.harness import SimulatedWorker
from headwater.harness.scratch import ScratchDatabase
from headwater.reference_connectors.jdbc_cdc import JdbcCdcSourceConnector, default_object_name, source_partition
from headwater.runtime.tasks.base import State

Make = Callable[..., SimulatedWorker]
AUDIT = default_object_name("cdc")


def create_orders(database: ScratchDatabase, *rows: tuple[int, str, int]) -> None:
    database.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY, item VARCHAR(40), qty INTEGER)")
    database.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, body VARCHAR(40))")
    for row in rows:
        database.execute(f"INSERT INTO orders VALUES ({row[0]}, '{row[1]}', {row[2]})")


def orders_topic(database: ScratchDatabase, prefix: str) -> str:
    return f"{prefix}.orders" if database.kind == "sqlite" else f"{prefix}.{schema(database)}.orders"


def schema(database: ScratchDatabase) -> str:
    return "public" if database.kind == "postgres" else str(database.name)


def config(database: ScratchDatabase, prefix: str, **extra: Any) -> dict[str, Any]:
    return {
        "connection.url": database.url,
        "topic.prefix": prefix,
        "table.include.list": "orders",
        "poll.interval.ms": 0,
        **{k.replace("_", "."): v for k, v in extra.items()},
    }


def events(worker: SimulatedWorker, topic: str) -> list[tuple[str, Any, Any]]:
    """(op, before, after) of every event on ``topic``."""
    return [(v["op"], v["before"], v["after"]) for v in worker.values(topic)]


def wait_for(worker: SimulatedWorker, topic: str, count: int) -> list[dict[str, Any]]:
    worker.run_until(lambda: len(worker.messages(topic)) >= count, what=f"{count} events on {topic}")
    return worker.values(topic)


def row(id: int, item: str, qty: int) -> dict[str, Any]:
    return {"id": id, "item": item, "qty": qty}


def test_snapshot_then_inserts_updates_and_deletes_arrive_in_order(
    make_worker: Make, database: ScratchDatabase, prefix: str
) -> None:
    create_orders(database, (1, "apple", 3), (2, "pear", 1))
    worker = make_worker({"offset.flush.interval.ms": 100})
    worker.add_connector("cdc", JdbcCdcSourceConnector, config(database, prefix))
    topic = orders_topic(database, prefix)
    wait_for(worker, topic, 2)
    database.execute("INSERT INTO orders VALUES (3, 'fig', 7)", "UPDATE orders SET qty = 4 WHERE id = 1")
    database.execute("DELETE FROM orders WHERE id = 2")
    database.execute("INSERT INTO notes VALUES (1, 'not captured')")
    values = wait_for(worker, topic, 5)
    assert events(worker, topic) == [
        ("r", None, row(1, "apple", 3)),
        ("r", None, row(2, "pear", 1)),
        ("c", None, row(3, "fig", 7)),
        ("u", row(1, "apple", 3), row(1, "apple", 4)),
        ("d", row(2, "pear", 1), None),
    ]
    change_ids = [v["source"]["change_id"] for v in values[2:]]
    assert change_ids == sorted(change_ids) and len(set(change_ids)) == 3
    assert [v["source"]["snapshot"] for v in values] == [True, True, False, False, False]
    assert {v["source"]["table"] for v in values} == {"orders"}
    assert [m.key for m in worker.messages(topic)][2:] == [b'{"id":3}', b'{"id":1}', b'{"id":2}']
    worker.advance(200)
    worker.assert_source_offset("cdc", source_partition(prefix), {"change_id": change_ids[-1]})
    assert worker.messages(f"{prefix}.notes") == []


def test_restart_resumes_without_loss_and_purges_only_committed_changes(
    make_worker: Make, database: ScratchDatabase, prefix: str
) -> None:
    create_orders(database)
    worker = make_worker({"offset.flush.interval.ms": 100})
    worker.add_connector("cdc", JdbcCdcSourceConnector, config(database, prefix))
    topic = orders_topic(database, prefix)
    for n in range(1, 4):
        database.execute(f"INSERT INTO orders VALUES ({n}, 'item{n}', {n})")
    wait_for(worker, topic, 3)
    worker.advance(200)
    committed = worker.source_offset("cdc", source_partition(prefix))
    assert committed is not None
    worker.run_until(
        lambda: database.scalar(f"SELECT count(*) FROM {AUDIT} WHERE id <= {committed['change_id']}") == 0,
        what="audit rows up to the committed offset purged",
    )
    worker.stop_connector("cdc")
    database.execute("INSERT INTO orders VALUES (4, 'item4', 4)", "UPDATE orders SET qty = 30 WHERE id = 3")
    database.execute("DELETE FROM orders WHERE id = 1")
    assert database.scalar(f"SELECT count(*) FROM {AUDIT}") == 3  # kept while the connector is stopped
    worker.resume("cdc")
    wait_for(worker, topic, 6)
    worker.advance(200)
    assert events(worker, topic)[3:] == [
        ("c", None, row(4, "item4", 4)),
        ("u", row(3, "item3", 3), row(3, "item3", 30)),
        ("d", row(1, "item1", 1), None),
    ]
    assert [op for op, _, _ in events(worker, topic)] == ["c", "c", "c", "c", "u", "d"]
    worker.run_until(lambda: database.scalar(f"SELECT count(*) FROM {AUDIT}") == 0, what="every audit row purged")


def test_plain_stop_keeps_triggers_and_audit_table_and_delete_drops_them(
    make_simulated_worker: Make, database: ScratchDatabase, prefix: str
) -> None:
    create_orders(database)
    worker = make_simulated_worker()
    worker.add_connector("cdc", JdbcCdcSourceConnector, config(database, prefix, table_include_list="orders,notes"))
    worker.advance(50)
    provisioned = database.triggers()
    assert provisioned and all(name.startswith(AUDIT) for name in provisioned)
    assert len(provisioned) == (2 if database.kind == "postgres" else 6)
    assert AUDIT in database.tables()
    worker.stop_connector("cdc")
    assert database.triggers() == provisioned
    assert AUDIT in database.tables()
    worker.resume("cdc")
    worker.restart_connector("cdc")
    worker.restart_task("cdc")
    worker.advance(50)
    assert database.triggers() == provisioned
    assert AUDIT in database.tables()
    worker.delete_connector("cdc")
    assert database.triggers() == []
    assert AUDIT not in database.tables()


def test_reconfigured_include_list_drops_the_triggers_of_tables_left_out(
    make_simulated_worker: Make, sqlite_database: ScratchDatabase, prefix: str
) -> None:
    create_orders(sqlite_database)
    worker = make_simulated_worker()
    worker.add_connector(
        "cdc", JdbcCdcSourceConnector, config(sqlite_database, prefix, table_include_list="orders,notes")
    )
    worker.advance(50)
    assert len(sqlite_database.triggers()) == 6
    worker.add_connector("cdc", JdbcCdcSourceConnector, config(sqlite_database, prefix, table_include_list="notes"))
    worker.advance(50)
    assert sqlite_database.triggers() == [f"{AUDIT}_{op}_notes" for op in "cdu"]


def test_a_missing_table_fails_the_connector_naming_it(
    make_simulated_worker: Make, sqlite_database: ScratchDatabase, prefix: str
) -> None:
    create_orders(sqlite_database)
    worker = make_simulated_worker()
    worker.add_connector(
        "cdc", JdbcCdcSourceConnector, config(sqlite_database, prefix, table_include_list="orders,invoices")
    )
    worker.advance(20)
    assert worker.herder.connector_state("cdc") == State.FAILED
    _state, trace = worker.herder.statuses[("cdc", None)]
    assert "no table matches 'invoices'" in str(trace)
    assert sqlite_database.triggers() == []


def test_a_snapshot_over_several_polls_logs_progress_and_completes_with_its_last_row(
    make_simulated_worker: Make, sqlite_database: ScratchDatabase, prefix: str, caplog: pytest.LogCaptureFixture
) -> None:
    create_orders(sqlite_database, *[(n, f"item{n}", n) for n in range(1, 6)])
    caplog.set_level(logging.INFO, logger="headwater.reference_connectors.jdbc_cdc")
    worker = make_simulated_worker({"offset.flush.interval.ms": 100})
    worker.add_connector("cdc", JdbcCdcSourceConnector, config(sqlite_database, prefix, snapshot_fetch_size=2))
    topic = orders_topic(sqlite_database, prefix)
    values = wait_for(worker, topic, 5)
    assert [v["op"] for v in values] == ["r"] * 5
    assert len({m.offset for m in worker.messages(topic)}) == 5
    worker.advance(200)
    worker.assert_source_offset("cdc", source_partition(prefix), {"change_id": 0})
    messages = [r.getMessage() for r in caplog.records]
    assert "cdc: snapshot of 5 rows in 1 tables started" in messages
    assert any(m.startswith("cdc: snapshot done: 5 rows of 1 tables") for m in messages)
