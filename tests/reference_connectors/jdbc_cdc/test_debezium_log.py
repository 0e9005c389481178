"""``envelope=debezium`` on PostgreSQL in log mode: the snapshot's markers and positions as Debezium's, streamed
changes with each change's own LSN, ``sequence`` and commit time, a tombstone after each delete, Debezium's heartbeat;
and once on the real broker, the topic read with a plain confluent-kafka consumer and a Debezium-style unwrap."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from confluent_kafka import Consumer, TopicPartition

from headwater.harness import SimulatedWorker
from headwater.reference_connectors.jdbc_cdc import JdbcCdcSourceConnector
from support.debezium_unwrap import table_rows
from support.scratch import ScratchDatabase

from .test_log_mode import log_config
from .test_record_schemas_log import JSON_SCHEMAS

pytestmark = pytest.mark.postgres

Make = Callable[..., SimulatedWorker]


def debezium_config(
    database: ScratchDatabase, prefix: str, tables: str = "public.orders", **extra: Any
) -> dict[str, Any]:
    config = log_config(database, prefix, envelope="debezium", table_include_list=tables, **extra)
    return {**config, **JSON_SCHEMAS}


def database_rows(database: ScratchDatabase) -> list[dict[str, Any]]:
    rows = database.query("SELECT id, item, qty FROM orders ORDER BY id")
    return [{"id": r[0], "item": r[1], "qty": r[2]} for r in rows]


def test_snapshot_markers_positions_and_changes_are_debeziums(
    make_simulated_worker: Make, postgres_database: ScratchDatabase, prefix: str
) -> None:
    database = postgres_database
    database.execute(
        "CREATE TABLE orders (id integer PRIMARY KEY, item text, qty integer)",
        "CREATE TABLE lines (id integer PRIMARY KEY)",
        "CREATE TABLE zempty (id integer PRIMARY KEY)",
        "INSERT INTO lines VALUES (1), (2), (3)",
        "INSERT INTO orders VALUES (1, 'apple', 3), (2, 'pear', 1), (3, 'fig', 7)",
    )
    worker = make_simulated_worker()
    tables = "public.lines,public.orders,public.zempty"
    config = debezium_config(database, prefix, tables, heartbeat_interval_ms=100)
    worker.add_connector("cdc", JdbcCdcSourceConnector, config)
    lines, orders = f"{prefix}.public.lines", f"{prefix}.public.orders"
    worker.run_until(lambda: len(worker.messages(orders)) >= 3, what="the snapshot")
    snapshot = [v["payload"]["source"] for v in worker.values(lines) + worker.values(orders)]
    # lines is the first table, zempty the last (and empty): the snapshot's last event is marked last all the same
    assert [s["snapshot"] for s in snapshot] == [
        "first",
        "true",
        "last_in_data_collection",
        "first_in_data_collection",
        "true",
        "last",
    ]
    slot_lsn = snapshot[0]["lsn"]
    assert all(s["lsn"] == slot_lsn and s["sequence"] == f'[null,"{slot_lsn}"]' for s in snapshot)
    assert len({s["txId"] for s in snapshot}) == 1 and isinstance(snapshot[0]["txId"], int)
    assert {(s["version"], s["connector"], s["name"], s["db"]) for s in snapshot} == {
        ("3.6.1.Final", "postgresql", prefix, database.name)
    }

    database.execute("INSERT INTO orders VALUES (4, 'kiwi', 2)", "UPDATE orders SET qty = 9 WHERE id = 1")
    database.execute("DELETE FROM orders WHERE id = 2")
    worker.run_until(lambda: len(worker.messages(orders)) >= 7, what="insert, update, delete and tombstone")
    messages = worker.messages(orders)[3:]
    values = [None if m.value is None else json.loads(m.value) for m in messages]
    assert [v and v["payload"]["op"] for v in values] == ["c", "u", "d", None]
    assert messages[3].key == messages[2].key  # the tombstone: the delete's key, a null value
    insert, update, delete = (v["payload"] for v in values[:3])
    assert delete["before"] == {"id": 2, "item": None, "qty": None}  # REPLICA IDENTITY DEFAULT: the key only
    assert update["before"] is None and update["after"] == {"id": 1, "item": "apple", "qty": 9}
    sources = [e["source"] for e in (insert, update, delete)]
    assert all(s["snapshot"] == "false" and s["xmin"] is None and s["origin"] is None for s in sources)
    assert sources[0]["txId"] == sources[1]["txId"] != sources[2]["txId"]
    assert sources[0]["lsn"] < sources[1]["lsn"] < sources[2]["lsn"]  # each change's own WAL position
    first_end, second_end = (json.loads(s["sequence"])[0] for s in (sources[0], sources[2]))
    assert json.loads(sources[1]["sequence"]) == [first_end, str(sources[1]["lsn"])]
    # the end of the commit read before: at or before a change (the next record may start where a commit ends)
    assert int(first_end) <= sources[0]["lsn"] < sources[1]["lsn"] < int(second_end) <= sources[2]["lsn"]
    assert all(s["ts_us"] // 1000 == s["ts_ms"] and s["ts_ns"] == s["ts_us"] * 1000 for s in sources)
    assert list(table_rows((json.loads(m.key), v) for m, v in zip(messages, values, strict=True)).values()) == [
        {"id": 4, "item": "kiwi", "qty": 2},
        {"id": 1, "item": "apple", "qty": 9},
    ]

    database.execute("CREATE TABLE other (id integer)", "INSERT INTO other VALUES (1)")  # WAL the task does not read
    beats = "connect-heartbeats"
    worker.run_until(lambda: len(worker.messages(beats)) >= 1, what="a heartbeat")
    beat = json.loads(worker.messages(beats)[-1].value or b"")
    assert beat["schema"]["name"] == "io.debezium.connector.common.Heartbeat" and "ts_ms" in beat["payload"]
    assert json.loads(worker.messages(beats)[-1].key or b"")["payload"] == {"serverName": prefix}


def consume(bootstrap: str, topic: str, count: int, timeout_s: float = 60.0) -> list[tuple[Any, Any]]:
    """The first ``count`` records of ``topic``, read by a plain confluent-kafka consumer: keys and values
    JSON-decoded (``None`` for a tombstone)."""
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": f"debezium-reader-{uuid.uuid4().hex}", "enable.auto.commit": False}
    )
    try:
        consumer.assign([TopicPartition(topic, 0, 0)])
        found: list[tuple[Any, Any]] = []
        deadline = time.monotonic() + timeout_s
        while len(found) < count:
            assert time.monotonic() < deadline, f"{len(found)} of {count} records of {topic} within {timeout_s} s"
            message = consumer.poll(1.0)
            if message is None:
                continue
            assert message.error() is None, message.error()
            key, value = message.key(), message.value()
            found.append((json.loads(key) if key else None, json.loads(value) if value is not None else None))
        return found
    finally:
        consumer.close()


@pytest.mark.parametrize("make_worker", [pytest.param("kafka", marks=pytest.mark.kafka)], indirect=True)
def test_a_debezium_consumer_reads_the_topic_on_the_broker_unchanged(
    make_worker: Make, postgres_database: ScratchDatabase, prefix: str, kafka_bootstrap: str
) -> None:
    database = postgres_database
    database.execute(
        "CREATE TABLE orders (id integer PRIMARY KEY, item text, qty integer)",
        "INSERT INTO orders VALUES (1, 'apple', 3), (2, 'pear', 1)",
    )
    worker = make_worker({"offset.flush.interval.ms": 100})
    worker.add_connector("cdc", JdbcCdcSourceConnector, debezium_config(database, prefix))
    topic = f"{prefix}.public.orders"
    worker.run_until(lambda: len(worker.messages(topic)) >= 2, what="the snapshot")
    database.execute("INSERT INTO orders VALUES (3, 'fig', 7)", "UPDATE orders SET qty = 4 WHERE id = 1")
    database.execute("DELETE FROM orders WHERE id = 2")
    worker.run_until(lambda: len(worker.messages(topic)) >= 5, what="the changes")
    records = consume(kafka_bootstrap, topic, 6, timeout_s=30.0)  # the tombstone was sent with the delete
    assert [v and v["payload"]["op"] for _, v in records] == ["r", "r", "c", "u", "d", None]
    assert records[-1][0] == records[-2][0] == {"schema": records[0][0]["schema"], "payload": {"id": 2}}
    assert records[0][1]["schema"]["name"] == f"{prefix}.public.orders.Envelope"
    rows = table_rows(records)
    assert sorted(rows.values(), key=lambda r: r["id"]) == database_rows(database)
