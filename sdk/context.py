"""What the runtime offers a connector or task while it runs."""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Collection, Mapping, Sequence
from concurrent.futures import Future
from typing import Any, Protocol

from headwater.sdk.metrics import PluginMetrics
from headwater.sdk.records import SinkRecord, SourceOffset, SourcePartition, TopicPartition
from headwater.sdk.transactions import TransactionContext


class Clock(Protocol):
    """The runtime's clock. Tasks that flush or batch by time read it, so simulated runs stay deterministic."""

    def now_ms(self) -> int:
        """Milliseconds since the epoch (virtual in a simulated worker)."""
        ...


class OffsetStorageReader(ABC):
    """Reads the committed offsets of the connector's source partitions."""

    @abstractmethod
    def offsets(self, partitions: Sequence[SourcePartition]) -> list[tuple[SourcePartition, SourceOffset | None]]:
        """Return ``(partition, offset)`` pairs, offset ``None`` where nothing is committed."""

    def offset(self, partition: SourcePartition) -> SourceOffset | None:
        """Return the committed offset of one source partition, or ``None``."""
        return self.offsets([partition])[0][1]


class PluginMetricsHolder:
    """The ``metrics`` every context has (Kafka Connect's ``pluginMetrics()``, KIP-877)."""

    _plugin_metrics: PluginMetrics | None = None

    @property
    def metrics(self) -> PluginMetrics:
        """Where the connector or task registers metrics of its own: ``metrics.counter(name, description)``,
        ``gauge``, ``histogram`` (:class:`~headwater.sdk.metrics.PluginMetrics`). The worker serves them on
        ``/metrics`` as ``headwater_connect_plugin_<name>``, labelled ``connector`` (and ``task``), until the
        connector or task stops. A context the worker did not make keeps them in memory only."""
        if self._plugin_metrics is None:
            self._plugin_metrics = PluginMetrics()
        return self._plugin_metrics

    @metrics.setter
    def metrics(self, metrics: PluginMetrics) -> None:
        self._plugin_metrics = metrics


class ConnectorContext(PluginMetricsHolder, ABC):
    """Given to a connector by :meth:`Connector.initialize`."""

    clock: Clock
    """The worker's clock."""
    offset_storage_reader: OffsetStorageReader
    """The committed offsets of this connector's source partitions."""

    @abstractmethod
    def request_task_reconfiguration(self) -> None:
        """Ask the herder to call ``task_configs`` again and restart the tasks if the configs changed."""

    @abstractmethod
    def raise_error(self, error: Exception) -> None:
        """Fail the connector from a thread of its own (a monitor thread, say)."""


class SourceTaskContext(PluginMetricsHolder, ABC):
    """Given to a source task by :meth:`SourceTask.initialize`."""

    config: Mapping[str, str]
    """The task's config, as given to ``start``: every value a string."""
    parsed_config: Mapping[str, Any]
    """The task's config parsed by its connector's ``config_def`` (Kafka's ``AbstractConfig``): each key the
    definition has as its type, with its default when the task config does not give it; every other key (one
    ``task_configs`` added) the string it is. A value the definition rejects fails the task before ``start`` with
    a :class:`~headwater.sdk.errors.ConfigError` naming the key
    (:meth:`~headwater.sdk.config.ConfigDef.parse_task_config`); reading a required key the task config does not
    give raises ``KeyError`` naming it."""
    clock: Clock
    """The worker's clock."""
    offset_storage_reader: OffsetStorageReader
    """The committed offsets of the connector's source partitions: where a (re)started task resumes from."""
    transaction_context: TransactionContext | None = None
    """Where the task commits and aborts its own transactions: set only when the worker has exactly-once source
    support enabled and the connector runs with ``transaction.boundary=connector`` (KIP-618); ``None`` otherwise."""

    # ---- idling ------------------------------------------------------------------------------------------------

    def idle(self, ms: int) -> None:
        """Say that the task has nothing to return now: ``poll`` is not called again until ``ms`` milliseconds
        have passed on the worker's :attr:`clock`. Call it right before returning no records from ``poll``, in
        place of sleeping there; it returns at once.

        While the task idles, its offsets are still committed (``offset.flush.interval.ms``) and its heartbeats
        still asked for (``heartbeat.interval.ms``, KIP-910), and a stop, pause or resume is served at once: the
        worker's task thread waits for the earliest of these, woken by a stop, rather than sleeping inside
        ``poll``. A simulated worker moves its virtual clock past the idle without calling ``poll``, so an hour of
        idling costs a few passes. A later call replaces an earlier one; ``0`` ends the idle.

        This base class, the context of a test that drives a task by hand, waits ``ms`` on the real clock, as a
        ``poll`` that sleeps would. Raises :class:`ValueError` for a negative ``ms``."""
        if ms < 0:
            raise ValueError(f"cannot idle for {ms} ms")
        time.sleep(ms / 1000)


