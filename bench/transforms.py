"""What a chain of three transforms costs the task loops: the same loop with and without the chain, in one run.

Source: a ``WorkerSourceTask`` sends prebuilt batches of 500 ``SourceRecord`` objects whose values are maps of
eight fields (schemaless JSON value converter, string keys), once without transforms and once with Kafka Connect's
``InsertField$Value`` (a static field), ``ReplaceField$Value`` (a rename and an excluded field) and
``RegexRouter`` (every topic renamed). Sink: a ``WorkerSinkTask`` reads the same kind of records, written
beforehand as JSON, converts them and hands them to a task that counts them, once without and once with the same
chain. Both sides run over the in-memory transport on a virtual clock; each measurement runs ``--repeat`` times,
alternating; a ratio is the median, over the repeats, of a run with the chain against the run without it just
before (the records/s printed are the best runs). Times are this process's CPU time (the loops run on one thread and,
in memory, never wait), so other work on the machine moves both sides less than it would wall-clock times. The
last line printed is ``source_ratio=<x> sink_ratio=<y>``: records/s with the chain divided by records/s without it
(the goal is at least 0.8: the chain costs at most 20%).

Run it with::

    python bench/transforms.py [--records N] [--repeat R]
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from itertools import product

from headwater.runtime.clock import VirtualClock
from headwater.runtime.config.connector import SINK_CONNECTOR_CONFIG, SOURCE_CONNECTOR_CONFIG, TaskSettings
from headwater.runtime.config.worker import WORKER_CONFIG
from headwater.runtime.storage.offsets import MemoryOffsetStore
from headwater.runtime.tasks.base import State, TaskId, WorkerTask
from headwater.runtime.tasks.sink import WorkerSinkTask
from headwater.runtime.tasks.source import WorkerSourceTask
from headwater.runtime.transforms import build_chain
from headwater.runtime.transport.memory import MemoryBroker, MemoryTransport
from headwater.sdk.records import SinkRecord, SourceRecord
from headwater.sdk.task import SinkTask, SourceTask

TOPIC = "bench-in"
ROUTED = "bench-out"
BATCH = 500
TICK_MS = 10
T = "org.apache.kafka.connect.transforms."
CHAIN = {
    "transforms": "stamp,tidy,route",
    "transforms.stamp.type": T + "InsertField$Value",
    "transforms.stamp.static.field": "pipeline",
    "transforms.stamp.static.value": "bench",
    "transforms.tidy.type": T + "ReplaceField$Value",
    "transforms.tidy.exclude": "internal",
    "transforms.tidy.renames": "amount:total",
    "transforms.route.type": T + "RegexRouter",
    "transforms.route.regex": "(.*)-in",
    "transforms.route.replacement": "$1-out",
}
"""Three transformations, with Kafka Connect's class names."""
WORKER_PROPS = {
    "key.converter": "string",
    "value.converter": "json",
    "value.converter.schemas.enable": "false",
    "heartbeat.interval.ms": 0,
    "offset.flush.interval.ms": 1000,
    "consumer.max.poll.records": BATCH,
}


def row(i: int) -> dict[str, object]:
    """Record ``i``'s value: eight fields, as a table row."""
    return {
        "id": i,
        "customer": f"c{i % 977}",
        "amount": i * 1.5,
        "currency": "EUR",
        "status": "open" if i % 3 else "closed",
        "created": 1_700_000_000_000 + i,
        "internal": "x" * 16,
        "note": None,
    }


def settings(connector: Mapping[str, object], sink: bool) -> TaskSettings:
    definition = SINK_CONNECTOR_CONFIG if sink else SOURCE_CONNECTOR_CONFIG
    return TaskSettings.resolve(WORKER_CONFIG.parse(WORKER_PROPS), definition.parse(connector), sink=sink)


def drive(task: WorkerTask, clock: VirtualClock, done: Callable[[], bool]) -> float:
    """Seconds from ``start`` until ``done()``, then stop; after a full collection, with the prebuilt input frozen
    out of the garbage collector (as :mod:`core_loops` does), so that neither side pays for scanning it."""
    gc.collect()
    gc.freeze()
    begin = time.process_time()
    task.start()
    while not done():
        clock.advance(TICK_MS)
        if not task.step() and task.state is State.FAILED:
            raise RuntimeError(f"{task!r} failed") from task.failure
    seconds = time.process_time() - begin
    gc.unfreeze()
    task.stop()
    task.shutdown()
    return seconds


