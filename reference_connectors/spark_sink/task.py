"""The Spark sink task (KIP-89): buffers records, flushes them by its own policy, commits only what is written,
and keeps its offsets in the table rather than trusting the consumer group.

- **Flush policy.** ``put`` buffers; it flushes once ``flush.max.records`` records or ``flush.max.bytes`` bytes are
  buffered, then calls ``context.request_commit()`` so the written offsets are committed at the next loop pass. A
  buffer whose oldest record has waited ``flush.interval.ms`` is flushed by the next ``put`` or ``pre_commit``;
  while records are buffered the task bounds the runtime's poll wait (``context.timeout``) so that ``put`` comes
  in time.
- **pre_commit** returns, for each partition being committed, the offset after the last record whose row is in the
  table. Buffered records are not flushed for a commit, not even a final one: after a stop or a rebalance they are
  read again.
- **open** reads each assigned partition's last written offset from the table (finishing or undoing a write a
  crash interrupted) and rewinds the consumer to just after it with ``context.offset``. So the group's committed
  offsets are only advisory: a crash at any point neither loses nor repeats a row.
- **close** drops the buffered records of the partitions (they may be lost to another task already).
- **Records that do not fit** the table's schema are reported to ``context.errant_record_reporter`` (KIP-610): the
  runtime's ``errors.tolerance`` fails the task or skips them, to its dead-letter queue when one is configured. A
  flush writes the table, moving the partitions' offsets past them, only once their reports are done.
- **Background writes** (``write.background``, the default): a flush hands its records to a writer thread and the
  task goes on buffering, so reading and parsing overlap Spark's write. At most one write is in flight: a flush by
  records or bytes waits for it; a flush by time comes at the first look after it ends, the task reading on
  meanwhile. Its offsets count as written (for ``pre_commit``, with a ``request_commit``) once it is in the
  table; ``open``, ``close`` and ``stop`` wait for it, so a partition never changes hands mid-write.
"""

from __future__ import annotations

import contextvars
import logging
from collections.abc import Collection, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor

from headwater.reference_connectors.spark_sink.buffer import RecordBuffer
from headwater.reference_connectors.spark_sink.config import SinkConfig
from headwater.reference_connectors.spark_sink.writer import TableWriter
from headwater.sdk import SinkRecord, SinkTask, TopicPartition, hookimpl

log = logging.getLogger(__name__)

PENDING_CHECK_MS = 50
"""The poll wait while a background write is in flight: its commit is requested soon after it ends."""


class SparkSinkTask(SinkTask):
    writer: TableWriter | None = None
    failure: Exception | None = None
    """A flush that failed in ``pre_commit``, raised by the next ``put``."""
    executor: ThreadPoolExecutor | None = None
    pending: Future[dict[TopicPartition, int]] | None = None
    """The background write in flight: the next offset of each partition it writes."""

    def start(self, config: Mapping[str, str]) -> None:
        self.config = SinkConfig.parse(config)
        self.writer = TableWriter(self.config, self.context.errant_record_reporter)
        self.buffer = RecordBuffer()
        self.written: dict[TopicPartition, int] = {}
        """Next offset to consume of each assigned partition whose records up to there are in the table."""
        self.flushes = {"records": 0, "bytes": 0, "time": 0}
        if self.config.write_background:
            self.executor = ThreadPoolExecutor(1, thread_name_prefix=f"spark-sink-{self.config.app_id}")
        self.writer.start_session()

    def open(self, partitions: Collection[TopicPartition]) -> None:
        """Rewind each partition to just after its last offset in the table."""
        assert self.writer is not None
        self.collect(wait=True)
        self.buffer.drop(partitions)
        found = self.writer.recover(partitions)
        rewind = {tp: offset + 1 for tp, offset in found.items()}
        if rewind:
            self.context.offset(rewind)
        self.written.update(rewind)
        log.info("%s: opened %d partitions, %d resume from the table: %s", self, len(partitions), len(rewind), rewind)

    def close(self, partitions: Collection[TopicPartition]) -> None:
        self.collect(wait=True)
        self.buffer.drop(partitions)
        for tp in partitions:
            self.written.pop(tp, None)

    def put(self, records: Sequence[SinkRecord]) -> None:
        if self.failure is not None:
            raise self.failure
        written = self.collect(wait=False)
        now = self.context.clock.now_ms()
        if records:
            self.buffer.add(records, now)
        reason = self._due(now)
        waits = []
        if reason is not None:
            written = self.flush_buffer(reason) or written
        elif self.buffer.oldest_ms is not None and self.pending is None:
            waits.append(max(self.buffer.oldest_ms + self.config.flush_interval_ms - now, 1))
        if self.pending is not None:
            waits.append(PENDING_CHECK_MS)
        if waits:  # the sooner of the buffer's flush time and the next look at the write in flight
            self.context.timeout(min(waits))
        if written:
            self.context.request_commit()

    def _due(self, now: int) -> str | None:
        """Why the buffer must be flushed now, or ``None``. A buffer that is due by time only waits for the write
        in flight to end (it is flushed at the first look after that) while the task goes on reading: flushing
        now would stop reading until that write ends and then write fewer rows."""
        buffer = self.buffer
        if not buffer.records:
            return None
        if buffer.records >= self.config.flush_max_records:
            return "records"
        if buffer.bytes >= self.config.flush_max_bytes:
            return "bytes"
        if buffer.oldest_ms is not None and now - buffer.oldest_ms >= self.config.flush_interval_ms:
            return "time" if self.pending is None else None
        return None

    def flush_buffer(self, reason: str) -> bool:
        """Write everything buffered: in the background (after the write in flight ends), else at once. Return
        whether more offsets now count as written."""
        assert self.writer is not None
        written = self.collect(wait=True)
        parts = self.buffer.take()
        self.flushes[reason] += 1
        if self.executor is not None:
            # in this task's logging context, so that the write's lines say which task they are of
            self.pending = self.executor.submit(contextvars.copy_context().run, self.writer.write, parts)
            return written
        self.written.update(self.writer.write(parts))
        return True

    def collect(self, wait: bool) -> bool:
        """Count the background write's offsets as written once it has ended (waiting for it when ``wait``);
        raises what failed it. Return whether it had ended."""
        pending = self.pending
        if pending is None or not (wait or pending.done()):
            return False
        self.pending = None
        self.written.update(pending.result())
        return True

    @hookimpl
    def pre_commit(self, current_offsets: Mapping[TopicPartition, int]) -> dict[TopicPartition, int]:
        """Flush when the buffer is due, then return the written offsets being committed.

        A failed flush is kept for the next ``put`` to raise, failing the task: raising here would make the runtime
        rewind to the group's offsets, which may be behind the table's, and write rows twice."""
        if self.failure is None:
            try:
                self.collect(wait=False)
                reason = self._due(self.context.clock.now_ms())
                if reason is not None:
                    self.flush_buffer(reason)
            except Exception as error:
                log.error("%s: flushing before a commit failed; the task fails at its next put: %s", self, error)
                self.failure = error
        return {tp: offset for tp, offset in self.written.items() if tp in current_offsets}

    def stop(self) -> None:
        try:
            self.collect(wait=True)
        except Exception as error:
            log.error(
                "%s: the last background write failed; its records are read again at the next start: %s", self, error
            )
        if self.executor is not None:
            self.executor.shutdown()

    def __repr__(self) -> str:
        name = self.config.app_id if hasattr(self, "config") else "?"
        written = {str(tp): offset for tp, offset in getattr(self, "written", {}).items()}
        return f"SparkSinkTask({name}, buffered={getattr(self, 'buffer', None)!r}, written={written})"
