"""WAL kept for an idle connector's slot while another database on the same PostgreSQL server writes, with the
connector's heartbeats on and off (KIP-910's motivation).

A PostgreSQL server of the test suite's own (``tests/support/databases.py``, ``wal_level=logical``) gets two
databases: ``app``, whose table ``orders`` the ``jdbc-cdc`` connector captures in log mode, and ``busy``, which
writes about ``--wal-mb`` MB of WAL in ``--chunks`` steps (``INSERT ... SELECT`` of 1 kB rows). ``orders`` stays
idle throughout. The connector runs in an in-process worker (threads, the system clock, the in-memory transport)
with ``offset.flush.interval.ms=500`` and ``heartbeat.interval.ms`` 500 (on) or 0 (off), once each, each with a
slot of its own. After each chunk, and after the workload (up to ``--settle-s`` seconds for the slot to catch up:
its restart position moves only at the next record of running transactions, which PostgreSQL's background writer
logs every 15 s), the bench prints the slot's retained WAL: ``pg_current_wal_lsn() - restart_lsn`` of
``pg_replication_slots``, in MB. After each chunk it also prints the unconfirmed WAL
(``pg_current_wal_lsn() - confirmed_flush_lsn``): with heartbeats it is back to 0 within the pause after each chunk
(``--chunk-pause-s``, 1 s) while the retained WAL waits for that record; without them it grows with the workload.

Last line: ``retained_mb_heartbeat=<a> retained_mb_off=<b>``; the target is a < 16 while b grows with the
workload. Run it with::

    python bench/wal_retention.py [--wal-mb 100] [--chunks 10] [--settle-s 30] [--postgres-url URL] [--debug]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

sys.path.append(str(Path(__file__).resolve().parents[1] / "tests"))  # tests/support: the PostgreSQL server

from headwater.runtime.herder import StandaloneHerder
from headwater.runtime.storage.offsets import MemoryOffsetStore
from headwater.runtime.transport.memory import MemoryBroker, MemoryTransport
from headwater.runtime.worker import Worker
from support.databases import postgres_url
from support.scratch import ScratchDatabase

MB = 1024 * 1024
SLOT_STATE = "SELECT confirmed_flush_lsn, restart_lsn FROM pg_replication_slots WHERE slot_name = '{slot}'"
ROW_BYTES = 1000


def behind_mb(database: ScratchDatabase, slot: str, position: str) -> float:
    """WAL written since the slot's ``position`` (``restart_lsn``: what the server retains for it;
    ``confirmed_flush_lsn``: what the connector has yet to confirm), in MB."""
    value = database.scalar(
        f"SELECT pg_current_wal_lsn() - {position} FROM pg_replication_slots WHERE slot_name = '{slot}'"
    )
    return round(float(value) / MB, 1)


def retained_mb(database: ScratchDatabase, slot: str) -> float:
    return behind_mb(database, slot, "restart_lsn")


def wal_position(database: ScratchDatabase) -> int:
    return int(database.scalar("SELECT pg_current_wal_lsn() - '0/0'"))


def write_chunk(busy: ScratchDatabase, megabytes: float, first_id: int) -> int:
    """Insert about ``megabytes`` of WAL into ``busy``; returns the next free id."""
    rows = int(megabytes * MB / (ROW_BYTES + 140))  # a row's WAL record carries ~140 bytes more than its payload
    last = first_id + rows - 1
    busy.execute(f"INSERT INTO filler SELECT g, repeat('x', {ROW_BYTES}) FROM generate_series({first_id}, {last}) g")
    return first_id + rows


def run(server_url: str, heartbeat_ms: int, args: argparse.Namespace) -> float:
    app = ScratchDatabase.on_server("postgres", server_url)
    busy = ScratchDatabase.on_server("postgres", server_url)
    worker = Worker(
        {
            "key.converter": "json",
            "value.converter": "json",
            "value.converter.schemas.enable": "false",
            "offset.flush.interval.ms": 500,
        },
        MemoryTransport(MemoryBroker()),
        MemoryOffsetStore(),
    )
    herder = StandaloneHerder(worker)
    label = "heartbeat" if heartbeat_ms else "off"
    slot = f"wal_bench_{label}"
    try:
        app.execute("CREATE TABLE orders (id integer PRIMARY KEY, item text)")
        busy.execute("CREATE TABLE filler (id bigint PRIMARY KEY, payload text)")
        config: dict[str, Any] = {
            "connector.class": "jdbc-cdc",
            "connection.url": app.url,
            "capture.mode": "log",
            "table.include.list": "public.orders",
            "slot.name": slot,
            "publication.name": slot,
            "heartbeat.interval.ms": heartbeat_ms,
        }
        herder.put_connector_config("cdc", config)
        deadline = time.monotonic() + 60
        while app.scalar(f"SELECT active FROM pg_replication_slots WHERE slot_name = '{slot}'") is not True:
            if time.monotonic() > deadline:
                raise SystemExit(f"the connector's slot {slot} never became active")
            time.sleep(0.1)
        next_id = 1
        start = wal_position(busy)
        for _ in range(args.chunks):
            next_id = write_chunk(busy, args.wal_mb / args.chunks, next_id)
            time.sleep(args.chunk_pause_s)
            written = (wal_position(busy) - start) / MB
            print(
                f"{label}: {written:.1f} MB of WAL written, retained {retained_mb(app, slot)} MB, "
                f"unconfirmed {behind_mb(app, slot, 'confirmed_flush_lsn')} MB"
            )
            if args.debug:
                print(f"  slot {app.query(SLOT_STATE.format(slot=slot))}, tasks {list(worker.tasks.values())}")
        # the slot's restart position moves at the next record of running transactions, which the background
        # writer logs every 15 s while WAL is written: wait for it rather than forcing one with CHECKPOINT
        deadline = time.monotonic() + args.settle_s
        while time.monotonic() < deadline and retained_mb(app, slot) >= 1:
            time.sleep(0.5)
        found = retained_mb(app, slot)
        print(f"{label}: after the workload, retained {found} MB")
        return found
    finally:
        herder.delete_connector("cdc")
        worker.stop()
        app.close()
        busy.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--wal-mb", type=float, default=100)
    parser.add_argument("--chunks", type=int, default=10)
    parser.add_argument("--chunk-pause-s", type=float, default=1.0)
    parser.add_argument("--settle-s", type=float, default=30)
    parser.add_argument("--postgres-url", default=None, help="A running server to use (SQLAlchemy URL, superuser).")
    parser.add_argument("--debug", action="store_true")
    args = parser.parse_args(argv)
    with postgres_url(args.postgres_url) as url:
        with_heartbeats = run(url, 500, args)
        without = run(url, 0, args)
    print(f"retained_mb_heartbeat={with_heartbeats} retained_mb_off={without}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
