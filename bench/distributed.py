"""Throughput of one 6-task source connector on a cluster of 1, 2 and 3 ``headwater distributed`` workers.

For each worker count a fresh cluster (its own ``group.id`` and internal topics) starts that many worker processes;
``synthetic.SequenceSourceConnector`` (``examples/``) with ``tasks.max=6`` (500 records of ``--record-bytes``
bytes per poll, no key, ``bytes`` converters) is created through the first worker's REST API and writes a fresh
topic of ``--partitions`` partitions. Once all six tasks run, spread as evenly as the worker count allows (6, 3+3,
2+2+2), and ``--warm-up`` seconds have passed, the topic's end offsets are read at the start and the end of a
``--seconds`` window: the rate is the records appended in between per second of the window. Start-up, group joins
and rebalances are left out that way. The workers then leave gracefully and the next cluster starts.

Each run prints one line; the second-to-last line gives the rates relative to one worker (the scaling), the last
one ``workers1=<r/s> workers2=<r/s> workers3=<r/s>``. A worker is one Python process, so its tasks share one
interpreter lock: with enough cores the rate grows with the workers; on a machine with fewer cores than workers
(the broker needs one too) it cannot.

Run it with::

    python bench/distributed.py [--bootstrap-servers HOST:PORT] [--seconds S] [--workers 1,2,3]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import uuid
from collections.abc import Sequence
from pathlib import Path

from confluent_kafka import Consumer, TopicPartition

sys.path.append(str(Path(__file__).resolve().parents[1] / "tests"))  # tests/support: worker processes

from headwater.harness.cluster import find_cluster
from headwater.harness.kafka_worker import KafkaInspector
from support.distributed_process import DistributedCluster
from support.rest_worker import wait_until

TASKS = 6
HEADER = f"{'workers':>7} {'tasks per worker':<18} {'records':>10} {'seconds':>7} {'records/s':>10}"


def end_offsets(consumer: Consumer, topic: str, partitions: int) -> int:
    """The sum of the topic's high watermarks: every record appended so far."""
    return sum(consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=30)[1] for p in range(partitions))


def run(args: argparse.Namespace, bootstrap_servers: str, directory: Path, workers: int) -> float:
    """One cluster of ``workers`` workers; returns the records appended per second of the window."""
    name = f"bench-distributed-{workers}-{uuid.uuid4().hex[:8]}"
    topic = f"{name}-out"
    KafkaInspector(bootstrap_servers).create_topic(topic, args.partitions)
    props = {"offset.flush.interval.ms": args.flush_interval_ms, "session.timeout.ms": 10_000}
    consumer = Consumer({"bootstrap.servers": bootstrap_servers, "group.id": f"{name}-inspector"})
    with DistributedCluster(directory / name, bootstrap_servers, name, props) as cluster:
        started = [cluster.add_worker() for _ in range(workers)]
        config = {
            "connector.class": "synthetic.SequenceSourceConnector",
            "topic": topic,
            "tasks.max": str(TASKS),
            "batch.size": "500",
            "record.bytes": str(args.record_bytes),
            "key.converter": "bytes",
            "value.converter": "bytes",
        }
        response = cluster.http().post("/connectors", json={"name": "seq", "config": config})
        assert response.status_code == 201, response.text
        even = sorted([TASKS // workers] * workers)

        def spread() -> list[int] | None:
            owners = list(cluster.running_tasks("seq").values())
            found = sorted(owners.count(worker.worker_id) for worker in started)
            return found if found == even and len(owners) == TASKS else None

        tasks_per_worker = wait_until(spread, f"{TASKS} tasks spread over {workers} workers", args.timeout)
        time.sleep(args.warm_up)  # let the producers reach their pace; the window measures the steady state
        first, start = end_offsets(consumer, topic, args.partitions), time.monotonic()
        time.sleep(args.seconds)
        last, end = end_offsets(consumer, topic, args.partitions), time.monotonic()
        assert spread() == tasks_per_worker, "the tasks moved during the window"
    consumer.close()
    rate = (last - first) / (end - start)
    shown = "+".join(map(str, tasks_per_worker))
    print(f"{workers:>7} {shown:<18} {last - first:>10} {end - start:>7.2f} {rate:>10.0f}", flush=True)
    return rate


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--bootstrap-servers", help="A running cluster; default: find_cluster() (and stop it after).")
    parser.add_argument("--workers", default="1,2,3", help="Worker counts to run, comma-separated.")
    parser.add_argument("--seconds", type=float, default=10.0, help="Length of the measured window.")
    parser.add_argument("--warm-up", type=float, default=3.0, help="Seconds between an even spread and the window.")
    parser.add_argument("--record-bytes", type=int, default=100)
    parser.add_argument("--partitions", type=int, default=6)
    parser.add_argument("--flush-interval-ms", type=int, default=1000, help="Source offset commit interval.")
    parser.add_argument("--timeout", type=float, default=120, help="Seconds to wait for an even spread.")
    args = parser.parse_args(argv)
    counts = [int(count) for count in args.workers.split(",")]
    if any(TASKS % count for count in counts):
        parser.error(f"--workers: each count must divide the {TASKS} tasks evenly")
    cluster = find_cluster(args.bootstrap_servers)
    rates: dict[int, float] = {}
    try:
        print(
            f"distributed: sequence-source, {TASKS} tasks, {args.record_bytes}-byte records, {args.partitions} "
            f"partitions, {args.seconds:g} s windows, {cluster.bootstrap_servers} ({cluster.source})",
            flush=True,
        )
        print(HEADER)
        with tempfile.TemporaryDirectory(prefix="headwater-bench-") as directory:
            for count in counts:
                rates[count] = run(args, cluster.bootstrap_servers, Path(directory), count)
    finally:
        cluster.stop()
    base = rates[counts[0]]
    print("scaling: " + " ".join(f"workers{c}/workers{counts[0]}={rates[c] / base:.2f}" for c in counts))
    print(" ".join(f"workers{count}={rates[count]:.0f}" for count in counts))
    return 0


if __name__ == "__main__":
    sys.exit(main())
