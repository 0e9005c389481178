"""The source task loop (Kafka Connect's ``AbstractWorkerSourceTask`` with KIP-910's heartbeats).

One pass: serve delivery callbacks; commit offsets if ``offset.flush.interval.ms`` has passed; if paused,
stop there; if nothing is waiting to be sent, ask for heartbeat records when ``heartbeat.interval.ms`` has
passed and send them; then ``poll`` and send. Heartbeat records go through exactly the same
submit/send/acknowledge/commit path as data; one without a key is keyed by its source partition first, because
the heartbeat topic is compacted and Kafka refuses a record without a key there.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping, Sequence
from time import perf_counter

from headwater.runtime.clock import SystemClock
from headwater.runtime.config.connector import TaskSettings
from headwater.runtime.config.topic_creation import TopicCreation
from headwater.runtime.converters import passes_bytes_through, sends_header_bytes_through
from headwater.runtime.error_handling.tolerance import (
    HEADER_CONVERTER,
    KEY_CONVERTER,
    VALUE_CONVERTER,
    Failure,
    Stage,
    StageFailed,
    class_name,
)
from headwater.runtime.logs.context import for_offsets
from headwater.runtime.storage.offsets import OffsetStore
from headwater.runtime.tasks.base import State, StateListener, TaskId, WorkerTask
from headwater.runtime.tasks.source_context import StoreOffsetReader, WorkerSourceTaskContext
from headwater.runtime.tasks.submitted import Acks, PartitionKey, Runs, SubmittedBatch, SubmittedRecords
from headwater.runtime.tasks.timing import BatchTimes
from headwater.runtime.transport.base import Producer, ProducerFencedError, QueueFullError, RawHeaders
from headwater.sdk.context import Clock
from headwater.sdk.errors import ConnectError, RetriableError
from headwater.sdk.records import (
    Header,
    SourceBatch,
    SourceOffset,
    SourcePartition,
    SourceRecord,
    validate_offset_map,
)
from headwater.sdk.task import SourceTask

log = logging.getLogger(__name__)


SEND_FAILED_BACKOFF_MS = 100
"""After a synchronous retriable send failure, wait this long before resending from the failed record."""


_RAW = frozenset({bytes, type(None)})


def _raw_columns(batch: SourceBatch) -> bool:
    """Whether the batch's keys and values are all bytes or ``None`` and its header pairs all ``(str, bytes or
    None)`` tuples, to be sent as they are."""
    if not set(map(type, batch.values)) <= _RAW:
        return False
    if batch.keys is not None and not set(map(type, batch.keys)) <= _RAW:
        return False
    return batch.headers is None or all(map(_raw_headers, batch.headers))


def _raw_headers(pairs: Sequence[Header] | None) -> bool:
    """Whether one record's headers are ``None``, empty, or ``(str, bytes or None)`` tuples."""
    if not pairs:
        return True
    for pair in pairs:
        if type(pair) is not tuple or len(pair) != 2 or type(pair[0]) is not str or type(pair[1]) not in _RAW:
            return False
    return True


def keyed(heartbeat: SourceRecord) -> SourceRecord:
    """``heartbeat``, keyed by its source partition when it has no key (the key converter then writes that
    partition like any key): the heartbeat topic is compacted, which keeps the latest heartbeat per key, and Kafka
    refuses a record without a key on a compacted topic."""
    if heartbeat.key is not None or heartbeat.source_partition is None:
        return heartbeat
    return dataclasses.replace(heartbeat, key=dict(heartbeat.source_partition))


