"""Throughput of exactly-once source delivery (KIP-618) against at-least-once, on a real broker, in one run.

Each run starts a ``Worker`` of a distributed cluster in this process (threaded, as ``headwater distributed`` runs
its tasks), over ``KafkaTransport`` and a ``KafkaOffsetStore`` of its own group's offsets topic, the way
:class:`~headwater.runtime.commands.distributed.DistributedWorker` builds them, with ``exactly.once.source.support``
``disabled`` (at-least-once: ``WorkerSourceTask``, an idempotent producer, offsets committed every
``offset.flush.interval.ms``) or ``enabled`` (exactly-once: ``ExactlyOnceWorkerSourceTask``, a transactional
producer; ``transaction.boundary=poll`` unless ``--boundary`` says otherwise, so every batch ``poll`` returns is
one transaction, its source offsets written into it). No herder: the worker starts the connector and its one
task directly. The source is ``synthetic.SequenceSourceConnector`` (``examples/``: ``batch.size`` records of
``--record-bytes`` bytes per poll, no key, ``bytes`` converters) writing ``--records`` records to a fresh topic of
``--partitions`` partitions.

The task starts paused: producer ids, ``init_transactions`` (which fences the task's earlier generations) and the
read of the offsets topic are done before the clock starts. A run's time runs from ``resume`` (the first ``poll``)
to the moment its last record is safe:

* at-least-once: the broker acknowledged the last record (its offset is committed at the next flush interval,
  Kafka Connect's 60 s by default, which the run does not wait for);
* exactly-once: the transaction holding the last record committed (``commit_transaction`` returned, so the task
  recorded its offsets as committed).

The main thread watches for that every millisecond, the same way for both modes. ``commit s`` is the time the task
spent committing (exactly-once: writing the offsets into the transaction, ``flush``, ``commit_transaction``);
``commits/s`` counts offset commits (at-least-once) or committed transactions (exactly-once) per second.

Checked after each run (unmeasured): the task did not fail, and a ``read_committed`` reader of the topic, once every
transaction on it is decided (last stable offset equal to the high watermark), finds every sequence number
``0..records-1``: exactly once for exactly-once, at least once for at-least-once.

For each ``--batch-sizes`` value, ``--repeat`` pairs run (at-least-once then exactly-once, the order alternating
from pair to pair), after unmeasured pairs that warm the broker up (and make its transaction state topic) until
two exactly-once runs in a row are within 10% of each other.
The machine's speed moves from second to second, so a batch size's ratio is the median, over its pairs, of the
exactly-once rate divided by the at-least-once rate of the same pair. The last line is
``ratio_batch<B>=<x> ...``: records/s exactly-once over records/s at-least-once for each batch size (the goal of
issue 39 is 0.8 at 1,000 and 0.95 at 5,000 with ``transaction.boundary=poll``).

``--boundary interval`` runs the exactly-once side with ``transaction.boundary=interval`` instead (one transaction
per ``--interval-ms``, however many polls that holds); the at-least-once side is the same.

Run it with::

    python bench/exactly_once.py [--bootstrap-servers HOST:PORT] [--records N] [--batch-sizes 1000,5000]
        [--repeat R] [--record-bytes B] [--partitions P] [--boundary poll|interval] [--interval-ms MS]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import uuid
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from confluent_kafka import IsolationLevel, TopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec

sys.path.append(str(Path(__file__).resolve().parents[1] / "examples"))  # synthetic.py: the source

from headwater.harness.cluster import find_cluster
from headwater.runtime.storage.kafka_offsets import KafkaOffsetStore
from headwater.runtime.tasks.base import State, TaskId
from headwater.runtime.tasks.source import WorkerSourceTask
from headwater.runtime.transport.base import NewTopic
from headwater.runtime.transport.kafka import KafkaTransport
from headwater.runtime.worker import Worker

MODES = ("at-least-once", "exactly-once")
WARM_UP_PAIRS = 8
SETTLED = 0.1
"""Two exactly-once warm-up runs whose rates differ by no more than this share are a warm broker."""
SUPPORT = {"at-least-once": "disabled", "exactly-once": "enabled"}
OFFSETS_PARTITIONS = 25
"""Partitions of the offsets topic: Kafka Connect's ``offset.storage.partitions`` default."""
WATCH_S = 0.001
TIMEOUT_S = 120.0


