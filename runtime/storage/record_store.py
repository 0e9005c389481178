"""The skeleton of the config and status stores: a store whose state is a view of the records it wrote or read.

Each store kind has a view that folds records (:class:`~headwater.runtime.storage.configs.ConfigView`,
:class:`~headwater.runtime.storage.status.StatusView`) and writes its operations as records; where the records go is
the implementation's: a list in this process (:class:`MemoryRecordStore`) or a topic
(:class:`~headwater.runtime.storage.log_backed.LogBackedStore`), which reads them back through the view.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Generic, Protocol, TypeVar

Record = tuple[bytes, bytes | None]
"""A record of an internal topic: UTF-8 key, JSON value or ``None`` (a tombstone)."""


class View(Protocol):
    def apply(self, key: bytes | None, value: bytes | None) -> None:
        """Fold one record in."""

    def describe(self) -> str:
        """What the view holds, in one line, for a repr."""


V = TypeVar("V", bound=View)


class RecordStore(Generic[V]):
    """A store whose state is a view of the records it wrote or read; subclasses say where the records go
    (:meth:`_write`) and how to catch up with other writers (:meth:`_refresh`). Safe to call from several threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._view: V = self._new_view()

    def _new_view(self) -> V:
        """An empty view of this store's kind."""
        raise NotImplementedError

    def start(self) -> None:
        pass

    def stop(self) -> None:
        pass

    def _apply(self, key: bytes | None, value: bytes | None) -> None:
        with self._lock:
            self._view.apply(key, value)

    def _write(self, records: Sequence[Record]) -> None:
        """Store the records durably and read them (raises ConnectError on failure)."""
        raise NotImplementedError

    def _refresh(self) -> None:
        """Read what other writers stored since the last read."""

    def _where(self) -> str:
        """Where the records are, for the repr; empty for a store in memory."""
        return ""

    def __repr__(self) -> str:
        with self._lock:
            return f"{type(self).__name__}({self._where()}{self._view.describe()})"


class MemoryRecordStore(RecordStore[V]):
    """Records in this process only, lost when it ends. Usable without :meth:`start`. ``records`` lists every record
    written, in order: the bytes a Kafka store would have put in its topic."""

    def __init__(self) -> None:
        super().__init__()
        self.records: list[Record] = []

    def _write(self, records: Sequence[Record]) -> None:
        with self._lock:
            for key, value in records:
                self.records.append((key, value))
                self._view.apply(key, value)
