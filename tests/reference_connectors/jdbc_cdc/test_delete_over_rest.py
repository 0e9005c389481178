"""On a real Kafka broker and PostgreSQL, through ``headwater standalone`` in a subprocess and its REST API: a
JDBC-CDC connector in log mode, stopped (``PUT /connectors/{name}/stop``, which keeps its slot and publication) and
then deleted (``DELETE /connectors/{name}``), leaves no replication slot, publication, trigger or audit table: the
worker starts an instance with the connector's config to deliver ``stop(connector_deleted=True)`` (KIP-901)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import httpx
import pytest

from headwater.reference_connectors.jdbc_cdc import default_object_name
from support.process import WorkerProcess
from support.scratch import ScratchDatabase

from .test_trigger_mode import create_orders

pytestmark = [pytest.mark.kafka, pytest.mark.postgres]

LISTENING = re.compile(r"REST API listening on (http://127\.0\.0\.1:\d+)")
TIMEOUT_S = 60.0


def states(http: httpx.Client, name: str) -> tuple[str, list[str]] | None:
    """The connector's state and its tasks', ``None`` while it has no status."""
    response = http.get(f"/connectors/{name}/status")
    if response.status_code != 200:
        return None
    found: dict[str, Any] = response.json()
    return found["connector"]["state"], [task["state"] for task in found["tasks"]]


def test_a_log_mode_connector_stopped_then_deleted_leaves_nothing_behind(
    kafka_bootstrap: str, postgres_database: ScratchDatabase, tmp_path: Path, unique_name: str
) -> None:
    database = postgres_database
    name = f"cdc_{database.name}"  # its slot's default name is the server's: the test's own
    slot = default_object_name(name)
    create_orders(database, (1, "item1", 1))
    config = {
        "connector.class": "jdbc-cdc",
        "connection.url": database.url,
        "capture.mode": "log",
        "topic.prefix": unique_name,
        "table.include.list": "public.orders",
    }
    props = {"bootstrap.servers": kafka_bootstrap, "offset.flush.interval.ms": 200}
    with WorkerProcess(tmp_path, props, {}) as worker:
        worker.start()
        found = LISTENING.search(worker.wait_for_log("REST API listening on"))
        assert found, worker.log_tail()
        with httpx.Client(base_url=found.group(1), timeout=TIMEOUT_S) as http:
            created = http.post("/connectors", json={"name": name, "config": config})
            assert created.status_code == 201, created.text
            worker.wait_until(lambda: states(http, name) == ("RUNNING", ["RUNNING"]), TIMEOUT_S, "cdc running")
            worker.wait_until(lambda: database.slots() == [slot], TIMEOUT_S, "the slot the task creates")
            assert slot in database.publications()

            assert http.put(f"/connectors/{name}/stop").status_code == 204
            worker.wait_until(lambda: states(http, name) == ("STOPPED", []), TIMEOUT_S, "cdc stopped")
            assert database.slots() == [slot] and slot in database.publications(), "a plain stop keeps them"

            assert http.delete(f"/connectors/{name}").status_code == 204
            assert http.get(f"/connectors/{name}/status").status_code == 404
        assert database.slots() == []
        assert slot not in database.publications()
        assert database.triggers() == []
        assert slot not in database.tables(), "no audit table"
        worker.assert_log_contains(
            f"connector {name} deleted while no instance of it runs here", "dropped replication slot"
        )
        assert "may remain" not in worker.log_text()
        assert worker.terminate() == 0
