"""Throughput of the source and sink task loops against bare loops over the same in-memory transport.

Source: a ``WorkerSourceTask`` runs a ``SourceTask`` whose ``poll`` hands out prebuilt batches of 500
``SourceRecord`` objects (100-byte values, no key, pass-through ``bytes`` key, value and header converters,
heartbeats off). The bare loop
produces the same records through the same kind of producer, serves delivery callbacks once per batch and writes
the last acknowledged source offset to a ``MemoryOffsetStore``.

Sink: a ``WorkerSinkTask`` feeds a ``SinkTask`` that only counts records from a topic filled beforehand. The bare
loop polls a ``MemoryConsumer`` 500 records at a time, counts them and commits the next offsets asynchronously.

The source sides each start on a fresh broker; the sink sides drain one broker filled once, each under a
consumer group of its own. Both move a ``VirtualClock`` 10 ms per pass and commit every 1000 virtual ms
(``offset.flush.interval.ms``), plus a final commit. The prebuilt input is frozen out of the garbage collector. Each
measurement runs ``--repeat`` times, framework and bare alternating, and the best run of each counts. The last line
printed is ``source_ratio=<x> sink_ratio=<y>``: framework records/s divided by bare records/s.

Run it with::

    python bench/core_loops.py [--records N] [--sink-records M] [--repeat R] [--partitions P]
"""

from __future__ import annotations

import argparse
import gc
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass

from headwater.runtime.clock import VirtualClock
from headwater.runtime.config.connector import SINK_CONNECTOR_CONFIG, SOURCE_CONNECTOR_CONFIG, TaskSettings
from headwater.runtime.config.worker import WORKER_CONFIG
from headwater.runtime.storage.offsets import MemoryOffsetStore
from headwater.runtime.tasks.base import State, TaskId, WorkerTask
from headwater.runtime.tasks.sink import WorkerSinkTask
from headwater.runtime.tasks.source import WorkerSourceTask
from headwater.runtime.transport.base import RecordMetadata
from headwater.runtime.transport.memory import MemoryBroker, MemoryTransport
from headwater.sdk.records import SinkRecord, SourcePartition, SourceRecord, TopicPartition
from headwater.sdk.task import SinkTask, SourceTask

TOPIC = "bench"
VALUE_BYTES = 100
BATCH = 500
TICK_MS = 10
FLUSH_INTERVAL_MS = 1000
FLUSH_TIMEOUT_MS = 5000
SOURCE_CONNECTOR = "bench-source"
SINK_CONNECTOR = "bench-sink"
BARE_GROUP = "bare"

WORKER_PROPS = {
    "key.converter": "bytes",
    "value.converter": "bytes",
    "header.converter": "bytes",
    "heartbeat.interval.ms": 0,
    "offset.flush.interval.ms": FLUSH_INTERVAL_MS,
    "offset.flush.timeout.ms": FLUSH_TIMEOUT_MS,
    "consumer.max.poll.records": BATCH,
}


@dataclass(frozen=True)
class Run:
    """One timed run of one side."""

    records: int
    seconds: float
    commits: int
    start_seconds: float | None = None
    """Framework runs: the part of ``seconds`` spent in ``WorkerTask.start`` (converters, hooks, the task's start)."""

    @property
    def rate(self) -> float:
        return self.records / self.seconds


def value(i: int) -> bytes:
    """The 100-byte value of record ``i``."""
    return b"%0*d" % (VALUE_BYTES, i)


def settings(connector: Mapping[str, object], sink: bool) -> TaskSettings:
    """Task settings resolved like ``Worker.start_task`` does."""
    definition = SINK_CONNECTOR_CONFIG if sink else SOURCE_CONNECTOR_CONFIG
    return TaskSettings.resolve(WORKER_CONFIG.parse(WORKER_PROPS), definition.parse(connector), sink=sink)


def timed(body: Callable[[], None]) -> float:
    """Seconds ``body`` takes, after a full collection so that no run pays for the garbage of the one before."""
    gc.collect()
    start = time.perf_counter()
    body()
    return time.perf_counter() - start


def drive(task: WorkerTask, clock: VirtualClock, done: Callable[[], bool]) -> tuple[float, float]:
    """Start ``task``, step it one tick at a time until ``done()``, then stop it (final commit included). Return the
    seconds all of it took and the seconds ``start`` took, timed like :func:`timed`."""
    gc.collect()
    begin = time.perf_counter()
    with task.logging_context():  # as the task's thread runs (WorkerTask.execute): every pass in its log context
        task.start()
        started = time.perf_counter()
        while not done():
            clock.advance(TICK_MS)
            if not task.step() and task.state is State.FAILED:
                raise RuntimeError(f"{task!r} failed") from task.failure
        task.stop()
        task.shutdown()
    return time.perf_counter() - begin, started - begin


# ---- source ------------------------------------------------------------------------------------------------------


