"""TimestampConverter, with Kafka Connect's semantics: convert a timestamp (the whole key or value, or one field of
it) between Unix time, a formatted string and Connect's Date, Time and Timestamp.

Without a schema a timestamp's kind is inferred from its value, as Kafka Connect infers it: an int is Unix time,
a str is parsed with ``format``, a timezone-aware datetime (Kafka Connect's ``java.util.Date``) is a Timestamp.
Date, Time and Timestamp targets give datetimes in UTC. With a schema (a source record's ``key_schema`` or
``value_schema``) the kind comes from the schema and the values are the JsonConverter's: epoch days for a Date,
milliseconds of the day for a Time, epoch milliseconds for a Timestamp."""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any

from headwater.runtime.transforms.builtins.dates import EPOCH, MAX_MS, JavaDateFormat, OutOfRange
from headwater.runtime.transforms.builtins.parts import DataError, KeyOrValue, require_map, type_name
from headwater.runtime.transforms.builtins.schemas import (
    DATE,
    TIME,
    TIMESTAMP,
    normalized,
    operating_schema,
    with_schema,
)
from headwater.runtime.transforms.builtins.structs import NULLS_KEY, replaces_nulls
from headwater.sdk.config import REQUIRED, ConfigDef, Importance, Type, one_of
from headwater.sdk.errors import ConfigError
from headwater.sdk.transforms import R

DAY_MS = 86_400_000
_UNITS = {"seconds": 1000, "milliseconds": 1, "microseconds": -1000, "nanoseconds": -1_000_000}
"""Milliseconds per unit (a negative number: units per millisecond)."""
_LONG_MIN, _LONG_MAX = -(2**63), 2**63 - 1
_SCHEMAS: dict[str, dict[str, Any]] = {
    "string": {"type": "string"},
    "unix": {"type": "int64"},
    "Date": {"type": "int32", "name": DATE, "version": 1},
    "Time": {"type": "int32", "name": TIME, "version": 1},
    "Timestamp": {"type": "int64", "name": TIMESTAMP, "version": 1},
}


def _truncated(numerator: int, denominator: int) -> int:
    """Java's integer division (towards zero)."""
    quotient = abs(numerator) // denominator
    return quotient if numerator >= 0 else -quotient


def _saturated(value: int) -> int:
    """Java's ``TimeUnit`` conversions saturate at the bounds of a long."""
    return max(_LONG_MIN, min(_LONG_MAX, value))


