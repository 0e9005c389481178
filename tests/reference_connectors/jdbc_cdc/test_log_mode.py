"""Log mode on PostgreSQL (pgoutput through psycopg2's replication connection), in the simulated worker: snapshot
then stream in commit order, resume without loss, the slot confirmed only up to committed offsets, heartbeats that
move it while the captured tables are idle, slot and publication dropped on delete, kept on a plain stop; decimals
as their exact text or as doubles, alike through the JSON converter and the ``bytes`` converters."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

import pytest

from headwater.harness import SimulatedWorker
from headwater.reference_connectors.jdbc_cdc import JdbcCdcSourceConnector, default_object_name, source_partition
from headwater.reference_connectors.jdbc_cdc.pgoutput import parse_lsn
from headwater.runtime.tasks.base import State
from support.scratch import ScratchDatabase

from .test_trigger_mode import (
    AUDIT,
    CENTS,
    DELETED_WHILE,
    EXACT,
    HUGE,
    assert_price_changes,
    bring_to,
    create_orders,
    create_prices,
    events,
    row,
    wait_for,
)

pytestmark = pytest.mark.postgres

Make = Callable[..., SimulatedWorker]
PUBLICATION = default_object_name("cdc")
"""The connector's publication: its default name (a database's own, like the tables)."""


def slot(database: ScratchDatabase) -> str:
    """The connector's replication slot: named after the test's database, because a slot's name is the server's
    (other tests' connectors named ``cdc`` run at the same time on pytest-xdist's other workers)."""
    return f"headwater_cdc_{database.name}"


BYTES = {"key.converter": "bytes", "value.converter": "bytes", "header.converter": "bytes"}


@pytest.fixture(params=["json", "bytes"])
def converters(request: pytest.FixtureRequest) -> dict[str, str]:
    """The worker's JSON converters, or the ``bytes`` ones in the connector's config (the task writes the JSON)."""
    return BYTES if request.param == "bytes" else {}


def log_config(database: ScratchDatabase, prefix: str, **extra: Any) -> dict[str, Any]:
    return {
        "connection.url": database.url,
        "capture.mode": "log",
        "topic.prefix": prefix,
        "table.include.list": "public.orders",
        "poll.interval.ms": 0,
        "slot.name": slot(database),
        **{k.replace("_", "."): v for k, v in extra.items()},
    }


def confirmed_flush(database: ScratchDatabase) -> int:
    sql = f"SELECT confirmed_flush_lsn::text FROM pg_replication_slots WHERE slot_name = '{slot(database)}'"
    text = database.scalar(sql)
    return parse_lsn(str(text))


@pytest.mark.parametrize(
    ("make_worker", "converters"),
    [
        pytest.param("simulated", "json", id="simulated-json"),
        pytest.param("simulated", "bytes", id="simulated-bytes"),
        pytest.param("kafka", "json", marks=pytest.mark.kafka, id="kafka-json"),
    ],
    indirect=True,
)  # the converters are the same code on either transport: once on the real broker
def test_snapshot_then_changes_in_commit_order_with_full_before_images(
    make_worker: Make, postgres_database: ScratchDatabase, prefix: str, converters: dict[str, str]
) -> None:
    database = postgres_database
    create_orders(database, (1, "apple", 3), (2, "pear", 1))
    worker = make_worker({"offset.flush.interval.ms": 100})
    worker.add_connector(
        "cdc", JdbcCdcSourceConnector, {**log_config(database, prefix, replica_identity_full=True), **converters}
    )
    wait_for(worker, f"{prefix}.public.orders", 2)
    database.execute("INSERT INTO orders VALUES (3, 'fig', 7)", "UPDATE orders SET qty = 4 WHERE id = 1")
    database.execute("DELETE FROM orders WHERE id = 2")
    database.execute("INSERT INTO notes VALUES (1, 'not captured')")
    values = wait_for(worker, f"{prefix}.public.orders", 5)
    assert events(worker, f"{prefix}.public.orders") == [
        ("r", None, row(1, "apple", 3)),
        ("r", None, row(2, "pear", 1)),
        ("c", None, row(3, "fig", 7)),
        ("u", row(1, "apple", 3), row(1, "apple", 4)),
        ("d", row(2, "pear", 1), None),
    ]
    lsns = [v["source"]["lsn"] for v in values[2:]]
    assert lsns[0] == lsns[1] < lsns[2]  # one transaction, then the next
    assert all(v["source"]["mode"] == "log" for v in values)
    worker.advance(200)
    committed = worker.source_offset("cdc", source_partition(prefix))
    assert committed == {"lsn": lsns[2], "seq": 0, "flush": lsns[2]}
    worker.run_until(lambda: confirmed_flush(database) == lsns[2], what="the slot confirmed the committed offset")


def test_without_replica_identity_full_a_delete_carries_the_key(
    make_simulated_worker: Make, postgres_database: ScratchDatabase, prefix: str, converters: dict[str, str]
) -> None:
    create_orders(postgres_database, (1, "apple", 3))
    worker = make_simulated_worker()
    worker.add_connector(
        "cdc", JdbcCdcSourceConnector, {**log_config(postgres_database, prefix, snapshot_mode="never"), **converters}
    )
    worker.advance(50)
    postgres_database.execute("DELETE FROM orders WHERE id = 1")
    wait_for(worker, f"{prefix}.public.orders", 1)
    assert events(worker, f"{prefix}.public.orders") == [("d", {"id": 1}, None)]


def test_restart_resumes_without_loss_and_the_slot_moves_only_with_committed_offsets(
    make_simulated_worker: Make, postgres_database: ScratchDatabase, prefix: str, converters: dict[str, str]
) -> None:
    database = postgres_database
    create_orders(database)
    worker = make_simulated_worker({"offset.flush.interval.ms": 100_000})
    worker.add_connector("cdc", JdbcCdcSourceConnector, {**log_config(database, prefix), **converters})
    worker.advance(50)
    start = confirmed_flush(database)
    for n in range(1, 4):
        database.execute(f"INSERT INTO orders VALUES ({n}, 'item{n}', {n})")
    wait_for(worker, f"{prefix}.public.orders", 3)
    worker.advance(500)
    assert confirmed_flush(database) == start  # handed on and acknowledged, but no offset committed yet
    worker.stop_connector("cdc")  # the final commit
    committed = worker.source_offset("cdc", source_partition(prefix))
    assert committed is not None
    assert confirmed_flush(database) == committed["flush"] > start
    database.execute("INSERT INTO orders VALUES (4, 'item4', 4)", "UPDATE orders SET qty = 30 WHERE id = 3")
    database.execute("DELETE FROM orders WHERE id = 1")
    worker.resume("cdc")
    wait_for(worker, f"{prefix}.public.orders", 6)
    worker.advance(200)
    assert [(op, after) for op, _, after in events(worker, f"{prefix}.public.orders")] == [
        ("c", row(1, "item1", 1)),
        ("c", row(2, "item2", 2)),
        ("c", row(3, "item3", 3)),
        ("c", row(4, "item4", 4)),
        ("u", row(3, "item3", 30)),
        ("d", None),
    ]


UNWRAP = {"transforms": "unwrap", "transforms.unwrap.type": "jdbc-cdc-unwrap"}


@pytest.mark.parametrize("transforms", [{}, UNWRAP], ids=["plain", "unwrapped"])
def test_heartbeats_move_the_offset_and_the_slot_while_captured_tables_are_idle(
    make_simulated_worker: Make,
    postgres_database: ScratchDatabase,
    prefix: str,
    converters: dict[str, str],
    transforms: dict[str, str],
) -> None:
    """Also through the unwrap transform, which passes heartbeats on as they are (Debezium's ExtractNewRecordState
    passes its heartbeats, which are no envelopes): docs/jdbc-cdc.md's recipe has both."""
    database = postgres_database
    create_orders(database)
    worker = make_simulated_worker({"offset.flush.interval.ms": 100})
    config = {**log_config(database, prefix, heartbeat_interval_ms=100), **converters, **transforms}
    worker.add_connector("cdc", JdbcCdcSourceConnector, config)
    worker.advance(300)
    before = confirmed_flush(database)
    for n in range(20):
        database.execute(f"INSERT INTO notes VALUES ({n}, 'not captured')")
    target = parse_lsn(str(database.scalar("SELECT pg_current_wal_lsn()::text")))
    worker.run_until(lambda: confirmed_flush(database) >= target, what="the slot confirmed past the uncaptured writes")
    assert worker.messages(f"{prefix}.public.orders") == []
    beats = worker.values("connect-heartbeats")
    assert beats and beats[-1]["server"] == prefix and beats[-1]["lsn"] >= target > before
    offset = worker.source_offset("cdc", source_partition(prefix))
    assert offset is not None and offset["seq"] == -1 and offset["flush"] >= target


