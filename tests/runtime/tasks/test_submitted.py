"""SubmittedRecords: the committable offset per source partition is its contiguous acknowledged prefix."""

import pytest

from headwater.runtime.tasks.submitted import Acks, SubmittedRecords, partition_key
from headwater.sdk.records import SourceBatch

A = {"table": "a"}
B = {"table": "b"}


def test_single_ack_is_committable() -> None:
    records = SubmittedRecords(Acks("t-0", tolerate=False))
    first = records.submit(A, {"id": 1}, "t")
    assert records.committable() == {}
    first.ack(None, None)
    assert records.committable() == {partition_key(A): (A, {"id": 1})}
    assert records.committable() == {}, "popped records are not reported twice"


def test_unacked_record_blocks_later_records_of_its_partition_only() -> None:
    records = SubmittedRecords(Acks("t-0", tolerate=False))
    a1, a2 = records.submit(A, {"id": 1}, "t"), records.submit(A, {"id": 2}, "t")
    b1 = records.submit(B, {"id": 10}, "t")
    a2.ack(None, None)
    b1.ack(None, None)
    assert records.committable() == {partition_key(B): (B, {"id": 10})}
    a1.ack(None, None)
    assert records.committable() == {partition_key(A): (A, {"id": 2})}


def test_equal_partitions_in_any_key_order_share_a_queue() -> None:
    records = SubmittedRecords(Acks("t-0", tolerate=False))
    first = records.submit({"db": "x", "table": "t"}, {"id": 1}, "t")
    second = records.submit({"table": "t", "db": "x"}, {"id": 2}, "t")
    second.ack(None, None)
    assert records.committable() == {}
    first.ack(None, None)
    assert list(records.committable().values()) == [({"db": "x", "table": "t"}, {"id": 2})]


def test_runs_are_committable_once_every_record_of_them_is_acked_in_order_across_partitions() -> None:
    acks = Acks("t-0", tolerate=False)
    records = SubmittedRecords(acks)
    a_first = records.open_run(A, "t")
    b_run = records.open_run(B, "t")
    a_next = records.open_run(A, "t")
    for run, size, last in ((a_first, 2, 2), (b_run, 1, 9), (a_next, 1, 3)):
        records.close_run(run, size, 0, {"id": last})
    a_next.ack(None, None)
    b_run.ack(None, None)
    a_first.ack(None, None)
    assert records.committable() == {partition_key(B): (B, {"id": 9})}, "one of a_first's two records is in flight"
    assert records.latest == {partition_key(A): {"id": 3}, partition_key(B): {"id": 9}}
    assert records.in_flight() == 1
    a_first.ack(None, None)
    assert records.committable() == {partition_key(A): (A, {"id": 3})}
    assert acks.acked == 4


def test_a_run_acked_before_it_is_closed_counts_once_when_closed() -> None:
    """A producer may serve delivery reports while the run is still being sent (its queue full): those acks come
    before the run knows its size."""
    acks = Acks("t-0", tolerate=False)
    records = SubmittedRecords(acks)
    run = records.open_run(A, "t")
    run.ack(None, None)
    run.ack(None, None)
    assert (run.acked, acks.acked) == (True, 0), "not counted before it is closed"
    records.close_run(run, 3, 0, {"id": 3})
    assert records.committable() == {}, "the third record is in flight"
    run.ack(None, None)
    assert records.committable() == {partition_key(A): (A, {"id": 3})}
    assert (acks.acked, acks.active_topics) == (3, {"t"})


def test_a_run_of_only_skipped_records_is_committable_at_once_and_an_empty_one_is_forgotten() -> None:
    acks = Acks("t-0", tolerate=True)
    records = SubmittedRecords(acks)
    skipped = records.open_run(A, "t")
    records.close_run(skipped, 2, 2, {"id": 2})
    records.close_run(records.open_run(B, "t"), 0, 0, None)
    assert records.committable() == {partition_key(A): (A, {"id": 2})}
    assert (acks.acked, acks.active_topics, records.latest) == (0, set(), {partition_key(A): {"id": 2}})


def test_null_partition_and_offset_are_allowed() -> None:
    records = SubmittedRecords(Acks("t-0", tolerate=False))
    record = records.submit(None, None, "t")
    record.ack(None, None)
    assert records.committable() == {None: (None, None)}


def test_in_flight_and_latest() -> None:
    records = SubmittedRecords(Acks("t-0", tolerate=False))
    first = records.submit(A, {"id": 1}, "t")
    records.submit(A, {"id": 2}, "t")
    first.ack(None, None)
    assert records.in_flight() == 1
    assert records.latest == {partition_key(A): {"id": 2}}


