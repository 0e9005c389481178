"""A sink task's dead-letter queue: Kafka Connect's ``DeadLetterQueueReporter`` (KIP-298).

A record skipped under ``errors.tolerance=all`` is written to ``errors.deadletterqueue.topic.name`` with the key,
value, timestamp and headers it arrived with. With ``errors.deadletterqueue.context.headers.enable`` it also carries
Kafka Connect's ``__connect.errors.*`` headers (:data:`CONTEXT_HEADERS`), each a UTF-8 string. The topic is created
(one partition) when the task starts, if it is missing.

Each write is a :class:`DeadLetterFuture`; the sink loop calls :meth:`DeadLetterQueue.await_all` before every offset
commit, so no partition is committed past a skipped record until its dead-letter write is acknowledged, and a write
the broker refuses fails the task. The producer is used from any thread (ErrantRecordReporter may be called from a
task's own threads); its delivery reports are served by the task loop and by whoever waits on a write.
"""

from __future__ import annotations

import logging
import threading
import time
import traceback
from concurrent.futures import Future

from headwater.runtime.error_handling.tolerance import ErrorCounters, Failure, class_name
from headwater.runtime.transport.base import Admin, NewTopic, Producer, QueueFullError, RecordMetadata
from headwater.sdk.errors import ConnectError

log = logging.getLogger(__name__)

PREFIX = "__connect.errors."
CONTEXT_HEADERS = tuple(
    PREFIX + name
    for name in (
        "topic",
        "partition",
        "offset",
        "connector.name",
        "task.id",
        "stage",
        "class.name",
        "exception.class.name",
        "exception.message",
        "exception.stacktrace",
    )
)
"""The context headers' names, in the order they are added."""

QUEUE_FULL_WAIT_MS = 30_000
"""How long a dead-letter write waits for room in a full producer queue before it fails."""


def create_topic(admin: Admin, topic: str, replication_factor: int) -> None:
    """Create the dead-letter topic (one partition) unless it exists; the error names the settings involved."""
    try:
        admin.create_topics([NewTopic(topic, 1, replication_factor)])
    except ConnectError as error:
        raise ConnectError(
            f"cannot create the dead-letter topic {topic!r} (errors.deadletterqueue.topic.name) with "
            f"errors.deadletterqueue.topic.replication.factor={replication_factor}: {error}"
        ) from None


class DeadLetterFuture(Future[None]):
    """One dead-letter write; waiting on it serves the producer's delivery reports, so a task may wait on it from
    its own thread."""

    def __init__(self, queue: DeadLetterQueue, where: str) -> None:
        super().__init__()
        self._queue = queue
        self.where = where

    def result(self, timeout: float | None = None) -> None:
        self._serve(timeout)
        return super().result(timeout)

    def exception(self, timeout: float | None = None) -> BaseException | None:
        self._serve(timeout)
        return super().exception(timeout)

    def _serve(self, timeout: float | None) -> None:
        """Serve the producer's delivery reports until this write is done or ``timeout`` seconds have passed."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self.done():
            left = 1.0 if deadline is None else min(1.0, deadline - time.monotonic())
            if left <= 0:
                return
            self._queue.flush(int(left * 1000))


class DeadLetterQueue:
    """Writes one task's skipped records to its dead-letter topic."""

    def __init__(
        self,
        topic: str,
        producer: Producer,
        connector: str,
        task: int,
        context_headers: bool,
        counters: ErrorCounters,
    ) -> None:
        self.topic = topic
        self.producer = producer
        self.connector = connector
        self.task = task
        self.context_headers = context_headers
        self.counters = counters
        self._lock = threading.Lock()
        self._pending: list[DeadLetterFuture] = []

    def headers(self, failure: Failure) -> list[tuple[str, bytes | None]]:
        """The record's own headers, then the context headers when enabled."""
        record = failure.record
        headers: list[tuple[str, bytes | None]] = list(record.headers or ())
        if self.context_headers:
            error = failure.error
            values = (
                record.topic,
                str(record.partition),
                str(record.offset),
                self.connector,
                str(self.task),
                failure.stage.value,
                failure.executing_class,
                class_name(error),
                str(error),
                "".join(traceback.format_exception(error)),
            )
            headers += [(name, value.encode()) for name, value in zip(CONTEXT_HEADERS, values, strict=True)]
        return headers

    def send(self, failure: Failure) -> DeadLetterFuture:
        """Start writing ``failure.record`` (a consumed message: bytes as they arrived) to the topic."""
        record = failure.record
        future = DeadLetterFuture(self, failure.where())

        def delivered(error: Exception | None, metadata: RecordMetadata | None) -> None:
            if error is None:
                future.set_result(None)
                return
            self.counters.dlq_produce_failures += 1
            future.set_exception(
                ConnectError(f"cannot write {future.where} to the dead-letter topic {self.topic!r}: {error}")
            )

        headers = self.headers(failure)
        with self._lock:
            self.counters.dlq_produce_requests += 1
            self._pending.append(future)
        waited = 0
        while True:  # the producers are thread-safe: a write waits for no other thread
            try:
                self.producer.produce(self.topic, record.value, record.key, None, record.timestamp, headers, delivered)
                break
            except QueueFullError:
                if waited >= QUEUE_FULL_WAIT_MS:
                    delivered(ConnectError(f"the producer queue stayed full for {waited} ms"), None)
                    break
                self.producer.poll(100)
                waited += 100
            except ConnectError as error:
                delivered(error, None)
                break
        return future

    def poll(self) -> None:
        if self._pending:
            self.producer.poll(0)

    def flush(self, timeout_ms: int) -> int:
        return self.producer.flush(timeout_ms)

    def await_all(self, timeout_ms: int) -> bool:
        """Wait up to ``timeout_ms`` for every write so far; return whether all were acknowledged. Raises the
        :class:`ConnectError` of the first write the broker refused."""
        if not self._pending:
            return True
        self.producer.flush(timeout_ms)
        with self._lock:
            pending = self._pending
            for future in pending:
                if future.done() and future.exception() is not None:
                    error = future.exception()
                    assert error is not None
                    raise error
            self._pending = [future for future in pending if not future.done()]
            if self._pending:
                log.warning(
                    "task %s-%d: %d dead-letter writes to %r are not acknowledged yet; the offset commit waits",
                    self.connector,
                    self.task,
                    len(self._pending),
                    self.topic,
                )
            return not self._pending

    def close(self) -> None:
        self.producer.close()

    def __repr__(self) -> str:
        return f"DeadLetterQueue({self.topic!r}, pending={len(self._pending)})"
