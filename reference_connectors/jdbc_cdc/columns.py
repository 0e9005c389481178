"""Log-mode change events as columns of JSON bytes: values, keys, offsets and timestamps, cut into runs of one
topic, each run one :class:`~headwater.sdk.SourceBatch`. What a task sends with the ``bytes`` converters.

:class:`ColumnWriter` writes each row change of a transaction as soon as it arrives (the envelope up to the end of
the after image, and the key), and ends every event of the transaction with its ``source`` block at the commit,
when the commit LSN is known. Events, keys and offsets are exactly those of the dict path
(:meth:`~headwater.reference_connectors.jdbc_cdc.logical.LogStream.read` through the envelope and the JSON
converter).
"""

from __future__ import annotations

import bisect
import struct
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, overload

from headwater.reference_connectors.jdbc_cdc.envelope import JsonEnvelope
from headwater.reference_connectors.jdbc_cdc.json_rows import RowEncoder
from headwater.reference_connectors.jdbc_cdc.pgoutput import Decoder, Relation
from headwater.reference_connectors.jdbc_cdc.tables import CapturedTable
from headwater.sdk import SourceBatch, SourcePartition

_UNPACK_INT32 = struct.Struct(">i").unpack_from
_INSERT, _DELETE = ord("I"), ord("D")
_KEY = ord("K")
_OLD = frozenset({_KEY, ord("O")})


class LogOffsets(Sequence[dict[str, Any]]):
    """The offsets of log-mode events, transaction by transaction, each made when it is asked for (the runtime
    reads a batch's last one): ``{"lsn": <commit end>, "seq": <event in the transaction>, "flush": <LSN>}``."""

    __slots__ = ("_length", "_starts", "_transactions")

    def __init__(self) -> None:
        self._starts: list[int] = []
        self._transactions: list[tuple[int, int, int, int]] = []
        self._length = 0

    def add(self, end: int, first: int, count: int, previous: int) -> None:
        """Events ``first`` to ``count - 1`` of the transaction that ended at ``end`` (the one before at
        ``previous``)."""
        self._starts.append(self._length)
        self._transactions.append((end, first, count, previous))
        self._length += count - first

    def __len__(self) -> int:
        return self._length

    @overload
    def __getitem__(self, index: int) -> dict[str, Any]: ...

    @overload
    def __getitem__(self, index: slice) -> list[dict[str, Any]]: ...

    def __getitem__(self, index: int | slice) -> dict[str, Any] | list[dict[str, Any]]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(self._length))]
        if index < 0:
            index += self._length
        if not 0 <= index < self._length:
            raise IndexError(f"offset {index} of {self._length}")
        position = bisect.bisect_right(self._starts, index) - 1
        end, first, count, previous = self._transactions[position]
        seq = first + index - self._starts[position]
        return {"lsn": end, "seq": seq, "flush": end if seq == count - 1 else previous}


@dataclass
class ChangeColumns:
    """Change events in stream order, as columns; ``runs`` holds ``(topic, end)``: the events before ``end`` (and
    from the previous run's end) go to ``topic``."""

    values: list[bytes] = field(default_factory=list)
    keys: list[bytes | None] = field(default_factory=list)
    offsets: LogOffsets = field(default_factory=LogOffsets)
    timestamps: list[int] = field(default_factory=list)
    runs: list[tuple[str, int]] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.values)

    def add_run(self, topic: str, end: int) -> None:
        """The events up to ``end`` go to ``topic`` (joined to the last run when it has the same topic)."""
        if self.runs and self.runs[-1][0] == topic:
            self.runs[-1] = (topic, end)
        else:
            self.runs.append((topic, end))

    def batches(self, partition: SourcePartition) -> list[SourceBatch]:
        """One batch per run, in order."""
        if len(self.runs) == 1:
            return [SourceBatch(partition, self.runs[0][0], self.values, self.offsets, self.keys, self.timestamps)]
        found, start = [], 0
        for topic, end in self.runs:
            part = slice(start, end)
            found.append(
                SourceBatch(
                    partition, topic, self.values[part], self.offsets[part], self.keys[part], self.timestamps[part]
                )
            )
            start = end
        return found


