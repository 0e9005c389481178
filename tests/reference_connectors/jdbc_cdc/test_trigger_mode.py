"""Trigger mode end to end, on SQLite, PostgreSQL and MariaDB, inside the simulated worker (and, through
``make_worker``, once on a real Kafka broker): snapshot, then inserts, updates and deletes in order; a restart
resumes without loss; the audit table is purged only up to the committed offset; a delete removes every trigger and
the audit table, a plain stop none; decimals arrive as their exact text, or as doubles."""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Callable
from typing import Any

import pytest

from headwater.harness import SimulatedWorker
from headwater.reference_connectors.jdbc_cdc import JdbcCdcSourceConnector, default_object_name, source_partition
from headwater.runtime.tasks.base import State
from support.scratch import ScratchDatabase

Make = Callable[..., SimulatedWorker]
AUDIT = default_object_name("cdc")

ON_EACH_DATABASE_AND_ONCE_ON_THE_BROKER = [
    pytest.param("simulated", "sqlite", id="simulated-sqlite"),
    pytest.param("simulated", "postgres", marks=pytest.mark.postgres, id="simulated-postgres"),
    pytest.param("simulated", "mariadb", marks=pytest.mark.mariadb, id="simulated-mariadb"),
    pytest.param("kafka", "sqlite", marks=pytest.mark.kafka, id="kafka-sqlite"),
]
"""``(make_worker, database)``: the capture on each database in memory, and the same behaviour once on the real
broker. A trigger-mode offset (``change_id``) has one shape whatever the database, and the transport sees only
offsets and records, so one database stands for all three there."""


def create_orders(database: ScratchDatabase, *rows: tuple[int, str, int]) -> None:
    database.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY, item VARCHAR(40), qty INTEGER)")
    database.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, body VARCHAR(40))")
    for row in rows:
        database.execute(f"INSERT INTO orders VALUES ({row[0]}, '{row[1]}', {row[2]})")


def orders_topic(database: ScratchDatabase, prefix: str, table: str = "orders") -> str:
    return f"{prefix}.{table}" if database.kind == "sqlite" else f"{prefix}.{schema(database)}.{table}"


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


@pytest.mark.parametrize(("make_worker", "database"), ON_EACH_DATABASE_AND_ONCE_ON_THE_BROKER, indirect=True)
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


@pytest.mark.parametrize(("make_worker", "database"), ON_EACH_DATABASE_AND_ONCE_ON_THE_BROKER, indirect=True)
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


@pytest.mark.parametrize("database", ["sqlite"], indirect=True)
def test_an_idle_capture_polls_once_per_poll_interval_of_virtual_time_and_picks_up_the_next_change(
    make_simulated_worker: Make, database: ScratchDatabase, prefix: str
) -> None:
    """With nothing to read the task idles ``poll.interval.ms`` on the worker's clock (``SourceTaskContext.idle``),
    so a virtual minute is sixty polls, not one per tick, and a change is read at the next poll."""
    create_orders(database)
    worker = make_simulated_worker({"offset.flush.interval.ms": 1000})
    worker.add_connector("cdc", JdbcCdcSourceConnector, config(database, prefix, poll_interval_ms=1000))
    worker.advance(worker.tick_ms)  # the first poll: an empty snapshot, then the first idle
    task = worker.source_task("cdc").task
    polls: list[int] = []
    poll = task.poll

    def counted() -> Any:
        polls.append(worker.clock.now_ms())
        return poll()

    task.poll = counted  # type: ignore[method-assign]
    worker.advance(60_000)
    assert len(polls) == 60, f"{len(polls)} polls in a virtual minute of poll.interval.ms=1000"
    database.execute("INSERT INTO orders VALUES (1, 'fig', 7)")
    worker.advance(1000)
    assert events(worker, orders_topic(database, prefix)) == [("c", None, row(1, "fig", 7))]


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


DELETED_WHILE = ["stopped", "paused", "failed", "stopped, a captured table dropped since"]
"""States a connector capturing ``orders`` and ``notes`` is deleted in: the last one makes the instance started to
be told fail in ``start`` (the table it captures is gone), and it cleans up all the same."""


def bring_to(worker: SimulatedWorker, database: ScratchDatabase, state: str) -> None:
    """Bring connector ``cdc`` to one of :data:`DELETED_WHILE` (FAILED: a captured table dropped, then a restart)."""
    if state == "paused":
        worker.pause("cdc")
    elif state.startswith("stopped"):
        worker.stop_connector("cdc")
    if state != "stopped" and state != "paused":
        database.execute("DROP TABLE notes")
    if state == "failed":
        worker.restart_connector("cdc")
    worker.advance(20)
    expected = {"paused": State.PAUSED, "failed": State.FAILED}.get(state, State.STOPPED)
    assert worker.herder.connector_state("cdc") is expected, worker.herder.statuses


