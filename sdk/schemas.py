"""Kafka Connect schemas: what a source record's ``key_schema`` and ``value_schema`` hold and what a sink record's say
it arrived with.

A schema is Kafka Connect's schema in the JSON form its ``JsonConverter`` writes (``{"type": "struct", "fields":
[{"field": "id", "type": "int64", "optional": false}, ...], "name": ..., "optional": false}``), a plain mapping, so a
schema a Java pipeline wrote reads as it is. The helpers below build one::

    ORDER = struct("shop.Order", id=INT64, amount=decimal(2, 10), placed=TIMESTAMP, note=optional(STRING))

An author who already has an Avro schema hands it over as :class:`AvroSchema`; the Avro converter writes with it as
it is, and the other converters read it as the Connect schema Kafka Connect's ``AvroData`` maps it to.

Values of a record with a schema are plain Python values: a struct is a dict of its fields, an array a list, a map
a dict; ``bytes`` for bytes; ``decimal.Decimal`` for :func:`decimal`, ``datetime.date`` for :data:`DATE`,
``datetime.time`` for :data:`TIME` and a timezone-aware ``datetime.datetime`` (UTC) for :data:`TIMESTAMP`. A sink
receives those from every converter that knows the schema; a source may also give a logical value as Kafka's
``JsonConverter`` payload writes it (days, milliseconds, the unscaled bytes of a decimal).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

Schema = Mapping[str, Any]
"""A Kafka Connect schema in the ``JsonConverter``'s JSON form."""

PRIMITIVES = frozenset({"int8", "int16", "int32", "int64", "float", "double", "boolean", "string", "bytes"})
"""Kafka Connect's primitive schema types, by the names its JSON form gives them (``float`` is FLOAT32, ``double``
FLOAT64)."""

DECIMAL_NAME = "org.apache.kafka.connect.data.Decimal"
DATE_NAME = "org.apache.kafka.connect.data.Date"
TIME_NAME = "org.apache.kafka.connect.data.Time"
TIMESTAMP_NAME = "org.apache.kafka.connect.data.Timestamp"
SCALE = "scale"
"""The parameter holding a Decimal's scale."""
PRECISION = "connect.decimal.precision"
"""The parameter holding a Decimal's precision, as Confluent's converters write it."""


def _primitive(kind: str) -> dict[str, Any]:
    return {"type": kind, "optional": False}


INT8, INT16, INT32, INT64 = (_primitive(kind) for kind in ("int8", "int16", "int32", "int64"))
FLOAT32, FLOAT64 = _primitive("float"), _primitive("double")
BOOLEAN, STRING, BYTES = _primitive("boolean"), _primitive("string"), _primitive("bytes")
DATE: dict[str, Any] = {"type": "int32", "optional": False, "name": DATE_NAME, "version": 1}
"""Days since the epoch; ``datetime.date`` in Python."""
TIME: dict[str, Any] = {"type": "int32", "optional": False, "name": TIME_NAME, "version": 1}
"""Milliseconds since midnight; ``datetime.time`` in Python."""
TIMESTAMP: dict[str, Any] = {"type": "int64", "optional": False, "name": TIMESTAMP_NAME, "version": 1}
"""Milliseconds since the epoch; a UTC ``datetime.datetime`` in Python."""


def optional(schema: Schema, default: Any = None) -> dict[str, Any]:
    """``schema`` made optional (a null value is allowed), with ``default`` when given."""
    made = {**schema, "optional": True}
    if default is not None:
        made["default"] = default
    return made


def decimal(scale: int, precision: int | None = None) -> dict[str, Any]:
    """Kafka Connect's Decimal: ``decimal.Decimal`` values with ``scale`` digits after the point, written as the
    unscaled value's big-endian two's-complement bytes; ``precision`` (Confluent's ``connect.decimal.precision``)
    when the reader needs it, as an Avro or Delta table does."""
    parameters = {SCALE: str(scale)}
    if precision is not None:
        parameters[PRECISION] = str(precision)
    return {"type": "bytes", "optional": False, "name": DECIMAL_NAME, "version": 1, "parameters": parameters}


def array(items: Schema) -> dict[str, Any]:
    """A list of ``items``."""
    return {"type": "array", "optional": False, "items": dict(items)}


def map_of(keys: Schema, values: Schema) -> dict[str, Any]:
    """A dict from ``keys`` to ``values``."""
    return {"type": "map", "optional": False, "keys": dict(keys), "values": dict(values)}


def struct(name: str | None = None, /, **fields: Schema) -> dict[str, Any]:
    """A struct of ``fields`` in the order given (a dict in Python), named ``name`` (Avro's record name, say
    ``shop.Order``; Kafka Connect's default when ``None``). Field names that are no Python identifiers go in as
    ``struct("t", **{"order-id": INT64})``."""
    made: dict[str, Any] = {"type": "struct", "optional": False}
    if name is not None:
        made["name"] = name
    made["fields"] = [{**schema, "field": field_name} for field_name, schema in fields.items()]
    return made


@dataclass(frozen=True)
class AvroSchema:
    """An Avro schema an author already has (its JSON text or the parsed JSON), given as a record's
    ``key_schema`` or ``value_schema``: the Avro converter writes with exactly this schema."""

    schema: str | Mapping[str, Any]
    text: str = field(init=False, repr=False, compare=False)
    """The schema's JSON text."""

    def __post_init__(self) -> None:
        text = self.schema if isinstance(self.schema, str) else json.dumps(self.schema, sort_keys=True)
        try:
            json.loads(text)
        except ValueError as error:
            raise ValueError(f"AvroSchema: not a JSON Avro schema: {error}") from None
        object.__setattr__(self, "text", text)

    @property
    def parsed(self) -> Any:
        """The schema's parsed JSON."""
        return json.loads(self.text)
