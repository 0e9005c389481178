"""The CDC source under exactly-once source support (KIP-618): which configs it says deliver exactly once (not a
snapshot that a crash would restart, unless log mode sends it in one transaction), which define their own
transactions (log mode only), and crashes on the simulated cluster (in-memory Kafka): trigger mode on SQLite resumes
after the committed audit id and purges only what is committed; log mode on PostgreSQL with connector-defined
boundaries sends the snapshot in one transaction and each database transaction in one, so a crash mid-snapshot
delivers every row once, where a transaction per poll delivers the rows committed before the crash twice."""

from __future__ import annotations

import json
import time
from collections import Counter
from typing import Any

import pytest

from headwater.harness import SimulatedCluster
from headwater.reference_connectors.jdbc_cdc import JdbcCdcSourceConnector, source_partition
from headwater.reference_connectors.jdbc_cdc.task import ends_transaction
from headwater.runtime.herder.validation import DEFAULT_WORKER_CONFIG, validate_connector_config
from headwater.runtime.tasks.base import TaskId
from headwater.runtime.tasks.exactly_once_source import ExactlyOnceWorkerSourceTask
from headwater.sdk import ConnectorTransactionBoundaries, ExactlyOnceSupport
from support.scratch import ScratchDatabase

from .test_trigger_mode import AUDIT, config, create_orders, orders_topic

SUPPORTED, UNSUPPORTED = ExactlyOnceSupport.SUPPORTED, ExactlyOnceSupport.UNSUPPORTED
ENABLED = {"exactly.once.source.support": "enabled", "offset.flush.interval.ms": "300"}
TASK = TaskId("cdc", 0)


@pytest.mark.parametrize(
    ("mode", "snapshot", "boundary", "expected"),
    [
        ("trigger", "never", None, SUPPORTED),
        ("trigger", "never", "interval", SUPPORTED),
        ("log", "never", "poll", SUPPORTED),
        ("log", "initial", "connector", SUPPORTED),
        ("log", "initial", "poll", UNSUPPORTED),
        ("log", None, "interval", UNSUPPORTED),
        ("trigger", "initial", "poll", UNSUPPORTED),
        ("trigger", None, None, UNSUPPORTED),
    ],
)
def test_exactly_once_is_supported_where_a_resumed_task_emits_exactly_the_changes_after_its_offset(
    mode: str, snapshot: str | None, boundary: str | None, expected: ExactlyOnceSupport
) -> None:
    props = {"capture.mode": mode, "snapshot.mode": snapshot, "transaction.boundary": boundary}
    given = {key: value for key, value in props.items() if value is not None}
    assert JdbcCdcSourceConnector().exactly_once_support(given) is expected


def test_only_log_mode_defines_its_own_transactions() -> None:
    connector = JdbcCdcSourceConnector()
    assert (
        connector.can_define_transaction_boundaries({"capture.mode": "log"}) is ConnectorTransactionBoundaries.SUPPORTED
    )
    for props in ({"capture.mode": "trigger"}, {}):
        assert connector.can_define_transaction_boundaries(props) is ConnectorTransactionBoundaries.UNSUPPORTED


def test_required_exactly_once_is_refused_with_a_snapshot_a_crash_would_restart(
    sqlite_database: ScratchDatabase,
) -> None:
    create_orders(sqlite_database)
    worker = {**DEFAULT_WORKER_CONFIG, "exactly.once.source.support": "enabled"}
    props = {"connector.class": "jdbc-cdc", "name": "cdc", **config(sqlite_database, "p")}
    props["exactly.once.support"] = "required"
    errors = validate_connector_config(props, worker)["configs"]
    (refused,) = [c["value"]["errors"] for c in errors if c["value"]["errors"]]
    assert refused == ["The connector does not support exactly-once semantics with the provided configuration."]
    assert validate_connector_config({**props, "snapshot.mode": "never"}, worker)["error_count"] == 0
    boundary = validate_connector_config(
        {**props, "snapshot.mode": "never", "transaction.boundary": "connector"}, worker
    )
    assert boundary["error_count"] == 1  # trigger mode cannot define transactions


