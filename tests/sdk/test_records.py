"""SourceBatch: columns of records, also readable as a sequence of SourceRecord."""

import pytest

from headwater.sdk import SourceBatch, SourceRecord

P = {"file": "a.log"}


def test_a_batch_reads_as_source_records() -> None:
    batch = SourceBatch(P, "logs", [b"x", b"y", None], [{"pos": 1}, {"pos": 2}, {"pos": 3}], keys=[b"k", None, b"m"])
    assert len(batch) == 3
    assert batch[1] == SourceRecord(P, {"pos": 2}, "logs", b"y", None)
    assert batch[-1].key == b"m" and batch[-1].value is None
    assert [r.source_offset for r in batch] == [{"pos": 1}, {"pos": 2}, {"pos": 3}]
    assert [r.value for r in batch[1:]] == [b"y", None]
    assert "logs" in repr(batch) and "3 records" in repr(batch)


def test_timestamps_and_partition_reach_each_record() -> None:
    batch = SourceBatch(None, "t", [b"a", b"b"], [None, None], timestamps=[10, 20], partition=2)
    assert [(r.timestamp, r.partition, r.source_partition) for r in batch] == [(10, 2, None), (20, 2, None)]


def test_headers_reach_each_record_and_none_or_empty_reads_as_no_headers() -> None:
    headers = [[("trace", b"t1"), ("tenant", None)], None, ()]
    batch = SourceBatch(P, "t", [b"a", b"b", b"c"], [None, None, None], headers=headers)
    assert [list(r.headers) for r in batch] == [[("trace", b"t1"), ("tenant", None)], [], []]
    assert SourceBatch(P, "t", [b"a"], [None])[0].headers == ()


@pytest.mark.parametrize("column", ["offsets", "keys", "timestamps", "headers"])
def test_a_column_of_another_length_is_refused_naming_it(column: str) -> None:
    columns: dict[str, list[object]] = {"offsets": [{"n": 1}, {"n": 2}]}
    columns[column] = [None]
    with pytest.raises(ValueError, match=f"2 values but 1 {column}"):
        SourceBatch(P, "t", [b"a", b"b"], **columns)  # type: ignore[arg-type]