class BenchError(RuntimeError):
    """A run did not finish, failed, or its records are not all there."""


@dataclass(frozen=True)
class Run:
    """One measured run."""

    mode: str
    batch: int
    records: int
    seconds: float
    commits: int
    """Offset commits (at-least-once) or committed transactions (exactly-once) during the run."""
    commit_seconds: float
    """Time the task spent in those commits."""

    @property
    def rate(self) -> float:
        return self.records / self.seconds

    @property
    def commit_rate(self) -> float:
        return self.commits / self.seconds


def wait_for(done: Callable[[], bool], what: str, timeout_s: float, task: WorkerSourceTask | None = None) -> float:
    """Watch ``done`` every :data:`WATCH_S`; return the ``perf_counter`` when it held. A failed ``task`` or the
    deadline raises :class:`BenchError`."""
    deadline = time.monotonic() + timeout_s
    while not done():
        if task is not None and task.state is State.FAILED:
            raise BenchError(f"{task!r} failed before {what}: {task.failure}") from task.failure
        if time.monotonic() > deadline:
            raise BenchError(f"no {what} within {timeout_s:.0f} s" + (f": {task!r}" if task is not None else ""))
        time.sleep(WATCH_S)
    return time.perf_counter()


def committed_seq(task: WorkerSourceTask) -> int:
    """The highest sequence number whose offset the task committed (-1 before its first commit)."""
    offsets = [offset for _, offset, _ in list(task.partition_offsets.values()) if offset is not None]
    return max((int(offset["seq"]) for offset in offsets), default=-1)


class Bench:
    """Runs the pairs against one cluster; one offsets topic (and ``group.id``) for the whole bench."""

    def __init__(self, args: argparse.Namespace, bootstrap_servers: str) -> None:
        self.args = args
        self.bootstrap_servers = bootstrap_servers
        self.run_id = uuid.uuid4().hex[:8]
        self.group_id = f"bench-eos-{self.run_id}"
        self.transport = KafkaTransport(bootstrap_servers)
        self.admin = AdminClient({"bootstrap.servers": bootstrap_servers})
        self.offset_store = KafkaOffsetStore(self.transport, f"{self.group_id}-offsets", OFFSETS_PARTITIONS)
        self.offset_store.start()
        self.topics: list[str] = [f"{self.group_id}-offsets"]

    def worker_config(self, mode: str) -> dict[str, object]:
        return {
            "bootstrap.servers": self.bootstrap_servers,
            "key.converter": "bytes",
            "value.converter": "bytes",
            "header.converter": "bytes",
            "offset.flush.interval.ms": self.args.flush_interval_ms,
            "connector.class.allowed.modules": "synthetic",  # the synthetic connectors' import path
            "exactly.once.source.support": SUPPORT[mode],
        }

    def run(self, mode: str, batch: int, records: int, label: str) -> Run:
        """One run of ``records`` records through one task in ``mode``; checked, then its worker stopped."""
        name = f"{self.group_id}-{label}"
        topic = f"{name}-out"
        self.transport.admin().create_topics([NewTopic(topic, self.args.partitions, 1, {})])
        self.topics.append(topic)
        wait_for(lambda: self.leaders_known(topic), f"leaders of every partition of {topic}", TIMEOUT_S)
        connector = {
            "connector.class": "synthetic.SequenceSourceConnector",
            "tasks.max": "1",
            "topic": topic,
            "max.records": str(records),
            "batch.size": str(batch),
            "record.bytes": str(self.args.record_bytes),
        }
        if mode == "exactly-once":
            connector["transaction.boundary"] = self.args.boundary
            if self.args.boundary == "interval":
                connector["transaction.boundary.interval.ms"] = str(self.args.interval_ms)
        worker = Worker(
            self.worker_config(mode), self.transport, self.offset_store, worker_id=name, group_id=self.group_id
        )
        try:
            started = worker.start_connector(name, connector)
            if not started.started.wait(TIMEOUT_S) or started.state is not State.RUNNING:
                raise BenchError(f"connector {name} did not start: {started!r}")
            [config] = worker.connector_task_configs(name)
            task = worker.start_task(TaskId(name, 0), config, paused=True)
            if not isinstance(task, WorkerSourceTask):
                raise BenchError(f"task of {name} could not be created (see the log)")
            wait_for(lambda: task.state is State.PAUSED, "start (paused)", TIMEOUT_S, task)
            if mode == "exactly-once":
                done, what = (lambda: committed_seq(task) >= records - 1), "the commit of the last record"
            else:
                done, what = (lambda: task.records_acked >= records), "the acknowledgement of every record"
            commits, commit_seconds = task.commits, task.commit_times.sum_s
            began = time.perf_counter()
            task.resume()
            ended = wait_for(done, what, TIMEOUT_S, task)
            spent = task.commit_times.sum_s - commit_seconds
            run = Run(mode, batch, records, ended - began, task.commits - commits, spent)
        finally:
            worker.stop()
        if task.state is State.FAILED or task.commit_failures:
            raise BenchError(f"{task!r} failed or a commit failed: {task.failure}")
        check(read_committed(self.transport, self.admin, topic, self.args.partitions), records, mode)
        return run

    def leaders_known(self, topic: str) -> bool:
        """Whether the broker's metadata gives every partition of the new ``topic`` a leader, so that the task's
        first records do not wait for the topic to appear (which would fall inside the measured time)."""
        found = self.admin.list_topics(timeout=TIMEOUT_S).topics.get(topic)
        partitions = {} if found is None or found.error is not None else found.partitions
        return len(partitions) == self.args.partitions and all(p.leader >= 0 for p in partitions.values())

    def close(self) -> None:
        self.offset_store.stop()
        if not self.args.keep_topics:
            self.transport.admin().delete_topics(self.topics)


