"""Log-mode CDC throughput and latency on PostgreSQL: the ``jdbc-cdc`` connector into a real Kafka broker, beside a
direct psycopg2 logical-replication read of the same workload and Debezium's PostgreSQL connector on Java Kafka
Connect.

Set-up: a PostgreSQL server of the test suite's own (``tests/support/databases.py``; ``--postgres-url`` for a running
one) and a Kafka broker (``--kafka-bootstrap``, else one found or started from the local jars like the tests').
Table ``orders`` (id, item text, qty integer, price numeric, created timestamptz). One pgoutput slot and publication
per side, all created before any row is written: ``bench_raw``, the connector's ``bench_cdc`` and
``bench_debezium``. Then ``--rows`` rows are inserted in transactions of ``--tx-rows``, unmeasured, and the sides
run one after another (raw, headwater, debezium), each alone, each reading that backlog from its own slot.

* **raw** reads ``bench_raw`` with psycopg2 (``read_message``, counting insert messages by their tag, confirming
  each commit) until it has every row; its time runs from its first message to its last row.
* **headwater**: the connector (log mode, ``snapshot.mode=never``, one task, ``batch.max.rows=5000``, in an
  in-process worker with the Kafka transport; ``key.converter``, ``value.converter`` and ``header.converter``
  ``bytes`` in its config, so the task writes the JSON envelope itself and hands over ``SourceBatch`` columns) reads
  ``bench_cdc`` and sends every change event. Its time runs from the first sample with records sent (its first
  poll's batch) to the first with every record acknowledged (sampled every 10 ms), and its rate counts the rows
  sent after that first sample: a batch counts as acknowledged only once all of it is, so counting from the first
  acknowledgement would leave a whole batch's time out.
* **debezium**: ``io.debezium.connector.postgresql.PostgresConnector`` (``DEBEZIUM_VERSION`` of ``java_connect``,
  built against Kafka 4.3) in ``ConnectStandalone`` of the pinned Kafka version (``java_connect``: jars from Maven
  Central, cached under the broker's cache root, Debezium's on ``plugin.path``), reading ``bench_debezium``
  (``plugin.name=pgoutput``, ``publication.autocreate.mode=disabled``, ``snapshot.mode=no_data``: no snapshot, and
  with no stored offset it streams from the slot's start). Configured for the same events as the connector's:
  ``JsonConverter`` with ``schemas.enable=false`` for key and value (the schema-less JSON envelope our task
  writes; Debezium's adds a ``transaction`` field) and ``decimal.handling.mode=string`` (the connector's default;
  Debezium's is base64 bytes); ``max.batch.size=5000`` like ``batch.max.rows``, ``max.queue.size=20000``,
  ``poll.interval.ms=100`` (the connector's default; Debezium waits that long for a full batch, the connector only
  when it found nothing). The worker's producer keeps Java Connect's defaults, as the connector's keeps Headwater's;
  both workers commit offsets every second. Its topic is created beforehand with
  ``message.timestamp.type=LogAppendTime`` and its time runs from the append time of the first event to that of
  the ``--rows``-th, so JVM and worker start-up are left out (as bench/mirror.py times MirrorMaker 2).

Each rate is rows / that side's time. Checked: every side sees every row; Debezium's topic holds exactly one event
per row written.

* **Latency.** With the connector still running, a writer commits ``--steady-rate`` rows/s in transactions of 10
  rows for ``--steady-s`` seconds. Every event of that phase is read back from the topic, created beforehand with
  ``message.timestamp.type=LogAppendTime``: latency = the broker's append time (which precedes its acknowledgement
  by the broker's local write) minus the commit time in the event (``source.ts_ms``, from pgoutput's commit
  message). Both clocks are this machine's. Debezium gets a steady phase of its own, once it has caught up, and
  its latency is printed on its own line.

Last line: ``events_per_s=<connector rows/s> p99_ms=<p99 latency> vs_raw=<connector rate / raw rate>
vs_debezium=<connector rate / Debezium's rate>`` (a ratio only for a side that ran: ``--sides`` picks them, headwater
always among them). The vs_raw target is >= 0.8. It was met on a 2-core machine with little else running:
``events_per_s=102443 p99_ms=18 vs_raw=0.87`` (with the JSON converter and one dict per event it was
``events_per_s=33635 p99_ms=19 vs_raw=0.26``). On another 2-core machine, whose raw read ran faster (132,000 to 163,000
rows/s), five runs gave vs_raw 0.55 to 0.79 with the connector at 85,000 to 115,000 rows/s: not met there. Its task
thread is then busy all the time: about 30% writing the JSON images, 20% confluent-kafka's ``produce``, the rest reading
messages (including about 10% waiting for the walsender, which shares the cores). The connector's side needs about twice
the CPU per row of the raw side (its thread, librdkafka and the broker beside the walsender), so other load on the
machine lowers the ratio (0.43 to 0.76 with other jobs taking a core). With Debezium 3.6.0.Final on Connect 4.3.1, same
machine, load about 0.6 when it started: ``events_per_s=75898 p99_ms=20 vs_raw=1.09 vs_debezium=14.79``, and
``vs_debezium=9.33`` in another run. Debezium read the backlog at 5,100 to 7,100 rows/s (7,900 over the second half, its
JIT warm) with a p99 of about 200 ms in its steady phase (its poll waits up to ``poll.interval.ms`` for a full batch);
its JVM used 65 s of CPU for about 110,000 events, start-up and JIT compilation included, beside the broker and the
walsender on the same two cores, so the ratio says as much about a small machine as about Debezium. Its log shows an
ERROR at start-up: Debezium's ``CloudEventsConverter`` cannot be loaded from the plugin directory (it looks up a
``JsonConverter`` method with its own Jackson types); nothing here uses it. The debezium side needs Java 17 and Maven;
without them the bench stops, naming what to install. Run it with::

    python bench/cdc.py [--rows 100000] [--tx-rows 1000] [--steady-rate 2000] [--steady-s 10]
        [--kafka-bootstrap HOST:PORT] [--postgres-url URL] [--sides headwater,raw,debezium] [--keep DIR]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import select
import signal
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the sibling bench modules, run as a script or loaded
sys.path.append(str(Path(__file__).resolve().parents[1] / "tests"))  # tests/support: the PostgreSQL server

import psycopg2
import psycopg2.extras
from java_connect import DEBEZIUM_VERSION, JSON_CONVERTER, connect_standalone, debezium_postgres
from kafka_pipeline import Child, Inspector, scratch

from headwater.harness.cluster import find_cluster
from headwater.harness.kafka_worker import KafkaInspector
from headwater.harness.maven import BrokerUnavailable, require_tools
from headwater.runtime.herder import StandaloneHerder
from headwater.runtime.storage.offsets import MemoryOffsetStore
from headwater.runtime.tasks.source import WorkerSourceTask
from headwater.runtime.transport import Message
from headwater.runtime.transport.kafka import KafkaTransport
from headwater.runtime.worker import Worker
from support.databases import postgres_url
from support.scratch import ScratchDatabase

SIDES = ("headwater", "raw", "debezium")
SLOTS = {"raw": "bench_raw", "headwater": "bench_cdc", "debezium": "bench_debezium"}
"""Each side's replication slot, and its publication of the same name."""
TIMEOUT_S = 300.0
SAMPLE_S = 0.01
BATCH_ROWS = 5000
"""Rows per batch: the connector's ``batch.max.rows``, Debezium's ``max.batch.size``."""
FLUSH_INTERVAL_MS = 1000
POLL_INTERVAL_MS = 100
"""Debezium's ``poll.interval.ms``, set to the connector's default (Debezium's own is 500)."""


