"""The source offset store: where source tasks commit how far each source partition has been read.

Offsets are keyed like Kafka Connect's offsets topic: ``["<connector>",{<source partition>}]`` as compact UTF-8
JSON, with the partition's keys in the order the connector gave them. Lookups are by value: two partition maps
with the same items in a different key order are the same partition. Offsets read back are fresh dicts decoded
from JSON, so callers never share state with the store, whichever implementation it is.

:class:`FileOffsetStore` keeps one UTF-8 JSON object: each member name is an offsets-topic key as a string, each
member value the offset object, for example::

    {"[\\"local-file-source\\",{\\"filename\\":\\"test.txt\\"}]": {"position": 30}}

Deleted offsets are left out. This is not the Java-serialized file of Kafka Connect's ``FileOffsetBackingStore``.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol, cast

from headwater.runtime.storage.wire import dumps
from headwater.sdk.errors import ConnectError
from headwater.sdk.records import SourceOffset, SourcePartition, validate_offset_map

PartitionOffset = tuple[SourcePartition | None, SourceOffset | None]
"""A source partition and its offset; a ``None`` offset means none is stored, or deletes it when written."""

_Stored = dict[str, dict[str, tuple[bytes, bytes]]]
"""connector -> canonical partition -> (offsets-topic key, offset JSON)."""


def offset_key(connector: str, partition: SourcePartition | None) -> bytes:
    """Kafka Connect's offsets-topic key, ``["<connector>",{<partition>}]``, partition keys in the order given.

    Raises ``TypeError`` or ``ValueError`` when the partition cannot be written as JSON.
    """
    return dumps([connector, None if partition is None else dict(partition)]).encode("utf-8")


def offset_value(offset: SourceOffset | None) -> bytes | None:
    """Kafka Connect's offsets-topic value: the offset as a compact JSON object, or ``None`` (a tombstone).

    Raises ``TypeError`` or ``ValueError`` when the offset cannot be written as JSON.
    """
    return None if offset is None else dumps(dict(offset)).encode("utf-8")


def parse_offset_key(key: bytes) -> tuple[str, SourcePartition | None] | None:
    """The connector and source partition of an offsets-topic key, or ``None`` when the key is not a 2-element
    ``[string, object or null]`` JSON list; Kafka Connect ignores such keys."""
    try:
        parsed = json.loads(key)
    except ValueError:
        return None
    if not (isinstance(parsed, list) and len(parsed) == 2 and isinstance(parsed[0], str)):
        return None
    connector, partition = parsed
    if partition is not None and not isinstance(partition, dict):
        return None
    return connector, partition


def canonical_partition(partition: SourcePartition | None) -> str:
    """The identity of a partition map, whatever its key order."""
    try:
        return dumps(None if partition is None else dict(partition), sort_keys=True)
    except (TypeError, ValueError) as error:
        raise ConnectError(f"source partition {partition!r} cannot be stored: {error}") from None


def encode_offsets(connector: str, offsets: Sequence[PartitionOffset]) -> list[tuple[str, bytes, bytes | None]]:
    """(canonical partition, key, value) for each offset; raises ConnectError before anything is stored."""
    encoded = []
    for partition, offset in offsets:
        try:
            validate_offset_map("partition", partition)
            validate_offset_map("offset", offset)
            encoded.append((canonical_partition(partition), offset_key(connector, partition), offset_value(offset)))
        except (TypeError, ValueError) as error:
            raise ConnectError(f"cannot store offsets of connector {connector!r}: {error}") from None
    return encoded


class OffsetStore(Protocol):
    """Source offsets of every connector of a worker. Implementations are safe to call from several threads."""

    def start(self) -> None:
        """Load the stored offsets; called once before any other method."""

    def stop(self) -> None:
        """Release resources; called once, last."""

    def get(self, connector: str, partitions: Sequence[SourcePartition | None]) -> list[PartitionOffset]:
        """Each asked partition with its stored offset (``None`` when there is none), in the order asked."""
        ...

    def set(self, connector: str, offsets: Sequence[PartitionOffset], timeout_ms: int) -> None:
        """Store the offsets durably before returning; a ``None`` offset deletes the stored one. Raises
        ConnectError on failure or on timeout, and then stores none of ``offsets``."""

    def connector_partitions(self, connector: str) -> list[SourcePartition | None]:
        """Every partition of the connector that has a stored offset."""
        ...

    def delete_connector(self, connector: str) -> None:
        """Delete every stored offset of the connector; raises ConnectError on failure, and then deletes none."""


class LocalOffsetStore:
    """The offsets of one worker process held in a dict; subclasses say where else they persist them."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._stored: _Stored = {}
        self._started = False

    def start(self) -> None:
        self._started = True

    def stop(self) -> None:
        pass

    def get(self, connector: str, partitions: Sequence[SourcePartition | None]) -> list[PartitionOffset]:
        canonical = [canonical_partition(partition) for partition in partitions]
        with self._lock:
            self._check_started()
            stored = self._stored.get(connector, {})
            values = [stored[key][1] if key in stored else None for key in canonical]
        return [(partition, _decode(value)) for partition, value in zip(partitions, values, strict=True)]

    def set(self, connector: str, offsets: Sequence[PartitionOffset], timeout_ms: int) -> None:
        changes = encode_offsets(connector, offsets)
        if not self._lock.acquire(timeout=max(timeout_ms, 0) / 1000):
            raise ConnectError(f"timed out after {timeout_ms} ms waiting to store offsets of connector {connector!r}")
        try:
            self._check_started()
            offsets_of = dict(self._stored.get(connector, {}))
            for canonical, key, value in changes:
                if value is None:
                    offsets_of.pop(canonical, None)
                else:
                    offsets_of[canonical] = (key, value)
            self._replace(connector, offsets_of)
        finally:
            self._lock.release()

    def connector_partitions(self, connector: str) -> list[SourcePartition | None]:
        with self._lock:
            self._check_started()
            keys = [key for key, _ in self._stored.get(connector, {}).values()]
        return [parsed[1] for parsed in map(parse_offset_key, keys) if parsed is not None]

    def delete_connector(self, connector: str) -> None:
        with self._lock:
            self._check_started()
            if connector in self._stored:
                self._replace(connector, {})

    def _replace(self, connector: str, offsets_of: dict[str, tuple[bytes, bytes]]) -> None:
        """Swap in the connector's new offsets once :meth:`_persist` has stored them; called holding the lock."""
        stored = {name: offsets for name, offsets in self._stored.items() if name != connector}
        if offsets_of:
            stored[connector] = offsets_of
        self._persist(stored)
        self._stored = stored

    def _persist(self, stored: _Stored) -> None:
        """Make ``stored`` durable or raise ConnectError; called holding the lock."""

    def _check_started(self) -> None:
        if not self._started:
            raise ConnectError(f"{self!r} is not started")

    def _content(self) -> str:
        entries = [entry for offsets in self._stored.values() for entry in offsets.values()]
        return ", ".join(f"{key.decode()}={value.decode()}" for key, value in entries)


