"""Error handling for both task loops: Kafka Connect's ``RetryWithToleranceOperator`` (KIP-298).

A record that fails at some :class:`Stage` (a converter, a sink's ``put`` or its ErrantRecordReporter, a source's
produce) is handed to :meth:`ErrorHandler.failed`. With ``errors.tolerance=none`` that raises a
:class:`ConnectError` naming the stage and the record, and the task fails. With ``all`` the failure is counted,
logged as ``errors.log.*`` says and, for a sink with ``errors.deadletterqueue.topic.name``, written to the
dead-letter topic (:mod:`.dead_letter`); the record is then skipped.

Retriable errors (:class:`RetriableError`) are retried first, without blocking the loop: a :class:`Retry` says when
the next attempt is due, the delay doubling from 300 ms up to ``errors.retry.delay.max.ms``, until
``errors.retry.timeout`` has passed since the first failure (0: no retries, -1: without limit).
"""

from __future__ import annotations

import enum
import logging
import threading
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any, Protocol

from headwater.runtime.config.error_keys import ErrorSettings
from headwater.sdk.context import Clock
from headwater.sdk.errors import ConnectError, RetriableError

log = logging.getLogger(__name__)

RETRY_DELAY_MIN_MS = 300
"""The first wait between retries, as in Kafka Connect."""


class Stage(enum.Enum):
    """Where a record failed; the value of the ``__connect.errors.stage`` header."""

    KEY_CONVERTER = "KEY_CONVERTER"
    VALUE_CONVERTER = "VALUE_CONVERTER"
    HEADER_CONVERTER = "HEADER_CONVERTER"
    TRANSFORMATION = "TRANSFORMATION"
    TASK_PUT = "TASK_PUT"
    TASK_POLL = "TASK_POLL"
    KAFKA_PRODUCE = "KAFKA_PRODUCE"
    KAFKA_CONSUME = "KAFKA_CONSUME"


KEY_CONVERTER, VALUE_CONVERTER, HEADER_CONVERTER = Stage.KEY_CONVERTER, Stage.VALUE_CONVERTER, Stage.HEADER_CONVERTER
"""The stages of a record's conversion, for the loops that note them at each record: an enum member read through
its class costs ten times a global on Python 3.11."""


@dataclass
class ErrorCounters:
    """A task's error counts, under Kafka Connect's ``task-error-metrics`` names, for a metrics exporter."""

    record_failures: int = 0
    """``total-record-failures``: failed operations, retried or not."""
    record_errors: int = 0
    """``total-record-errors``: records whose operation failed for good (not retried again)."""
    records_skipped: int = 0
    """``total-records-skipped``: records skipped under ``errors.tolerance=all``."""
    retries: int = 0
    """``total-retries``: retries of operations that failed with a retriable error."""
    errors_logged: int = 0
    """``total-errors-logged``: failures written to the log."""
    dlq_produce_requests: int = 0
    """``deadletterqueue-produce-requests``: records sent to the dead-letter topic."""
    dlq_produce_failures: int = 0
    """``deadletterqueue-produce-failures``: dead-letter writes the broker refused."""
    last_error_ms: int | None = None
    """``last-error-timestamp``: when the last failure happened."""


@dataclass(frozen=True)
class Failure:
    """One record's failed operation. ``record`` is what failed as it arrived: the consumed message (bytes) for a
    sink, the :class:`~headwater.sdk.SourceRecord` for a source; ``executing_class`` names the converter, task or
    producer class."""

    stage: Stage
    executing_class: str
    error: BaseException
    record: Any

    def where(self) -> str:
        """The record's place: topic, partition and offset of a consumed record, topic and source offset else."""
        record = self.record
        if record is None:
            return "a record"
        offset = getattr(record, "offset", None)
        if isinstance(offset, int):
            return f"the record at topic {record.topic!r} partition {record.partition} offset {offset}"
        return (
            f"the record for topic {record.topic!r} from source partition {record.source_partition} "
            f"offset {record.source_offset}"
        )

    def describe(self, include_messages: bool) -> str:
        """A log line body in Kafka Connect's words, with the record's content when ``include_messages``."""
        text = f"Executing stage '{self.stage.value}' with class '{self.executing_class}', where {self.where()}"
        if include_messages and self.record is not None:
            text += f": {self.record!r}"
        return f"{text}. {type(self.error).__name__}: {self.error}"


class StageFailed(Exception):
    """Raised by a conversion with the :class:`Failure` it ended in (which stage, of which record)."""

    def __init__(self, failure: Failure) -> None:
        super().__init__(str(failure.error))
        self.failure = failure


def class_name(thing: object) -> str:
    """The qualified class name of ``thing`` (a class or an instance)."""
    cls = thing if isinstance(thing, type) else type(thing)
    return f"{cls.__module__}.{cls.__qualname__}"


class Retry:
    """The retry schedule of one operation that keeps failing with retriable errors."""

    def __init__(self, settings: ErrorSettings, clock: Clock, counters: ErrorCounters) -> None:
        self._settings = settings
        self._clock = clock
        self._counters = counters
        self._first_failure: int | None = None
        self.attempts = 0

    @property
    def enabled(self) -> bool:
        return self._settings.retry_timeout_ms != 0

    @property
    def failing_for_ms(self) -> int:
        """How long the operation has been failing (0 when it is not)."""
        return 0 if self._first_failure is None else self._clock.now_ms() - self._first_failure

    def next_attempt(self) -> int | None:
        """The operation failed again: when to try next (clock milliseconds), or ``None`` once
        ``errors.retry.timeout`` has passed since its first failure."""
        now = self._clock.now_ms()
        if self._first_failure is None:
            self._first_failure = now
        timeout = self._settings.retry_timeout_ms
        deadline = None if timeout < 0 else self._first_failure + timeout
        if deadline is not None and now >= deadline:
            return None  # counted by ErrorHandler.failed, which handles it from here
        self._counters.record_failures += 1
        self._counters.last_error_ms = now
        delay = min(RETRY_DELAY_MIN_MS << min(self.attempts, 30), self._settings.retry_delay_max_ms)
        self.attempts += 1
        self._counters.retries += 1
        return now + delay if deadline is None else min(now + delay, deadline)

    def succeeded(self) -> None:
        self._first_failure = None
        self.attempts = 0