def test_plain_stop_keeps_slot_and_publication_and_delete_drops_them(
    make_simulated_worker: Make, postgres_database: ScratchDatabase, prefix: str
) -> None:
    database = postgres_database
    create_orders(database)
    worker = make_simulated_worker()
    worker.add_connector("cdc", JdbcCdcSourceConnector, log_config(database, prefix))
    worker.advance(50)
    assert database.slots() == [slot(database)] and PUBLICATION in database.publications()
    worker.stop_connector("cdc")
    worker.resume("cdc")
    worker.restart_task("cdc")
    worker.advance(50)
    assert database.slots() == [slot(database)] and PUBLICATION in database.publications()
    worker.delete_connector("cdc")
    assert database.slots() == []
    assert PUBLICATION not in database.publications()


@pytest.mark.parametrize("state", DELETED_WHILE)
def test_delete_drops_the_slot_and_the_publication_whatever_the_connectors_state(
    make_simulated_worker: Make, postgres_database: ScratchDatabase, prefix: str, state: str
) -> None:
    database = postgres_database
    create_orders(database, (1, "item1", 1))
    worker = make_simulated_worker()
    worker.add_connector(
        "cdc", JdbcCdcSourceConnector, log_config(database, prefix, table_include_list="public.orders,public.notes")
    )
    wait_for(worker, f"{prefix}.public.orders", 1)
    bring_to(worker, database, state)
    assert database.slots() == [slot(database)] and PUBLICATION in database.publications(), "kept until the delete"
    worker.delete_connector("cdc")
    assert database.slots() == []
    assert PUBLICATION not in database.publications()
    assert database.triggers() == [] and AUDIT not in database.tables()
    assert worker.herder.connectors() == []
    assert len(worker.worker.cleanup_errors) == (1 if "dropped" in state else 0), worker.worker.cleanup_errors


