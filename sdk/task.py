"""Task base classes: what a connector's tasks must and may implement."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Collection, Mapping, Sequence

from headwater.sdk.context import SinkTaskContext, SourceTaskContext
from headwater.sdk.records import SinkRecord, SourceRecord, TopicPartition


class Task(ABC):
    """A unit of work of a connector, run by the worker on a thread of its own."""

    def version(self) -> str | None:
        """The task's version; ``None``, the default, has the worker report its connector's version for it, as Kafka
        Connect's tasks report their connector's. Override it only for a task versioned apart from its connector."""
        return None

    @abstractmethod
    def start(self, config: Mapping[str, str]) -> None:
        """Start with the task config the connector's ``task_configs`` returned. Every value is a string, whatever
        type the connector put in (an ``int`` arrives as ``"5"``): parse what you need here, or read the config
        parsed by the connector's ``config_def`` from ``self.context.parsed_config``."""

    def stop(self) -> None:  # noqa: B027 - a no-op default, overridden when a task holds resources
        """Release what the task holds. The ``stop`` hook (with ``connector_deleted``) calls this by default."""


class SourceTask(Task):
    """Reads from an external system and hands :class:`SourceRecord` objects to the runtime."""

    context: SourceTaskContext
    """What the runtime offers the task; set by :meth:`initialize`, before ``start``."""

    def initialize(self, context: SourceTaskContext) -> None:
        """Called by the worker with the task's context before ``start``."""
        self.context = context

    @abstractmethod
    def poll(self) -> Sequence[SourceRecord] | None:
        """Return the next records, or ``None``/empty when there are none yet. Must return regularly, so that
        pause, stop and heartbeats can take effect."""


class SinkTask(Task):
    """Receives :class:`SinkRecord` batches from the runtime and writes them to an external system."""

    context: SinkTaskContext
    """What the runtime offers the task; set by :meth:`initialize`, before ``start``."""

    def initialize(self, context: SinkTaskContext) -> None:
        """Called by the worker with the task's context before ``start``."""
        self.context = context

    @abstractmethod
    def put(self, records: Sequence[SinkRecord]) -> None:
        """Write (or buffer) a batch. Raise :class:`RetriableError` to get the same batch again."""

    def flush(self, current_offsets: Mapping[TopicPartition, int]) -> None:
        """Make everything passed to ``put`` durable. Called by the default ``pre_commit`` hook."""

    def open(self, partitions: Collection[TopicPartition]) -> None:
        """Partitions were assigned to this task; ``context.offset`` may rewind them here."""

    def close(self, partitions: Collection[TopicPartition]) -> None:
        """Partitions were revoked or lost, or the task is stopping; drop their buffered state."""
