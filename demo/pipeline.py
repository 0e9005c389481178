"""The demo's run: a SQLite shop captured by the ``jdbc-cdc`` connector into topics, and its orders written by the
Spark sink (or, without Java, the pyarrow sink) into a Parquet table, on a worker managed over its REST API.

The steps: create the shop; start Spark in the background and a broker (or choose the in-memory transport);
start the worker with REST on a free loopback port; ``POST`` the source (trigger mode on ``orders`` and
``customers``: snapshot, then stream) and wait for the snapshot's committed offset; write inserts, updates and
deletes; ``POST`` the sink; stop the source, let ``customers`` change, narrow the capture to ``orders`` and resume,
so that the only news in the change log is changes the source no longer sends, which a heartbeat carries into the
committed offset while the captured table is idle; wait until the table holds every order change; read the
summary from the REST API, the topics and the table; delete the source (its triggers and audit table go with it)
and stop the worker (the sink stops, not deleted).
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from headwater.demo.backend import SparkStarter, choose_backend, spark_missing
from headwater.demo.shop import Shop
from headwater.demo.summary import Summary, read_table
from headwater.demo.worker import DemoWorker, RestClient

VALUE_SCHEMA = "op STRING NOT NULL, ts_ms BIGINT"
"""The change event's fields the table keeps, beside the record's topic, partition, offset, timestamp and key."""


class DemoFailed(RuntimeError):
    """A step did not happen in time; the message says which."""


@dataclass
class DemoOptions:
    directory: Path | None = None
    """Where the shop, the offsets file and the table go; a new temporary directory when ``None``."""
    bootstrap: str | None = None
    """A running Kafka cluster to use instead of starting a broker (also ``HEADWATER_KAFKA_BOOTSTRAP``)."""
    in_memory: bool = False
    spark: bool = True
    """``False``: the pyarrow sink even when Spark could run."""
    timeout_s: float = 240.0


@dataclass(frozen=True)
class Names:
    """Connector and topic names; with a suffix of their own on a cluster others may use."""

    source: str
    sink: str
    prefix: str
    heartbeats: str

    @classmethod
    def for_run(cls, shared: bool) -> Names:
        tag = f"-{uuid.uuid4().hex[:6]}" if shared else ""
        return cls(f"shop-cdc{tag}", f"orders-lake{tag}", f"shop{tag}", f"connect-heartbeats{tag}")


class Progress:
    """One line per step, with the seconds since the demo began."""

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.started = time.monotonic()

    def say(self, text: str) -> None:
        print(f"[{time.monotonic() - self.started:5.1f} s] {text}", file=self.out, flush=True)

    def wait(self, condition: Callable[[], bool], what: str, deadline: float, every_s: float = 5.0) -> None:
        """Poll ``condition`` until true, saying what it waits for every ``every_s``; :class:`DemoFailed` after
        ``deadline`` (a ``time.monotonic()`` moment)."""
        started = next_note = time.monotonic()
        word = "waiting"
        while not condition():
            now = time.monotonic()
            if now > deadline:
                raise DemoFailed(f"{what} did not happen in time ({now - started:.0f} s)")
            if now >= next_note:
                self.say(f"{word} for {what} ...")
                word, next_note = "still waiting", now + every_s
            time.sleep(0.2)


def source_config(shop: Shop, names: Names, tables: str) -> dict[str, str]:
    return {
        "connector.class": "jdbc-cdc",
        "connection.url": shop.url,
        "capture.mode": "trigger",
        "snapshot.mode": "initial",
        "table.include.list": tables,
        "topic.prefix": names.prefix,
        "poll.interval.ms": "100",
    }


def sink_config(names: Names, table: Path, spark: bool) -> dict[str, str]:
    config = {"topics": f"{names.prefix}.orders", "table.path": str(table), "flush.max.records": "1000"}
    if not spark:
        return {**config, "connector.class": "headwater.demo.sink:ParquetFileSink"}
    return {
        **config,
        "connector.class": "spark-sink",
        "table.format": "parquet",
        "value.schema": VALUE_SCHEMA,
        "flush.interval.ms": "500",
        "key.converter": "bytes",
        "value.converter": "bytes",
    }


def committed_offset(rest: RestClient, connector: str) -> dict[str, Any] | None:
    """The source connector's committed offset, from ``GET /connectors/{c}/offsets``."""
    offsets = rest.call("GET", f"/connectors/{connector}/offsets")["offsets"]
    return dict(offsets[0]["offset"]) if offsets else None