def test_a_role_without_replication_fails_the_connector_saying_what_to_grant(
    make_simulated_worker: Make, postgres_database: ScratchDatabase, prefix: str
) -> None:
    database = postgres_database
    create_orders(database)
    database.execute("DROP ROLE IF EXISTS plain_cdc", "CREATE ROLE plain_cdc LOGIN")
    url = database.url.replace("headwater@", "plain_cdc@")
    worker = make_simulated_worker()
    worker.add_connector("cdc", JdbcCdcSourceConnector, {**log_config(database, prefix), "connection.url": url})
    worker.advance(20)
    assert worker.herder.connector_state("cdc") == State.FAILED
    _, trace = worker.herder.statuses[("cdc", None)]
    assert "missing privileges" in str(trace) and "REPLICATION" in str(trace)
    worker.add_connector("trg", JdbcCdcSourceConnector, {**log_config(database, prefix), "connection.url": url,
                                                          "capture.mode": "trigger"})  # fmt: skip
    worker.advance(20)
    _, trace = worker.herder.statuses[("trg", None)]
    assert "missing privileges for trigger mode" in str(trace)
    database.execute("DROP OWNED BY plain_cdc", "DROP ROLE plain_cdc")


def test_without_heartbeats_the_slot_stays_at_the_committed_offset_while_other_tables_write(
    make_simulated_worker: Make, postgres_database: ScratchDatabase, prefix: str
) -> None:
    database = postgres_database
    create_orders(database)
    worker = make_simulated_worker({"offset.flush.interval.ms": 100})
    worker.add_connector("cdc", JdbcCdcSourceConnector, log_config(database, prefix))
    worker.advance(300)
    before = confirmed_flush(database)
    stream = worker.source_task("cdc").task.stream
    worker.run_until(lambda: stream.last_end > before, what="the stream's first message (the task's own marker)")
    received = stream.last_end
    for n in range(20):
        database.execute(f"INSERT INTO notes VALUES ({n}, 'not captured')")
    target = parse_lsn(str(database.scalar("SELECT pg_current_wal_lsn()::text")))
    # the task has seen the server pass the uncaptured writes (a keep-alive): psycopg2 could confirm it on its own
    worker.run_until(lambda: getattr(stream, "idle_lsn", 0) >= target, what="a keep-alive past the writes")
    stream.cursor.send_feedback(force=True)  # what psycopg2 sends by itself every status interval
    with database.engine.begin() as connection:
        marker = parse_lsn(str(connection.exec_driver_sql("SELECT pg_logical_emit_message(true, 't', '')").scalar()))
    worker.run_until(lambda: getattr(stream, "last_end", 0) > marker, what="a later message through the stream")
    # nothing was committed: the slot stays short of the first message the task received. Before that message came,
    # psycopg2 confirms a keep-alive's position on its own, past WAL that held nothing for the slot (another
    # database's, written meanwhile: pytest-xdist's other workers share the server); that loses nothing
    assert before <= confirmed_flush(database) < received
    assert worker.source_offset("cdc", source_partition(prefix)) is None