def read_committed(transport: KafkaTransport, admin: AdminClient, topic: str, partitions: int) -> Counter[int]:
    """How many times each sequence number is in ``topic`` for a ``read_committed`` reader, once no transaction on
    it is open any more (its markers are written after ``commit_transaction`` returns)."""
    ends = [TopicPartition(topic, p) for p in range(partitions)]

    def settled() -> bool:
        offsets = {}
        for level in (IsolationLevel.READ_UNCOMMITTED, IsolationLevel.READ_COMMITTED):
            futures = admin.list_offsets({tp: OffsetSpec.latest() for tp in ends}, isolation_level=level)
            offsets[level] = {tp.partition: f.result(timeout=TIMEOUT_S).offset for tp, f in futures.items()}
        return offsets[IsolationLevel.READ_UNCOMMITTED] == offsets[IsolationLevel.READ_COMMITTED]

    wait_for(settled, f"every transaction on {topic} decided", TIMEOUT_S)
    found: Counter[int] = Counter()

    def apply(key: bytes | None, value: bytes | None) -> None:
        found[int(value or b"-1")] += 1

    log = transport.topic_log(topic, apply, partitions=partitions)
    log.start()  # reads the topic to its end, committed records only
    log.stop()
    return found


def check(found: Counter[int], records: int, mode: str) -> None:
    """Every sequence number 0..records-1 is there (exactly once for exactly-once), and nothing else."""
    missing = records - sum(1 for n in range(records) if found[n])
    strange = sorted(n for n in found if not 0 <= n < records)[:5]
    doubled = sum(count - 1 for count in found.values() if count > 1)
    if missing or strange or (mode == "exactly-once" and doubled):
        raise BenchError(
            f"{mode}: {missing} sequence numbers missing, {doubled} written twice or more, unexpected: {strange}"
        )


HEADER = (
    f"{'repeat':<7}{'batch':>6}  {'mode':<14}{'records':>9}{'seconds':>9}{'records/s':>11}{'commits':>9}"
    f"{'commits/s':>11}{'commit s':>10}"
)
"""The column heads of the lines :func:`report` prints."""