class ErrantRecordReporter(ABC):
    """Reports a record a sink task could not write (Kafka Connect's ``ErrantRecordReporter``, KIP-610).

    The runtime handles it like a record that failed conversion: with ``errors.tolerance=none`` the task fails,
    naming the record; with ``all`` it is logged as ``errors.log.*`` says and sent, with its original bytes, to the
    dead-letter topic when ``errors.deadletterqueue.topic.name`` is set. Its partition's offset is not committed
    past it until the report is done. Safe to call from any thread of the task.
    """

    @abstractmethod
    def report(self, record: SinkRecord, error: BaseException) -> Future[None]:
        """Report ``record`` (one of those given to ``put``) as failed by ``error``. The future is done once the
        record is in the dead-letter topic (at once when there is none); it fails when that write fails. Raises
        :class:`~headwater.sdk.errors.ConnectError` at once when the errors are not tolerated."""


class SinkTaskContext(PluginMetricsHolder, ABC):
    """Given to a sink task by :meth:`SinkTask.initialize`."""

    config: Mapping[str, str]
    """The task's config, as given to ``start``: every value a string."""
    parsed_config: Mapping[str, Any]
    """The task's config parsed by its connector's ``config_def`` (Kafka's ``AbstractConfig``): each key the
    definition has as its type, with its default when the task config does not give it; every other key (one
    ``task_configs`` added) the string it is. A value the definition rejects fails the task before ``start`` with
    a :class:`~headwater.sdk.errors.ConfigError` naming the key
    (:meth:`~headwater.sdk.config.ConfigDef.parse_task_config`); reading a required key the task config does not
    give raises ``KeyError`` naming it."""
    clock: Clock
    """The worker's clock."""
    errant_record_reporter: ErrantRecordReporter | None = None
    """Where the task reports records it could not write; ``None`` only in a context that offers none (a test's
    own context, say), so a portable task checks before using it."""

    @abstractmethod
    def request_commit(self) -> None:
        """Ask for an offset commit at the next loop pass (KIP-89). A hint: no timing is guaranteed."""

    @abstractmethod
    def offset(self, offsets: Mapping[TopicPartition, int]) -> None:
        """Rewind (or skip) partitions: the next records delivered start at these offsets."""

    @abstractmethod
    def timeout(self, timeout_ms: int) -> None:
        """After a retriable failure, wait at most this long for records before calling ``put`` again."""

    @abstractmethod
    def assignment(self) -> frozenset[TopicPartition]:
        """The partitions currently assigned to this task."""

    @abstractmethod
    def pause(self, *partitions: TopicPartition) -> None:
        """Stop fetching from these assigned partitions until :meth:`resume`."""

    @abstractmethod
    def resume(self, *partitions: TopicPartition) -> None:
        """Fetch again from partitions paused with :meth:`pause`."""

    @abstractmethod
    def paused(self) -> Collection[TopicPartition]:
        """The partitions this task has paused."""
