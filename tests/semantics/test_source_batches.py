"""A source that hands over ``SourceBatch`` columns: with pass-through converters the loop sends them as they are
and commits each batch's last offset once all of it is acknowledged. Shown on both backends (``make_worker``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from headwater.harness import SimulatedWorker
from headwater.harness.kafka_worker import KafkaSteppedWorker
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