class BatchSourceTask(SourceTask):
    def __init__(self, batches: Sequence[Sequence[SourceRecord]]) -> None:
        self._batches = iter(batches)

    def start(self, config: Mapping[str, str]) -> None:
        pass

    def poll(self) -> Sequence[SourceRecord] | None:
        return next(self._batches, None)


def source_run(n: int, chained: bool) -> float:
    """Records per second through the source loop."""
    partition = {"table": "orders"}
    records = [SourceRecord(partition, {"pos": i}, TOPIC, row(i), key=str(i)) for i in range(n)]
    batches = [records[i : i + BATCH] for i in range(0, n, BATCH)]
    broker = MemoryBroker()
    broker.create_topic(TOPIC, 1)
    broker.create_topic(ROUTED, 1)
    clock = VirtualClock()
    connector = {"name": "bench", "connector.class": "bench", **(CHAIN if chained else {})}
    task = WorkerSourceTask(
        TaskId("bench", 0),
        BatchSourceTask(batches),
        {},
        settings(connector, sink=False),
        MemoryTransport(broker).producer({}),
        MemoryOffsetStore(),
        clock,
    )
    if chained:
        task.transforms = build_chain(connector)
    seconds = drive(task, clock, lambda: task.records_acked >= n)
    written = broker.messages(ROUTED if chained else TOPIC)
    if len(written) != n or json.loads(written[-1].value or b"null").get("pipeline") != ("bench" if chained else None):
        raise RuntimeError(f"source run incomplete or untransformed: {len(written)} of {n} records")
    return n / seconds


class CountingSinkTask(SinkTask):
    def __init__(self) -> None:
        self.count = 0
        self.last: SinkRecord | None = None

    def start(self, config: Mapping[str, str]) -> None:
        pass

    def put(self, records: Sequence[SinkRecord]) -> None:
        self.count += len(records)
        if records:
            self.last = records[-1]


def filled_broker(n: int) -> MemoryBroker:
    broker = MemoryBroker()
    broker.create_topic(TOPIC, 1)
    producer = MemoryTransport(broker).producer({})
    for i in range(n):
        producer.produce(TOPIC, json.dumps(row(i)).encode(), str(i).encode(), 0, 1_700_000_000_000 + i, None)
    producer.flush(30_000)
    return broker


def sink_run(broker: MemoryBroker, n: int, chained: bool, group: str) -> float:
    """Records per second through the sink loop, under a consumer group of its own."""
    clock = VirtualClock()
    connector = {"name": group, "connector.class": "bench", "topics": TOPIC, **(CHAIN if chained else {})}
    sink = CountingSinkTask()
    consumer = MemoryTransport(broker).consumer(f"connect-{group}", {"max.poll.records": BATCH})
    task = WorkerSinkTask(TaskId(group, 0), sink, {"topics": TOPIC}, settings(connector, sink=True), consumer, clock)
    if chained:
        task.transforms = build_chain(connector)
    seconds = drive(task, clock, lambda: sink.count >= n)
    last = sink.last
    if last is None or (last.topic == ROUTED) != chained:
        raise RuntimeError(f"sink run incomplete or untransformed: {sink.count} of {n} records")
    return n / seconds


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=25)
    args = parser.parse_args(argv)
    n = args.records
    broker = filled_broker(n)
    rates: dict[tuple[str, bool], list[float]] = {key: [] for key in product(("source", "sink"), (False, True))}
    for runs in range(args.repeat):
        for chained in (False, True):
            rates["source", chained].append(source_run(n, chained))
            rates["sink", chained].append(sink_run(broker, n, chained, f"g{runs}-{chained}"))
    ratios = {}
    for side in ("source", "sink"):
        without, chained = rates[side, False], rates[side, True]
        # each run with the chain against the run without it just before: the median of those pairs, which a
        # slower or faster stretch of the machine moves less than a ratio of bests
        ratios[side] = statistics.median(after / before for before, after in zip(without, chained, strict=True))
        print(f"{side}: without transforms {max(without):,.0f} records/s, with three {max(chained):,.0f} records/s")
    print(f"source_ratio={ratios['source']:.3f} sink_ratio={ratios['sink']:.3f}")


if __name__ == "__main__":
    main()