class TimestampConverter(KeyOrValue[R]):
    """Convert a timestamp between Unix time, a string and Connect's Date, Time and Timestamp."""

    PURPOSE = "converting timestamp formats"

    def config_def(self) -> ConfigDef:
        return (
            ConfigDef()
            .define(
                "field",
                Type.STRING,
                "",
                Importance.HIGH,
                "The field holding the timestamp, or empty when the whole key or value is the timestamp.",
            )
            .define(
                "target.type",
                Type.STRING,
                REQUIRED,
                Importance.HIGH,
                "What the timestamp becomes: string (formatted with format), unix (a number in unix.precision), "
                "Date (midnight of its day), Time (its time of day on 1970-01-01) or Timestamp.",
                one_of(*_SCHEMAS, case_sensitive=True),
            )
            .define(
                "format",
                Type.STRING,
                "",
                Importance.MEDIUM,
                "java.text.SimpleDateFormat pattern (UTC) a string target is formatted with and a string input is "
                "parsed with; required for the string target. Headwater refuses the pattern letters it does not "
                "render like Java (see TimestampRouter's timestamp.format), and fails a string it would have to "
                "parse with E or Z (X, ISO 8601 offsets, is parsed).",
            )
            .define(
                "unix.precision",
                Type.STRING,
                "milliseconds",
                Importance.LOW,
                "Unit of Unix times, read and written: seconds, milliseconds, microseconds or nanoseconds. Values "
                "are truncated to milliseconds in between.",
                one_of(*_UNITS, case_sensitive=True),
            )
            .define(*NULLS_KEY)
        )

    def configure(self, config: Mapping[str, Any]) -> None:
        self.field: str = config.get("field") or ""
        self.target: str = config["target.type"]
        self.unit: int = _UNITS[config.get("unix.precision") or "milliseconds"]
        self.replace_null_with_default = replaces_nulls(config)
        pattern = config.get("format") or ""
        if self.target == "string" and not pattern.strip():
            raise ConfigError("format", pattern, "TimestampConverter requires format option for string timestamps")
        try:
            self.format = JavaDateFormat(pattern) if pattern.strip() else None
        except ValueError as error:
            raise ConfigError("format", pattern, str(error)) from None

    def apply(self, record: R) -> R | None:
        schema = operating_schema(record, self.part)
        value = self.operating_value(record)
        if schema is not None:
            return self._apply_with_schema(record, schema, value)
        if value is None or not self.field:
            return with_schema(record, self.part, self._converted(value, None), None)
        updated = dict(require_map(value, self.PURPOSE))
        updated[self.field] = self._converted(updated.get(self.field), None)
        return with_schema(record, self.part, updated, None)

    def _apply_with_schema(self, record: R, schema: Mapping[str, Any], value: Any) -> R:
        if not self.field:
            target = {**_SCHEMAS[self.target], "optional": bool(schema.get("optional", False))}
            return with_schema(record, self.part, self._converted(value, _kind(schema)), target)
        if schema.get("type") != "struct":
            raise DataError(f"Only Struct objects supported for [{self.PURPOSE}], found: {schema.get('type')}")
        fields = []
        for field in schema.get("fields", ()):
            if field["field"] == self.field:
                fields.append({**_SCHEMAS[self.target], "optional": bool(field.get("optional")), "field": self.field})
            else:
                fields.append(field)
        updated = normalized({**schema, "fields": fields, "default": None})
        if schema.get("default") is not None:
            updated["default"] = self._struct_value(schema, schema["default"])
        return with_schema(record, self.part, self._struct_value(schema, value), updated)

    def _struct_value(self, schema: Mapping[str, Any], value: Any) -> Any:
        if value is None:
            return None
        kinds = {field["field"]: field for field in schema.get("fields", ())}
        converted = dict(value)
        if self.field in kinds:
            current = converted.get(self.field)
            if current is None and self.replace_null_with_default:
                current = kinds[self.field].get("default")
            converted[self.field] = self._converted(current, _kind(kinds[self.field]))
        return converted

    def _converted(self, value: Any, kind: str | None) -> Any:
        """``value`` (of ``kind``, inferred from the value when None) as the target type."""
        if value is None:
            return None
        millis = self._millis(value, kind or _inferred(value), with_schema=kind is not None)
        return self._target(millis, with_schema=kind is not None)

    def _millis(self, value: Any, kind: str, *, with_schema: bool) -> int:
        if kind == "string":
            if not isinstance(value, str):
                raise DataError(f"Expected string timestamp to be a String, but found {type_name(value)}")
            if self.format is None:
                raise DataError(f"TimestampConverter needs format to parse the string timestamp {value!r}")
            return self.format.parse(value)
        if kind == "unix":
            if not isinstance(value, int) or isinstance(value, bool):
                raise DataError(f"Expected Unix timestamp to be a Long, but found {type_name(value)}")
            return _saturated(value * self.unit) if self.unit > 0 else _truncated(value, -self.unit)
        if with_schema:
            if not isinstance(value, int) or isinstance(value, bool):
                raise DataError(f"Expected {kind} to be a number in the JSON payload, but found {type_name(value)}")
            return value * DAY_MS if kind == "Date" else value
        if not isinstance(value, datetime.datetime) or value.tzinfo is None:
            raise DataError(f"Expected {kind} to be a timezone-aware datetime, but found {type_name(value)}")
        return (value - EPOCH) // datetime.timedelta(milliseconds=1)

    def _target(self, millis: int, *, with_schema: bool) -> Any:
        if self.target == "string":
            assert self.format is not None
            return self.format.format(millis)
        if self.target == "unix":
            return _truncated(millis, self.unit) if self.unit > 0 else _saturated(millis * -self.unit)
        if self.target == "Date":
            millis -= millis % DAY_MS
            if with_schema:
                return millis // DAY_MS
        elif self.target == "Time":
            millis %= DAY_MS
        if with_schema:
            return millis
        if not -62_135_596_800_000 <= millis <= MAX_MS:
            raise OutOfRange(f"Headwater cannot hold the timestamp {millis} in a datetime (years 1 to 9999 only)")
        return EPOCH + datetime.timedelta(milliseconds=millis)


def _inferred(value: Any) -> str:
    if isinstance(value, datetime.datetime):
        return "Timestamp"
    if isinstance(value, int) and not isinstance(value, bool):
        return "unix"
    if isinstance(value, str):
        return "string"
    raise DataError(f"TimestampConverter does not support {type_name(value)} objects as timestamps")


def _kind(schema: Mapping[str, Any]) -> str:
    """The timestamp kind a schema says its values are."""
    name = schema.get("name")
    if name in (TIMESTAMP, DATE, TIME):
        return {TIMESTAMP: "Timestamp", DATE: "Date", TIME: "Time"}[name]
    if schema.get("type") in ("string", "int64"):
        return "string" if schema["type"] == "string" else "unix"
    raise DataError(f"Schema {dict(schema)} does not correspond to a known timestamp type format")