class _Capture:
    """A captured relation: its table, topic, image encoder and replica identity columns."""

    __slots__ = ("encoder", "identity", "table", "topic")

    def __init__(self, relation: Relation, table: CapturedTable, topic: str) -> None:
        self.table = table
        self.topic = topic
        self.encoder = RowEncoder(
            relation.columns, relation.types, table.primary_key, relation.decimals, table.qualified
        )
        self.identity = relation.keys


class ColumnWriter:
    """Writes one replication session's row changes of captured tables as :class:`ChangeColumns`, a transaction at
    a time; the relations are the ``decoder``'s."""

    def __init__(self, decoder: Decoder, tables: Mapping[str, CapturedTable], envelope: JsonEnvelope) -> None:
        self.decoder = decoder
        self.tables = tables
        self.envelope = envelope
        self._captures: dict[int, _Capture | None] = {}
        self._values: list[bytes] = []
        self._keys: list[bytes | None] = []
        self._captured: list[_Capture] = []
        """The open transaction's events so far, up to the end of their images; their keys; their tables."""
        heads = envelope.heads
        self._insert, self._update, self._delete = heads["c"], heads["u"], heads["d"]

    @property
    def pending(self) -> int:
        """Events of the open transaction."""
        return len(self._values)

    def relation(self, relation: Relation) -> None:
        """A relation message was decoded: forget what was compiled for an earlier version of it."""
        self._captures.pop(relation.relid, None)

    def begin(self) -> None:
        self._values, self._keys, self._captured = [], [], []

    def _capture(self, relid: int) -> _Capture | None:
        relation = self.decoder.relations[relid]
        table = self.tables.get(f"{relation.namespace}.{relation.name}")
        capture = None if table is None else _Capture(relation, table, self.envelope.envelope.topic(table))
        self._captures[relid] = capture
        return capture

    def change(self, data: bytes) -> None:
        """A row change message (``I``, ``U`` or ``D``)."""
        relid = _UNPACK_INT32(data, 1)[0]
        capture = self._captures[relid] if relid in self._captures else self._capture(relid)
        if capture is None:
            return
        encoder = capture.encoder
        if data[0] == _INSERT:
            value, key, _ = encoder.image(data, 6, self._insert)
        else:
            value, key = self._update_or_delete(data, encoder, capture.identity)
        self._values.append(value)
        self._keys.append(key)
        self._captured.append(capture)

    def _update_or_delete(
        self, data: bytes, encoder: RowEncoder, identity: Sequence[bool]
    ) -> tuple[bytes, bytes | None]:
        kind, at, before = data[5], 6, b"null"
        if kind in _OLD:
            if kind == _KEY:
                before, key, at = encoder.general(data, at, b"", identity)
            else:
                before, key, at = encoder.image(data, at, b"")
            if data[0] == _DELETE:
                return self._delete + before + b',"after":null', key
            at += 1
        after, key, _ = encoder.image(data, at, b"")
        return self._update + before + b',"after":' + after, key

    def commit(
        self,
        columns: ChangeColumns,
        end: int,
        previous: int,
        first: int,
        txid: int | None,
        ts_ms: int,
        clock: Callable[[], int],
    ) -> None:
        """The transaction committed at ``end`` (the previous one ended at ``previous``): add its events from
        ``first`` on (the earlier ones were sent before a restart) to ``columns``."""
        values, keys, captured = self._values, self._keys, self._captured
        self.begin()
        count = len(values)
        if first >= count:
            return
        now_ms = clock()
        source = self.envelope.source
        if first:
            values, keys, captured = values[first:], keys[first:], captured[first:]
        start = len(columns.values)
        if captured.count(captured[0]) == len(captured):
            table = captured[0].table
            ending = source(table, end, txid, ts_ms, now_ms)
            columns.values += [value + ending for value in values]
            columns.add_run(captured[0].topic, start + len(values))
        else:
            endings = {c: source(c.table, end, txid, ts_ms, now_ms) for c in set(captured)}
            columns.values += [value + endings[c] for value, c in zip(values, captured, strict=True)]
            for index in range(1, len(captured)):
                if captured[index].topic != captured[index - 1].topic:
                    columns.add_run(captured[index - 1].topic, start + index)
            columns.add_run(captured[-1].topic, start + len(captured))
        columns.keys += keys
        columns.offsets.add(end, first, count, previous)
        columns.timestamps += [ts_ms] * len(values)