def run_demo(options: DemoOptions, out: TextIO | None = None) -> Summary:
    """Run the pipeline, saying each step on ``out`` (standard output by default), and return what happened;
    raises :class:`DemoFailed` when a step does not happen in time."""
    progress = Progress(out or sys.stdout)
    say = progress.say
    directory = options.directory or Path(tempfile.mkdtemp(prefix="headwater-demo-"))
    directory.mkdir(parents=True, exist_ok=True)
    for name in ("shop.db", "shop.db-wal", "shop.db-shm", "connect.offsets"):  # a previous run's, in a given --dir
        (directory / name).unlink(missing_ok=True)
    shutil.rmtree(directory / "orders", ignore_errors=True)
    shop = Shop(directory / "shop.db")
    shop.create()
    say(f"shop database {shop.path}: {shop.order_events['r']} orders, {shop.customers} customers (SQLite, WAL)")
    missing = spark_missing() if options.spark else "asked for with --without-spark"
    starter = None
    if missing is None:
        starter = SparkStarter()
        starter.start()
        say("starting Spark in the background (a first session takes 20-30 s on a small machine) ...")
    else:
        say(f"no Spark sink: {missing}; the table is written by the demo's pyarrow sink instead")
    backend = choose_backend(say, options.bootstrap, options.in_memory)
    say(f"transport: {backend.description}")
    deadline = progress.started + options.timeout_s
    try:
        names = Names.for_run(backend.shared)
        with DemoWorker(backend, directory, {"heartbeat.records.topic": names.heartbeats}) as worker:
            summary = _pipeline(progress, deadline, worker, shop, names, directory / "orders", starter)
    finally:
        backend.stop()
    summary.seconds = time.monotonic() - progress.started
    return summary