@pytest.mark.parametrize("decimals", ["string", "double"])
def test_with_the_bytes_converters_the_task_writes_the_bytes_the_json_converter_writes(
    make_simulated_worker: Make, postgres_database: ScratchDatabase, prefix: str, decimals: str
) -> None:
    database = postgres_database
    database.execute(
        "CREATE TABLE kinds (id bigint PRIMARY KEY, t text, n numeric(12, 3), f float8, b boolean, j jsonb, "
        "ts timestamp, tz timestamptz, big text)"
    )
    worker = make_simulated_worker({"offset.flush.interval.ms": 100})
    # the pass-through converters with the default header converter: the task's batches carry no headers, so the
    # worker sends them as they are, whatever the header converter; their bytes must be the JSON converter's
    passthrough = {"key.converter": "bytes", "value.converter": "bytes"}
    for name, extra in (("json", {}), ("bytes", passthrough)):
        config = log_config(
            database,
            f"{prefix}-{name}",
            snapshot_mode="never",
            table_include_list="public.kinds",
            decimal_handling_mode=decimals,
            slot_name=f"{slot(database)}_{name}",
        )
        worker.add_connector(f"cdc-{name}", JdbcCdcSourceConnector, {**config, **extra})
    worker.advance(50)
    database.execute(
        "INSERT INTO kinds VALUES (1, 'h\u00e9llo \"q\" back\\slash \U0001f600', 12.5, 0.1, true, "
        "'{\"a\": [1, 2.50, \"\\u00e9\"], \"b\": null}', '2026-11-23 12:00', '2026-11-23 12:00+05:30', "
        "(SELECT string_agg(md5(g::text), '') FROM generate_series(1, 400) g))",
        "INSERT INTO kinds (id, n, f) VALUES (2, 'NaN', '-Infinity')",
        "UPDATE kinds SET t = E'tab\\tnew\\nline\\x01' WHERE id = 1",  # big is TOASTed and unchanged
        "DELETE FROM kinds WHERE id = 2",
    )
    topics = {name: f"{prefix}-{name}.public.kinds" for name in ("json", "bytes")}
    for topic in topics.values():
        wait_for(worker, topic, 4)
    sent = {name: worker.messages(topic) for name, topic in topics.items()}
    assert [m.key for m in sent["bytes"]] == [m.key for m in sent["json"]]
    assert [m.timestamp for m in sent["bytes"]] == [m.timestamp for m in sent["json"]]

    def comparable(value: bytes | None, name: str) -> bytes:
        assert value is not None
        value = value.replace(f'"name":"{prefix}-{name}"'.encode(), b'"name":"-"')
        return re.sub(rb',"ts_ms":\d+}$', b"}", value)  # when the connector read it

    assert [comparable(m.value, "bytes") for m in sent["bytes"]] == [comparable(m.value, "json") for m in sent["json"]]
    update = json.loads(sent["bytes"][2].value or b"")
    assert update["op"] == "u" and update["after"]["t"] == "tab\tnew\nline\x01" and "big" not in update["after"]
    inserted = [json.loads(m.value or b"")["after"] for m in sent["bytes"][:2]]
    assert [(v["n"], v["f"]) for v in inserted] == [
        ("12.500" if decimals == "string" else 12.5, 0.1),
        ("NaN", "-Infinity"),
    ]