@pytest.mark.parametrize(
    ("offset", "ends"),
    [
        ({"lsn": 90, "seq": 2, "flush": 90}, True),  # the last event of the transaction that ended at 90
        ({"lsn": 90, "seq": 1, "flush": 40}, False),  # an earlier one: the slot may confirm only the one before
        ({"lsn": 40, "seq": -1, "flush": 40}, True),  # the snapshot's last row
        ({"lsn": 40, "seq": -1, "flush": 40, "snapshot": "incomplete"}, False),  # a row before it
        (None, False),
    ],
)
def test_an_event_ends_a_transaction_when_its_flush_is_its_own_commit(
    offset: dict[str, Any] | None, ends: bool
) -> None:
    assert ends_transaction(offset) is ends


# ---- crashes on the simulated cluster --------------------------------------------------------------------------


def running_on(cluster: SimulatedCluster) -> Any:
    return next((worker for worker in cluster.live if TASK in worker.tasks()), None)


def start(cluster: SimulatedCluster, props: dict[str, Any]) -> Any:
    """Create the connector; return the worker its task runs on, once it runs."""
    cluster.live[0].herder.put_connector_config("cdc", {"connector.class": "jdbc-cdc", **props})
    cluster.run_until(lambda: running_on(cluster) is not None, what="the task running")
    return running_on(cluster)


def ids(cluster: SimulatedCluster, topic: str, committed_only: bool) -> Counter[int]:
    """How often each row id's event is in ``topic``."""
    found: Counter[int] = Counter()
    if topic not in cluster.broker.topics():
        return found
    for message in cluster.broker.messages(topic, committed_only=committed_only):
        value = json.loads(message.value or b"null")
        found[(value["after"] or value["before"])["id"]] += 1
    return found


def committed_offset(worker: Any, prefix: str) -> dict[str, Any] | None:
    worker.offset_store.refresh()
    ((_, offset),) = worker.offset_store.get("cdc", [source_partition(prefix)])
    return offset


def test_trigger_mode_after_a_crash_delivers_every_change_once_and_purges_only_what_is_committed(
    sqlite_database: ScratchDatabase, prefix: str
) -> None:
    """400 inserts in the audit table; the task reads 5 a poll in transactions of 300 ms; its worker crashes
    150 ms after a commit and the other worker resumes the task from the committed audit id."""
    database = sqlite_database
    create_orders(database)
    cluster = SimulatedCluster(2, ENABLED, session_timeout_ms=3_000)
    props = config(database, prefix, snapshot_mode="never", batch_max_rows=5)
    first = start(cluster, {**props, "transaction.boundary": "interval"})  # its connector installs the triggers
    assert isinstance(first.worker.tasks[TASK], ExactlyOnceWorkerSourceTask)
    database.execute(*(f"INSERT INTO orders VALUES ({n}, 'item{n}', {n})" for n in range(1, 401)))
    topic = orders_topic(database, prefix)
    cluster.advance(450)
    committed = committed_offset(first, prefix)
    assert committed is not None
    sent = ids(cluster, topic, committed_only=False)
    assert committed["change_id"] < max(sent) < 400, "the crash must come with a transaction open, mid-stream"
    assert database.scalar(f"SELECT min(id) FROM {AUDIT}") == committed["change_id"] + 1, "purged beyond the commit"
    cluster.crash(first)

    cluster.run_until(lambda: len(ids(cluster, topic, committed_only=True)) == 400, what="every change delivered")
    assert running_on(cluster) is not first
    for worker in cluster.live:
        worker.herder.stop()
    once = ids(cluster, topic, committed_only=True)
    assert sorted(once) == list(range(1, 401))
    assert [n for n, count in once.items() if count > 1] == []
    again = ids(cluster, topic, committed_only=False)
    assert any(count > 1 for count in again.values()), "the crashed transaction's changes were read again"


# ---- log mode -------------------------------------------------------------------------------------------------


BYTES = {"key.converter": "bytes", "value.converter": "bytes", "header.converter": "bytes"}


def log_props(database: ScratchDatabase, prefix: str, boundary: str, converters: dict[str, str]) -> dict[str, Any]:
    return {
        **converters,
        "connection.url": database.url,
        "capture.mode": "log",
        "topic.prefix": prefix,
        "table.include.list": "public.orders,public.notes",
        "poll.interval.ms": 0,
        "batch.max.rows": 5,
        "transaction.boundary": boundary,
        "slot.name": f"headwater_cdc_{database.name}",  # a slot's name is the server's: the test's own
    }


