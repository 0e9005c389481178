"""The Spark sink task's commit rules on an in-memory table, without a JVM (found by ``make mutants``): a ``put``
batch's runs of two topics with one partition number stay apart, dropping partitions keeps the counts (and so the
flush by time) of what is left, a foreground flush requests the commit of what it wrote, and ``open`` and ``stop``
wait for the write in flight (``open`` before reading the table's offsets; ``stop`` logging a failed write)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Collection, Mapping
from concurrent.futures import Future
from typing import Any

import pyarrow as pa
import pytest

from headwater.reference_connectors.spark_sink import task as task_module
from headwater.reference_connectors.spark_sink import writer as writer_module
from headwater.reference_connectors.spark_sink.buffer import RecordBuffer
from headwater.reference_connectors.spark_sink.task import SparkSinkTask
from headwater.sdk import SinkRecord, TopicPartition

T0, T1, U0 = TopicPartition("t", 0), TopicPartition("t", 1), TopicPartition("u", 0)


class MemoryTable:
    """A table in memory: each write's rows and last offsets, in order."""

    def __init__(self) -> None:
        self.writes: list[tuple[dict[TopicPartition, int], int]] = []
        self.failure: Exception | None = None
        """Raised by the next write."""
        self.recovered: list[bool] = []
        """Per ``recover`` call, whether the task had a write in flight then."""
        self.task: SparkSinkTask | None = None

    def recover(self, partitions: Collection[TopicPartition]) -> dict[TopicPartition, int]:
        assert self.task is not None
        self.recovered.append(self.task.pending is not None and not self.task.pending.done())
        last: dict[TopicPartition, int] = {}
        for offsets, _ in self.writes:
            last.update({tp: offset for tp, offset in offsets.items() if tp in partitions})
        return last

    def schema(self) -> pa.Schema | None:
        return None

    def write(self, tables: Mapping[TopicPartition, pa.Table], last: Mapping[TopicPartition, int], change: Any) -> None:
        if self.failure is not None:
            raise self.failure
        self.writes.append((dict(last), sum(t.num_rows for t in tables.values())))


class Context:
    errant_record_reporter = None

    def __init__(self) -> None:
        self.now = 0
        self.commits_requested = 0
        self.rewinds: list[dict[TopicPartition, int]] = []
        self.clock = self

    def now_ms(self) -> int:
        return self.now

    def request_commit(self) -> None:
        self.commits_requested += 1

    def offset(self, offsets: Mapping[TopicPartition, int]) -> None:
        self.rewinds.append(dict(offsets))

    def timeout(self, timeout_ms: int) -> None:
        pass