@pytest.mark.parametrize("state", DELETED_WHILE)
def test_delete_drops_the_triggers_and_the_audit_table_whatever_the_connectors_state(
    make_simulated_worker: Make, database: ScratchDatabase, prefix: str, state: str
) -> None:
    create_orders(database, (1, "item1", 1))
    worker = make_simulated_worker()
    worker.add_connector("cdc", JdbcCdcSourceConnector, config(database, prefix, table_include_list="orders,notes"))
    wait_for(worker, orders_topic(database, prefix), 1)
    bring_to(worker, database, state)
    assert database.triggers() and AUDIT in database.tables(), "kept until the delete"
    worker.delete_connector("cdc")
    assert database.triggers() == []
    assert AUDIT not in database.tables()
    if database.kind == "postgres":
        assert database.scalar(f"SELECT count(*) FROM pg_proc WHERE starts_with(proname, '{AUDIT}')") == 0
    assert worker.herder.connectors() == []
    assert len(worker.worker.cleanup_errors) == (1 if "dropped" in state else 0), worker.worker.cleanup_errors


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


# ---- decimals ------------------------------------------------------------------------------------------------

EXACT = "12345678901234567890.123456789012345678"
"""38 significant digits in a DECIMAL(38, 18): a double keeps 17 of them."""
CENTS = "1234567890123456789012345678.90"
"""30 significant digits in a NUMERIC(30, 2)."""


def create_prices(database: ScratchDatabase) -> None:
    """Two decimal columns and a float column, and a row of values no double holds exactly."""
    database.execute(
        "CREATE TABLE prices (id INTEGER PRIMARY KEY, exact DECIMAL(38, 18), cents NUMERIC(30, 2), f DOUBLE PRECISION)"
    )
    database.execute(f"INSERT INTO prices VALUES (1, {EXACT}, {CENTS}, 0.1)")


def arrives_as(database: ScratchDatabase, decimals: str, literal: str, scale: int) -> Any:
    """What a decimal column of ``scale`` holding ``literal`` arrives as: with ``string`` the database's text of the
    value (SQLite's ``CAST(... AS TEXT)`` of the REAL or integer it keeps), with ``double`` the JSON number."""
    if database.kind == "sqlite":
        text = str(database.scalar(f"SELECT CAST({literal} AS TEXT)"))
    else:
        whole, _, fraction = literal.partition(".")
        text = f"{whole}.{fraction.ljust(scale, '0')}"
    return text if decimals == "string" else json.loads(text)


def prices_row(database: ScratchDatabase, decimals: str, id: int, exact: str, cents: str, f: float) -> dict[str, Any]:
    return {
        "id": id,
        "exact": arrives_as(database, decimals, exact, 18),
        "cents": arrives_as(database, decimals, cents, 2),
        "f": f,
    }


def assert_price_changes(
    worker: SimulatedWorker, database: ScratchDatabase, topic: str, decimals: str
) -> dict[str, Any]:
    """After the snapshot of ``create_prices``'s row, insert a row and update the first one's float; check the three
    events (decimals as ``decimals`` says, the float a number throughout) and return the first row's image."""
    wait_for(worker, topic, 1)
    database.execute("INSERT INTO prices VALUES (2, 12.5, 0.10, 2.5)", "UPDATE prices SET f = 0.25 WHERE id = 1")
    wait_for(worker, topic, 3)
    first = prices_row(database, decimals, 1, EXACT, CENTS, 0.1)
    assert events(worker, topic) == [
        ("r", None, first),
        ("c", None, prices_row(database, decimals, 2, "12.5", "0.10", 2.5)),
        ("u", first, {**first, "f": 0.25}),
    ]
    return first


@pytest.mark.parametrize("decimals", ["string", "double"])
def test_decimals_arrive_as_their_exact_text_or_as_doubles_and_floats_stay_numbers(
    make_simulated_worker: Make, database: ScratchDatabase, prefix: str, decimals: str
) -> None:
    create_prices(database)
    worker = make_simulated_worker()
    mode = {} if decimals == "string" else {"decimal_handling_mode": "double"}  # string is the default
    worker.add_connector("cdc", JdbcCdcSourceConnector, config(database, prefix, table_include_list="prices", **mode))
    first = assert_price_changes(worker, database, orders_topic(database, prefix, "prices"), decimals)
    exact = first["exact"]
    if decimals == "double":
        assert isinstance(exact, float) and math.isclose(exact, float(EXACT), rel_tol=1e-14)
    elif database.kind != "sqlite":
        assert (exact, first["cents"]) == (EXACT, CENTS)
    else:  # SQLite keeps a REAL: its text, not a number
        assert isinstance(exact, str) and float(exact) == pytest.approx(float(EXACT))


