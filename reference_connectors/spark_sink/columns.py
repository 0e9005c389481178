"""Buffered records into an Arrow table: JSON values parsed by Arrow's JSON reader, metadata columns from the
records, and the records that do not fit the schema set apart with the reason.

The whole partition's values are parsed in one call (newline-delimited JSON). Only when that call fails, or gives
a different number of rows than values, is each value parsed alone to find the ones that do not fit; the rest are
then parsed together again. So a record fits exactly when Arrow's reader accepts it alone with the schema: a JSON
object whose fields convert to the column types (extra fields are dropped, missing ones are null), with no null in
a ``NOT NULL`` column and, for a ``string`` key column, a UTF-8 key. Line breaks in a value are read as the
whitespace they are, so pretty-printed values fit too.

Records that arrived with a Connect schema (``SinkRecord.value_schema``) are not JSON text: each run of records with
one schema becomes columns straight from their Python values (:mod:`.record_values`), and a run of records without
one in the same partition is parsed as above, against the same columns.
"""

from __future__ import annotations

import io
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.json as pa_json

from headwater.reference_connectors.spark_sink.buffer import PartitionBuffer
from headwater.reference_connectors.spark_sink.record_schema import UnsupportedSchema, configured_fit
from headwater.reference_connectors.spark_sink.record_values import RecordSchemas
from headwater.reference_connectors.spark_sink.schema import metadata_type, writable
from headwater.sdk import SinkRecord, TopicPartition


class SchemaMismatch(ValueError):
    """Why a record does not fit the table's schema: the error it is reported with (its class name and message go
    to the dead-letter record's ``__connect.errors.exception.*`` headers)."""


@dataclass(frozen=True)
class Rejected:
    """A record that does not fit the schema, and why."""

    record: SinkRecord
    """As given to ``put``: what the task reports."""
    value: Any
    """The value as the task parsed it: JSON text, or a record with a schema's value as it was given."""
    reason: str

    @property
    def topic(self) -> str:
        return self.record.topic

    @property
    def partition(self) -> int:
        return self.record.partition

    @property
    def offset(self) -> int:
        return self.record.offset

    @property
    def key(self) -> Any:
        return self.record.key

    def where(self) -> str:
        return f"topic {self.topic!r} partition {self.partition} offset {self.offset}"

    def error(self) -> SchemaMismatch:
        return SchemaMismatch(f"the record does not fit the table's schema: {self.reason}")


def _read(values: Sequence[bytes], schema: pa.Schema | None) -> pa.Table:
    options = pa_json.ParseOptions(explicit_schema=schema, unexpected_field_behavior="ignore" if schema else "infer")
    block = b"\n".join(values) + b"\n"
    return pa_json.read_json(io.BytesIO(block), parse_options=options, read_options=_read_options(len(block)))


def _read_options(size: int) -> pa_json.ReadOptions:
    return pa_json.ReadOptions(use_threads=True, block_size=max(1 << 20, min(size + 1, 1 << 26)))


def _one_line(values: list[bytes | None]) -> list[bytes | None]:
    """Values with their line breaks made spaces: outside strings they are whitespace, inside strings JSON has
    them escaped, so this changes no value and lets a pretty-printed value be one line of the reader's input."""
    present = [v for v in values if v is not None]
    joined = b"\n".join(present)
    if joined.count(b"\n") == max(len(present) - 1, 0) and b"\r" not in joined:
        return values
    return [v if v is None else v.replace(b"\n", b" ").replace(b"\r", b" ") for v in values]


def _reason(error: Exception) -> str:
    return str(error).removeprefix("JSON parse error: ").splitlines()[0]


def infer_schema(values: Sequence[bytes | None]) -> pa.Schema | None:
    """The schema Arrow infers from all ``values`` (JSON objects), else from the first value that is one alone;
    ``None`` when none is. Null-only columns become strings, timestamps microseconds in UTC."""
    present = [v for v in values if v is not None]
    if not present:
        return None
    try:
        table = _read(present, None)
        if table.num_rows == len(present) and table.num_columns:
            return writable(table.schema)
    except pa.ArrowInvalid:
        pass
    for value in present:
        try:
            table = _read([value], None)
        except pa.ArrowInvalid:
            continue
        if table.num_rows == 1 and table.num_columns:
            return writable(table.schema)
    return None


