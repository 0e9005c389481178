"""Values of records with a Connect schema into Arrow columns, straight from the Python values the converters give
(a dict per struct, ``decimal.Decimal``, ``datetime.date``, a UTC ``datetime.datetime``, ``datetime.time``,
``bytes``; see :mod:`headwater.sdk.schemas`), never through JSON text.

Each value is checked against its record schema first: a null where the schema (or the table's column) is not
optional, or a Python value of another type than the schema's (a float in an integer field, an int in a Timestamp
field, a datetime in a Date field), does not fit and is set apart with the field named. Arrow then converts the
values into the table's column types and checks each value it converts: an integer out of a narrower column's range,
a decimal with more digits than its column holds, does not fit either. A Time becomes its milliseconds since
midnight, as Connect's Time is stored.
"""

from __future__ import annotations

import datetime
import decimal
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from headwater.reference_connectors.spark_sink.record_schema import arrow_schema, is_time
from headwater.sdk.schemas import DATE_NAME, DECIMAL_NAME, TIMESTAMP_NAME, Schema

_ACCEPTS: dict[str, tuple[type, ...]] = {
    "int8": (int,),
    "int16": (int,),
    "int32": (int,),
    "int64": (int,),
    "float": (float, int),
    "double": (float, int),
    "boolean": (bool,),
    "string": (str,),
    "bytes": (bytes, bytearray),
}
_LOGICAL_ACCEPTS: dict[str, tuple[type, ...]] = {
    DECIMAL_NAME: (decimal.Decimal, int),
    DATE_NAME: (datetime.date,),
    TIMESTAMP_NAME: (datetime.datetime,),
}
_NONE = type(None)


@dataclass
class ValuePlan:
    """How the values of one Connect schema are checked (and a Time converted) before Arrow takes them."""

    kind: str
    """``primitive``, ``struct``, ``array`` or ``map``."""
    label: str
    """The schema's type as errors name it (``int64``, ``Timestamp``)."""
    optional: bool
    accepts: frozenset[type] = frozenset()
    """A primitive's Python types (``None`` apart)."""
    time: bool = False
    """A Time: ``datetime.time`` values become milliseconds since midnight."""
    children: dict[str, ValuePlan] = field(default_factory=dict)
    """A struct's fields, an array's ``items``, a map's ``keys`` and ``values``."""

    @property
    def converts(self) -> bool:
        return self.time or any(child.converts for child in self.children.values())


def value_plan(schema: Schema) -> ValuePlan:
    """The plan of a Connect schema (one :func:`.record_schema.arrow_type` accepted)."""
    name, kind, optional = schema.get("name"), schema.get("type"), bool(schema.get("optional", False))
    if is_time(schema):
        return ValuePlan("primitive", "Time", optional, frozenset({datetime.time}), time=True)
    if name in _LOGICAL_ACCEPTS:
        return ValuePlan("primitive", str(name).rsplit(".", 1)[-1], optional, frozenset(_LOGICAL_ACCEPTS[name]))
    if kind == "struct":
        children = {f["field"]: value_plan(f) for f in schema.get("fields") or ()}
        return ValuePlan("struct", "struct", optional, children=children)
    if kind == "array":
        return ValuePlan("array", "array", optional, children={"items": value_plan(schema["items"])})
    if kind == "map":
        keys, values = value_plan(schema["keys"]), value_plan(schema["values"])
        return ValuePlan("map", "map", optional, children={"keys": keys, "values": values})
    return ValuePlan("primitive", str(kind), optional, frozenset(_ACCEPTS[str(kind)]))


def _millis(value: datetime.time) -> int:
    return ((value.hour * 60 + value.minute) * 60 + value.second) * 1000 + value.microsecond // 1000


def check(plan: ValuePlan, values: Sequence[Any], rows: Sequence[int], path: str, bad: dict[int, str]) -> None:
    """Record in ``bad`` (row -> reason) each row of ``rows`` whose value in ``values`` (one per row, same order)
    does not fit ``plan``."""
    if plan.kind == "primitive":
        kinds = set(map(type, values))
        if kinds <= plan.accepts or (plan.optional and kinds <= plan.accepts | {_NONE}):
            return  # the common case, at C speed
    present_values, present_rows = [], []
    for value, row in zip(values, rows, strict=True):
        if value is None:
            if not plan.optional:
                bad.setdefault(row, f"null in the required field {path}")
            continue
        if plan.kind == "primitive":
            if type(value) not in plan.accepts:
                bad.setdefault(row, f"field {path} holds a Python {type(value).__name__}, not a {plan.label}")
            continue
        if plan.kind in ("struct", "map") and not isinstance(value, Mapping):
            bad.setdefault(row, f"field {path} holds a Python {type(value).__name__}, not a {plan.label} (a dict)")
            continue
        if plan.kind == "array" and not isinstance(value, list | tuple):
            bad.setdefault(row, f"field {path} holds a Python {type(value).__name__}, not an array (a list)")
            continue
        present_values.append(value)
        present_rows.append(row)
    if plan.kind == "struct":
        for name, child in plan.children.items():
            check(child, [v.get(name) for v in present_values], present_rows, f"{path}.{name}", bad)
    elif plan.kind == "array":
        items = [(item, row) for value, row in zip(present_values, present_rows, strict=True) for item in value]
        check(plan.children["items"], [i for i, _ in items], [r for _, r in items], f"{path}[]", bad)
    elif plan.kind == "map":
        pairs = [(pair, row) for value, row in zip(present_values, present_rows, strict=True) for pair in value.items()]
        rows_of = [r for _, r in pairs]
        check(plan.children["keys"], [p[0] for p, _ in pairs], rows_of, f"{path}{{key}}", bad)
        check(plan.children["values"], [p[1] for p, _ in pairs], rows_of, f"{path}{{value}}", bad)