def test_a_changed_decimal_handling_mode_holds_from_the_next_start(
    make_simulated_worker: Make, database: ScratchDatabase, prefix: str
) -> None:
    create_prices(database)
    worker = make_simulated_worker()
    settings = {"table_include_list": "prices", "snapshot_mode": "never"}
    worker.add_connector(
        "cdc", JdbcCdcSourceConnector, config(database, prefix, decimal_handling_mode="double", **settings)
    )
    worker.advance(50)
    database.execute("INSERT INTO prices VALUES (2, 12.5, 0.10, 2.5)")
    topic = orders_topic(database, prefix, "prices")
    wait_for(worker, topic, 1)
    worker.add_connector("cdc", JdbcCdcSourceConnector, config(database, prefix, **settings))
    worker.advance(50)
    database.execute("INSERT INTO prices VALUES (3, 12.5, 0.10, 2.5)")
    wait_for(worker, topic, 2)
    assert [after for _, _, after in events(worker, topic)] == [
        prices_row(database, "double", 2, "12.5", "0.10", 2.5),
        prices_row(database, "string", 3, "12.5", "0.10", 2.5),
    ]


HUGE = "1" + "0" * 400 + ".5"
"""A numeric far beyond a double's range."""


@pytest.mark.postgres
@pytest.mark.parametrize("decimals", ["string", "double"])
def test_on_postgresql_a_numeric_beyond_a_double_is_exact_as_text_and_fails_the_task_as_a_double(
    make_simulated_worker: Make, postgres_database: ScratchDatabase, prefix: str, decimals: str
) -> None:
    database = postgres_database
    database.execute("CREATE TABLE huge (id integer PRIMARY KEY, n numeric)", f"INSERT INTO huge VALUES (1, {HUGE})")
    worker = make_simulated_worker()
    settings = {"table_include_list": "huge", "decimal_handling_mode": decimals}
    worker.add_connector("snap", JdbcCdcSourceConnector, config(database, f"{prefix}-snap", **settings))
    worker.add_connector("cdc", JdbcCdcSourceConnector, config(database, prefix, snapshot_mode="never", **settings))
    worker.advance(50)
    database.execute(f"INSERT INTO huge VALUES (2, -{HUGE})")
    if decimals == "string":
        assert [v["after"] for v in wait_for(worker, f"{prefix}-snap.public.huge", 2)] == [
            {"id": 1, "n": HUGE},
            {"id": 2, "n": f"-{HUGE}"},
        ]
        assert [v["after"] for v in wait_for(worker, f"{prefix}.public.huge", 1)] == [{"id": 2, "n": f"-{HUGE}"}]
        return
    for name in ("snap", "cdc"):  # the snapshot's read, and the audit table's
        worker.run_until(lambda name=name: worker.task_state(name) is State.FAILED, what=f"{name} failing")
        _, trace = worker.herder.statuses[(name, 0)]
        assert "public.huge.n: numeric value is beyond the range of a double" in str(trace)
    assert worker.messages(f"{prefix}.public.huge") == worker.messages(f"{prefix}-snap.public.huge") == []


@pytest.mark.parametrize(
    ("database", "binary"),
    [("sqlite", "BLOB"), pytest.param("postgres", "BYTEA", marks=pytest.mark.postgres)],
    indirect=["database"],
)
def test_binary_values_arrive_as_hex_text_and_the_applications_writes_go_on(
    make_simulated_worker: Make, database: ScratchDatabase, prefix: str, binary: str
) -> None:
    """A binary value reads as PostgreSQL writes a bytea in JSON (``\\x`` and lowercase hex), on each database; on
    SQLite, whose JSON cannot hold a BLOB, neither the snapshot nor the application's writes through the triggers
    fail (any SQLite column may hold a BLOB)."""
    blob = "x'00ff'" if database.kind == "sqlite" else "'\\x00ff'::bytea"
    other = "x'0a0b'" if database.kind == "sqlite" else "'\\x0a0b'::bytea"
    database.execute(f"CREATE TABLE files (id INTEGER PRIMARY KEY, body {binary}, name VARCHAR(20))")
    database.execute(f"INSERT INTO files VALUES (1, {blob}, 'a')")
    worker = make_simulated_worker({"offset.flush.interval.ms": 100})
    worker.add_connector("cdc", JdbcCdcSourceConnector, config(database, prefix, table_include_list="files"))
    topic = orders_topic(database, prefix, "files")
    wait_for(worker, topic, 1)
    database.execute(f"INSERT INTO files VALUES (2, {other}, 'b')", f"UPDATE files SET body = {other} WHERE id = 1")
    if database.kind == "sqlite":
        database.execute("INSERT INTO files VALUES (3, x'', 'c')", "UPDATE files SET name = x'ff' WHERE id = 2")
    wait_for(worker, topic, 5 if database.kind == "sqlite" else 3)
    found = events(worker, topic)
    assert found[:3] == [
        ("r", None, {"id": 1, "body": "\\x00ff", "name": "a"}),
        ("c", None, {"id": 2, "body": "\\x0a0b", "name": "b"}),
        ("u", {"id": 1, "body": "\\x00ff", "name": "a"}, {"id": 1, "body": "\\x0a0b", "name": "a"}),
    ]
    if database.kind == "sqlite":
        assert found[3:] == [
            ("c", None, {"id": 3, "body": "\\x", "name": "c"}),
            ("u", {"id": 2, "body": "\\x0a0b", "name": "b"}, {"id": 2, "body": "\\x0a0b", "name": "\\xff"}),
        ]
