"""The exactly-once source task loop (Kafka Connect's ``ExactlyOnceWorkerSourceTask``, KIP-618).

The same loop as :class:`~headwater.runtime.tasks.source.WorkerSourceTask`, over a transactional producer whose
``transactional.id`` is the task's, the same for each of its generations:

- At start, :meth:`~headwater.runtime.transport.base.TransactionalProducer.init_transactions` fences every older
  producer of the task (a zombie of an earlier generation, or the producer of a worker that died) and aborts the
  transaction it left open; only then are the offsets topics read (``read_committed``: the connector's own
  ``offsets.storage.topic`` and the worker's, when it has one) and the task started, so it resumes from the last
  committed transaction.
- A transaction begins with the first batch taken after the last one ended. It holds the batch's records, heartbeat
  records too, and the source offsets of the records it holds (written first with the poll boundary, last
  otherwise), to the connector's offsets topic (the worker's unless ``offsets.storage.topic`` names one); so records
  and offsets are stored together or not at all.
- It commits at the boundary the connector's ``transaction.boundary`` names: after every batch ``poll`` returned
  (poll), every ``transaction.boundary.interval.ms`` (interval), or when the task asks through its
  :class:`~headwater.sdk.transactions.TransactionContext` (connector), which may also abort one.
- With the poll and interval boundaries the commit (waiting for the records' acknowledgements, then
  ``commit_transaction``) runs on the task's committer thread while the task thread polls the connector for the next
  batch; the next transaction begins only once the commit returned, and the ``offsets_committed`` hook is called on
  the task thread then. A batch polled ahead of a commit that fails is never sent: the task fails, and the next
  generation polls it again from the offsets last committed.
- A producer that is fenced, or a commit that fails, fails the task: what the transaction held is never shown to a
  ``read_committed`` consumer, and the next generation resumes from the offsets last committed.
- A graceful stop commits the open transaction when the last batch was sent whole, and aborts it otherwise; a failed
  or cancelled task commits nothing.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from time import perf_counter
from typing import Protocol

from headwater.runtime.config.connector import TaskSettings
from headwater.runtime.config.exactly_once_support import CONNECTOR, INTERVAL_BOUNDARY, POLL, Transactions
from headwater.runtime.logs.context import for_offsets
from headwater.runtime.storage.offsets import OffsetStore, PartitionOffset
from headwater.runtime.tasks.base import NotReadyToStart, State, StateListener, TaskId
from headwater.runtime.tasks.source import WorkerSourceTask
from headwater.runtime.tasks.source_context import WorkerSourceTaskContext
from headwater.runtime.tasks.submitted import PartitionKey, newest_offsets, partition_key
from headwater.runtime.tasks.transaction_context import WorkerTransactionContext
from headwater.runtime.transport.base import ProducerFencedError, TransactionalProducer
from headwater.sdk.context import Clock
from headwater.sdk.errors import ConnectError, RetriableError
from headwater.sdk.records import SourceBatch, SourceOffset, SourceRecord, validate_offset_map
from headwater.sdk.task import SourceTask

log = logging.getLogger(__name__)

TRANSACTION_TIMEOUT_MS = 60_000
"""How long ``init_transactions``, ``commit`` and ``abort`` may take, retried while the cluster answers that it is
busy (the Java producer's ``max.block.ms`` default, which Kafka Connect's transactional calls wait on)."""


class TransactionalOffsets(Protocol):
    """An offset store that can write offsets inside a producer's transaction
    (:class:`~headwater.runtime.storage.kafka_offsets.KafkaOffsetStore`, or a connector's own offsets topic with the
    worker's as fallback, :class:`~headwater.runtime.storage.connector_offsets.ConnectorOffsetStore`)."""

    def send_in(self, producer: TransactionalProducer, connector: str, offsets: Sequence[PartitionOffset]) -> None: ...

    def refresh(self) -> None: ...

    def committed(self, connector: str, offsets: Sequence[PartitionOffset]) -> None:
        """The transaction that held ``offsets`` committed (a connector's own offsets topic copies them to the
        worker's then)."""


class ExactlyOnceWorkerSourceTask(WorkerSourceTask):
    producer: TransactionalProducer

    def __init__(
        self,
        id: TaskId,
        task: SourceTask,
        config: Mapping[str, str],
        settings: TaskSettings,
        producer: TransactionalProducer,
        offset_store: OffsetStore,
        transactions: Transactions,
        clock: Clock | None = None,
        listener: StateListener | None = None,
        plugins: list[object] | None = None,
    ) -> None:
        super().__init__(id, task, config, settings, producer, offset_store, clock, listener, plugins)
        if not hasattr(offset_store, "send_in"):
            raise ConnectError(f"task {id}: exactly-once delivery needs an offsets topic; {offset_store!r} is not one")
        self.offsets: TransactionalOffsets = offset_store  # type: ignore[assignment]
        self.transactions = transactions
        self.context_transactions = WorkerTransactionContext() if transactions.boundary == CONNECTOR else None
        self._open = False
        self._before: dict[PartitionKey, SourceOffset | None] = {}
        """The newest submitted offset per source partition when the open transaction began."""
        self._after: list[tuple[Sequence[SourceRecord], str | None]] = []
        """With connector-defined boundaries: the rest of the polled batch, in parts, each with what to do once it
        is sent (commit, abort or nothing)."""
        self._then: str | None = None
        """What to do once the part being sent is sent."""
        self.aborts = 0
        self.transaction_sizes: list[int] = []
        """Records per committed transaction (the last 500 to 1000)."""
        self.transaction_records = 0
        """Records in the committed transactions."""
        self._size = 0
        self._heartbeats_alone = False
        self._fenced_older = False
        """Whether :meth:`initialize` fenced the task's older producers already (a start tried again does not)."""
        self._committing: tuple[Future[None], list[PartitionOffset]] | None = None
        """The commit in flight and the offsets it commits; :meth:`_settle` waits for it."""
        self._committer: ThreadPoolExecutor | None = None
        self._offsets_sent: list[PartitionOffset] | None = None
        """The open transaction's offsets, when written into it already (:meth:`_send_offsets_first`)."""

    # ---- start ---------------------------------------------------------------------------------------------------

    def initialize(self) -> None:
        """Fence the task's older producers first, then read the offsets they committed. A transaction of a sibling
        task still open on the offsets topic holds them back (a read stops at the last stable offset), so the task
        is :class:`NotReadyToStart` until it ended, as Kafka Connect's task waits in ``KafkaBasedLog.readToEnd``."""
        if not self._fenced_older:
            self._retrying(lambda: self.producer.init_transactions(TRANSACTION_TIMEOUT_MS), "initialise transactions")
            self._fenced_older = True
        try:
            self.offsets.refresh()
        except RetriableError as error:
            raise NotReadyToStart(f"its committed offsets cannot be read yet: {error}") from None
        super().initialize()

    def _context(self) -> WorkerSourceTaskContext:
        context = super()._context()
        context.transaction_context = self.context_transactions
        return context

    @property
    def commit_interval_ms(self) -> int:
        if self.transactions.boundary == INTERVAL_BOUNDARY:
            return self.transactions.interval_ms
        return self.settings.flush_interval_ms

    # ---- the loop's points -----------------------------------------------------------------------------------

    def iteration(self) -> bool:
        """The source loop's pass, after the commit in flight (if any) returned; a producer fenced anywhere in it
        fails the task saying so."""
        try:
            self._settle()
            return super().iteration()
        except ProducerFencedError as error:
            raise self._fenced(error) from None

    def next_pass_due(self) -> int:
        return self.clock.now_ms() if self._committing is not None else super().next_pass_due()

    def _take(self, records: Sequence[SourceRecord]) -> None:
        if self.context_transactions is not None:
            if self._heartbeats_alone:  # heartbeats while no transaction is open commit on their own
                self._then, self._after = "commit", []
            elif not isinstance(records, SourceBatch):
                (records, self._then), *self._after = self._split(records)
        self._heartbeats_alone = False
        self._take_in_transaction(records)

    def _take_in_transaction(self, records: Sequence[SourceRecord]) -> None:
        self._settle()  # the next transaction's records go only once the last one committed
        if not self._open:
            self.producer.begin()
            self._open = True
            self._before = dict(self.submitted.latest)
            self._size = 0
            self._offsets_sent = None
        self._size += len(records)
        super()._take(records)
        if self.transactions.boundary == POLL:
            self._send_offsets_first(records)

    def _send_offsets_first(self, records: Sequence[SourceRecord]) -> None:
        """With the poll boundary a transaction holds one batch, whose offsets are known once it is taken: written
        before its records, the offsets topic's partition joins the transaction in the same ``AddPartitionsToTxn``
        request as the records' partition (librdkafka registers the partitions produced to within 1 ms of the first
        in one request), not one round trip after it. Order within a transaction is invisible to its readers."""
        with for_offsets(self.id.connector, self.id.task):
            offsets = self._checked(newest_offsets(records))
            if offsets:
                self.offsets.send_in(self.producer, self.settings.connector, offsets)
        self._offsets_sent = [*(self._offsets_sent or ()), *offsets]  # heartbeats may join the open transaction

    def _heartbeat_records(self) -> list[SourceRecord]:
        found = super()._heartbeat_records()
        self._heartbeats_alone = bool(found) and not self._open
        return found

    def _split(self, records: Sequence[SourceRecord]) -> list[tuple[Sequence[SourceRecord], str | None]]:
        """The batch in parts, each ending right after a record the task asked to commit or abort on."""
        context = self.context_transactions
        assert context is not None
        parts: list[tuple[Sequence[SourceRecord], str | None]] = []
        start = 0
        for index, record in enumerate(records):
            request = context.record_request(record)
            if request is not None:
                parts.append((records[start : index + 1], request))
                start = index + 1
        if start < len(records) or not parts:
            parts.append((records[start:], None))
        return parts

    def _batch_sent(self) -> None:
        boundary = self.transactions.boundary
        if boundary == POLL:
            self._commit_transaction(background=True)
            self._poll_ahead()
            return
        if boundary != CONNECTOR:
            return
        context = self.context_transactions
        assert context is not None
        then, self._then = self._then, None
        if not self._after:
            batch = context.batch_request()
            if then is not None and batch is not None and batch != then:
                raise ConnectError(f"the task asked to {then} and to {batch} the same transaction")
            then = then or batch
        if then == "commit":
            self._commit_transaction()
        elif then == "abort":
            self._abort_transaction()
        if self._after:
            records, self._then = self._after.pop(0)
            self._take_in_transaction(records)

    def commit_offsets(self) -> bool:
        """With the interval boundary, commit the open transaction when no batch is half sent; otherwise the
        transactions commit at their own boundaries."""
        if self.transactions.boundary == INTERVAL_BOUNDARY and self._open and self._to_send is None:
            self._commit_transaction(background=True)  # the rest of the pass (its poll) overlaps the commit
        return True

    def _poll_ahead(self) -> None:
        """While the transaction commits, poll the connector for the next batch and take it, if the loop's next pass
        would poll now (not stopping or paused, not idling, no heartbeat due); taking it waits for the commit."""
        now = self.clock.now_ms()
        interval = self.settings.heartbeat_interval_ms
        if (
            self._stopping
            or self._target_paused
            or now < self.context.idle_until
            or (interval > 0 and now >= self._next_heartbeat)
        ):
            return
        records = self._poll_task()
        if records:
            self._take(records)

    # ---- transactions ----------------------------------------------------------------------------------------

    def _transaction_offsets(self) -> list[PartitionOffset]:
        """The source offsets the open transaction moved: the newest of each partition it holds records of."""
        before = self._before
        found: list[PartitionOffset] = []
        for key, offset in self.submitted.latest.items():
            if key not in before or before[key] != offset:
                found.append((self.submitted.partition(key), offset))
        return found

    def _commit_transaction(self, background: bool = False) -> None:
        """Write the transaction's offsets into it and commit it; a failure fails the task. ``background``: on the
        committer thread, :meth:`_settle` waits for it (and fails the task if it failed)."""
        with for_offsets(self.id.connector, self.id.task):
            self._settle()
            if not self._open:
                return
            sent, self._offsets_sent = self._offsets_sent, None
            offsets = self._checked(self._transaction_offsets()) if sent is None else sent
            if background:
                if self._committer is None:
                    self._committer = ThreadPoolExecutor(1, thread_name_prefix=f"{self.id}-commit")
                future = self._committer.submit(self._send_and_commit, offsets, sent is None)
            else:
                future = Future()
                try:
                    self._send_and_commit(offsets, sent is None)
                    future.set_result(None)
                except Exception as error:
                    future.set_exception(error)
            self._committing = (future, offsets)
            if not background:
                self._settle()

    def _checked(self, offsets: list[PartitionOffset]) -> list[PartitionOffset]:
        """``offsets``, once each partition and offset is a map Kafka Connect can store; else the task fails."""
        try:
            for partition, offset in offsets:
                validate_offset_map("partition", partition)
                validate_offset_map("offset", offset)
        except TypeError as error:
            raise ConnectError(f"task {self.id}: cannot commit offsets: {error}") from None
        return offsets

    def _send_and_commit(self, offsets: list[PartitionOffset], send: bool = True) -> None:
        """Write ``offsets`` into the open transaction (unless sent already), wait for its records'
        acknowledgements and commit it."""
        began = perf_counter()
        try:
            if offsets and send:
                self.offsets.send_in(self.producer, self.settings.connector, offsets)
            remaining = self.producer.flush(TRANSACTION_TIMEOUT_MS)  # delivery reports first: a failed send fails
            if self.acks.error is not None:
                raise self.acks.error
            if remaining:
                raise ConnectError(f"{remaining} records of the transaction still unacknowledged")
            self._retrying(lambda: self.producer.commit(TRANSACTION_TIMEOUT_MS), "commit the transaction")
        finally:
            ended = perf_counter()
            self.commit_times.observe(ended - began, ended)

    def _settle(self) -> None:
        """Wait for the commit in flight, if any; on the task thread, finish it (the ``offsets_committed`` hook) or
        fail the task as the commit failed, aborting the transaction."""
        if self._committing is None:
            return
        (future, offsets), self._committing = self._committing, None
        try:
            future.result()
        except ProducerFencedError as error:
            self._open = False
            self.commit_failures += 1
            raise self._fenced(error) from None
        except Exception as error:
            self.commit_failures += 1
            self._abort_after_failure()
            raise ConnectError(f"task {self.id}: cannot commit its transaction, which is aborted: {error}") from error
        self._committed(offsets)

    def _committed(self, offsets: list[PartitionOffset]) -> None:
        """The open transaction committed with ``offsets``: count it, note the offsets, forget its records and call
        the ``offsets_committed`` hook."""
        self._open = False
        self.commits += 1
        now = self.clock.now_ms()
        known = self.partition_offsets
        for partition, offset in offsets:
            known[partition_key(partition)] = (partition, offset, now)
        self._record_size()
        self.submitted.committable()  # every record is acknowledged: forget them
        if offsets:
            self.offsets.committed(self.settings.connector, offsets)
        try:
            self.hooks.offsets_committed(task=self.task, offsets=offsets)
        except Exception:
            log.exception("offsets_committed hook failed")

    def _fenced(self, error: ProducerFencedError) -> ConnectError:
        """The failure of a task whose producer a newer one fenced."""
        self._open = False
        return ConnectError(
            f"task {self.id} was fenced off: a newer generation of it, or of its connector's tasks, runs with "
            f"transactional id {self.transactions.transactional_id!r}; what it sent since its last commit is "
            f"aborted ({error})"
        )

    def _record_size(self) -> None:
        self.transaction_records += self._size
        self.transaction_sizes.append(self._size)
        if len(self.transaction_sizes) > 1000:
            del self.transaction_sizes[:500]

    def _abort_transaction(self) -> None:
        """The task asked to abort: its records since the last commit are never shown, their offsets not stored."""
        self._settle()
        if not self._open:
            return
        try:
            self.producer.flush(TRANSACTION_TIMEOUT_MS)
            self._retrying(lambda: self.producer.abort(TRANSACTION_TIMEOUT_MS), "abort the transaction")
        except ProducerFencedError as error:
            raise ConnectError(f"task {self.id} was fenced off while aborting its transaction: {error}") from None
        finally:
            self._open = False
        self.aborts += 1
        self.acks.error = None
        self.submitted.committable()

    def _abort_after_failure(self) -> None:
        if not self._open:
            return
        self._open = False
        try:
            self.producer.abort(TRANSACTION_TIMEOUT_MS)
        except Exception as error:  # the producer is closed next: the broker aborts it on its own
            log.warning("task %s: cannot abort its transaction: %s", self.id, error)

    def _retrying(self, call: Callable[[], None], what: str) -> None:
        """Call until it does not raise :class:`RetriableError`, up to :data:`TRANSACTION_TIMEOUT_MS`."""
        deadline = time.monotonic() + TRANSACTION_TIMEOUT_MS / 1000
        while True:
            try:
                call()
                return
            except RetriableError as error:
                if time.monotonic() >= deadline:
                    raise ConnectError(f"task {self.id}: cannot {what}: {error}") from error
                log.warning("task %s: cannot %s yet, trying again: %s", self.id, what, error)

    # ---- stop ------------------------------------------------------------------------------------------------

    def before_stop(self) -> None:
        if self._cancelled:
            log.warning("the task was cancelled: its open transaction is left for the next generation to abort")
            return
        if self.state is State.FAILED:
            try:
                self._settle()  # a batch sent whole may still commit; the committer thread is idle after
            except Exception as error:
                log.warning("task %s: its last transaction did not commit: %s", self.id, error)
            self._abort_after_failure()
            return
        self._settle()
        if self._to_send is not None or self._after:
            log.info("task %s stops in the middle of a batch: aborting the open transaction", self.id)
            self._abort_after_failure()
            return
        self._commit_transaction()

    def close_clients(self) -> None:
        if self._committer is not None:
            self._committer.shutdown()  # a commit in flight (of a cancelled task) returns first
        super().close_clients()

    def __repr__(self) -> str:
        return (
            f"ExactlyOnceWorkerSourceTask({self.id}, state={self.state.value}, boundary={self.transactions.boundary}, "
            f"sent={self.records_sent}, commits={self.commits}, aborts={self.aborts}, open={self._open})"
        )