def _decode(value: bytes | None) -> dict[str, Any] | None:
    return None if value is None else cast(dict[str, Any], json.loads(value))


class MemoryOffsetStore(LocalOffsetStore):
    """Offsets in this process only, lost when it ends. Usable without :meth:`start`.

    For tests: :meth:`fail_next_sets` makes the next ``set()`` calls fail; ``set_calls`` counts every ``set()`` call,
    failed ones included.
    """

    def __init__(self) -> None:
        super().__init__()
        self._started = True
        self._failures: list[Exception] = []
        self._failures_lock = threading.Lock()
        self.set_calls = 0

    def fail_next_sets(self, n: int, error: Exception | None = None) -> None:
        """Make each of the next ``n`` ``set()`` calls store nothing and raise ``error`` (by default a ConnectError)."""
        if n < 0:
            raise ValueError(f"fail_next_sets needs n >= 0, got {n}")
        with self._failures_lock:
            self._failures = [error or ConnectError("injected offset store failure") for _ in range(n)]

    def set(self, connector: str, offsets: Sequence[PartitionOffset], timeout_ms: int) -> None:
        with self._failures_lock:
            self.set_calls += 1
            failure = self._failures.pop(0) if self._failures else None
        if failure is not None:
            raise failure
        super().set(connector, offsets, timeout_ms)

    def __repr__(self) -> str:
        failing = f", failing next {len(self._failures)} sets" if self._failures else ""
        return f"MemoryOffsetStore({{{self._content()}}}, set_calls={self.set_calls}{failing})"


class FileOffsetStore(LocalOffsetStore):
    """Offsets in a JSON file (format in the module docstring), rewritten atomically by every change. :meth:`start`
    loads the file: a missing file holds no offsets, an unreadable one raises ConnectError naming the path."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        super().__init__()
        self.path = Path(path)

    def start(self) -> None:
        with self._lock:
            self._stored = self._load()
            self._started = True

    def stop(self) -> None:
        with self._lock:
            self._started = False

    def _load(self) -> _Stored:
        try:
            content = json.loads(self.path.read_bytes().decode("utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as error:
            raise ConnectError(f"cannot read offsets file {self.path}: {error}") from None
        if not isinstance(content, dict):
            raise ConnectError(f"corrupt offsets file {self.path}: expected a JSON object")
        stored: _Stored = {}
        for key_text, offset in content.items():
            key = key_text.encode("utf-8")
            parsed = parse_offset_key(key)
            try:
                if parsed is None or not isinstance(offset, dict):
                    raise TypeError("expected an offsets-topic key and an offset object")
                validate_offset_map("partition", parsed[1])
                validate_offset_map("offset", offset)
                entry = (key, dumps(offset).encode("utf-8"))
                stored.setdefault(parsed[0], {})[canonical_partition(parsed[1])] = entry
            except (TypeError, ValueError, ConnectError) as error:
                raise ConnectError(f"corrupt offsets file {self.path}: entry {key_text!r}: {error}") from None
        return stored

    def _persist(self, stored: _Stored) -> None:
        entries = [entry for offsets in stored.values() for entry in offsets.values()]
        members = [f"  {json.dumps(key.decode(), ensure_ascii=False)}: {value.decode()}" for key, value in entries]
        text = "{\n" + ",\n".join(members) + ("\n}\n" if members else "}\n")
        temp: str | None = None
        try:
            fd, temp = tempfile.mkstemp(dir=self.path.parent, prefix=f".{self.path.name}.", suffix=".tmp")
            with os.fdopen(fd, "wb") as file:
                file.write(text.encode("utf-8"))
                file.flush()
                os.fsync(file.fileno())
            os.replace(temp, self.path)
            temp = None
            _fsync_directory(self.path.parent)
        except OSError as error:
            raise ConnectError(f"cannot write offsets file {self.path}: {error}") from None
        finally:
            if temp is not None:
                Path(temp).unlink(missing_ok=True)

    def __repr__(self) -> str:
        return f"FileOffsetStore({str(self.path)!r}, {{{self._content()}}})"


def _fsync_directory(directory: Path) -> None:
    """Make a rename in ``directory`` durable where the platform allows (not Windows); the new file is in place
    either way."""
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