def insert_sql(first: int, last: int) -> str:
    """Rows ``first`` to ``last`` of ``orders``, in one statement."""
    return (
        "INSERT INTO orders (id, item, qty, price) "
        f"SELECT g, 'item-' || g, mod(g, 100), mod(g, 1000) / 10.0 FROM generate_series({first}, {last}) g"
    )


def insert_rows(database: ScratchDatabase, first: int, count: int, tx_rows: int) -> None:
    for start in range(first, first + count, tx_rows):
        database.execute(insert_sql(start, min(start + tx_rows, first + count) - 1))


def raw_read(database: ScratchDatabase, rows: int) -> float:
    """Seconds a plain psycopg2 reader takes to receive ``rows`` inserts from slot ``bench_raw``."""
    args = database.engine.url.translate_connect_args(username="user", database="dbname")
    connection = psycopg2.connect(connection_factory=psycopg2.extras.LogicalReplicationConnection, **args)
    cursor: Any = connection.cursor()
    options = {"proto_version": "1", "publication_names": SLOTS["raw"]}
    cursor.start_replication(slot_name=SLOTS["raw"], decode=False, options=options)
    seen = 0
    started: float | None = None
    deadline = time.monotonic() + TIMEOUT_S
    while seen < rows:
        message = cursor.read_message()
        if message is None:
            if time.monotonic() > deadline:
                raise SystemExit(f"raw read saw {seen} of {rows} rows in {TIMEOUT_S} s")
            select.select([connection], [], [], 1.0)
            continue
        if started is None:
            started = time.monotonic()
        tag = message.payload[0]
        if tag == 0x49:  # I
            seen += 1
        elif tag == 0x43:  # C
            cursor.send_feedback(flush_lsn=message.data_start)
    elapsed = time.monotonic() - (started or time.monotonic())
    connection.close()
    return elapsed


