"""Trigger mode's committed offsets where the conformance suite cannot see them (found by ``make mutants``): the
audit purge follows ``audit.purge.committed`` from the first change on, and a snapshot of empty tables is committed
by a heartbeat, so a restart does not snapshot again. On SQLite, in the simulated worker."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from headwater.harness import SimulatedWorker
from headwater.reference_connectors.jdbc_cdc import JdbcCdcSourceConnector, source_partition
from support.scratch import ScratchDatabase

from .test_trigger_mode import AUDIT, config, create_orders, orders_topic, wait_for

Make = Callable[..., SimulatedWorker]


@pytest.mark.parametrize("purge", [True, False])
def test_the_audit_rows_are_purged_up_to_the_committed_offset_only_when_asked(
    make_simulated_worker: Make, sqlite_database: ScratchDatabase, prefix: str, purge: bool
) -> None:
    database = sqlite_database
    create_orders(database)
    worker = make_simulated_worker({"offset.flush.interval.ms": 100})
    props = config(database, prefix, snapshot_mode="never", audit_purge_committed=str(purge).lower())
    worker.add_connector("cdc", JdbcCdcSourceConnector, props)
    database.execute("INSERT INTO orders VALUES (1, 'item1', 1)")  # the first change: audit id 1
    wait_for(worker, orders_topic(database, prefix), 1)
    worker.run_until(lambda: worker.source_offset("cdc", source_partition(prefix)) is not None, what="a commit")
    worker.advance(300)  # three more commit intervals
    assert worker.source_offset("cdc", source_partition(prefix)) == {"change_id": 1}
    left = database.scalar(f"SELECT count(*) FROM {AUDIT}")
    assert left == (0 if purge else 1), f"audit.purge.committed={purge}: {left} audit rows left after the commit"


def test_a_snapshot_of_empty_tables_is_committed_by_a_heartbeat_and_not_taken_again(
    make_simulated_worker: Make, sqlite_database: ScratchDatabase, prefix: str
) -> None:
    database = sqlite_database
    create_orders(database)
    worker = make_simulated_worker({"offset.flush.interval.ms": 100, "heartbeat.interval.ms": 100})
    worker.add_connector("cdc", JdbcCdcSourceConnector, config(database, prefix))
    worker.advance(500)
    assert worker.messages(orders_topic(database, prefix)) == []
    worker.assert_source_offset("cdc", source_partition(prefix), {"change_id": 0})


def test_no_heartbeat_runs_ahead_of_a_snapshot_being_read(
    make_simulated_worker: Make, sqlite_database: ScratchDatabase, prefix: str
) -> None:
    """A snapshot read one row a poll, heartbeats and commits every pass: until its last row is handed over, no
    heartbeat is sent and every committed offset is an incomplete snapshot's (a complete one would skip the rest of
    the snapshot after a crash)."""
    database = sqlite_database
    create_orders(database, *[(n, f"item{n}", n) for n in range(1, 6)])
    worker = make_simulated_worker({"offset.flush.interval.ms": 10, "heartbeat.interval.ms": 10})
    worker.add_connector(
        "cdc", JdbcCdcSourceConnector, config(database, prefix, snapshot_fetch_size=1, batch_max_rows=1)
    )
    topic = orders_topic(database, prefix)
    for _ in range(100):
        if len(worker.messages(topic)) == 5:
            break
        committed = worker.source_offset("cdc", source_partition(prefix))
        assert committed is None or committed.get("snapshot") == "incomplete", f"committed {committed} mid-snapshot"
        assert worker.messages("connect-heartbeats") == [], "a heartbeat while the snapshot was being read"
        worker.advance(10)
    assert len(worker.messages(topic)) == 5
    worker.advance(100)
    worker.assert_source_offset("cdc", source_partition(prefix), {"change_id": 0})