class BatchSourceTask(SourceTask):
    """Hands out prebuilt batches, one per ``poll``, then nothing."""

    def __init__(self, batches: Sequence[Sequence[SourceRecord]]) -> None:
        self._batches = iter(batches)

    def start(self, config: Mapping[str, str]) -> None:
        pass

    def poll(self) -> Sequence[SourceRecord] | None:
        return next(self._batches, None)


def source_batches(n: int) -> tuple[SourcePartition, list[list[SourceRecord]]]:
    """``n`` records in batches of :data:`BATCH`, all of one source partition (the same dict object)."""
    partition: SourcePartition = {"file": "bench"}
    records = [SourceRecord(partition, {"pos": i}, TOPIC, value(i)) for i in range(n)]
    return partition, [records[i : i + BATCH] for i in range(0, n, BATCH)]


def fresh_source_broker(partitions: int) -> MemoryBroker:
    broker = MemoryBroker()
    broker.create_topic(TOPIC, partitions)
    return broker


def check_source(broker: MemoryBroker, store: MemoryOffsetStore, partition: SourcePartition, n: int) -> None:
    stored = len(broker.messages(TOPIC))
    committed = store.get(SOURCE_CONNECTOR, [partition])[0][1]
    if stored != n or committed != {"pos": n - 1}:
        raise RuntimeError(f"source run incomplete: {stored} of {n} records stored, committed offset {committed}")


def source_framework(batches: Sequence[Sequence[SourceRecord]], partition: SourcePartition, partitions: int) -> Run:
    n = sum(map(len, batches))
    clock = VirtualClock()
    broker = fresh_source_broker(partitions)
    store = MemoryOffsetStore()
    task = WorkerSourceTask(
        TaskId(SOURCE_CONNECTOR, 0),
        BatchSourceTask(batches),
        {},
        settings({"name": SOURCE_CONNECTOR, "connector.class": "bench"}, sink=False),
        MemoryTransport(broker).producer({}),
        store,
        clock,
    )
    seconds, start_seconds = drive(task, clock, lambda: task.records_acked >= n)
    check_source(broker, store, partition, n)
    return Run(n, seconds, store.set_calls, start_seconds)


class AckCounter:
    """The bare loop's delivery callback: counts acknowledged records (acks arrive in produce order)."""

    def __init__(self) -> None:
        self.acked = 0
        self.error: Exception | None = None

    def __call__(self, error: Exception | None, metadata: RecordMetadata | None) -> None:
        if error is None:
            self.acked += 1
        elif self.error is None:
            self.error = error


def source_bare(batches: Sequence[Sequence[SourceRecord]], partition: SourcePartition, partitions: int) -> Run:
    records = [record for batch in batches for record in batch]
    n = len(records)
    clock = VirtualClock()
    broker = fresh_source_broker(partitions)
    store = MemoryOffsetStore()
    producer = MemoryTransport(broker).producer({})
    acks = AckCounter()

    def commit(committed: int) -> int:
        if acks.error is not None:
            raise RuntimeError("a bare send failed") from acks.error
        if acks.acked > committed:
            store.set(SOURCE_CONNECTOR, [(partition, records[acks.acked - 1].source_offset)], FLUSH_TIMEOUT_MS)
        return acks.acked

    def loop() -> None:
        produce = producer.produce
        committed = 0
        next_commit = clock.now_ms() + FLUSH_INTERVAL_MS
        for batch in batches:
            clock.advance(TICK_MS)
            producer.poll(0)
            now = clock.now_ms()
            if now >= next_commit:
                committed = commit(committed)
                next_commit = now + FLUSH_INTERVAL_MS
            for record in batch:
                produce(
                    record.topic, record.value, record.key, record.partition, record.timestamp, None, on_delivery=acks
                )
        producer.flush(FLUSH_TIMEOUT_MS)
        commit(committed)
        producer.close()

    seconds = timed(loop)
    check_source(broker, store, partition, n)
    return Run(n, seconds, store.set_calls)


# ---- sink --------------------------------------------------------------------------------------------------------


class CountingSinkTask(SinkTask):
    """Counts what it is given and keeps nothing else."""

    def __init__(self) -> None:
        self.count = 0

    def start(self, config: Mapping[str, str]) -> None:
        pass

    def put(self, records: Sequence[SinkRecord]) -> None:
        self.count += len(records)


class IgnoreRebalances:
    """The bare consumer's rebalance listener."""

    def on_partitions_revoked(self, partitions: Collection[TopicPartition]) -> None:
        pass

    def on_partitions_assigned(self, partitions: Collection[TopicPartition]) -> None:
        pass

    def on_partitions_lost(self, partitions: Collection[TopicPartition]) -> None:
        pass


def filled_broker(n: int, partitions: int) -> MemoryBroker:
    """A fresh broker whose topic holds ``n`` 100-byte records, spread round-robin over ``partitions``."""
    broker = MemoryBroker()
    broker.create_topic(TOPIC, partitions)
    producer = MemoryTransport(broker).producer({})
    for i in range(n):
        producer.produce(TOPIC, value(i))
    producer.flush(0)
    producer.close()
    return broker