@pytest.mark.parametrize("decimals", ["string", "double"])
def test_decimals_arrive_as_their_exact_text_or_as_doubles_and_floats_stay_numbers(
    make_simulated_worker: Make,
    postgres_database: ScratchDatabase,
    prefix: str,
    converters: dict[str, str],
    decimals: str,
) -> None:
    database = postgres_database
    create_prices(database)
    worker = make_simulated_worker()
    mode = {} if decimals == "string" else {"decimal_handling_mode": "double"}  # string is the default
    config = log_config(database, prefix, table_include_list="public.prices", replica_identity_full=True, **mode)
    worker.add_connector("cdc", JdbcCdcSourceConnector, {**config, **converters})
    first = assert_price_changes(worker, database, f"{prefix}.public.prices", decimals)
    exact = (EXACT, CENTS) if decimals == "string" else (float(EXACT), float(CENTS))
    assert (first["exact"], first["cents"]) == exact


@pytest.mark.parametrize("decimals", ["string", "double"])
def test_a_numeric_beyond_a_double_is_exact_as_text_and_fails_the_task_as_a_double(
    make_simulated_worker: Make,
    postgres_database: ScratchDatabase,
    prefix: str,
    converters: dict[str, str],
    decimals: str,
) -> None:
    database = postgres_database
    database.execute("CREATE TABLE huge (id integer PRIMARY KEY, n numeric)", f"INSERT INTO huge VALUES (1, {HUGE})")
    worker = make_simulated_worker()
    config = log_config(database, prefix, table_include_list="public.huge", decimal_handling_mode=decimals)
    stream_only = {"snapshot.mode": "never"} if decimals == "double" else {}  # the snapshot fails as in trigger mode
    worker.add_connector("cdc", JdbcCdcSourceConnector, {**config, **converters, **stream_only})
    worker.advance(50)
    database.execute(f"INSERT INTO huge VALUES (2, -{HUGE})")
    topic = f"{prefix}.public.huge"
    if decimals == "string":
        assert [v["after"] for v in wait_for(worker, topic, 2)] == [{"id": 1, "n": HUGE}, {"id": 2, "n": f"-{HUGE}"}]
        return
    worker.run_until(lambda: worker.task_state("cdc") is State.FAILED, what="the task failing")
    _, trace = worker.herder.statuses[("cdc", 0)]
    expected = "public.huge.n: numeric value -1000000000000000000... (404 characters) is beyond the range of a double"
    assert expected in str(trace)
    assert worker.messages(topic) == []