@pytest.fixture
def started(
    monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> tuple[SparkSinkTask, MemoryTable, Context]:
    """A task started on a :class:`MemoryTable` (no SparkSession), 4 records a flush, writing in the foreground
    (in the background when parametrized with ``"background"``)."""
    table = MemoryTable()
    monkeypatch.setattr(writer_module, "spark_session", lambda *args, **kwargs: None)
    monkeypatch.setattr(writer_module, "make_table", lambda config, session: table)
    task = SparkSinkTask()
    table.task = task
    context = Context()
    task.context = context  # type: ignore[assignment]
    config = {"name": "sink", "topics": "t", "table.path": "/nowhere/t", "flush.max.records": "4"}
    config["write.background"] = "true" if getattr(request, "param", None) == "background" else "false"
    task.start(config)
    return task, table, context


def records(tp: TopicPartition, offsets: range) -> list[SinkRecord]:
    return [SinkRecord(tp.topic, tp.partition, n, f"k{n}".encode(), b'{"id": %d}' % n) for n in offsets]


def test_runs_of_two_topics_with_the_same_partition_number_are_buffered_apart() -> None:
    buffer = RecordBuffer()
    buffer.add([*records(T0, range(0, 2)), *records(U0, range(7, 9)), *records(T0, range(2, 3))], now_ms=0)
    assert {tp: part.offsets for tp, part in buffer.partitions.items()} == {T0: [0, 1, 2], U0: [7, 8]}


def test_values_that_are_no_bytes_are_buffered_and_counted_as_their_json_text() -> None:
    buffer = RecordBuffer()
    given = [(b"k", b'{"id":0}'), ("ab", '{"id":1}'), (None, {"id": 2}), (b"k", None)]  # a tombstone counts nothing
    buffer.add([SinkRecord("t", 0, n, key, value) for n, (key, value) in enumerate(given)], now_ms=0)
    assert buffer.partitions[T0].values == [b'{"id":0}', b'{"id":1}', b'{"id":2}', None]
    assert (buffer.records, buffer.bytes) == (4, 1 + 8 + 2 + 8 + 8 + 1)


def test_dropping_partitions_keeps_the_counts_and_the_age_of_what_is_left() -> None:
    buffer = RecordBuffer()
    dropped = [SinkRecord("t", 0, 0, 5, b'{"id": 0}')]  # a key that is no bytes counts 8
    buffer.add([*dropped, *records(T1, range(3))], now_ms=10)
    assert (buffer.records, buffer.bytes) == (4, 8 + 9 + 3 * (2 + 9))
    buffer.drop([T0])
    assert (buffer.records, buffer.bytes, buffer.oldest_ms) == (3, 3 * (2 + 9), 10)
    buffer.drop([T1])
    assert (buffer.records, buffer.bytes, buffer.oldest_ms, buffer.partitions) == (0, 0, None, {})


def test_a_foreground_flush_requests_the_commit_of_what_it_wrote(
    started: tuple[SparkSinkTask, MemoryTable, Context],
) -> None:
    task, table, context = started
    task.open([T0])
    task.put(records(T0, range(3)))
    assert (table.writes, context.commits_requested) == ([], 0), "nothing due, nothing written: no commit asked"
    task.put(records(T0, range(3, 4)))
    assert (table.writes, context.commits_requested) == ([({T0: 3}, 4)], 1)
    assert task.pre_commit({T0: 4}) == {T0: 4}


def test_open_waits_for_the_write_in_flight_before_it_reads_the_tables_offsets(
    started: tuple[SparkSinkTask, MemoryTable, Context],
) -> None:
    task, table, context = started
    task.open([T0])
    in_flight: Future[dict[TopicPartition, int]] = Future()
    task.pending = in_flight
    threading.Timer(0.2, lambda: (table.writes.append(({T0: 9}, 10)), in_flight.set_result({T0: 10}))).start()
    task.open([T0])
    assert table.recovered == [False, False], "the table's offsets were read while a write was in flight"
    assert context.rewinds[-1] == {T0: 10}


def test_close_waits_for_the_write_in_flight(started: tuple[SparkSinkTask, MemoryTable, Context]) -> None:
    task, _, _ = started
    in_flight: Future[dict[TopicPartition, int]] = Future()
    task.pending = in_flight
    threading.Timer(0.2, lambda: in_flight.set_result({T0: 10})).start()
    task.close([T0])
    assert in_flight.done() and task.pending is None, "close returned with a write of the partition in flight"


@pytest.mark.parametrize("started", ["background"], indirect=True)
def test_a_flush_waits_for_the_write_in_flight_and_counts_both_writes(
    started: tuple[SparkSinkTask, MemoryTable, Context],
) -> None:
    task, table, context = started
    task.open([T0, T1])
    task.put(records(T0, range(4)))  # a write of t-0 in the background
    task.put(records(T1, range(4)))  # the next, of t-1, after the first ended
    assert task.pending is not None
    task.pending.result(timeout=30)
    asked = context.commits_requested
    task.put([])  # the first look after the write ended counts its offsets and asks for their commit
    assert context.commits_requested == asked + 1
    assert task.pre_commit({T0: 4, T1: 4}) == {T0: 4, T1: 4}
    assert [offsets for offsets, _ in table.writes] == [{T0: 3}, {T1: 3}]


def test_a_flush_that_fails_before_a_commit_fails_the_next_put_not_the_commit(
    started: tuple[SparkSinkTask, MemoryTable, Context],
) -> None:
    task, table, context = started
    task.open([T0])
    task.put(records(T0, range(2)))
    table.failure = OSError("the disk is full")
    context.now = 60_000  # the buffer is due by time
    assert task.pre_commit({T0: 2}) == {}, "a failed flush must not raise from pre_commit"
    with pytest.raises(OSError, match="the disk is full"):
        task.put([])


def test_stop_waits_for_the_write_in_flight_and_logs_its_failure(
    started: tuple[SparkSinkTask, MemoryTable, Context], caplog: pytest.LogCaptureFixture
) -> None:
    task, _, _ = started
    in_flight: Future[dict[TopicPartition, int]] = Future()
    task.pending = in_flight
    threading.Timer(0.2, lambda: in_flight.set_exception(OSError("the disk is full"))).start()
    with caplog.at_level(logging.ERROR, logger=task_module.__name__):
        task.stop()
    assert task.pending is None
    assert "the last background write failed" in caplog.text and "the disk is full" in caplog.text