def _pipeline(
    progress: Progress,
    deadline: float,
    worker: DemoWorker,
    shop: Shop,
    names: Names,
    table: Path,
    starter: SparkStarter | None,
) -> Summary:
    say, rest, backend = progress.say, worker.client, worker.backend
    spark_said = starter is None

    def wait(condition: Callable[[], bool], what: str) -> None:
        """Wait for ``condition``, saying when Spark is ready and failing at once when Spark or a task fails."""

        def check() -> bool:
            nonlocal spark_said
            if starter is not None and not spark_said and starter.seconds is not None:
                spark_said = True
                if starter.error is not None:
                    raise DemoFailed(f"Spark did not start: {starter.error}")
                say(f"Spark session ready ({starter.seconds:.0f} s after it was asked for)")
            if (failure := failed_task(rest)) is not None:
                raise DemoFailed(failure)
            return condition()

        progress.wait(check, what, deadline)

    say(f"worker started; REST API at {rest.url}")
    rest.call("POST", "/connectors", {"name": names.source, "config": source_config(shop, names, "orders,customers")})
    say(f"POST /connectors {names.source}: jdbc-cdc, trigger mode on orders and customers, snapshot then stream")
    wait(
        lambda: (found := committed_offset(rest, names.source)) is not None and "snapshot" not in found,
        "the snapshot's committed offset",
    )
    shop.visit(3)
    shop.change_orders(inserts=10, updates=6, deletes=4)
    last_order_change = shop.last_change()
    say("shop: 3 customer visits; 10 new orders, 6 changed, 4 deleted")
    wait(
        lambda: (committed_offset(rest, names.source) or {}).get("change_id") == last_order_change,
        f"the committed offset to reach change {last_order_change}",
    )
    rest.call("POST", "/connectors", {"name": names.sink, "config": sink_config(names, table, starter is not None)})
    kind = "spark-sink" if starter is not None else "the pyarrow sink"
    say(f"POST /connectors {names.sink}: {kind} from {names.prefix}.orders into a Parquet table at {table}")
    rest.call("PUT", f"/connectors/{names.source}/stop")
    shop.visit(5)
    rest.call("PUT", f"/connectors/{names.source}/config", source_config(shop, names, "orders"))
    rest.call("PUT", f"/connectors/{names.source}/resume")
    last_change = shop.last_change()
    say(f"PUT {names.source}/stop; 5 customer visits meanwhile; PUT config: capture orders only; PUT resume")
    wait(
        lambda: (committed_offset(rest, names.source) or {}).get("change_id") == last_change,
        f"a heartbeat to carry the committed offset from change {last_order_change} to {last_change}",
    )
    say(f"idle orders, yet the committed source offset reached change {last_change}: a heartbeat carried it")
    expected = sum(shop.order_events.values())
    wait(lambda: len(read_table(table)) >= expected, f"the table to hold all {expected} order changes")
    group = f"connect-{names.sink}"
    topic_partition = f"{names.prefix}.orders-0"
    wait(lambda: sink_offsets(worker, names.sink, group).get(topic_partition) == expected, "the sink's commit")
    say(f"the table holds {expected} rows; reading the summary from the REST API, the topics and the table")
    topics = [f"{names.prefix}.orders", f"{names.prefix}.customers", names.heartbeats]
    active = {c: rest.call("GET", f"/connectors/{c}/topics")[c]["topics"] for c in (names.source, names.sink)}
    summary = Summary(
        transport=backend.description,
        sink="spark-sink" if starter is not None else "the pyarrow sink (at least once)",
        rest_url=rest.url,
        records={topic: backend.records(topic) for topic in topics},
        source_offsets=rest.call("GET", f"/connectors/{names.source}/offsets")["offsets"],
        last_order_change=last_order_change,
        last_change=last_change,
        sink_offsets=sink_offsets(worker, names.sink, group),
        heartbeats=backend.records(names.heartbeats),
        heartbeat_topic=names.heartbeats,
        active_topics=active,
        table=table,
        rows=read_table(table),
        expected_ops=dict(shop.order_events),
        cleanup="",
    )
    rest.call("DELETE", f"/connectors/{names.source}")
    left = shop.triggers()
    dropped = f"still in {shop.path.name}: {', '.join(left)}" if left else f"dropped from {shop.path.name}"
    summary.cleanup = (
        f"DELETE {names.source}: its triggers and audit table {dropped}; "
        f"{names.sink} stopped with the worker, not deleted (its table and offsets stay)"
    )
    return summary


def failed_task(rest: RestClient) -> str | None:
    """The first line of a failed connector's or task's trace, from ``GET /connectors?expand=status``."""
    for name, found in rest.call("GET", "/connectors?expand=status").items():
        status = found["status"]
        for what, state in [("connector", status["connector"]), *(("task", t) for t in status["tasks"])]:
            if state["state"] == "FAILED":
                trace = (state.get("trace") or "no trace").strip().splitlines()
                return f"{what} of {name} failed: {trace[-1] if trace else ''}"
    return None


def sink_offsets(worker: DemoWorker, connector: str, group: str) -> dict[str, int]:
    """The sink's committed offsets: from ``GET /connectors/{c}/offsets`` on Kafka, from the in-memory broker's
    group otherwise (the REST API reads sink offsets from Kafka's consumer groups)."""
    if worker.backend.memory is not None:
        return worker.backend.group_offsets(group)
    found = worker.client.call("GET", f"/connectors/{connector}/offsets")["offsets"]
    return {
        f"{e['partition']['kafka_topic']}-{e['partition']['kafka_partition']}": e["offset"]["kafka_offset"]
        for e in found
    }
