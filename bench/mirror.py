"""Mirror throughput between two real brokers: Headwater's ``kafka-mirror`` against a raw confluent-kafka
consume->produce loop and against Apache Kafka's own MirrorSourceConnector, in the same run on the same brokers.

A source topic of ``--partitions`` partitions (default 3) on the source cluster is filled once with ``--records``
values of ``--record-bytes`` bytes (``sequence_value``, no key), unmeasured. Then each side copies the whole topic,
from its beginning, into a destination topic of its own on the destination cluster:

* ``headwater``: ``headwater standalone`` runs ``kafka-mirror`` (one task) with the ``bytes`` converters; its
  destination is ``hw-<run>.<source>`` (``destination.topics.prefix``).
* ``raw``: this script's ``raw-mirror`` command: a consumer assigned every partition from the beginning, each
  record produced with its key, value, timestamp and headers, ``poll(0)`` after every batch of 500, a ``poll`` of
  up to 100 ms when the queue is full, one ``on_delivery`` callback counting failures. Its clients get the settings
  the mirror's get: ``PRODUCER_DEFAULTS`` and the consumer's (``enable.auto.commit=false``).
* ``mm2``: ``org.apache.kafka.connect.cli.ConnectStandalone`` runs ``MirrorSourceConnector`` (one task,
  ``ByteArrayConverter``, topic config and ACL sync off) from the ``connect-mirror`` jars of Maven Central
  (``java_connect.py``, cached like the broker's); its destination is ``mm2-<run>.<source>``.
  Java 17 with ``-Xms256m -Xmx1g``.

Both workers commit offsets every ``--flush-interval-ms`` (default 1000). Every destination topic is created
beforehand with the source's partitions and ``message.timestamp.type=LogAppendTime``, so a side's time runs from
the broker's append time of its first record to that of its last, over all partitions: process start-up, JVM
start-up and group or metadata set-up are left out the same way for all three. Each side runs in a child process of
its own, alone. Checked: every destination topic holds exactly ``--records`` records, the raw loop had no failed
delivery. ``--repeat R`` runs every side R times, rotating which goes first, and counts each side's best run.

Clusters: ``--source-bootstrap`` and ``--destination-bootstrap``, else two brokers started from the local jars
(``find_cluster``); brokers the bench starts get G1 (``HEADWATER_KAFKA_JVM_OPTS``, unless set), not the harness's
quick-start flags. The last line is ``vs_raw=<x> vs_mm2=<y>``: Headwater's records/s divided by each other side's.

Run it with::

    python bench/mirror.py [--records N] [--record-bytes B] [--partitions P] [--repeat R]
        [--source-bootstrap HOST:PORT] [--destination-bootstrap HOST:PORT] [--sides headwater,raw,mm2]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import sys
import threading
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the sibling bench module, run as a script or loaded

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, Producer, TopicPartition
from java_connect import BYTES_CONVERTER, connect_standalone
from kafka_pipeline import (
    BATCH,
    FULL_QUEUE_WAIT_S,
    HEADER,
    TIMEOUT_S,
    WATCH_INTERVAL_S,
    BenchError,
    Child,
    Inspector,
    Run,
    produce_sequence,
    report,
    scratch,
    write_properties,
)

from headwater.harness.cluster import SECOND_BOOTSTRAP_ENV, find_cluster
from headwater.harness.maven import KAFKA_VERSION
from headwater.runtime.transport.kafka import PRODUCER_DEFAULTS

SIDES = ("headwater", "raw", "mm2")
BROKER_JVM_OPTS = "-Xms512m -Xmx1g -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -Djava.awt.headless=true"
MIRROR_CONSUMER = {"enable.auto.commit": False, "auto.offset.reset": "earliest"}
"""The consumer settings ``kafka-mirror`` gives its source consumer (besides servers and group)."""


# ---- the raw side ------------------------------------------------------------------------------------------------


def raw_mirror(args: argparse.Namespace) -> int:
    """Copy ``--records`` records from the source topic to the destination topic, then flush; print the counts."""
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    consumer = Consumer({**MIRROR_CONSUMER, "bootstrap.servers": args.source, "group.id": f"raw-{args.topic}"})
    consumer.assign([TopicPartition(args.topic, p, OFFSET_BEGINNING) for p in range(args.partitions)])
    producer = Producer({**PRODUCER_DEFAULTS, "bootstrap.servers": args.destination})
    failed = 0

    def on_delivery(error: KafkaError | None, message: Any) -> None:
        nonlocal failed
        if error is not None:
            failed += 1

    produce, destination, mirrored = producer.produce, args.destination_topic, 0
    while mirrored < args.records and not stop.is_set():
        for message in consumer.consume(BATCH, 1.0):
            if message.error() is not None:
                continue
            _, timestamp = message.timestamp()
            key, value, headers = message.key(), message.value(), message.headers()
            while True:
                try:
                    produce(destination, value, key, timestamp=timestamp, headers=headers, on_delivery=on_delivery)
                    break
                except BufferError:
                    producer.poll(FULL_QUEUE_WAIT_S)
            mirrored += 1
        producer.poll(0)
    undelivered = producer.flush(TIMEOUT_S)
    consumer.close()
    print(json.dumps({"mirrored": mirrored, "failed": failed, "undelivered": undelivered}), flush=True)
    return 0


# ---- the runs ----------------------------------------------------------------------------------------------------


class MirrorBench:
    """Fills one source topic, then runs the sides into destination topics of their own, in one scratch directory."""

    def __init__(self, args: argparse.Namespace, source: str, destination: str, directory: Path) -> None:
        self.args = args
        self.source_servers = source
        self.destination_servers = destination
        self.directory = directory
        self.source = Inspector(source)
        self.destination = Inspector(destination)
        self.run_id = uuid.uuid4().hex[:8]
        self.topic = f"bench-{self.run_id}-source"
        self.created: list[tuple[Inspector, str]] = []

    def _create(self, inspector: Inspector, topic: str, log_append_time: bool) -> str:
        config = {"message.timestamp.type": "LogAppendTime"} if log_append_time else {}
        inspector.create_topic(topic, self.args.partitions, config)
        self.created.append((inspector, topic))
        return topic

    def fill(self) -> None:
        """The source topic with every record, and a tenth of them once through the destination broker, so that
        neither broker's warm-up falls on whichever side runs first."""
        self._create(self.source, self.topic, log_append_time=False)
        warm_up = self._create(self.destination, f"bench-{self.run_id}-warm-up", log_append_time=False)
        for servers, topic, count in (
            (self.source_servers, self.topic, self.args.records),
            (self.destination_servers, warm_up, max(self.args.records // 10, 1)),
        ):
            if produce_sequence(servers, topic, count, self.args.record_bytes):
                raise BenchError(f"could not fill {topic}")
        if (count := self.source.count(self.topic)) != self.args.records:
            raise BenchError(f"{self.topic} holds {count} records, not {self.args.records}")

    def _worker_props(self, name: str) -> dict[str, Any]:
        return {
            "bootstrap.servers": self.destination_servers,
            "offset.storage.file.filename": self.directory / f"{name}.offsets",
            "offset.flush.interval.ms": self.args.flush_interval_ms,
        }

    def headwater(self, name: str) -> tuple[Child, str]:
        prefix = f"hw-{name}."
        worker = write_properties(
            self.directory / f"{name}-worker.properties",
            {
                **self._worker_props(name),
                "key.converter": "bytes",
                "value.converter": "bytes",
                "header.converter": "bytes",
            },
        )
        connector = {
            "name": name,
            "connector.class": "kafka-mirror",
            "tasks.max": 1,
            "source.bootstrap.servers": self.source_servers,
            "source.topic.whitelist": re.escape(self.topic),
            "source.group.id": name,
            "destination.topics.prefix": prefix,
        }
        connector_file = write_properties(self.directory / f"{name}.properties", connector)
        command = [
            sys.executable,
            "-m",
            "headwater.runtime.commands.cli",
            "standalone",
            str(worker),
            str(connector_file),
        ]
        return Child(name, command, self.directory), prefix + self.topic

    def raw(self, name: str) -> tuple[Child, str]:
        destination = f"raw-{name}.{self.topic}"
        command = [sys.executable, __file__, "raw-mirror", "--source", self.source_servers, "--topic", self.topic]
        command += ["--destination", self.destination_servers, "--destination-topic", destination]
        command += ["--records", str(self.args.records), "--partitions", str(self.args.partitions)]
        return Child(name, command, self.directory), destination

    def mm2(self, name: str) -> tuple[Child, str]:
        alias = f"mm2-{name}"
        worker = {
            **self._worker_props(name),
            "key.converter": BYTES_CONVERTER,
            "value.converter": BYTES_CONVERTER,
            "header.converter": BYTES_CONVERTER,
        }
        connector = {
            "name": name,
            "connector.class": "org.apache.kafka.connect.mirror.MirrorSourceConnector",
            "tasks.max": 1,
            "source.cluster.alias": alias,
            "target.cluster.alias": "destination",
            "source.cluster.bootstrap.servers": self.source_servers,
            "target.cluster.bootstrap.servers": self.destination_servers,
            "topics": re.escape(self.topic),
            "replication.factor": 1,
            "offset-syncs.topic.replication.factor": 1,
            "sync.topic.acls.enabled": "false",
            "sync.topic.configs.enabled": "false",
        }
        child = connect_standalone(name, self.directory, worker, connector, self.args.kafka_version)
        return child, f"{alias}.{self.topic}"

    def run_side(self, side: str, repeat: int) -> Run:
        name = f"{side}-{self.run_id}-{repeat}"
        child, destination = getattr(self, side)(name)
        self._create(self.destination, destination, log_append_time=True)
        n = self.args.records
        deadline = time.monotonic() + self.args.timeout
        try:
            while self.destination.count(destination) < n:
                code = child.poll()
                if code is not None and (code != 0 or side != "raw"):
                    raise BenchError(f"{name} exited with {code} before mirroring {n} records\n{child.log_tail()}")
                if time.monotonic() > deadline:
                    raise BenchError(f"{name}: not {n} records in {destination} in {self.args.timeout} s")
                time.sleep(WATCH_INTERVAL_S)
            if side == "raw":
                child.wait(self.args.timeout)
                result = child.result()
                if result["failed"] or result["undelivered"]:
                    raise BenchError(f"raw mirror: {result}")
        finally:
            code = child.stop()
        # A JVM stopped by SIGTERM exits 143 after its shutdown hooks; one whose shutdown outlasts stop()'s wait (Java
        # Connect under load) is killed, after every record was counted: neither is a failed run.
        stopped = (0, 128 + signal.SIGTERM) + ((-signal.SIGKILL,) if side == "mm2" else ())
        if code not in stopped:
            raise BenchError(f"{name} exited with {code}\n{child.log_tail()}")
        if (count := self.destination.count(destination)) != n:
            raise BenchError(f"{destination} holds {count} records, not {n}")
        first, last = self.destination.append_span_ms(destination)
        return Run("mirror", side, n, max(last - first, 1) / 1000, child.cpu_seconds)

    def run(self, sides: Sequence[str]) -> list[Run]:
        self.fill()
        runs: list[Run] = []
        for repeat in range(self.args.repeat):
            shift = repeat % len(sides)
            for side in [*sides[shift:], *sides[:shift]]:
                runs.append(report(repeat, self.run_side(side, repeat)))
        return runs

    def close(self) -> None:
        if not self.args.keep_topics:
            for inspector in (self.source, self.destination):
                inspector.delete_topics([topic for owner, topic in self.created if owner is inspector])
        self.source.close()
        self.destination.close()


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "raw-mirror":
        child = argparse.ArgumentParser(prog="mirror.py raw-mirror")
        for option in ("--source", "--topic", "--destination", "--destination-topic"):
            child.add_argument(option, required=True)
        child.add_argument("--records", type=int, required=True)
        child.add_argument("--partitions", type=int, required=True)
        return raw_mirror(child.parse_args(argv[1:]))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--source-bootstrap", help="The source cluster; default: one found or started.")
    parser.add_argument("--destination-bootstrap", help="The destination cluster; default: one found or started.")
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--record-bytes", type=int, default=100)
    parser.add_argument("--partitions", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=1, help="Runs per side; the best counts.")
    parser.add_argument("--flush-interval-ms", type=int, default=1000, help="Both workers' offset commit interval.")
    parser.add_argument("--sides", default=",".join(SIDES), help="Which sides run, comma-separated; headwater first.")
    parser.add_argument("--kafka-version", default=KAFKA_VERSION, help="Version of the connect-mirror jars.")
    parser.add_argument("--timeout", type=float, default=300, help="Seconds one run may take.")
    parser.add_argument("--keep", metavar="DIR", help="Keep properties, logs and offsets in DIR.")
    parser.add_argument("--keep-topics", action="store_true")
    args = parser.parse_args(argv)
    sides = [side.strip() for side in args.sides.split(",") if side.strip()]
    if not sides or sides[0] != "headwater" or set(sides) - set(SIDES):
        parser.error(f"--sides: headwater first, then any of {', '.join(SIDES[1:])}")
    os.environ.setdefault("HEADWATER_KAFKA_JVM_OPTS", BROKER_JVM_OPTS)
    source = find_cluster(args.source_bootstrap, SECOND_BOOTSTRAP_ENV, "--source-bootstrap")
    try:
        destination = find_cluster(args.destination_bootstrap, option="--destination-bootstrap")
        try:
            print(
                f"mirror: {args.records} records x {args.record_bytes} bytes, {args.partitions} partitions, "
                f"{source.bootstrap_servers} ({source.source}) -> {destination.bootstrap_servers} "
                f"({destination.source}), commits every {args.flush_interval_ms} ms",
                flush=True,
            )
            print(HEADER)
            with scratch(args.keep) as directory:
                bench = MirrorBench(args, source.bootstrap_servers, destination.bootstrap_servers, directory)
                try:
                    runs = bench.run(sides)
                finally:
                    bench.close()
        finally:
            destination.stop()
    finally:
        source.stop()

    def best(side: str) -> float:
        return max(run.rate for run in runs if run.kind == side)

    ratios = [f"vs_{side}={best('headwater') / best(side):.2f}" for side in ("raw", "mm2") if side in sides]
    print(" ".join(ratios))
    return 0


if __name__ == "__main__":
    sys.exit(main())
