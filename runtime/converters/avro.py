"""The Avro converter, as Confluent's ``io.confluent.connect.avro.AvroConverter``: a record's Connect schema (or the
Avro schema its author gave) registered in a Schema Registry, the value written with fastavro in Confluent's framing,
and read back with the schema its id names. Needs the ``avro`` extra (fastavro and confluent-kafka's registry client).

Writing: the record's schema is mapped to Avro (:mod:`.avro_data`); with ``auto.register.schemas`` (the default)
it is registered under its subject (the registry refuses an incompatible one), else with ``use.latest.version`` the
subject's latest schema is used, else the schema must already be registered under the subject. A record without a
schema is refused: Avro has no schema to infer from. Reading: the framed id's schema is fetched once and cached, and
the sink gets the value with its Connect schema (``SinkRecord.value_schema``).
"""

from __future__ import annotations

import io
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from headwater.runtime.converters.avro_data import (
    SchemaError,
    avro_text,
    from_datum,
    needs_datum_change,
    record_name,
    to_avro,
    to_connect,
    to_datum,
)
from headwater.runtime.converters.registry import (
    RegistryConverter,
    asking,
    frame,
    unframe,
    writer_schema,
)
from headwater.sdk.errors import ConnectError
from headwater.sdk.schemas import AvroSchema, Schema


@dataclass(frozen=True)
class _Writer:
    """How to write values of one schema to one topic."""

    schema_id: int
    parsed: Any
    """fastavro's parsed schema."""
    connect: Schema | None
    """The Connect schema values are given in, when they need changing into Avro datums; else ``None``."""


@dataclass(frozen=True)
class _Reader:
    parsed: Any
    connect: Schema
    changes: bool


class AvroConverter(RegistryConverter[_Writer]):
    """Avro in Confluent's wire format, with a Schema Registry."""

    FORMAT = "Avro"
    EXTRA = "avro"
    MODULES = ("fastavro",)

    def __init__(self) -> None:
        super().__init__()
        self._readers: dict[int, _Reader] = {}

    # ---- writing ------------------------------------------------------------------------------------------------

    def from_connect(self, topic: str, schema: Mapping[str, Any] | AvroSchema | None, value: Any) -> bytes | None:
        if value is None:
            return None  # a tombstone stays a tombstone
        writer = self._writer(topic, schema)
        datum = value if writer.connect is None else to_datum(writer.connect, value)
        from fastavro import schemaless_writer

        out = io.BytesIO()
        try:
            schemaless_writer(out, writer.parsed, datum)
        except (ValueError, TypeError, KeyError, AttributeError, OverflowError) as error:
            raise ConnectError(
                f"the {self._part} for topic {topic!r} does not match its Avro schema: {type(error).__name__}: {error}"
            ) from None
        return frame(writer.schema_id, out.getvalue())

    def _make_writer(self, topic: str, schema: Mapping[str, Any] | AvroSchema) -> _Writer:
        from fastavro import parse_schema
        from fastavro.schema import SchemaParseException

        settings = self._settings()
        connect: Schema | None
        try:
            if isinstance(schema, AvroSchema):
                avro, connect = schema.parsed, None
            else:
                avro, connect = to_avro(schema), schema
        except (SchemaError, KeyError, TypeError) as error:
            raise ConnectError(
                f"the {self._part} schema for topic {topic!r} cannot be written in Avro: {error}"
            ) from None
        subject = settings.subject(topic, self.is_key, record_name(avro))
        writing = writer_schema(self._client, settings, subject, avro_text(avro), "AVRO")
        schema_id = writing.schema_id
        if writing.latest is not None:
            avro = json.loads(writing.latest)
        try:
            parsed = parse_schema(avro)
        except (SchemaParseException, ValueError, TypeError, KeyError) as error:
            raise ConnectError(
                f"the {self._part} schema for topic {topic!r} is no valid Avro schema: {error}"
            ) from None
        return _Writer(int(schema_id), parsed, connect if connect is not None and needs_datum_change(connect) else None)

    # ---- reading ------------------------------------------------------------------------------------------------

    def to_connect_data(self, topic: str, data: bytes | None) -> tuple[Schema | None, Any]:
        """The Connect schema and value of a message's key or value (``None, None`` for a tombstone)."""
        if data is None:
            return None, None
        schema_id = unframe(topic, data)
        reader = self._readers.get(schema_id) or self._make_reader(schema_id)
        from fastavro import schemaless_reader

        try:
            datum = schemaless_reader(io.BytesIO(memoryview(data)[5:]), reader.parsed, None)
        except (ValueError, TypeError, EOFError, IndexError, KeyError, UnicodeDecodeError) as error:
            raise ConnectError(
                f"a message from topic {topic!r} does not match its Avro schema (id {schema_id}): "
                f"{type(error).__name__}: {error}"
            ) from None
        return reader.connect, from_datum(reader.connect, datum) if reader.changes else datum

    def _make_reader(self, schema_id: int) -> _Reader:
        from fastavro import parse_schema

        settings = self._settings()
        client = self._client
        found = asking(settings.urls, f"find the schema of id {schema_id}", lambda: client.get_schema(schema_id))
        if found.schema_type not in (None, "AVRO"):
            raise ConnectError(f"schema id {schema_id} is a {found.schema_type} schema, not Avro")
        avro = json.loads(found.schema_str)
        try:
            connect = to_connect(avro)
        except SchemaError as error:
            raise ConnectError(f"schema id {schema_id} cannot be read as a Connect schema: {error}") from None
        reader = _Reader(parse_schema(avro), connect, needs_datum_change(connect))
        self._readers[schema_id] = reader
        return reader