def convert(plan: ValuePlan, value: Any) -> Any:
    """``value`` (checked) with its Times as milliseconds since midnight; as it is when the plan has no Time."""
    if value is None or not plan.converts:
        return value
    if plan.time:
        return _millis(value)
    if plan.kind == "struct":
        return {name: convert(child, value.get(name)) for name, child in plan.children.items()}
    if plan.kind == "array":
        return [convert(plan.children["items"], item) for item in value]
    keys, values = plan.children["keys"], plan.children["values"]
    return [(convert(keys, k), convert(values, v)) for k, v in value.items()]


@dataclass
class RecordColumns:
    """Builds value columns of records of one Connect struct schema for the table's value columns."""

    schema: Schema
    arrow: pa.Schema = field(init=False)
    """The record schema's columns (raises :class:`.UnsupportedSchema` when it has none)."""
    plan: ValuePlan = field(init=False)

    def __post_init__(self) -> None:
        self.arrow = arrow_schema(self.schema)
        self.plan = value_plan(self.schema)

    def build(self, values: Sequence[Any], columns: pa.Schema) -> tuple[dict[str, pa.Array], dict[int, str]]:
        """The arrays of ``columns`` for the ``values`` that fit, and the index and reason of each that does not."""
        bad: dict[int, str] = {}
        rows = range(len(values))
        structs: Sequence[Any] = values
        if not all(type(v) is dict for v in values):
            for i, value in enumerate(values):
                if not isinstance(value, Mapping):
                    bad[i] = f"the value is a Python {type(value).__name__}, not a struct (a dict of its fields)"
            structs = [v if isinstance(v, Mapping) else {} for v in values]
        fields = self.plan.children
        given: dict[str, list[Any]] = {}
        for column in columns:
            child = fields.get(column.name)
            if child is None:
                continue
            required = ValuePlan(child.kind, child.label, child.optional and column.nullable, child.accepts, child.time)
            required.children = child.children
            given[column.name] = [v.get(column.name) for v in structs]
            check(required, given[column.name], rows, column.name, bad)
        while True:
            keep = [i for i in rows if i not in bad] if bad else None
            arrays: dict[str, pa.Array] = {}
            failed: dict[int, str] = {}
            for column in columns:
                child = fields.get(column.name)
                if child is None:
                    arrays[column.name] = pa.nulls(len(keep) if keep is not None else len(values), column.type)
                    continue
                raw = given[column.name] if keep is None else [given[column.name][i] for i in keep]
                if child.converts:
                    raw = [convert(child, value) for value in raw]
                try:
                    arrays[column.name] = pa.array(raw, column.type)
                except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
                    failed = _arrow_misfits(raw, column, list(rows) if keep is None else keep)
                    break
            if not failed:
                return arrays, bad
            bad.update(failed)


def _arrow_misfits(raw: list[Any], column: pa.Field, rows: list[int]) -> dict[int, str]:
    """The rows whose value of ``column`` Arrow does not convert, each with Arrow's reason."""
    found = {}
    for value, row in zip(raw, rows, strict=True):
        try:
            pa.array([value], column.type)
        except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError) as error:
            found[row] = f"field {column.name} does not fit the column's {column.type}: {str(error).splitlines()[0]}"
    if not found:  # each converts alone, so together too: a defect, not a record's
        raise AssertionError(f"Arrow rejected the values of {column.name} that each convert alone")
    return found


class RecordSchemas:
    """The record schemas a writer has met, each known by its JSON text: its columns and its value builder."""

    def __init__(self) -> None:
        self._built: dict[str, RecordColumns | None] = {}
        self._texts: dict[int, tuple[Schema, str]] = {}
        """By the id of a schema object (kept alive here, so its id stays its own) until :meth:`forget`."""

    def key(self, schema: Schema) -> str:
        """The schema's JSON text (keys sorted), computed once per schema object."""
        found = self._texts.get(id(schema))
        if found is not None and found[0] is schema:
            return found[1]
        text = json.dumps(schema, sort_keys=True, separators=(",", ":"), default=str)
        self._texts[id(schema)] = (schema, text)
        return text

    def get(self, schema: Schema) -> RecordColumns | None:
        """The columns of a struct schema; ``None`` for a schema of another type (its records do not fit). Raises
        :class:`.UnsupportedSchema` for a struct that no table can hold."""
        key = self.key(schema)
        if key not in self._built:
            self._built[key] = RecordColumns(schema) if schema.get("type") == "struct" else None
        return self._built[key]

    def forget(self) -> None:
        """Drop the schema objects of a flush (a converter that parses each message's schema makes one per record)."""
        self._texts.clear()