def _done() -> Future[None]:
    future: Future[None] = Future()
    future.set_result(None)
    return future


class ErrorReporter(Protocol):
    """Where a tolerated failure is reported beyond the log (Kafka Connect's ``ErrorReporter``): the sink's
    dead-letter queue (:class:`~headwater.runtime.error_handling.dead_letter.DeadLetterQueue`)."""

    def send(self, failure: Failure) -> Future[None]:
        """Report ``failure``; the future completes when the report is durable."""
        ...

    def await_all(self, timeout_ms: int) -> bool:
        """Wait for every report so far; whether all completed in time (raises when one was refused)."""
        ...

    def poll(self) -> None:
        """Serve delivery reports."""
        ...

    def close(self) -> None: ...


class ErrorHandler:
    """Applies one task's ``errors.*`` settings to its failed records; see the module docstring."""

    def __init__(
        self,
        task: str,
        settings: ErrorSettings,
        clock: Clock,
        dead_letters: ErrorReporter | None = None,
    ) -> None:
        self.task = task
        self.settings = settings
        self.clock = clock
        self.counters = ErrorCounters()
        self.dead_letters = dead_letters
        self.last_failure: Failure | None = None
        """The last failure that was not retried (again)."""
        self.put_skipped = 0
        """Records skipped at stage ``TASK_PUT`` (a sink's reported ones): put was given them, yet they failed."""
        self._warned = False
        self._lock = threading.Lock()
        """Failures are handled one at a time: a sink task may report from threads of its own."""

    def retry(self) -> Retry:
        """A retry schedule for one operation, counted in this handler's counters."""
        return Retry(self.settings, self.clock, self.counters)

    def retry_or_fail(self, failure: Failure, retry: Retry) -> int | None:
        """A retriable failure within ``errors.retry.timeout`` of ``retry``'s first: return when to try again.
        Anything else goes to :meth:`failed` (which raises unless errors are tolerated), and ``None`` is returned."""
        if isinstance(failure.error, RetriableError) and retry.enabled:
            at = retry.next_attempt()
            if at is not None:
                log.warning(
                    "task %s: %s failed with a retriable error for %s, retrying in %d ms: %s",
                    self.task,
                    failure.stage.value,
                    failure.where(),
                    at - self.clock.now_ms(),
                    failure.error,
                )
                return at
        retry.succeeded()
        self.failed(failure)
        return None

    def failed(self, failure: Failure) -> Future[None]:
        """Handle a failure that will not be retried (again). Raises :class:`ConnectError` with
        ``errors.tolerance=none``; else skips the record and returns its dead-letter write (done at once when
        there is no dead-letter topic)."""
        with self._lock:
            return self._failed(failure)

    def _failed(self, failure: Failure) -> Future[None]:
        counters = self.counters
        counters.record_failures += 1
        counters.record_errors += 1
        counters.last_error_ms = self.clock.now_ms()
        self.last_failure = failure
        settings = self.settings
        if not settings.tolerate:
            raise ConnectError(
                f"task {self.task}: {failure.stage.value} with class '{failure.executing_class}' failed for "
                f"{failure.where()} and errors.tolerance=none "
                f"(Tolerance exceeded in error handler): {type(failure.error).__name__}: {failure.error}"
            ) from failure.error
        counters.records_skipped += 1
        if failure.stage is Stage.TASK_PUT:
            self.put_skipped += 1
        self._log(failure)
        if self.dead_letters is None or failure.record is None:
            return _done()
        return self.dead_letters.send(failure)

    def _log(self, failure: Failure) -> None:
        settings = self.settings
        if settings.log_enable:
            self.counters.errors_logged += 1
            log.error(
                "Error encountered in task %s. %s",
                self.task,
                failure.describe(settings.log_include_messages),
                exc_info=failure.error if settings.log_include_messages else None,
            )
        elif not self._warned:
            self._warned = True
            where = f"sent to the dead-letter topic {settings.dlq_topic!r}" if self.dead_letters else "dropped"
            log.warning(
                "task %s: skipping a failed record (errors.tolerance=all); it is %s. This is logged once per task: "
                "set errors.log.enable=true to log every skipped record. %s",
                self.task,
                where,
                failure.describe(False),
            )
        else:
            log.debug("task %s: skipping a failed record: %s", self.task, failure.describe(False))

    def await_reports(self, timeout_ms: int) -> bool:
        """Wait for every dead-letter write so far; return whether all were acknowledged in time. Raises
        :class:`ConnectError` when the broker refused one: its record's offset must not be committed."""
        if self.dead_letters is None:
            return True
        return self.dead_letters.await_all(timeout_ms)

    def poll(self) -> None:
        """Serve the dead-letter producer's delivery reports."""
        if self.dead_letters is not None:
            self.dead_letters.poll()

    def close(self) -> None:
        if self.dead_letters is not None:
            self.dead_letters.close()