def wait_acked(task: WorkerSourceTask, count: int, samples: list[tuple[float, int, int]]) -> None:
    deadline = time.monotonic() + TIMEOUT_S
    while (acked := task.records_acked) < count:
        samples.append((time.monotonic(), task.records_sent, acked))
        if time.monotonic() > deadline:
            raise SystemExit(f"the connector acknowledged {acked} of {count} records in {TIMEOUT_S} s")
        time.sleep(SAMPLE_S)
    samples.append((time.monotonic(), task.records_sent, task.records_acked))


def span_rate(samples: list[tuple[float, int, int]], count: int) -> float:
    """Records after the first sent ones over the time from the first sample with records sent to the first with
    every record acknowledged (a SourceBatch counts as acknowledged only once all of its records are)."""
    start, sent = next((t, sent) for t, sent, _ in samples if sent > 0)
    end = next(t for t, _, acked in samples if acked >= count)
    return (count - sent) / max(end - start, 1e-9)


def steady_writer(database: ScratchDatabase, first: int, rate: int, seconds: float) -> int:
    """Commit ``rate`` rows/s in transactions of 10 for ``seconds``, on one connection (the scratch database's
    engine connects for every transaction, about 5 ms, which held the rate near 1,500 rows/s); returns the rows
    written."""
    per_tx = 10
    interval = per_tx / rate
    written = 0
    with database.connect() as connection:
        start = time.monotonic()
        while time.monotonic() - start < seconds:
            connection.exec_driver_sql(insert_sql(first + written, first + written + per_tx - 1))
            connection.commit()
            written += per_tx
            pause = start + written / per_tx * interval - time.monotonic()
            if pause > 0:
                time.sleep(pause)
    return written


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def latency(messages: list[Message], label: str, seconds: float) -> float:
    """Print the commit-to-append latency of ``messages`` (change events on a LogAppendTime topic, written over
    ``seconds``); return its p99."""
    latencies = [float(m.timestamp - json.loads(m.value or b"{}")["source"]["ts_ms"]) for m in messages]
    p50, p99 = percentile(latencies, 0.5), percentile(latencies, 0.99)
    print(
        f"{label} latency over {len(latencies)} events at {len(latencies) / seconds:.0f} rows/s: "
        f"p50 {p50:.0f} ms, p99 {p99:.0f} ms, mean {statistics.fmean(latencies):.1f} ms",
        flush=True,
    )
    return p99