def die(task: ExactlyOnceWorkerSourceTask, database: ScratchDatabase) -> None:
    """What the death of the task's process does to its database sessions: they close, and the slot is let go."""
    stream = task.task.log  # type: ignore[attr-defined]
    if stream.snapshot is not None:
        stream.snapshot.close()  # its transaction ends and its session closes
    stream.marks.close()
    stream.replication.close()
    slot = stream.cdc.slot
    deadline = time.monotonic() + 30
    while database.scalar(f"SELECT active FROM pg_replication_slots WHERE slot_name = '{slot}'"):
        assert time.monotonic() < deadline, f"slot {slot} still active 30 s after its session closed"


def crash_mid_snapshot(
    database: ScratchDatabase, prefix: str, boundary: str, converters: dict[str, str]
) -> tuple[Counter[int], Any]:
    """50 rows to snapshot, 5 a poll; the task's worker crashes after 3 polls; the other worker runs the task on, and
    then 4 database transactions of 3 changes each (an order inserted and updated, a note inserted). Returns how
    often each order id is read committed, and the task that ran on."""
    cluster = SimulatedCluster(2, ENABLED, session_timeout_ms=3_000)
    first = start(cluster, log_props(database, prefix, boundary, converters))
    crashed = first.worker.tasks[TASK]
    topic = f"{prefix}.public.orders"
    cluster.run_until(lambda: crashed.records_sent >= 15, what="3 polls of the snapshot sent")
    assert crashed.records_sent < 50
    die(crashed, database)
    cluster.crash(first)
    cluster.run_until(lambda: len(ids(cluster, topic, committed_only=True)) == 50, what="the snapshot delivered")
    for n in range(4):  # each over two tables: with the bytes converters, three batches
        database.execute(
            f"INSERT INTO orders VALUES ({100 + n}, 'a', 1)",
            f"INSERT INTO notes VALUES ({1000 + n}, 'b')",
            f"UPDATE orders SET qty = 2 WHERE id = {100 + n}",
        )
    notes = f"{prefix}.public.notes"
    cluster.run_until(
        lambda: len(ids(cluster, notes, committed_only=True)) == 4, what="the 4 database transactions delivered"
    )
    survivor = running_on(cluster)
    assert survivor is not first
    task = survivor.worker.tasks[TASK]
    for worker in cluster.live:
        worker.herder.stop()
    assert ids(cluster, notes, committed_only=True) == dict.fromkeys(range(1000, 1004), 1)
    return ids(cluster, topic, committed_only=True), task


@pytest.mark.postgres
def test_log_mode_sends_the_snapshot_and_each_database_transaction_in_one_transaction_so_a_crash_repeats_nothing(
    postgres_server: str, prefix: str
) -> None:
    """Also with the ``bytes`` converters, whose task sends changes as batches of one topic: a batch takes only
    batch-level requests, so a transaction holds the whole database transactions of a poll."""
    found: dict[str, tuple[Counter[int], Any]] = {}
    for run, boundary, converters in (
        ("connector", "connector", {}),
        ("bytes", "connector", BYTES),
        ("poll", "poll", {}),
    ):
        database = ScratchDatabase.on_server("postgres", postgres_server)
        try:
            create_orders(database)
            database.execute(*(f"INSERT INTO orders VALUES ({n}, 'item{n}', {n})" for n in range(1, 51)))
            found[run] = crash_mid_snapshot(database, prefix, boundary, converters)
        finally:
            database.close()

    changes = dict.fromkeys(range(100, 104), 2)
    for run in ("connector", "bytes"):
        delivered, task = found[run]
        assert {n: count for n, count in delivered.items() if n <= 50} == dict.fromkeys(range(1, 51), 1), run
        assert {n: delivered[n] for n in range(100, 104)} == changes, f"{run}: a database transaction is seen whole"
        sizes = task.transaction_sizes
        assert sizes[0] == 50 and sum(sizes[1:]) == 12, f"{run}: the snapshot in one transaction, then the rest"
        if run == "connector":
            assert sizes[1:] == [3, 3, 3, 3], "a transaction per database transaction"
        assert all(size % 3 == 0 for size in sizes[1:]), f"{run}: a database transaction split: {sizes}"

    per_poll, _ = found["poll"]
    twice = [n for n, count in per_poll.items() if n <= 50 and count > 1]
    assert len(twice) >= 15, "a transaction per poll: the snapshot rows committed before the crash come again"