def test_unhashable_partition_values_are_rejected_with_the_partition() -> None:
    with pytest.raises(TypeError, match=r"\{'tables': \['a'\]\}"):
        partition_key({"tables": ["a"]})


def test_delivery_callback_acks_counts_and_tracks_topics() -> None:
    acks = Acks("t-0", tolerate=False)
    records = SubmittedRecords(acks)
    first, second = records.submit(A, {"id": 1}, "t"), records.submit(A, {"id": 2}, "t")
    first.ack(None, None)
    second.ack(RuntimeError("broker down"), None)
    assert (first.acked, second.acked, acks.acked) == (True, False, 1)
    assert acks.error is not None and "broker down" in str(acks.error)
    assert records.committable() == {partition_key(A): (A, {"id": 1})}


def test_tolerated_delivery_failure_counts_as_done_but_not_acked() -> None:
    acks = Acks("t-0", tolerate=True)
    records = SubmittedRecords(acks)
    record = records.submit(A, {"id": 1}, "t")
    record.ack(RuntimeError("too large"), None)
    assert (record.acked, acks.acked, acks.error) == (True, 0, None)


# ---- a SourceBatch tracked as one entry ------------------------------------------------------------------------


def batch(first: int, size: int, partition: dict[str, str] = A) -> SourceBatch:
    numbers = range(first, first + size)
    return SourceBatch(partition, "t", [b"%d" % n for n in numbers], [{"id": n} for n in numbers])


def test_a_batch_is_committable_once_every_record_of_it_is_acked() -> None:
    acks = Acks("t-0", tolerate=False)
    records = SubmittedRecords(acks)
    entry = records.submit_batch(batch(0, 3))
    assert records.latest == {partition_key(A): {"id": 2}}
    assert records.in_flight() == 3
    entry.ack(None, None)
    entry.ack(None, None)
    assert records.committable() == {}, "two of three acknowledged: the batch's offset is not committable yet"
    assert records.in_flight() == 1
    assert (acks.acked, acks.active_topics) == (0, set()), "counted when the whole batch is"
    entry.ack(None, None)
    assert records.committable() == {partition_key(A): (A, {"id": 2})}
    assert (acks.acked, acks.active_topics) == (3, {"t"})


def test_an_unacked_batch_blocks_later_entries_of_its_partition_only() -> None:
    records = SubmittedRecords(Acks("t-0", tolerate=False))
    first = records.submit_batch(batch(0, 2))
    single = records.submit(A, {"id": 2}, "t")
    other = records.submit_batch(batch(0, 1, B))
    single.ack(None, None)
    other.ack(None, None)
    assert records.committable() == {partition_key(B): (B, {"id": 0})}
    first.ack(None, None)
    first.ack(None, None)
    assert records.committable() == {partition_key(A): (A, {"id": 2})}


def test_a_failed_record_of_a_batch_fails_the_task_unless_tolerated() -> None:
    strict = Acks("t-0", tolerate=False)
    entry = SubmittedRecords(strict).submit_batch(batch(0, 2))
    entry.ack("Broker: Message size too large", None)
    entry.ack(None, None)
    assert not entry.acked
    assert strict.error is not None and "Message size too large" in str(strict.error)
    tolerant = Acks("t-0", tolerate=True)
    records = SubmittedRecords(tolerant)
    entry = records.submit_batch(batch(0, 2))
    entry.ack("Broker: Message size too large", None)
    entry.ack(None, None)
    assert tolerant.error is None
    assert records.committable() == {partition_key(A): (A, {"id": 1})}
    assert (tolerant.acked, tolerant.active_topics) == (1, {"t"})
    lost = records.submit_batch(batch(2, 1))
    lost.ack("Broker: Message size too large", None)
    assert lost.acked and (tolerant.acked, len(records.committable())) == (1, 1)


def test_a_batch_whose_records_were_all_dropped_makes_no_topic_active() -> None:
    acks = Acks("t-0", tolerate=True)
    entry = SubmittedRecords(acks).submit_batch(batch(0, 2))
    entry.skip(2)
    assert entry.acked and (acks.acked, acks.active_topics) == (0, set())


def test_an_empty_batch_is_refused() -> None:
    with pytest.raises(ValueError, match="empty SourceBatch"):
        SubmittedRecords(Acks("t-0", tolerate=False)).submit_batch(batch(0, 0))