class CdcBench:
    """The table, one slot and publication per side, and the sides run one after another on the same rows."""

    def __init__(self, args: argparse.Namespace, database: ScratchDatabase, bootstrap_servers: str) -> None:
        self.args = args
        self.database = database
        self.bootstrap_servers = bootstrap_servers
        self.prefix = f"cdc-bench-{int(time.time())}"
        self.written = args.rows
        """Rows inserted so far (ids 1 to ``written``): each slot holds every one of them."""

    def prepare(self, sides: list[str]) -> None:
        """The table, then every side's publication and slot, then ``--rows`` rows (unmeasured)."""
        self.database.execute(
            "CREATE TABLE orders (id bigint PRIMARY KEY, item text, qty integer, price numeric(10, 2), "
            "created timestamptz DEFAULT now())",
            *(f"CREATE PUBLICATION {SLOTS[side]} FOR TABLE orders" for side in sides),
        )
        for side in sides:
            self.database.scalar(f"SELECT pg_create_logical_replication_slot('{SLOTS[side]}', 'pgoutput')")
        insert_rows(self.database, 1, self.args.rows, self.args.tx_rows)

    def steady(self) -> int:
        """Run the steady writer for ``--steady-s`` seconds; returns the rows it wrote."""
        written = steady_writer(self.database, self.written + 1, self.args.steady_rate, self.args.steady_s)
        self.written += written
        return written

    def raw(self) -> float:
        raw_s = raw_read(self.database, self.args.rows)
        rate = self.args.rows / raw_s
        print(f"raw: {self.args.rows} rows in {raw_s:.2f} s = {rate:.0f} rows/s", flush=True)
        return rate

    def headwater(self) -> tuple[float, float]:
        """Rows/s and p99 latency of the ``jdbc-cdc`` connector, run in this process."""
        topic = f"{self.prefix}.public.orders"
        KafkaInspector(self.bootstrap_servers).create_topic(topic, 1, {"message.timestamp.type": "LogAppendTime"})
        worker = Worker(
            {
                "key.converter": "json",
                "value.converter": "json",
                "key.converter.schemas.enable": "false",
                "value.converter.schemas.enable": "false",
                "offset.flush.interval.ms": FLUSH_INTERVAL_MS,
            },
            KafkaTransport(self.bootstrap_servers),
            MemoryOffsetStore(),
        )
        try:
            StandaloneHerder(worker).put_connector_config(
                "cdc",
                {
                    "connector.class": "jdbc-cdc",
                    "connection.url": self.database.url,
                    "capture.mode": "log",
                    "snapshot.mode": "never",
                    "topic.prefix": self.prefix,
                    "table.include.list": "public.orders",
                    "slot.name": SLOTS["headwater"],
                    "publication.name": SLOTS["headwater"],
                    "batch.max.rows": BATCH_ROWS,
                    "key.converter": "bytes",
                    "value.converter": "bytes",
                    "header.converter": "bytes",
                },
            )
            deadline = time.monotonic() + TIMEOUT_S
            while not worker.tasks:
                if time.monotonic() > deadline:
                    raise SystemExit("the connector's task never started")
                time.sleep(SAMPLE_S)
            task = next(iter(worker.tasks.values()))
            assert isinstance(task, WorkerSourceTask)
            samples: list[tuple[float, int, int]] = []
            wait_acked(task, self.written, samples)
            rate = span_rate(samples, self.args.rows)
            print(f"headwater: {self.args.rows} rows at {rate:.0f} rows/s", flush=True)
            start = self.written
            self.steady()
            wait_acked(task, self.written, [])
        finally:
            worker.stop()
        messages = KafkaInspector(self.bootstrap_servers).messages(topic)
        return rate, latency(messages[start:], "headwater", self.args.steady_s)

    def debezium(self, directory: Path) -> tuple[float, float]:
        """Rows/s and p99 latency of Debezium's connector on Java Kafka Connect, in a child process."""
        prefix = f"{self.prefix}-debezium"
        topic = f"{prefix}.public.orders"
        inspector = Inspector(self.bootstrap_servers)
        inspector.create_topic(topic, 1, {"message.timestamp.type": "LogAppendTime"})
        url = self.database.engine.url
        worker = {
            "bootstrap.servers": self.bootstrap_servers,
            "offset.storage.file.filename": directory / "debezium.offsets",
            "offset.flush.interval.ms": FLUSH_INTERVAL_MS,
            "key.converter": JSON_CONVERTER,
            "value.converter": JSON_CONVERTER,
            "key.converter.schemas.enable": "false",
            "value.converter.schemas.enable": "false",
        }
        connector = {
            "name": "debezium",
            "connector.class": "io.debezium.connector.postgresql.PostgresConnector",
            "tasks.max": 1,
            "plugin.name": "pgoutput",
            "slot.name": SLOTS["debezium"],
            "publication.name": SLOTS["debezium"],
            "publication.autocreate.mode": "disabled",
            "database.hostname": url.host,
            "database.port": url.port,
            "database.user": url.username,
            "database.password": url.password or "",
            "database.dbname": url.database,
            "topic.prefix": prefix,
            "table.include.list": "public.orders",
            "snapshot.mode": "no_data",
            "decimal.handling.mode": "string",
            "max.batch.size": BATCH_ROWS,
            "max.queue.size": 4 * BATCH_ROWS,
            "poll.interval.ms": POLL_INTERVAL_MS,
        }
        plugins = debezium_postgres()
        child = connect_standalone("debezium", directory, worker, connector, plugin_path=plugins)
        try:
            backlog = self.written
            wait_count(inspector, topic, backlog, child)
            self.steady()
            wait_count(inspector, topic, self.written, child)
        finally:
            code = child.stop()
            inspector.close()
        if code not in (0, 128 + signal.SIGTERM, -signal.SIGKILL):  # SIGKILL: its shutdown outlasted stop()'s wait
            raise SystemExit(f"Debezium's worker exited with {code}\n{child.log_tail()}")
        messages = KafkaInspector(self.bootstrap_servers).messages(topic)
        if len(messages) != self.written:
            raise SystemExit(f"{topic} holds {len(messages)} events, not {self.written}: duplicates")
        if json.loads(messages[self.args.rows - 1].value or b"{}")["after"]["id"] != self.args.rows:
            raise SystemExit(f"{topic}: event {self.args.rows} is not the insert of row {self.args.rows}")
        stamps = [messages[i].timestamp for i in (0, self.args.rows // 2, self.args.rows - 1)]
        rate = self.args.rows / (max(stamps[2] - stamps[0], 1) / 1000)
        warm = (self.args.rows - 1 - self.args.rows // 2) / (max(stamps[2] - stamps[1], 1) / 1000)
        print(
            f"debezium {DEBEZIUM_VERSION}: {self.args.rows} rows at {rate:.0f} rows/s (its second half at "
            f"{warm:.0f} rows/s; the JVM used {child.cpu_seconds:.1f} s of CPU over its whole run)",
            flush=True,
        )
        return rate, latency(messages[backlog:], "debezium", self.args.steady_s)


def wait_count(inspector: Inspector, topic: str, count: int, child: Child) -> None:
    deadline = time.monotonic() + TIMEOUT_S
    while (found := inspector.count(topic)) < count:
        if child.poll() is not None:
            raise SystemExit(f"Debezium's worker exited with {child.returncode}\n{child.log_tail()}")
        if time.monotonic() > deadline:
            raise SystemExit(f"{topic} holds {found} of {count} events after {TIMEOUT_S} s\n{child.log_tail()}")
        time.sleep(SAMPLE_S * 10)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--tx-rows", type=int, default=1000)
    parser.add_argument("--steady-rate", type=int, default=2000)
    parser.add_argument("--steady-s", type=float, default=10)
    parser.add_argument("--kafka-bootstrap", default=None)
    parser.add_argument("--postgres-url", default=None, help="A running server to use (SQLAlchemy URL, superuser).")
    parser.add_argument("--sides", default=",".join(SIDES), help="Which sides run, comma-separated; headwater always.")
    parser.add_argument("--keep", metavar="DIR", help="Keep the Java worker's properties, log and offsets in DIR.")
    args = parser.parse_args(argv)
    sides = [side.strip() for side in args.sides.split(",") if side.strip()]
    if "headwater" not in sides or set(sides) - set(SIDES):
        parser.error(f"--sides: headwater, then any of {', '.join(SIDES[1:])}")
    if "debezium" in sides:
        try:
            require_tools("java", "mvn")
            debezium_postgres()  # the download, once per machine, before anything is timed
        except BrokerUnavailable as exc:
            raise SystemExit(f"the debezium side: {exc}; or leave it out with --sides headwater,raw") from exc
    cluster = find_cluster(args.kafka_bootstrap)
    ratios: list[str] = []
    try:
        with (
            postgres_url(args.postgres_url) as url,
            contextlib.closing(ScratchDatabase.on_server("postgres", url)) as database,
        ):
            bench = CdcBench(args, database, cluster.bootstrap_servers)
            bench.prepare([side for side in SIDES if side in sides])
            raw_rate = bench.raw() if "raw" in sides else None
            rate, p99 = bench.headwater()
            if raw_rate is not None:
                ratios.append(f"vs_raw={rate / raw_rate:.2f}")
            if "debezium" in sides:
                with scratch(args.keep) as directory:
                    debezium_rate, _ = bench.debezium(directory)
                ratios.append(f"vs_debezium={rate / debezium_rate:.2f}")
    finally:
        cluster.stop()
    print(" ".join([f"events_per_s={rate:.0f} p99_ms={p99:.0f}", *ratios]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
