"""Spark sink throughput on a real broker: Headwater's ``spark-sink`` writing JSON records into Parquet, against
Spark Structured Streaming reading the same topic with spark-sql-kafka and writing the same Parquet, and against a
pyarrow-only pipeline (the ceiling), in the same run.

A topic of ``--partitions`` partitions (default 3) is filled once, unmeasured, with ``--records`` JSON values of
``--record-bytes`` bytes (``{"id":n,"name":"user-n","pad":"xx..."}``, key ``n``). Then each side reads the whole
topic from its beginning into a Parquet directory of its own, with the same columns: ``id BIGINT, name STRING,
pad STRING`` from the value, then ``kafka_topic``, ``kafka_partition``, ``kafka_offset``, ``kafka_timestamp`` and
``kafka_key`` (text):

* ``headwater``: ``headwater standalone`` runs ``spark-sink`` (one task, ``value.schema`` as above, the ``bytes``
  converters, ``flush.max.records=--flush-records``) with the connector's default session (1 GB driver) on the
  Spark master of the run. Its time runs from the task's partitions being opened (logged by the task after its
  SparkSession is up and the group joined) to the write time of its last commit manifest.
* ``structured-streaming``: this script's ``structured-streaming`` command: a SparkSession with the same settings
  plus spark-sql-kafka (``spark.jars.packages`` with the connector's ``kafka_package()``, resolved by Spark's Ivy
  from Maven Central with the connector's ``IVY_SETTINGS``, as the connector gets its own packages), a
  ``readStream`` of the topic from the earliest offsets, ``from_json`` with the same schema, the same metadata
  columns, and a Parquet ``writeStream`` with ``trigger(availableNow=True)``. Its time runs from ``start()`` to the
  end of ``awaitTermination()``.
* ``pyarrow``: this script's ``pyarrow`` command: a confluent-kafka consumer assigned every partition from the
  beginning, ``consume(500)`` batches buffered per partition, and every ``--flush-records`` records (and at the
  end) each partition's values parsed by ``pyarrow.json`` with the schema, the metadata columns added, and the
  table written with ``pyarrow.parquet.write_table``. Its time runs from ``assign()`` to the last file written.

Both Spark sides run on the same master: ``--master`` (default the connector's, ``local[2]``), or with
``--cluster`` a Spark standalone cluster started for the run from pyspark's own ``spark-class`` (one master and
one worker of ``--cores`` cores and ``--worker-memory``, on 127.0.0.1; ``SparkCluster`` of ``tests/support``). On a
``spark://`` master each side's session also gets ``spark.cores.max=--cores``, ``spark.executor.memory=512m`` and
its driver on 127.0.0.1. Every child runs with ``PYSPARK_PYTHON`` set to this Python, so executors run the same
one. The master is printed before the table.

So SparkSession (JVM) start-up, package resolution and executor launch are left out of both Spark sides, and
group join of Headwater's. Both sessions get the connector's warm-up write (``spark_sink.session.warm_up``: 1,000
rows from Arrow, into Parquet on a local master, into Spark's ``noop`` sink on a cluster) before their clock
starts. Headwater writes in the background (``write.background``, the default) while it buffers the next flush.
Every side runs in a child process of its own, alone. Checked: every output directory holds exactly ``--records``
rows. ``--repeat R`` runs every side R times, rotating which goes first, and counts each side's best run. The
``cpu s`` column is the user and system CPU time of each side's Python process, start-up included (a Spark side's
JVMs, driver and executors, are not counted: they are not waited for by that process). The last line is
``vs_structured_streaming=<x> vs_pyarrow=<y>``: Headwater's records/s divided by each other side's.

Run it with::

    python bench/spark_sink.py [--records N] [--record-bytes B] [--partitions P] [--flush-records F]
        [--repeat R] [--bootstrap-servers HOST:PORT] [--sides headwater,structured-streaming,pyarrow]
        [--master URL | --cluster [--cores C] [--worker-memory M]] [--profile DIR [--profile-lines L]]

``--profile DIR`` runs the Headwater side instead in ``kafka_pipeline.py``'s ``profiled-worker`` (the standalone
worker's objects, the task stepped on the main thread under cProfile) with ``write.background=false``, so that the
writes run on that thread too, and prints where its time went, SparkSession start-up included (its ratios are not
meaningful).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import io
import json
import logging
import os
import re
import sys
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the sibling bench module, run as a script or loaded
sys.path.append(str(Path(__file__).resolve().parents[1] / "tests"))  # tests/support: the cluster of --cluster

from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition
from kafka_pipeline import (
    FULL_QUEUE_WAIT_S,
    TIMEOUT_S,
    WATCH_INTERVAL_S,
    BenchError,
    Child,
    Inspector,
    Run,
    print_profile,
    profiled_worker,
    scratch,
    write_properties,
)

from headwater.harness.cluster import find_cluster
from headwater.runtime.transport.kafka import CONSUMER_DEFAULTS, PRODUCER_DEFAULTS
from support.spark_services import SparkCluster, application_conf

SIDES = ("headwater", "structured-streaming", "pyarrow")
VALUE_SCHEMA = "id BIGINT, name STRING, pad STRING"
BROKER_JVM_OPTS = "-Xms512m -Xmx1g -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -Djava.awt.headless=true"
EXECUTOR_MEMORY = "512m"
HEADER = f"{'repeat':<7}{'side':<22}{'records':>10}{'seconds':>9}{'records/s':>12}{'cpu s':>9}"
_OPENED = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) .*opened \d+ partitions", re.MULTILINE)


def json_value(n: int, size: int) -> bytes:
    """A JSON object of ``size`` bytes (or just over, when ``size`` is too small for the id)."""
    head = b'{"id":%d,"name":"user-%d","pad":"' % (n, n)
    return head + b"x" * max(size - len(head) - 2, 0) + b'"}'


def fill(bootstrap_servers: str, topic: str, records: int, size: int, partitions: int) -> None:
    producer = Producer({**PRODUCER_DEFAULTS, "bootstrap.servers": bootstrap_servers})
    for n in range(records):
        while True:
            try:
                producer.produce(topic, json_value(n, size), b"%d" % n, partition=n % partitions)
                break
            except BufferError:
                producer.poll(FULL_QUEUE_WAIT_S)
    if producer.flush(TIMEOUT_S):
        raise BenchError(f"could not fill {topic}")


@contextlib.contextmanager
def spark_master(args: argparse.Namespace, directory: Path) -> Iterator[str]:
    """``--master``, or with ``--cluster`` the master URL of a standalone cluster that lives as long as the block."""
    if not args.cluster:
        yield args.master
        return
    with SparkCluster(directory / "spark-cluster", cores=args.cores, memory=args.worker_memory) as cluster:
        yield cluster.master_url


def master_line(args: argparse.Namespace, master: str) -> str:
    """The line before the table: which master the Spark sides ran on (and what it had)."""
    line = f"spark master: {master}"
    if args.cluster:
        line += f" (a standalone cluster started for this run: 1 worker, {args.cores} cores, {args.worker_memory})"
    if master.startswith("spark://"):
        line += f", spark.cores.max={args.cores}, spark.executor.memory={EXECUTOR_MEMORY}"
    return line


@contextlib.contextmanager
def environment(values: Mapping[str, str]) -> Iterator[None]:
    """``os.environ`` (so every child's environment) with ``values`` set, for as long as the block."""
    saved = {key: os.environ.get(key) for key in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def parquet_rows(directory: Path) -> int:
    import pyarrow.dataset as ds

    if not directory.exists():
        return 0
    return int(ds.dataset(str(directory), format="parquet").count_rows())


# ---- the Structured Streaming side -------------------------------------------------------------------------------


def structured_streaming(args: argparse.Namespace) -> int:
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    from headwater.reference_connectors.spark_sink import SPARK_DEFAULTS, kafka_package
    from headwater.reference_connectors.spark_sink.packages import IVY_SETTINGS
    from headwater.reference_connectors.spark_sink.session import warm_up

    conf = {
        **SPARK_DEFAULTS,
        **dict(item.split("=", 1) for item in args.conf),
        "spark.jars.packages": kafka_package(),
        "spark.jars.ivySettings": str(IVY_SETTINGS),
    }
    builder = SparkSession.builder
    for key, value in conf.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    warm_up(spark)  # the same warm-up write as the connector's session gets
    source = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", args.bootstrap_servers)
        .option("subscribe", args.topic)
        .option("startingOffsets", "earliest")
        .load()
    )
    rows = source.select(
        F.from_json(F.col("value").cast("string"), VALUE_SCHEMA).alias("value"),
        F.col("topic").alias("kafka_topic"),
        F.col("partition").alias("kafka_partition"),
        F.col("offset").alias("kafka_offset"),
        F.col("timestamp").alias("kafka_timestamp"),
        F.col("key").cast("string").alias("kafka_key"),
    ).select("value.*", "kafka_topic", "kafka_partition", "kafka_offset", "kafka_timestamp", "kafka_key")
    started = time.monotonic()
    query = (
        rows.writeStream.format("parquet")
        .option("path", args.out)
        .option("checkpointLocation", args.checkpoint)
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    seconds = time.monotonic() - started
    print(json.dumps({"seconds": seconds}), flush=True)
    spark.stop()
    return 0


# ---- the pyarrow side ----------------------------------------------------------------------------------------------


def pyarrow_side(args: argparse.Namespace) -> int:
    import pyarrow as pa
    import pyarrow.json as pa_json
    import pyarrow.parquet as pq

    schema = pa.schema([("id", pa.int64()), ("name", pa.string()), ("pad", pa.string())])
    options = pa_json.ParseOptions(explicit_schema=schema, unexpected_field_behavior="ignore")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    consumer = Consumer({**CONSUMER_DEFAULTS, "bootstrap.servers": args.bootstrap_servers, "group.id": args.group})
    buffers: dict[int, tuple[list[bytes], list[bytes], list[int], list[int]]] = {}
    buffered = written = files = 0

    def write() -> int:
        tables = []
        for partition, (values, keys, offsets, stamps) in sorted(buffers.items()):
            block = io.BytesIO(b"\n".join(values) + b"\n")
            table = pa_json.read_json(block, parse_options=options)
            table = table.append_column("kafka_topic", pa.array([args.topic] * len(offsets), pa.string()))
            table = table.append_column("kafka_partition", pa.array([partition] * len(offsets), pa.int32()))
            table = table.append_column("kafka_offset", pa.array(offsets, pa.int64()))
            table = table.append_column("kafka_timestamp", pa.array(stamps, pa.timestamp("ms", tz="UTC")))
            table = table.append_column("kafka_key", pa.array(keys, pa.binary()).cast(pa.string()))
            tables.append(table)
        buffers.clear()
        pq.write_table(pa.concat_tables(tables), out / f"part-{files:05d}.parquet")
        return sum(t.num_rows for t in tables)

    started = time.monotonic()
    consumer.assign([TopicPartition(args.topic, p, OFFSET_BEGINNING) for p in range(args.partitions)])
    while written < args.records:
        messages = consumer.consume(500, 1.0)
        for message in messages:
            if message.error() is not None:
                continue
            values, keys, offsets, stamps = buffers.setdefault(message.partition(), ([], [], [], []))
            values.append(message.value())
            keys.append(message.key())
            offsets.append(message.offset())
            stamps.append(message.timestamp()[1])
            buffered += 1
        if buffered >= args.flush_records or (buffered and written + buffered >= args.records):
            written += write()
            files += 1
            buffered = 0
    seconds = time.monotonic() - started
    consumer.close()
    print(json.dumps({"seconds": seconds, "written": written}), flush=True)
    return 0


# ---- the runs ----------------------------------------------------------------------------------------------------


class SparkSinkBench:
    """Fills one topic, then runs the sides into output directories of their own under one scratch directory."""

    def __init__(self, args: argparse.Namespace, bootstrap_servers: str, directory: Path, master: str) -> None:
        self.args = args
        self.bootstrap_servers = bootstrap_servers
        self.directory = directory
        self.spark_conf = application_conf(master, args.cores, EXECUTOR_MEMORY)
        self.inspector = Inspector(bootstrap_servers)
        self.run_id = uuid.uuid4().hex[:8]
        self.topic = f"bench-{self.run_id}-json"
        self.profiles: list[Path] = []

    def prepare(self) -> None:
        self.inspector.create_topic(self.topic, self.args.partitions)
        fill(self.bootstrap_servers, self.topic, self.args.records, self.args.record_bytes, self.args.partitions)
        if (count := self.inspector.count(self.topic)) != self.args.records:
            raise BenchError(f"{self.topic} holds {count} records, not {self.args.records}")

    def headwater(self, name: str, out: Path) -> tuple[float, float]:
        worker = write_properties(
            self.directory / f"{name}-worker.properties",
            {
                "bootstrap.servers": self.bootstrap_servers,
                "offset.storage.file.filename": self.directory / f"{name}.offsets",
                "offset.flush.interval.ms": 1000,
                "key.converter": "bytes",
                "value.converter": "bytes",
                "listeners": "http://127.0.0.1:0",
            },
        )
        connector = write_properties(
            self.directory / f"{name}.properties",
            {
                "name": name,
                "connector.class": "spark-sink",
                "tasks.max": 1,
                "topics": self.topic,
                "table.path": out,
                "value.schema": VALUE_SCHEMA,
                "flush.max.records": self.args.flush_records,
                "flush.max.bytes": 1 << 40,
                "flush.interval.ms": 1000,
                **self.spark_conf,
                **({"write.background": "false"} if self.args.profile else {}),
            },
        )
        command = [sys.executable, "-m", "headwater.runtime.commands.cli", "standalone", str(worker), str(connector)]
        if self.args.profile:
            profile = Path(self.args.profile) / f"{name}.prof"
            self.profiles.append(profile)
            command = [sys.executable, __file__, "profiled-worker", str(worker), str(connector)]
            command += ["--profile", str(profile)]
        child = Child(name, command, self.directory)
        manifests = out / "_headwater" / "manifests"
        deadline = time.monotonic() + self.args.timeout
        try:
            while self._manifest_rows(manifests) < self.args.records:
                if child.poll() is not None:
                    raise BenchError(f"{name} exited with {child.returncode}\n{child.log_tail()}")
                if time.monotonic() > deadline:
                    raise BenchError(f"{name}: not {self.args.records} rows within {self.args.timeout} s")
                time.sleep(WATCH_INTERVAL_S)
        finally:
            code = child.stop()
        if code != 0:
            raise BenchError(f"{name} exited with {code}\n{child.log_tail()}")
        opened = _OPENED.search(child.stderr.read_text(errors="replace"))
        if opened is None:
            raise BenchError(f"{name} never logged its partitions being opened\n{child.log_tail()}")
        start = dt.datetime.strptime(opened[1], "%Y-%m-%d %H:%M:%S,%f").timestamp()
        end = max(json.loads(p.read_text())["written_ms"] for p in manifests.glob("*.json")) / 1000
        return end - start, child.cpu_seconds

    @staticmethod
    def _manifest_rows(manifests: Path) -> int:
        if not manifests.is_dir():
            return 0
        return sum(json.loads(p.read_text())["rows"] for p in manifests.glob("[0-9]*.json"))

    def child_side(self, side: str, name: str, out: Path) -> tuple[float, float]:
        command = [sys.executable, __file__, side, "--bootstrap-servers", self.bootstrap_servers, "--topic", self.topic]
        command += ["--out", str(out), "--records", str(self.args.records)]
        if side == "structured-streaming":
            command += ["--checkpoint", str(self.directory / f"{name}-checkpoint")]
            command += [f"--conf={key}={value}" for key, value in self.spark_conf.items()]
        else:
            command += ["--group", name, "--partitions", str(self.args.partitions)]
            command += ["--flush-records", str(self.args.flush_records)]
        child = Child(name, command, self.directory)
        try:
            code = child.wait(self.args.timeout)
        finally:
            child.stop()
        if code != 0:
            raise BenchError(f"{name} exited with {code}\n{child.log_tail()}")
        return float(child.result()["seconds"]), child.cpu_seconds

    def run_side(self, side: str, repeat: int) -> Run:
        name = f"{side}-{self.run_id}-{repeat}"
        out = self.directory / f"{name}-table"
        seconds, cpu = self.headwater(name, out) if side == "headwater" else self.child_side(side, name, out)
        if (rows := parquet_rows(out)) != self.args.records:
            raise BenchError(f"{name} wrote {rows} rows, not {self.args.records}")
        return Run("sink", side, self.args.records, max(seconds, 1e-3), cpu)

    def run(self, sides: Sequence[str]) -> list[Run]:
        self.prepare()
        runs: list[Run] = []
        for repeat in range(self.args.repeat):
            shift = repeat % len(sides)
            for side in [*sides[shift:], *sides[:shift]]:
                run = self.run_side(side, repeat)
                print(
                    f"{repeat:<7}{side:<22}{run.records:>10}{run.seconds:>9.3f}{run.rate:>12,.0f}{run.cpu_seconds:>9.2f}",
                    flush=True,
                )
                runs.append(run)
        return runs

    def close(self) -> None:
        if not self.args.keep_topics:
            self.inspector.delete_topics([self.topic])
        self.inspector.close()


def child_main(command: str, argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog=f"spark_sink.py {command}")
    if command == "profiled-worker":  # kafka_pipeline's, logging as the CLI does (the bench reads when it opened)
        parser.add_argument("worker_properties")
        parser.add_argument("connector_properties", nargs="+")
        parser.add_argument("--profile", required=True)
        logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
        return profiled_worker(parser.parse_args(argv))
    for option in ("--bootstrap-servers", "--topic", "--out"):
        parser.add_argument(option, required=True)
    parser.add_argument("--records", type=int, required=True)
    parser.add_argument("--checkpoint")
    parser.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE", help="A Spark setting.")
    parser.add_argument("--group")
    parser.add_argument("--partitions", type=int, default=1)
    parser.add_argument("--flush-records", type=int, default=250_000)
    args = parser.parse_args(argv)
    return structured_streaming(args) if command == "structured-streaming" else pyarrow_side(args)


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in (*SIDES[1:], "profiled-worker"):
        return child_main(argv[0], argv[1:])
    from headwater.reference_connectors.spark_sink import SPARK_DEFAULTS

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--bootstrap-servers", help="A running cluster; default: one found or started.")
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--record-bytes", type=int, default=100)
    parser.add_argument("--partitions", type=int, default=3)
    parser.add_argument("--flush-records", type=int, default=250_000, help="Records per write (Headwater, pyarrow).")
    parser.add_argument("--repeat", type=int, default=1, help="Runs per side; the best counts.")
    parser.add_argument("--sides", default=",".join(SIDES), help="Which sides run, comma-separated; headwater first.")
    masters = parser.add_mutually_exclusive_group()
    masters.add_argument(
        "--master",
        default=SPARK_DEFAULTS["spark.master"],
        help="The Spark master of both Spark sides; default: the connector's, %(default)s.",
    )
    masters.add_argument(
        "--cluster", action="store_true", help="Start a Spark standalone cluster for the run and use its master."
    )
    parser.add_argument(
        "--cores", type=int, default=2, help="Cores of the --cluster worker; spark.cores.max on a spark:// master."
    )
    parser.add_argument("--worker-memory", default="2g", help="Memory of the --cluster worker.")
    parser.add_argument("--timeout", type=float, default=900, help="Seconds one run may take.")
    parser.add_argument("--keep", metavar="DIR", help="Keep properties, logs and tables in DIR.")
    parser.add_argument("--keep-topics", action="store_true")
    parser.add_argument("--profile", metavar="DIR", help="Profile the Headwater side into DIR (see above).")
    parser.add_argument("--profile-lines", type=int, default=40)
    args = parser.parse_args(argv)
    if args.profile:
        Path(args.profile).mkdir(parents=True, exist_ok=True)
    sides = [side.strip() for side in args.sides.split(",") if side.strip()]
    if not sides or sides[0] != "headwater" or any(side not in SIDES for side in sides):
        parser.error(f"--sides must start with headwater and name only {', '.join(SIDES)}")
    os.environ.setdefault("HEADWATER_KAFKA_JVM_OPTS", BROKER_JVM_OPTS)
    cluster = find_cluster(args.bootstrap_servers)
    try:
        print(
            f"spark_sink: {args.records} records x {args.record_bytes} bytes of JSON, {args.partitions} partitions, "
            f"{args.flush_records} records per write, {cluster.bootstrap_servers} ({cluster.source})",
            flush=True,
        )
        with (
            scratch(args.keep) as directory,
            environment({"PYSPARK_PYTHON": sys.executable}),
            spark_master(args, directory) as master,
        ):
            print(master_line(args, master))
            print(HEADER, flush=True)
            bench = SparkSinkBench(args, cluster.bootstrap_servers, directory, master)
            try:
                runs = bench.run(sides)
            finally:
                bench.close()
            for profile in bench.profiles:
                print_profile(profile, args.profile_lines)
    finally:
        cluster.stop()

    def best(side: str) -> float:
        return max(run.rate for run in runs if run.kind == side)

    ours = best("headwater")
    ratios = [f"vs_{side.replace('-', '_')}={ours / best(side):.2f}" for side in sides[1:]]
    print(" ".join(ratios))
    return 0


if __name__ == "__main__":
    sys.exit(main())
