"""Two concurrent transactions commit in the opposite order of their change ids, on PostgreSQL and MariaDB:
the connector holds the higher id back while the lower one is in flight, and both changes arrive."""

from __future__ import annotations

from collections.abc import Callable

from headwater.harness import SimulatedWorker
from headwater.reference_connectors.jdbc_cdc import JdbcCdcSourceConnector, source_partition
from support.scratch import ScratchDatabase

from .test_trigger_mode import AUDIT, config, create_orders, orders_topic, wait_for

Make = Callable[..., SimulatedWorker]


def test_transactions_committing_against_id_order_both_arrive(
    make_simulated_worker: Make, server_database: ScratchDatabase, prefix: str
) -> None:
    database = server_database
    create_orders(database)
    worker = make_simulated_worker({"offset.flush.interval.ms": 100})
    worker.add_connector("cdc", JdbcCdcSourceConnector, config(database, prefix))
    worker.advance(50)
    topic = orders_topic(database, prefix)
    with database.connect() as first, database.connect() as second:
        lower = first.begin()
        first.exec_driver_sql("INSERT INTO orders VALUES (1, 'first', 1)")  # takes the lower change id
        higher = second.begin()
        second.exec_driver_sql("INSERT INTO orders VALUES (2, 'second', 2)")
        higher.commit()
        visible = database.query(f"SELECT id FROM {AUDIT}")
        assert len(visible) == 1  # only the higher id is visible: max(id) would pass the lower one for good
        worker.advance(300)
        assert worker.messages(topic) == []
        assert worker.source_offset("cdc", source_partition(prefix)) is None
        lower.commit()
    values = wait_for(worker, topic, 2)
    assert [v["after"]["item"] for v in values] == ["first", "second"]
    assert values[1]["source"]["change_id"] == visible[0][0] > values[0]["source"]["change_id"]
    worker.advance(200)
    worker.assert_source_offset("cdc", source_partition(prefix), {"change_id": visible[0][0]})


def test_a_rolled_back_transaction_does_not_hold_the_stream_back(
    make_simulated_worker: Make, server_database: ScratchDatabase, prefix: str
) -> None:
    database = server_database
    create_orders(database)
    worker = make_simulated_worker()
    worker.add_connector("cdc", JdbcCdcSourceConnector, config(database, prefix))
    worker.advance(50)
    topic = orders_topic(database, prefix)
    with database.connect() as first, database.connect() as second:
        lower = first.begin()
        first.exec_driver_sql("INSERT INTO orders VALUES (1, 'rolled back', 1)")
        higher = second.begin()
        second.exec_driver_sql("INSERT INTO orders VALUES (2, 'kept', 2)")
        higher.commit()
        worker.advance(100)
        assert worker.messages(topic) == []
        lower.rollback()
    values = wait_for(worker, topic, 1)
    assert [v["after"]["item"] for v in values] == ["kept"]
    stream = worker.source_task("cdc").task.stream
    assert stream is not None and "gaps_passed=1" in repr(stream)
