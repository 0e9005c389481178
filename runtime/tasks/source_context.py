"""A source task's context (Kafka Connect's ``WorkerSourceTaskContext``): its config, clock, offset reader, typed
config and metrics, and the idle it asked for."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from headwater.runtime.storage.offsets import OffsetStore
from headwater.sdk.context import Clock, OffsetStorageReader, SourceTaskContext
from headwater.sdk.metrics import PluginMetrics
from headwater.sdk.records import SourceOffset, SourcePartition


class StoreOffsetReader(OffsetStorageReader):
    """Reads one connector's committed offsets from the worker's offset store."""

    def __init__(self, store: OffsetStore, connector: str) -> None:
        self._store = store
        self._connector = connector

    def offsets(self, partitions: Sequence[SourcePartition]) -> list[tuple[SourcePartition, SourceOffset | None]]:
        return [(p, o) for p, o in self._store.get(self._connector, list(partitions)) if p is not None]


class WorkerSourceTaskContext(SourceTaskContext):
    def __init__(
        self,
        config: Mapping[str, str],
        clock: Clock,
        reader: OffsetStorageReader,
        parsed_config: Mapping[str, Any] | None = None,
        metrics: PluginMetrics | None = None,
    ) -> None:
        self.config = config
        self.clock = clock
        self.offset_storage_reader = reader
        self.parsed_config = dict(config) if parsed_config is None else parsed_config
        if metrics is not None:
            self.metrics = metrics
        self.idle_until = 0
        """The clock time before which the loop does not call ``poll`` (:meth:`idle`)."""

    def idle(self, ms: int) -> None:
        """Returns at once: the task loop skips ``poll`` until ``ms`` have passed (see the SDK's docstring)."""
        if ms < 0:
            raise ValueError(f"cannot idle for {ms} ms")
        self.idle_until = self.clock.now_ms() + ms