def report(repeat: int | str, run: Run) -> Run:
    print(
        f"{repeat:<7}{run.batch:>6}  {run.mode:<14}{run.records:>9}{run.seconds:>9.3f}{run.rate:>11,.0f}"
        f"{run.commits:>9}{run.commit_rate:>11,.1f}{run.commit_seconds:>10.3f}",
        flush=True,
    )
    return run


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--bootstrap-servers", help="A running cluster; default: find_cluster() (and stop it after).")
    parser.add_argument("--records", type=int, default=200_000, help="Records per run.")
    parser.add_argument("--batch-sizes", default="1000,5000", help="Records per poll, comma-separated.")
    parser.add_argument("--repeat", type=int, default=7, help="Pairs of runs per batch size; the median counts.")
    parser.add_argument("--record-bytes", type=int, default=100)
    parser.add_argument("--partitions", type=int, default=3)
    parser.add_argument("--flush-interval-ms", type=int, default=60_000, help="offset.flush.interval.ms.")
    parser.add_argument("--keep-topics", action="store_true")
    parser.add_argument(
        "--boundary", choices=["poll", "interval"], default="poll", help="transaction.boundary of exactly-once."
    )
    parser.add_argument(
        "--interval-ms", type=int, default=100, help="transaction.boundary.interval.ms with --boundary interval."
    )
    args = parser.parse_args(argv)
    try:
        batches = [int(size) for size in args.batch_sizes.split(",")]
    except ValueError:
        parser.error(f"--batch-sizes {args.batch_sizes}: expected comma-separated numbers of records")
    if args.records < 1 or args.repeat < 1 or any(size < 1 for size in batches):
        parser.error("--records, --repeat and every batch size must be at least 1")
    boundary = args.boundary if args.boundary == "poll" else f"interval ({args.interval_ms} ms)"
    cluster = find_cluster(args.bootstrap_servers)
    ratios: dict[int, float] = {}
    try:
        print(
            f"exactly_once: {args.records} records x {args.record_bytes} bytes per run, {args.partitions} "
            f"partitions, transaction.boundary={boundary} against at-least-once (offset.flush.interval.ms="
            f"{args.flush_interval_ms}), {args.repeat} pairs per batch size, {cluster.bootstrap_servers} "
            f"({cluster.source})",
            flush=True,
        )
        print(HEADER)
        bench = Bench(args, cluster.bootstrap_servers)
        try:
            warm_up(bench, batches[0], args.records)
            for batch in batches:
                pairs: list[tuple[Run, Run]] = []
                for repeat in range(args.repeat):
                    runs = {}
                    for mode in MODES if repeat % 2 == 0 else MODES[::-1]:
                        runs[mode] = report(repeat, bench.run(mode, batch, args.records, f"{batch}-{repeat}-{mode}"))
                    pairs.append((runs["at-least-once"], runs["exactly-once"]))
                ratios[batch] = statistics.median(eos.rate / alo.rate for alo, eos in pairs)
                print(
                    f"batch {batch}: at-least-once median {statistics.median(a.rate for a, _ in pairs):,.0f} "
                    f"records/s, exactly-once median {statistics.median(e.rate for _, e in pairs):,.0f} records/s "
                    f"({statistics.median(e.commit_rate for _, e in pairs):,.1f} transactions/s), median pair "
                    f"ratio {ratios[batch]:.3f}",
                    flush=True,
                )
        finally:
            bench.close()
    finally:
        cluster.stop()
    print(" ".join(f"ratio_batch{batch}={ratio:.3f}" for batch, ratio in ratios.items()))
    return 0


def warm_up(bench: Bench, batch: int, records: int) -> None:
    """Unmeasured pairs until the broker is warm: a broker JVM just started takes about a thousand transactions
    before its transaction path is compiled (exactly-once runs of 200 transactions went 5.2, 3.6, 3.0, 2.7, 2.3 and
    2.0 s one after the other on a fresh broker), which would make the first pairs measure the JIT. Stops once two
    exactly-once warm-up runs in a row are within :data:`SETTLED` of each other, after at most
    :data:`WARM_UP_PAIRS` pairs."""
    last = None
    for pair in range(WARM_UP_PAIRS):
        for mode in MODES:
            run = report("warm-up", bench.run(mode, batch, records, f"warm-{pair}-{mode}"))
        if last is not None and abs(run.rate - last) <= SETTLED * last:
            return
        last = run.rate


if __name__ == "__main__":
    sys.exit(main())
