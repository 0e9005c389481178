"""The sink task loop (Kafka Connect's ``WorkerSinkTask`` with KIP-89's ``pre_commit`` and ``request_commit``).

One pass: apply a pause or resume; commit if requested or ``offset.flush.interval.ms`` has passed; time out a
commit outstanding longer than ``offset.flush.timeout.ms``; apply ``context.offset`` rewinds; poll (rebalance
callbacks run inside); convert; ``put``. ``current_offsets`` (next offset to consume) move only after ``put``
succeeds. Revocation runs pre_commit -> close -> commit; shutdown runs pre_commit -> close(all) -> commit -> stop.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Collection, Mapping, Sequence
from functools import partial
from operator import attrgetter
from time import perf_counter

from headwater.runtime.clock import SystemClock
from headwater.runtime.config.connector import TaskSettings
from headwater.runtime.error_handling.dead_letter import DeadLetterQueue
from headwater.runtime.error_handling.tolerance import Failure, Stage, class_name
from headwater.runtime.tasks.base import StateListener, TaskId, WorkerTask
from headwater.runtime.tasks.sink_context import WorkerSinkTaskContext
from headwater.runtime.tasks.sink_conversion import SinkConversion, joined
from headwater.runtime.tasks.timing import BatchTimes
from headwater.runtime.transport.base import Consumer, Message, Producer
from headwater.sdk.context import Clock
from headwater.sdk.errors import ConnectError, RetriableError
from headwater.sdk.records import SinkRecord, TopicPartition
from headwater.sdk.task import SinkTask

log = logging.getLogger(__name__)

_TOPIC = attrgetter("topic")

MAX_POLL_WAIT_MS = 100
"""Longest wait of one poll, so the loop notices a stop request at once (Kafka Connect wakes its consumer up): a
task handed to another worker commits before it goes rather than being cancelled in a poll waiting for records."""


class WorkerSinkTask(WorkerTask):
    task: SinkTask
    context: WorkerSinkTaskContext

    def __init__(
        self,
        id: TaskId,
        task: SinkTask,
        config: Mapping[str, str],
        settings: TaskSettings,
        consumer: Consumer,
        clock: Clock | None = None,
        listener: StateListener | None = None,
        plugins: list[object] | None = None,
        dead_letter_producer: Producer | None = None,
    ) -> None:
        super().__init__(id, task, config, settings, clock or SystemClock(), listener, plugins)
        self.consumer = consumer
        if dead_letter_producer is not None:
            errors = settings.errors
            self.errors.dead_letters = DeadLetterQueue(
                errors.dlq_topic,
                dead_letter_producer,
                id.connector,
                id.task,
                errors.dlq_context_headers,
                self.errors.counters,
            )
        self.errant_failure: ConnectError | None = None
        """A report the errors were not tolerated for: the task fails at its next pass, whatever the task did."""
        self._put_retry = self.errors.retry()
        self._retry_at = 0
        """While a retriable failure waits for its next attempt: when that is (clock milliseconds)."""
        self._unconverted: Sequence[Message] = ()
        """Fetched records whose conversion waits for a retry."""
        self.current_offsets: dict[TopicPartition, int] = {}
        self.last_committed: dict[TopicPartition, int] = {}
        self._raw: Sequence[Message] = ()
        """Records fetched and not yet put (all of them, whatever their conversion gave)."""
        self._records: Sequence[SinkRecord] = ()
        """What the next ``put`` gets: the converted records of :attr:`_raw`."""
        self._paused_for_redelivery = False
        self._paused_for_target = False
        self._rebalance_error: BaseException | None = None
        self._closed = False
        self._committing = False
        self._commit_started = 0
        self._commit_seqno = 0
        self._next_commit = 0
        self.active_topics: set[str] = set()
        """Topics of the records put received (KIP-558), noted once ``put`` returned: the topics consumed from, or
        with transforms the topics of the transformed records. Kafka Connect's ``WorkerSinkTask`` notes the consumed
        topic even where a transform renames it or drops the record; here a topic a RegexRouter renamed away is
        never listed."""
        self.records_read = 0
        """Records the consumer returned (before conversion and transformation)."""
        self.records_put = 0
        self.commits = 0
        self.commit_failures = 0
        self.commits_skipped = 0
        self.put_times = BatchTimes()
        """Durations of the ``put`` calls that returned (an empty batch included)."""
        self.commit_times = BatchTimes()
        """Durations of offset commits, from ``pre_commit`` to the commit's completion, failed ones included."""
        self._commit_began = 0.0

    @property
    def all_paused(self) -> bool:
        """Whether every partition is paused by the runtime (connector paused, or a batch awaiting redelivery)."""
        return self._paused_for_redelivery or self._paused_for_target

    def initialize(self) -> None:
        self.context = WorkerSinkTaskContext(self)
        self.task.initialize(self.context)

    def on_started(self) -> None:
        self._renames = bool(self.transforms)
        """Whether transforms may rename a record's topic: then the topics put are read off the records."""
        self.conversion = SinkConversion(
            self.key_converter, self.value_converter, self.header_converter, self.errors, self.transforms
        )
        self._next_commit = self.clock.now_ms() + self.settings.flush_interval_ms
        if self.settings.topics_regex:  # WorkerSinkTask subscribes with the pattern
            self.consumer.subscribe_pattern(re.compile(self.settings.topics_regex), self)
        else:
            self.consumer.subscribe(list(self.settings.topics), self)

    # ---- the loop --------------------------------------------------------------------------------------------

    def iteration(self) -> bool:
        if self.errant_failure is not None:
            raise self.errant_failure
        if self.errors.dead_letters is not None:
            self.errors.poll()
        if self.tolerating:
            self.all_skipped.check(self.records_put - self.errors.put_skipped, self.errors)
        if self._target_paused != self._paused_for_target:
            self._apply_target_state()
        now = self.clock.now_ms()
        context = self.context
        if not self._committing and (context.commit_requested or now >= self._next_commit):
            self.commit_offsets(now, closing=False)
            self._next_commit = now + self.settings.flush_interval_ms
            context.commit_requested = False
        if self._committing and now >= self._commit_started + self.settings.flush_timeout_ms:
            log.error("offset commit %d timed out; allowing a new one", self._commit_seqno)
            self.commit_failures += 1
            self._committing = False
        timeout = self._next_commit - now  # branches, not min(max(...)): two builtin calls a pass
        if timeout > MAX_POLL_WAIT_MS:
            timeout = MAX_POLL_WAIT_MS
        elif timeout < 0:
            timeout = 0
        if context.timeout_ms is not None:
            timeout = min(timeout, context.timeout_ms)
            context.timeout_ms = None
        return self._poll(timeout)

    def _apply_target_state(self) -> None:
        assignment = self.consumer.assignment()
        if self._target_paused:
            self._paused_for_target = True
            self.consumer.pause(assignment)
            self.context.request_commit()
        else:
            self._paused_for_target = False
            if not self._paused_for_redelivery:
                self.consumer.resume(assignment - self.context.paused_partitions)

    def _poll(self, timeout_ms: int) -> bool:
        if self.context.rewinds:
            self._rewind()
        messages = self.consumer.poll(self.settings.max_poll_records, timeout_ms)
        if self._rebalance_error is not None:
            error, self._rebalance_error = self._rebalance_error, None
            raise error
        if self._retry_at:
            if self.clock.now_ms() < self._retry_at:
                return False  # the consumer is paused: that poll only served the group
            self._retry_at = 0
            if self._unconverted:
                pending, self._unconverted = self._unconverted, ()
                self._convert(pending)
        if messages:
            self.records_read += len(messages)
            if not self._raw and self.conversion.as_they_are:  # the usual pass: nothing held back, handed on as is
                self._raw = self._records = messages
            else:
                self._raw = joined(self._raw, messages)
                if self.conversion.as_they_are:
                    self._records = joined(self._records, messages)
                else:
                    self._convert(messages)
        if self._unconverted:
            return False
        return self._deliver()

    def _convert(self, messages: Sequence[Message]) -> None:
        self._records, self._unconverted, retry_at = self.conversion.convert(self._records, messages)
        if retry_at is not None:
            self._wait_for_retry(retry_at)

    def _wait_for_retry(self, at: int) -> None:
        self._retry_at = at
        self._pause_for_redelivery()

    def _pause_for_redelivery(self) -> None:
        """Stop fetching until the records held now are put (resumed in :meth:`_deliver`)."""
        if not self._paused_for_redelivery:
            self._paused_for_redelivery = True
            self.consumer.pause(self.consumer.assignment())

    def _deliver(self) -> bool:
        records = self._records
        began = perf_counter()
        try:
            self.task.put(records)
            ended = perf_counter()
            self.put_times.observe(ended - began, ended)
        except RetriableError as error:
            if not self._put_retry.enabled:  # Kafka Connect's rule: redelivered without limit
                log.warning(
                    "retriable error from put; the same %d records come again: %s",
                    len(records),
                    error,
                )
                self._pause_for_redelivery()
                return False
            at = self._put_retry.next_attempt()
            if at is None:
                self._put_gave_up(records, error)
            else:
                log.warning(
                    "retriable error from put; the same %d records come again in %d ms: %s",
                    len(records),
                    at - self.clock.now_ms(),
                    error,
                )
                self._wait_for_retry(at)
                return False
        if self._put_retry.attempts:
            self._put_retry.succeeded()
        raw, self._raw, self._records = self._raw, (), ()
        if raw:
            # Every record the consumer returned has now been put, so the consumer's positions are exactly the
            # next offsets to commit (Java's currentOffsets), with no walk over the records.
            current = self.current_offsets
            active = self.active_topics
            renames = self._renames
            for tp, position in self.consumer.positions().items():
                if current.get(tp) != position:
                    current[tp] = position
                    if not renames and tp.topic not in active:
                        active.add(tp.topic)
            if renames:  # the topics put received, after the transforms (a dropped record names none)
                active.update(map(_TOPIC, records))
        self.records_put += len(records)
        if self._paused_for_redelivery:
            self._paused_for_redelivery = False
            if not self._paused_for_target:
                self.consumer.resume(self.consumer.assignment() - self.context.paused_partitions)
        return bool(raw)

    def _put_gave_up(self, records: Sequence[SinkRecord], error: RetriableError) -> None:
        """``put`` kept failing past ``errors.retry.timeout``: fail, or skip the batch's records when tolerated."""
        failing = self._put_retry.failing_for_ms
        self._put_retry.succeeded()
        timeout = self.settings.errors.retry_timeout_ms
        given_up = ConnectError(
            f"put kept failing with retriable errors for {failing} ms, past errors.retry.timeout={timeout}: {error}"
        )
        given_up.__cause__ = error
        reporter = self.context.errant_record_reporter
        for record in records:
            self.errors.failed(Failure(Stage.TASK_PUT, class_name(self.task), given_up, reporter.original(record)))

    def _rewind(self) -> None:
        rewinds = self.context.rewinds
        if not rewinds:
            return
        assigned = self.consumer.assignment()
        for tp, offset in rewinds.items():
            if tp not in assigned:
                log.warning("ignoring a rewind of unassigned partition %s", tp)
                continue
            self.consumer.seek(tp, offset)
            self.last_committed[tp] = offset
            self.current_offsets[tp] = offset
        self._drop_buffered(set(rewinds))
        rewinds.clear()

    def _drop_buffered(self, partitions: Collection[TopicPartition]) -> None:
        if self._unconverted:
            self._unconverted = [m for m in self._unconverted if (m.topic, m.partition) not in partitions]
        if self._raw:
            keep = [i for i, m in enumerate(self._raw) if (m.topic, m.partition) not in partitions]
            if len(keep) != len(self._raw):
                self._raw = [self._raw[i] for i in keep]
                self._records = [r for r in self._records if (r.topic, r.partition) not in partitions]

    # ---- commits ---------------------------------------------------------------------------------------------

    def commit_offsets(self, now: int, closing: bool, partitions: Collection[TopicPartition] | None = None) -> None:
        """Ask ``pre_commit`` what is safe, keep what is valid, and commit it (async, or sync when closing)."""
        assigned = self.consumer.assignment()
        wanted = assigned if partitions is None else frozenset(partitions)
        requested = {tp: off for tp, off in self.current_offsets.items() if tp in wanted}
        if not requested:
            return
        self._committing = True
        self._commit_seqno += 1
        self._commit_started = now
        self._commit_began = perf_counter()
        last = {tp: off for tp, off in self.last_committed.items() if tp in wanted}
        try:
            provided = self.hooks.pre_commit(task=self.task, current_offsets=dict(requested))
        except Exception as error:
            self.commit_failures += 1
            self._committing = False
            if closing:
                log.warning("pre_commit failed while closing partitions: %s", error)
            else:
                log.error("pre_commit failed; rewinding to the last committed offsets: %s", error)
                for tp, offset in last.items():
                    self.consumer.seek(tp, offset)
                self.current_offsets.update(last)
                self._drop_buffered(set(last))
            return
        finally:
            if closing:
                self.task.close(wanted)
        if provided and not self.errors.await_reports(self.settings.flush_timeout_ms):
            self.commits_skipped += 1  # a dead-letter write is not acknowledged yet: no offset may pass it
            self._committing = False
            return
        if not provided:
            log.debug("pre_commit returned no offsets; skipping the commit")
            self.commits_skipped += 1
            self._committing = False
            return
        committable = dict(last)
        for tp, offset in provided.items():
            if tp in requested:
                if offset <= requested[tp]:
                    committable[tp] = offset
                else:
                    log.warning("ignoring offset %d for %s: only %d was consumed", offset, tp, requested[tp])
            elif tp in assigned:
                log.debug("ignoring offset for %s, which is not being committed", tp)
            else:
                log.warning("ignoring offset for %s, which is not assigned to it", tp)
        if committable == last:
            log.debug("nothing new to commit")
            self.commits_skipped += 1
            self._committing = False
            return
        seqno = self._commit_seqno
        if closing:
            if self._cancelled:
                log.warning("the task was cancelled: skipping its final offset commit")
                self._committing = False
                return
            try:
                self.consumer.commit(committable, asynchronous=False)
            except Exception as error:
                self._commit_completed(seqno, error, committable)
            else:
                self._commit_completed(seqno, None, committable)
        else:
            self.consumer.commit(committable, asynchronous=True, on_complete=partial(self._commit_completed, seqno))

    def _commit_completed(self, seqno: int, error: Exception | None, offsets: Mapping[TopicPartition, int]) -> None:
        if seqno != self._commit_seqno:
            log.debug("ignoring the completion of stale commit %d", seqno)
            self.commits_skipped += 1
            return
        self._committing = False
        ended = perf_counter()
        self.commit_times.observe(ended - self._commit_began, ended)
        if error is not None:
            log.error("offset commit %d failed: %s", seqno, error)
            self.commit_failures += 1
            return
        self.last_committed.update(offsets)
        self.commits += 1
        try:
            self.hooks.offsets_committed(task=self.task, offsets=dict(offsets))
        except Exception:
            log.exception("offsets_committed hook failed")

    # ---- rebalances ------------------------------------------------------------------------------------------

    def on_partitions_revoked(self, partitions: Collection[TopicPartition]) -> None:
        if self._closed or not partitions:
            return
        try:
            self.commit_offsets(self.clock.now_ms(), closing=True, partitions=partitions)
        except Exception as error:
            self._rebalance_error = error
        self._forget(partitions)

    def on_partitions_lost(self, partitions: Collection[TopicPartition]) -> None:
        if self._closed or not partitions:
            return
        try:
            self.task.close(partitions)
        except Exception as error:
            self._rebalance_error = error
        self._forget(partitions)

    def on_partitions_assigned(self, partitions: Collection[TopicPartition]) -> None:
        if self._closed:
            return
        try:
            for tp in partitions:
                position = self.consumer.position(tp)
                self.last_committed[tp] = position
                self.current_offsets[tp] = position
            if partitions and self.all_paused:
                self.consumer.pause(partitions)
            if partitions:
                self.task.open(partitions)
            self._rewind()
        except Exception as error:
            self._rebalance_error = error

    def _forget(self, partitions: Collection[TopicPartition]) -> None:
        for tp in partitions:
            self.last_committed.pop(tp, None)
            self.current_offsets.pop(tp, None)
            self.context.paused_partitions.discard(tp)
        self._drop_buffered(set(partitions))

    # ---- shutdown --------------------------------------------------------------------------------------------

    def before_stop(self) -> None:
        self.commit_offsets(self.clock.now_ms(), closing=True, partitions=self.consumer.assignment())

    @property
    def commit_seqno(self) -> int:
        """The sequence number of the latest offset commit (Kafka Connect's ``offset-commit-seq-no``)."""
        return self._commit_seqno

    def active_records(self) -> int:
        """Records read from Kafka and not yet committed (Kafka Connect's ``sink-record-active-count``): those
        fetched and not yet put, plus, per partition, how far the offset put is past the offset committed. Safe to
        call from another thread than the task's (the metrics collector does)."""
        current, committed = dict(self.current_offsets), dict(self.last_committed)
        buffered = len(self._raw)
        return buffered + sum(max(offset - committed.get(tp, offset), 0) for tp, offset in current.items())

    def lag(self) -> dict[TopicPartition, int]:
        """Per assigned partition, records in it the task has not been given yet: the consumer's last known high
        watermark minus the next offset to put; partitions whose high watermark is not known yet are left out.
        Asks the broker nothing; safe to call from another thread than the task's."""
        current = dict(self.current_offsets)
        if not current or self._closed:
            return {}
        highs = self.consumer.high_watermarks(list(current))
        return {tp: max(high - current[tp], 0) for tp, high in highs.items() if tp in current}

    def close_clients(self) -> None:
        self._closed = True
        try:
            self.consumer.close()
        finally:
            self.errors.close()

    def __repr__(self) -> str:
        return (
            f"WorkerSinkTask({self.id}, state={self.state.value}, put={self.records_put}, "
            f"current={ {str(k): v for k, v in self.current_offsets.items()} }, "
            f"committed={ {str(k): v for k, v in self.last_committed.items()} })"
        )
