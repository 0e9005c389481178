"""SubmittedRecords: the committable offset per source partition is its contiguous acknowledged prefix."""

import pytest

from headwater.runtime.tasks.submitted import SubmittedRecords, partition_key

A = {"table": "a"}
B = {"table": "b"}


def test_single_ack_is_committable() -> None:
    records = SubmittedRecords()
    first = records.submit(A, {"id": 1})
    assert records.committable() == {}
    first.acked = True
    assert records.committable() == {partition_key(A): (A, {"id": 1})}
    assert records.committable() == {}, "popped records are not reported twice"


def test_unacked_record_blocks_later_records_of_its_partition_only() -> None:
    records = SubmittedRecords()
    a1, a2 = records.submit(A, {"id": 1}), records.submit(A, {"id": 2})
    b1 = records.submit(B, {"id": 10})
    a2.acked = True
    b1.acked = True
    assert records.committable() == {partition_key(B): (B, {"id": 10})}
    a1.acked = True
    assert records.committable() == {partition_key(A): (A, {"id": 2})}


def test_equal_partitions_in_any_key_order_share_a_queue() -> None:
    records = SubmittedRecords()
    first = records.submit({"db": "x", "table": "t"}, {"id": 1})
    second = records.submit({"table": "t", "db": "x"}, {"id": 2})
    second.acked = True
    assert records.committable() == {}
    first.acked = True
    assert list(records.committable().values()) == [({"db": "x", "table": "t"}, {"id": 2})]


def test_drop_removes_a_record_that_was_never_sent() -> None:
    records = SubmittedRecords()
    first = records.submit(A, {"id": 1})
    second = records.submit(A, {"id": 2})
    records.drop(second)
    first.acked = True
    assert records.committable() == {partition_key(A): (A, {"id": 1})}
    middle = records.submit(A, {"id": 3})
    last = records.submit(A, {"id": 4})
    records.drop(middle)
    last.acked = True
    assert records.committable() == {partition_key(A): (A, {"id": 4})}


def test_null_partition_and_offset_are_allowed() -> None:
    records = SubmittedRecords()
    record = records.submit(None, None)
    record.acked = True
    assert records.committable() == {None: (None, None)}


def test_in_flight_and_latest() -> None:
    records = SubmittedRecords()
    first = records.submit(A, {"id": 1})
    records.submit(A, {"id": 2})
    first.acked = True
    assert records.in_flight() == 1
    assert records.latest == {partition_key(A): {"id": 2}}


def test_unhashable_partition_values_are_rejected_with_the_partition() -> None:
    with pytest.raises(TypeError, match=r"\{'tables': \['a'\]\}"):
        partition_key({"tables": ["a"]})