def check_sink(broker: MemoryBroker, group: str, counted: int, n: int) -> None:
    committed = sum(broker.committed(group).values())
    if counted != n or committed != n:
        raise RuntimeError(f"sink run incomplete: {counted} of {n} records counted, {committed} committed")


def sink_framework(broker: MemoryBroker, n: int, run: int) -> Run:
    connector = f"{SINK_CONNECTOR}-{run}"
    group = f"connect-{connector}"
    clock = VirtualClock()
    sink = CountingSinkTask()
    task = WorkerSinkTask(
        TaskId(connector, 0),
        sink,
        {},
        settings({"name": connector, "connector.class": "bench", "topics": TOPIC}, sink=True),
        MemoryTransport(broker).consumer(group, {"max.poll.records": BATCH}),
        clock,
    )
    seconds, start_seconds = drive(task, clock, lambda: sink.count >= n)
    check_sink(broker, group, sink.count, n)
    return Run(n, seconds, broker.commit_count(group), start_seconds)


def sink_bare(broker: MemoryBroker, n: int, run: int) -> Run:
    group = f"{BARE_GROUP}-{run}"
    clock = VirtualClock()
    consumer = MemoryTransport(broker).consumer(group, {"max.poll.records": BATCH})
    counted = 0

    def positions() -> dict[TopicPartition, int]:
        return {tp: consumer.position(tp) for tp in consumer.assignment()}

    def loop() -> None:
        nonlocal counted
        consumer.subscribe([TOPIC], IgnoreRebalances())
        next_commit = clock.now_ms() + FLUSH_INTERVAL_MS
        while counted < n:
            clock.advance(TICK_MS)
            now = clock.now_ms()
            if now >= next_commit:
                consumer.commit(positions(), asynchronous=True)
                next_commit = now + FLUSH_INTERVAL_MS
            messages = consumer.poll(BATCH, 0)
            counted += len(messages)
        consumer.commit(positions(), asynchronous=False)
        consumer.close()

    seconds = timed(loop)
    check_sink(broker, group, counted, n)
    return Run(n, seconds, broker.commit_count(group))


# ---- main --------------------------------------------------------------------------------------------------------


def best(framework: Callable[[int], Run], bare: Callable[[int], Run], repeat: int) -> tuple[Run, Run]:
    """The fastest run of each side over ``repeat`` alternating rounds (each told its round number)."""
    framework_runs: list[Run] = []
    bare_runs: list[Run] = []
    for run in range(repeat):
        framework_runs.append(framework(run))
        bare_runs.append(bare(run))
    return max(framework_runs, key=lambda r: r.rate), max(bare_runs, key=lambda r: r.rate)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--records", type=int, default=300_000, help="source records per run (default 300000)")
    parser.add_argument(
        "--sink-records", type=int, default=2_000_000, help="sink records per run (default 2000000; the sink is cheap)"
    )
    parser.add_argument("--repeat", type=int, default=3, help="runs per side; the best counts (default 3)")
    parser.add_argument("--partitions", type=int, default=1, help="partitions of the topic (default 1)")
    args = parser.parse_args(argv)
    if min(args.records, args.sink_records, args.repeat, args.partitions) < 1:
        parser.error("--records, --sink-records, --repeat and --partitions must be at least 1")

    partition, batches = source_batches(args.records)
    # The prebuilt input lives through every run; keep the collector from scanning it over and over (both sides
    # would pay, in proportion to how much each allocates, which is not what is measured here).
    filled = filled_broker(args.sink_records, args.partitions)
    gc.collect()
    gc.freeze()
    source = best(
        lambda run: source_framework(batches, partition, args.partitions),
        lambda run: source_bare(batches, partition, args.partitions),
        args.repeat,
    )
    sink = best(
        lambda run: sink_framework(filled, args.sink_records, run),
        lambda run: sink_bare(filled, args.sink_records, run),
        args.repeat,
    )

    print(
        f"{args.records} source and {args.sink_records} sink records of {VALUE_BYTES} bytes, "
        f"{args.partitions} partition(s), "
        f"batches of {BATCH}, best of {args.repeat}"
    )
    print(f"{'loop':<8}{'side':<11}{'records/s':>12}{'seconds':>10}{'of which start':>16}{'commits':>9}")
    for loop, (framework, bare) in (("source", source), ("sink", sink)):
        for side, run in (("framework", framework), ("bare", bare)):
            start = "-" if run.start_seconds is None else f"{run.start_seconds:.4f}"
            print(f"{loop:<8}{side:<11}{run.rate:>12,.0f}{run.seconds:>10.4f}{start:>16}{run.commits:>9}")
    source_ratio = source[0].rate / source[1].rate
    sink_ratio = sink[0].rate / sink[1].rate
    print(f"source_ratio={source_ratio:.2f} sink_ratio={sink_ratio:.2f}")


if __name__ == "__main__":
    main()