class ColumnBuilder:
    """Builds the table of one topic partition's buffered records for a value schema and metadata columns."""

    def __init__(
        self,
        value_schema: pa.Schema,
        table_schema: pa.Schema,
        metadata: dict[str, str],
        key_type: str,
        configured: bool = False,
        schemas: RecordSchemas | None = None,
    ):
        """``metadata`` maps each metadata field written (``offset``) to its column name (``kafka_offset``).
        ``configured``: the value columns are ``value.schema``'s, so a record schema is checked against them
        (:func:`.configured_fit`) rather than having followed it. ``schemas``: the record schemas met so far."""
        self.configured = configured
        self.schemas = schemas if schemas is not None else RecordSchemas()
        self.value_schema = value_schema
        self.table_schema = table_schema
        self.metadata = metadata
        self.key_type = key_type
        self._dates = [f.name for f in value_schema if pa.types.is_date(f.type)]
        self._read_schema = pa.schema(  # NOT NULL is checked afterwards, so that the reason names the column
            [pa.field(f.name, pa.string() if f.name in self._dates else f.type) for f in value_schema]
        )
        self._required = [f.name for f in value_schema if not f.nullable]

    def build(self, tp: TopicPartition, buffer: PartitionBuffer) -> tuple[pa.Table, list[Rejected]]:
        """The table of the records that fit, and those that do not, in offset order."""
        keys = buffer.keys
        if buffer.typed:
            values = buffer.values
            bad: dict[int, str] = {i: "the value is null" for i, v in enumerate(values) if v is None}
            key_column = self._keys(keys, bad)
            columns, typed_good = self._typed(buffer, bad)
            good: list[int] | None = typed_good
        else:
            values = _one_line(buffer.values)
            bad = {i: "the value is null" for i, v in enumerate(values) if v is None}
            key_column = self._keys(keys, bad)
            table, good = self._parsed(values, bad)
            columns = {name: table.column(name) for name in self.value_schema.names}
        if good is not None and key_column is not None:
            key_column = key_column.take(pa.array(good, pa.int64()))
        offsets, timestamps = buffer.offsets, buffer.timestamps
        if good is not None:
            offsets = [offsets[i] for i in good]
            timestamps = [timestamps[i] for i in good]
        rows = len(offsets)
        for field, name in self.metadata.items():
            if field == "topic":
                columns[name] = pa.array([tp.topic] * rows, pa.string())
            elif field == "partition":
                columns[name] = pa.array([tp.partition] * rows, pa.int32())
            elif field == "offset":
                columns[name] = pa.array(offsets, pa.int64())
            elif field == "timestamp":
                columns[name] = pa.array(timestamps, metadata_type("timestamp", self.key_type))
            elif field == "key":
                columns[name] = key_column
        table = pa.Table.from_arrays([columns[name] for name in self.table_schema.names], schema=self.table_schema)
        rejected = [Rejected(buffer.records[i], values[i], reason) for i, reason in sorted(bad.items())]
        return table, rejected

    def _parsed(self, values: list[bytes | None], bad: dict[int, str]) -> tuple[pa.Table, list[int] | None]:
        """The table of the JSON ``values`` that fit (adding those that do not to ``bad``), and the indexes of the
        values in it (``None``: all)."""
        while True:
            good = [i for i in range(len(values)) if i not in bad] if bad else None
            picked = [v for i, v in enumerate(values) if v is not None and i not in bad]
            try:
                return self._values(picked), good
            except _Misfit as misfit:
                bad.update({good[i] if good is not None else i: reason for i, reason in misfit.reasons.items()})

    def _typed(self, buffer: PartitionBuffer, bad: dict[int, str]) -> tuple[dict[str, Any], list[int]]:
        """The value columns of a buffer holding records with schemas (and maybe JSON ones too): each run of
        records with one schema built from its values, a run of JSON values parsed, in offset order."""
        chunks: dict[str, list[Any]] = {name: [] for name in self.value_schema.names}
        records, values = buffer.records, buffer.values
        start = 0
        while start < len(records):
            schema = records[start].value_schema
            key = None if schema is None else self.schemas.key(schema)
            end = start + 1
            while end < len(records) and (
                records[end].value_schema is schema or _same(records[end].value_schema, key, self.schemas)
            ):
                end += 1
            rows = [i for i in range(start, end) if i not in bad]
            if schema is None:
                run_bad: dict[int, str] = {}
                table, _ = self._parsed(_one_line([values[i] for i in rows]), run_bad)
                bad.update({rows[i]: reason for i, reason in run_bad.items()})
                for name in chunks:
                    chunks[name] += table.column(name).chunks
            else:
                arrays, run_bad = self._schema_run(schema, [values[i] for i in rows])
                bad.update({rows[i]: reason for i, reason in run_bad.items()})
                for name in chunks:
                    chunks[name].append(arrays[name])
            start = end
        good = [i for i in range(len(records)) if i not in bad]
        columns = {
            name: pa.chunked_array(chunks[name], field.type)
            for name, field in zip(self.value_schema.names, self.value_schema, strict=True)
        }
        return columns, good

    def _schema_run(self, schema: Any, values: list[Any]) -> tuple[dict[str, Any], dict[int, str]]:
        """The value columns of records of one schema, and the index and reason of each that does not fit."""
        reason = self._unfit(schema)
        if reason is not None:
            empty = {f.name: pa.array([], f.type) for f in self.value_schema}
            return empty, dict.fromkeys(range(len(values)), reason)
        built = self.schemas.get(schema)
        assert built is not None
        return built.build(values, self.value_schema)

    def _unfit(self, schema: Any) -> str | None:
        """Why no record of ``schema`` fits the columns, else ``None``. A schema no table holds is refused by the
        writer before building when the columns follow the records; against ``value.schema`` its records do not
        fit."""
        try:
            built = self.schemas.get(schema)
        except UnsupportedSchema as error:
            if not self.configured:
                raise
            return str(error)
        if built is None:
            return f"the value's schema is a {schema.get('type')!r}, not a struct: only structs become rows"
        return configured_fit(self.value_schema, built.arrow) if self.configured else None

    def _values(self, values: list[bytes]) -> pa.Table:
        """The values' table; raises :class:`_Misfit` with the index and reason of each value that does not fit."""
        if not values:
            return self._cast_dates(self._read_schema.empty_table())
        try:
            table = _read(values, self._read_schema)
            if table.num_rows == len(values):
                table = self._cast_dates(table)
                if not any(table.column(name).null_count for name in self._required):
                    return table
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            pass
        reasons = {i: reason for i, value in enumerate(values) if (reason := self._misfit(value)) is not None}
        if not reasons:  # each fits alone, so together too: a defect of the reader, not of the records
            raise AssertionError("Arrow's JSON reader rejected values that each fit alone")
        raise _Misfit(reasons)

    def _misfit(self, value: bytes) -> str | None:
        try:
            table = _read([value], self._read_schema)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as error:
            return _reason(error)
        if table.num_rows != 1:
            return f"the value holds {table.num_rows} JSON values, not one object"
        try:
            table = self._cast_dates(table)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as error:
            return _reason(error)
        missing = [name for name in self._required if table.column(name).null_count]
        if missing:
            return f"null or missing NOT NULL column {missing[0]}"
        return None

    def _cast_dates(self, table: pa.Table) -> pa.Table:
        for name in self._dates:
            index = table.schema.get_field_index(name)
            table = table.set_column(index, name, table.column(name).cast(pa.date32()))
        return table

    def _keys(self, keys: list[Any], bad: dict[int, str]) -> pa.ChunkedArray | pa.Array | None:
        if "key" not in self.metadata:
            return None
        target = metadata_type("key", self.key_type)
        if keys.count(None) == len(keys):
            return pa.nulls(len(keys), target)
        raw = [k if k is None or type(k) is bytes else _key_bytes(k) for k in keys]
        column = pa.array(raw, pa.binary())
        if self.key_type == "binary":
            return column
        try:
            return column.cast(pa.string())
        except pa.ArrowInvalid:
            pass
        for i, key in enumerate(raw):
            if key is not None:
                try:
                    key.decode()
                except UnicodeDecodeError:
                    bad.setdefault(i, "the key is not UTF-8 text")
                    raw[i] = None
        return pa.array(raw, pa.binary()).cast(pa.string())


def _same(schema: Any, key: str | None, schemas: RecordSchemas) -> bool:
    """Whether a record's ``schema`` is the one known by ``key`` (``None``: no schema)."""
    if schema is None or key is None:
        return schema is None and key is None
    return schemas.key(schema) == key


class _Misfit(Exception):
    def __init__(self, reasons: dict[int, str]) -> None:
        super().__init__(reasons)
        self.reasons = reasons


def _key_bytes(key: Any) -> bytes:
    if isinstance(key, str):
        return key.encode()
    if isinstance(key, bytes | bytearray | memoryview):
        return bytes(key)
    return json.dumps(key, separators=(",", ":")).encode()