class WorkerSourceTask(WorkerTask):
    task: SourceTask
    context: WorkerSourceTaskContext
    """The task's context, made by :meth:`initialize`."""

    def __init__(
        self,
        id: TaskId,
        task: SourceTask,
        config: Mapping[str, str],
        settings: TaskSettings,
        producer: Producer,
        offset_store: OffsetStore,
        clock: Clock | None = None,
        listener: StateListener | None = None,
        plugins: list[object] | None = None,
    ) -> None:
        super().__init__(id, task, config, settings, clock or SystemClock(), listener, plugins)
        self.producer = producer
        self.offset_store = offset_store
        self.acks = Acks(
            str(id), settings.errors.tolerate, explain=producer.delivery_error, report=self._delivery_failed
        )
        self.submitted = SubmittedRecords(self.acks)
        self._uncommitted: dict[PartitionKey, tuple[SourcePartition | None, SourceOffset | None]] = {}
        self._to_send: Sequence[SourceRecord] | None = None
        self._batch: SubmittedBatch | None = None
        """The :class:`SourceBatch` being sent as raw columns, tracked as one entry."""
        self._next_index = 0
        self._retry_at = 0
        self._retry = self.errors.retry()
        self._next_commit = 0
        self._next_heartbeat = 0
        self._settled = True
        """Whether every record sent was found acknowledged (or failed) since the last send; see
        :meth:`next_pass_due`."""
        self._passthrough = False
        """Whether the key and value converters pass bytes through: records of bytes are sent as they are."""
        self._raw_headers = False
        """Whether the header converter writes bytes header values as they are."""
        self.active_topics = self.acks.active_topics
        """Topics the broker acknowledged a record of (KIP-558's source rule: after the acknowledgement), as
        written: after the transforms (``AbstractWorkerSourceTask`` records ``producerRecord.topic()``)."""
        self.topic_creation: TopicCreation | None = None
        """The connector's topic creation groups, when it creates topics (KIP-158): a topic this task has not sent
        to yet is created, when missing, before its first record."""
        self.records_sent = 0
        self.records_polled = 0
        """Records ``poll`` returned (before transformation), heartbeat records not included."""
        self.heartbeat_calls = 0
        self.heartbeat_records = 0
        self.commits = 0
        self.commit_failures = 0
        self.poll_times = BatchTimes()
        """Durations of the ``poll`` calls that returned records (an empty batch included, ``None`` not)."""
        self.commit_times = BatchTimes()
        """Durations of offset commits, failed ones included."""
        self.partition_offsets: dict[PartitionKey, tuple[SourcePartition | None, SourceOffset | None, int]] = {}
        """Per source partition: its last committed offset and when (clock milliseconds) a commit last changed it."""

    def initialize(self) -> None:
        self.context = self._context()
        self.task.initialize(self.context)

    def _context(self) -> WorkerSourceTaskContext:
        reader = StoreOffsetReader(self.offset_store, self.settings.connector)
        return WorkerSourceTaskContext(self.config, self.clock, reader, self.parsed_config, self.plugin_metrics)

    # ---- the loop --------------------------------------------------------------------------------------------

    def iteration(self) -> bool:
        self.producer.poll(0)
        if self.acks.error is not None:
            raise self.acks.error
        if self.tolerating:
            self.all_skipped.check(self.acks.acked, self.errors)
        now = self.clock.now_ms()
        if now >= self._next_commit:
            self.commit_offsets()
            self._next_commit = now + self.commit_interval_ms
        if self._target_paused:
            return False
        progressed = False
        interval = self.settings.heartbeat_interval_ms
        if self._to_send is None and interval > 0 and now >= self._next_heartbeat:
            self._next_heartbeat = now + interval
            heartbeats = self._heartbeat_records()
            if heartbeats:
                self._take(heartbeats)
                progressed = self._send(now)
        if self._to_send is None:
            if now < self.context.idle_until:  # the task said it has nothing until then (SourceTaskContext.idle)
                return progressed
            if not (records := self._poll_task()):
                return progressed
            self._take(records)
        if now < self._retry_at:
            return progressed
        return self._send(now) or progressed

    def _poll_task(self) -> Sequence[SourceRecord] | None:
        """The connector's ``poll``, timed and counted; a :class:`RetriableError` is logged (poll again later)."""
        began = perf_counter()
        try:
            records = self.task.poll()
        except RetriableError as error:
            log.warning("retriable error from poll, polling again: %s", error)
            return None
        if records is not None:
            ended = perf_counter()
            self.poll_times.observe(ended - began, ended)
            self.records_polled += len(records)
        return records

    def next_pass_due(self) -> int:
        """While the task idles (:meth:`WorkerSourceTaskContext.idle`), running, with nothing to send and every
        record sent acknowledged: the earliest of the idle's end, the next offset commit and the next heartbeat.
        Now otherwise."""
        now = self.clock.now_ms()
        idle_until = self.context.idle_until if self.state is State.RUNNING else 0
        if idle_until <= now or self._stopping or self._target_paused or self._to_send is not None:
            return now
        due = min(idle_until, self._next_commit)
        if self.settings.heartbeat_interval_ms > 0:
            due = min(due, self._next_heartbeat)
        if due <= now:
            return now
        if not self._settled:  # acknowledgements come with the passes' producer.poll: none may wait for them
            if self.submitted.in_flight():
                return now
            self._settled = True
        return due

    @property
    def commit_interval_ms(self) -> int:
        """How often the loop calls :meth:`commit_offsets`: ``offset.flush.interval.ms``."""
        return self.settings.flush_interval_ms

    def _batch_sent(self) -> None:
        """Every record of the batch taken last was handed to the producer (or dropped, or skipped)."""

    def _heartbeat_records(self) -> list[SourceRecord]:
        latest = self.submitted.latest
        offsets = [(self.submitted.partition(key), offset) for key, offset in latest.items()]
        records = self.hooks.produce_heartbeat_records(
            task=self.task, topic=self.settings.heartbeat_topic, offsets=offsets
        )
        self.heartbeat_calls += 1
        found = [keyed(record) for record in records or ()]
        self.heartbeat_records += len(found)
        return found

    def on_started(self) -> None:
        now = self.clock.now_ms()
        self._next_commit = now + self.commit_interval_ms
        self._next_heartbeat = now + self.settings.heartbeat_interval_ms
        self._passthrough = passes_bytes_through(self.key_converter) and passes_bytes_through(self.value_converter)
        self._raw_headers = sends_header_bytes_through(self.header_converter)

    def _take(self, records: Sequence[SourceRecord]) -> None:
        self._next_index = 0
        self._settled = False
        if isinstance(records, SourceBatch):
            if (
                not self.transforms
                and self._passthrough
                and (records.headers is None or self._raw_headers)
                and _raw_columns(records)
            ):
                self._to_send = records
                self._batch = self.submitted.submit_batch(records)
                return
            records = list(records)
        self._to_send = records
        self._batch = None

    def _send(self, now: int) -> bool:
        """Send the batch taken last from record :attr:`_next_index` on, each run of it (its consecutive records
        of one source partition to one topic) tracked as one entry of :attr:`submitted`; under
        ``errors.tolerance=all`` each record is a run of its own, so a tolerated failure names its own offset."""
        records = self._to_send
        assert records is not None
        start = self._next_index
        if self._batch is not None:
            return self._send_batch(records, self._batch, start)
        runs = Runs(self.submitted, records, self.tolerating)
        try:
            return self._send_runs(records, start, now, runs)
        finally:
            runs.close()

    def _send_runs(self, records: Sequence[SourceRecord], start: int, now: int, runs: Runs) -> bool:
        produce = self.producer.produce
        passthrough = self._passthrough
        transforms = self.transforms or None  # an empty chain is falsy through a method: test it once, not per record
        creation = self.topic_creation
        one_each = runs.one_each
        run = runs.run
        for index in range(start, len(records)):
            record = original = records[index]
            if transforms is not None:
                try:
                    transformed = transforms.apply(record)
                except StageFailed as failed:
                    retry_at = self.errors.retry_or_fail(failed.failure, self._retry)
                    if retry_at is not None:
                        return self._stop_sending(index, start, retry_at)
                    transformed = None  # skipped, so its offset may be committed (Java does the same)
                if transformed is None:  # dropped: its offset is committed, as Kafka Connect does
                    runs.skip(index, original)
                    run = runs.run
                    continue
                record = transformed
            topic, key, value = record.topic, record.key, record.value
            partition = original.source_partition
            if one_each or topic != runs.topic or (partition is not runs.partition and partition != runs.partition):
                # the topic written to is the active one, after the transforms (KIP-558)
                run = runs.open(index, partition, topic)
            if (
                passthrough
                and not record.headers
                and (key is None or type(key) is bytes)
                and (value is None or type(value) is bytes)
            ):
                headers = None
            else:
                try:
                    key, value, headers = self._convert(record)
                except StageFailed as failed:
                    retry_at = self.errors.retry_or_fail(failed.failure, self._retry)
                    if retry_at is not None:
                        return self._stop_sending(index, start, retry_at)
                    runs.skip(index, original)  # skipped, so its offset may be committed (Java does the same)
                    run = runs.run
                    continue
            if creation is not None and topic not in creation.known and not self._topic_ready(creation, topic):
                return self._stop_sending(index, start, now + SEND_FAILED_BACKOFF_MS)
            try:
                produce(topic, value, key, record.partition, record.timestamp, headers, None, run.ack)
            except QueueFullError:
                # back-pressure, not a failure: produce served delivery reports a while; go round and resend
                self._next_index = index
                self.records_sent += index - start
                return index > start
            except RetriableError as error:
                log.warning("retriable send failure to %s, retrying in %d ms: %s", topic, SEND_FAILED_BACKOFF_MS, error)
                return self._stop_sending(index, start, now + SEND_FAILED_BACKOFF_MS)
            except ProducerFencedError:  # a transactional producer a newer one fenced: no record can go any more
                raise
            except ConnectError as error:  # the producer refuses the record for good (too large, say)
                self.errors.failed(Failure(Stage.KAFKA_PRODUCE, class_name(self.producer), error, record))
                runs.skip(index, original)
                run = runs.run
                continue
            runs.end = index + 1
        runs.close()
        self.records_sent += len(records) - start
        self._to_send = None
        self._next_index = 0
        self._retry.succeeded()
        self._batch_sent()
        return True

    def _topic_ready(self, creation: TopicCreation, topic: str) -> bool:
        """Make sure ``topic`` exists before the first record to it (``AbstractWorkerSourceTask.maybeCreateTopic``);
        ``False`` when the cluster did not answer in time: send from this record again later, as after a retriable
        send failure. A topic that cannot be created fails the task, whatever ``errors.tolerance`` says."""
        try:
            creation.ensure(topic)
        except RetriableError as error:
            log.warning(
                "task %s: cannot tell whether topic %s exists, retrying in %d ms: %s",
                self.id,
                topic,
                SEND_FAILED_BACKOFF_MS,
                error,
            )
            return False
        return True

    def _stop_sending(self, index: int, start: int, retry_at: int) -> bool:
        """Stop at record ``index`` of the batch being sent until ``retry_at``; return whether any was sent."""
        self._next_index = index
        self._retry_at = retry_at
        self.records_sent += index - start
        return index > start

    def _delivery_failed(self, entry: SubmittedBatch, reason: object) -> None:
        """A tolerated delivery failure, told by :class:`Acks`."""
        partition = None if entry.key is None else dict(entry.key)  # type: ignore[call-overload]
        record = SourceRecord(partition, entry.offset, entry.topic, None)
        error = reason if isinstance(reason, Exception) else ConnectError(str(reason))
        self.errors.failed(Failure(Stage.KAFKA_PRODUCE, class_name(self.producer), error, record))

    def _send_batch(self, batch: Sequence[SourceRecord], entry: SubmittedBatch, start: int) -> bool:
        """Send a :class:`SourceBatch` of raw columns from record ``start`` on, as the transport sees fit."""
        assert isinstance(batch, SourceBatch)
        creation = self.topic_creation
        if creation is not None and batch.topic not in creation.known and not self._topic_ready(creation, batch.topic):
            self._next_index = start
            self._retry_at = self.clock.now_ms() + SEND_FAILED_BACKOFF_MS
            return False
        end = self.producer.produce_all(
            batch.topic, batch.values, batch.keys, batch.partition, batch.timestamps, entry.ack, start, batch.headers
        )
        self.records_sent += end - start
        if end < len(batch):  # the producer's queue stayed full: go round (serving acks) and resend from there
            self._next_index = end
            return end > start
        self._to_send = None
        self._batch = None
        self._next_index = 0
        self._batch_sent()
        return True

    def _convert(self, record: SourceRecord) -> tuple[bytes | None, bytes | None, RawHeaders | None]:
        """The record's key, value and headers as bytes; raises :class:`StageFailed` naming the failed stage."""
        topic = record.topic
        stage, converter = KEY_CONVERTER, self.key_converter
        try:
            key = converter.from_connect(topic, record.key_schema, record.key)
            stage, converter = VALUE_CONVERTER, self.value_converter
            value = converter.from_connect(topic, record.value_schema, record.value)
            stage, converter = HEADER_CONVERTER, self.header_converter  # type: ignore[assignment]
            headers = self._headers(record) if record.headers else None
        except Exception as error:
            raise StageFailed(Failure(stage, class_name(converter), error, record)) from error
        return key, value, headers

    def _headers(self, record: SourceRecord) -> list[tuple[str, bytes | None]]:
        convert = self.header_converter.from_connect
        return [(key, convert(record.topic, key, value)) for key, value in record.headers]

    @property
    def records_acked(self) -> int:
        """Records the broker acknowledged."""
        return self.acks.acked

    # ---- offsets ---------------------------------------------------------------------------------------------

    def commit_offsets(self) -> bool:
        """Write the committable offsets to the offset store. A failure keeps them for the next attempt, where
        newer offsets of the same partitions replace them. Its lines are logged as ``[name|task-N|offsets]``
        (Kafka Connect's ``SourceTaskOffsetCommitter`` commits in ``LoggingContext.forOffsets``)."""
        with for_offsets(self.id.connector, self.id.task):
            return self._commit_offsets()

    def _commit_offsets(self) -> bool:
        self._uncommitted.update(self.submitted.committable())
        offsets = list(self._uncommitted.values())
        for partition, offset in offsets:
            try:
                validate_offset_map("partition", partition)
                validate_offset_map("offset", offset)
            except TypeError as error:
                raise ConnectError(f"task {self.id}: cannot commit offsets: {error}") from None
        began = perf_counter()
        if offsets:
            try:
                self.offset_store.set(self.settings.connector, offsets, self.settings.flush_timeout_ms)
            except Exception as error:
                ended = perf_counter()
                self.commit_times.observe(ended - began, ended)
                self.commit_failures += 1
                log.error("offset commit failed, keeping %d offsets for the next attempt: %s", len(offsets), error)
                return False
            self._moved(self.clock.now_ms())
            self._uncommitted.clear()
        ended = perf_counter()
        self.commit_times.observe(ended - began, ended)
        self.commits += 1
        try:
            self.hooks.offsets_committed(task=self.task, offsets=offsets)
        except Exception:
            log.exception("offsets_committed hook failed")
        return True

    def _moved(self, now: int) -> None:
        """The offsets in :attr:`_uncommitted` were committed at ``now``: note the partitions whose offset moved."""
        known = self.partition_offsets
        for key, (partition, offset) in self._uncommitted.items():
            previous = known.get(key)
            if previous is None or previous[1] != offset:
                known[key] = (partition, offset, now)

    def before_stop(self) -> None:
        if self._cancelled:
            log.warning("the task was cancelled: skipping the final offset commit")
            return
        remaining = self.producer.flush(self.settings.flush_timeout_ms)
        if remaining:
            log.warning("%d records still unacknowledged at the final commit", remaining)
        self.commit_offsets()

    def close_clients(self) -> None:
        self.producer.close()

    def __repr__(self) -> str:
        return (
            f"WorkerSourceTask({self.id}, state={self.state.value}, sent={self.records_sent}, "
            f"acked={self.records_acked}, heartbeats={self.heartbeat_records}, commits={self.commits}, "
            f"{self.submitted!r})"
        )
