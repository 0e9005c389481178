"""A source that hands over ``SourceBatch`` columns: with pass-through converters the loop sends them as they are
(headers too) and commits each batch's last offset once all of it is acknowledged. Shown on both backends
(``make_worker``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pytest

from headwater.harness import SimulatedWorker
from headwater.harness.kafka_worker import KafkaSteppedWorker
from headwater.sdk import SourceBatch, SourceConnector, SourceTask
from synthetic import SequenceSourceConnector, sequence_value

Make = Callable[..., SimulatedWorker]
RAW = {"key.converter": "bytes", "value.converter": "bytes", "header.converter": "bytes"}
PARTITION = {"task": 0}


def test_batches_arrive_once_in_order_and_their_last_offsets_are_committed(make_worker: Make, unique_name: str) -> None:
    worker = make_worker({**RAW, "offset.flush.interval.ms": 1000})
    topic = f"seq-{unique_name}"
    worker.create_topic(topic, 1)
    config = {"topic": topic, "max.records": 12, "batch.size": 5, "record.bytes": 4}
    worker.add_connector(unique_name, SequenceSourceConnector, config)
    worker.advance(999)
    assert [m.value for m in worker.messages(topic)] == [sequence_value(n, 4) for n in range(12)]
    assert worker.source_offset(unique_name, PARTITION) is None, "nothing is committed before the interval"
    worker.advance(1)
    worker.assert_source_offset(unique_name, PARTITION, {"seq": 11})
    task = worker.source_task(unique_name)
    assert (task.records_sent, task.records_acked, task.submitted.in_flight()) == (12, 12, 0)
    assert task.active_topics == {topic}


def test_a_full_producer_queue_holds_a_batch_back_without_losing_or_repeating_records(
    make_worker: Make, unique_name: str
) -> None:
    # On Kafka the queue holds 7 records, so each batch of 20 is sent in pieces as acknowledgements free space.
    worker = make_worker({**RAW, "offset.flush.interval.ms": 1000, "producer.queue.buffering.max.messages": 7})
    topic = f"seq-{unique_name}"
    worker.create_topic(topic, 1)
    config = {"topic": topic, "max.records": 100, "batch.size": 20, "record.bytes": 3}
    worker.add_connector(unique_name, SequenceSourceConnector, config)
    producer = worker.source_task(unique_name).producer
    produce_all, cut_short = producer.produce_all, []

    def counting(topic: str, values: Sequence[bytes | None], *args: Any) -> int:
        sent = produce_all(topic, values, *args)
        if sent < len(values):
            cut_short.append(sent)
        return sent

    producer.produce_all = counting  # type: ignore[method-assign]
    worker.run_until(lambda: worker.source_task(unique_name).records_acked == 100, what="100 records acknowledged")
    if isinstance(worker, KafkaSteppedWorker):
        assert cut_short, "the queue never filled: the test did not exercise back-pressure"
    worker.advance(1000)
    assert [m.value for m in worker.messages(topic)] == [sequence_value(n, 3) for n in range(100)]
    worker.assert_source_offset(unique_name, PARTITION, {"seq": 99})


HEADERS = [[("trace", b"\x00\xfft0"), ("empty", b""), ("none", None)], None, [("trace", b"t2"), ("trace", b"again")]]
"""The header column of :class:`HeaderedBatchTask`'s batch: bytes that are not UTF-8, an empty value, a null one,
a record without headers and a key repeated."""


class HeaderedBatchTask(SourceTask):
    """Hands over one batch of three records with :data:`HEADERS`, then nothing; with ``shape=list`` each header
    pair is a list, which keeps the batch off the path that sends columns as they are."""

    def start(self, config: Mapping[str, str]) -> None:
        self.topic, self.sent = config["topic"], False
        self.lists = config.get("shape") == "list"

    def poll(self) -> SourceBatch | None:
        if self.sent:
            return None
        self.sent = True
        offsets = [{"seq": n} for n in range(3)]
        headers: list[Any] = HEADERS
        if self.lists:
            headers = [None if pairs is None else [list(pair) for pair in pairs] for pairs in HEADERS]
        return SourceBatch(PARTITION, self.topic, [b"v0", b"v1", b"v2"], offsets, headers=headers)


class HeaderedBatchConnector(SourceConnector):
    def start(self, config: Mapping[str, str]) -> None:
        self.config = dict(config)

    def task_class(self) -> type[SourceTask]:
        return HeaderedBatchTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [self.config]


@pytest.mark.parametrize(
    ("header_converter", "shape", "fast"),
    [("bytes", "tuple", True), ("simple", "tuple", True), ("simple", "list", False)],
    ids=["as-they-are", "as-they-are-simple", "converted"],
)
def test_a_consumer_reads_the_exact_header_bytes_of_a_batch(
    make_worker: Make, unique_name: str, header_converter: str, shape: str, fast: bool
) -> None:
    # (str, bytes) tuples with a header converter that writes bytes as they are (bytes, or the default
    # SimpleHeaderConverter): the columns go to produce_all as they are; list-shaped pairs: record by record, each
    # header through the converter, which hands bytes and None on unchanged
    worker = make_worker({**RAW, "header.converter": header_converter, "offset.flush.interval.ms": 1000})
    topic = f"hdr-{unique_name}"
    worker.create_topic(topic, 1)
    worker.add_connector(unique_name, HeaderedBatchConnector, {"topic": topic, "shape": shape})
    producer = worker.source_task(unique_name).producer
    produce_all, columns = producer.produce_all, []

    def spy(*args: Any) -> int:
        columns.append(args[7])
        return produce_all(*args)

    producer.produce_all = spy  # type: ignore[method-assign]
    worker.run_until(lambda: worker.source_task(unique_name).records_acked == 3, what="3 records acknowledged")
    got = [(m.value, list(m.headers)) for m in worker.messages(topic)]
    assert got == [(b"v0", HEADERS[0]), (b"v1", []), (b"v2", HEADERS[2])]
    assert columns == ([HEADERS] if fast else [])
    worker.advance(1000)
    worker.assert_source_offset(unique_name, PARTITION, {"seq": 2})
