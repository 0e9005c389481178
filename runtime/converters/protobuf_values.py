"""Connect values to Protobuf messages and back, for the schemas :mod:`.protobuf_data` maps: a struct is a dict, a
map a dict, an array a list; ``decimal.Decimal``, ``datetime.date``, ``datetime.time`` and a UTC
``datetime.datetime`` for Decimal (``confluent.type.Decimal``), Date (``google.type.Date``), Time
(``google.type.TimeOfDay``) and Timestamp (``google.protobuf.Timestamp``), as Confluent's ProtobufData converts
them (milliseconds: Kafka Connect's Time and Timestamp hold no finer)."""

from __future__ import annotations

import datetime
import decimal
from collections.abc import Mapping
from typing import Any

from headwater.runtime.converters.logical import EPOCH, EPOCH_DAY, day_millis, decimal_bytes, epoch_millis
from headwater.runtime.converters.protobuf_data import (
    DATE_TYPE,
    DECIMAL_TYPE,
    ENUM_TYPE,
    MESSAGE,
    TIME_TYPE,
    TIMESTAMP_TYPE,
    UNION,
)
from headwater.sdk.errors import ConnectError
from headwater.sdk.schemas import SCALE, Schema

# ---- Connect -> Protobuf ------------------------------------------------------------------------------------------


def fill(message: Any, schema: Schema, value: Mapping[str, Any]) -> None:
    """Set the fields of ``message`` from a struct ``value`` of ``schema``; a null is left unset (a required field's
    null is refused, unless the field has a default, which is written instead)."""
    fields = message.DESCRIPTOR.fields_by_name
    for field in schema.get("fields", ()):
        name = field["field"]
        item = value.get(name)
        if item is None:
            item = field.get("default")
        if item is None:
            if not field.get("optional"):
                raise ConnectError(f"field {name!r} is required and has no value")
            continue
        if str(field.get("name") or "").startswith(UNION) and field.get("type") == "struct":
            fill(message, field, item)  # a oneof's members are the message's own fields
            continue
        descriptor = fields.get(name)
        if descriptor is None:
            raise ConnectError(f"message {message.DESCRIPTOR.full_name} has no field {name!r}")
        if field.get("type") == "map":
            _map(getattr(message, name), field, item)
        elif field.get("type") == "array":
            target = getattr(message, name)
            for element in item:
                if element is None:
                    raise ConnectError(f"field {name!r} holds a null element, which Protobuf cannot")
                if descriptor.type == MESSAGE:
                    _message(target.add(), field["items"], element)
                else:
                    target.append(_scalar(descriptor, element))
        elif descriptor.type == MESSAGE:
            _message(getattr(message, name), field, item)
        else:
            setattr(message, name, _scalar(descriptor, item))


def _map(target: Any, schema: Schema, value: Mapping[Any, Any]) -> None:
    keys, values = schema["keys"], schema["values"]
    entry_schema = {"type": "struct", "fields": [{**keys, "field": "key"}, {**values, "field": "value"}]}
    if hasattr(target, "add"):  # ProtobufData's map: repeated XEntry
        for key, item in value.items():
            fill(target.add(), entry_schema, {"key": key, "value": item})
    elif hasattr(target, "get_or_create"):  # a map<> field of a schema written elsewhere, message values
        for key, item in value.items():
            _message(target.get_or_create(key), values, item)
    else:
        target.update(value)


def _scalar(descriptor: Any, value: Any) -> Any:
    if descriptor.type == ENUM_TYPE:
        found = descriptor.enum_type.values_by_name.get(value)
        if found is None:
            raise ConnectError(f"{value!r} is no symbol of the enum {descriptor.enum_type.full_name}")
        return found.number
    return value


def _message(target: Any, schema: Schema, value: Any) -> None:
    kind = target.DESCRIPTOR.full_name
    target.SetInParent()
    if kind == DECIMAL_TYPE:
        scale = int((schema.get("parameters") or {}).get(SCALE, 0))
        if isinstance(value, (bytes, bytearray)):
            unscaled = bytes(value)
        elif isinstance(value, (decimal.Decimal, int)):
            unscaled = decimal_bytes(decimal.Decimal(value), scale)
        else:
            raise TypeError(f"a Decimal must be a decimal.Decimal, not {type(value).__name__}")
        target.value = unscaled
        target.precision = len(str(abs(int.from_bytes(unscaled, "big", signed=True))))
        target.scale = scale
    elif kind == DATE_TYPE:
        day = EPOCH_DAY + datetime.timedelta(days=value) if isinstance(value, int) else value
        if not isinstance(day, datetime.date) or isinstance(day, datetime.datetime):
            raise TypeError(f"a Date must be a datetime.date, not {type(value).__name__}")
        target.year, target.month, target.day = day.year, day.month, day.day
    elif kind == TIME_TYPE:
        millis = value if isinstance(value, int) else day_millis(value)
        if not 0 <= millis < 86_400_000:
            raise ValueError(f"a Time must be within a day, not {millis} ms")
        target.hours, target.minutes = millis // 3_600_000, millis // 60_000 % 60
        target.seconds, target.nanos = millis // 1000 % 60, millis % 1000 * 1_000_000
    elif kind == TIMESTAMP_TYPE:
        millis = value if isinstance(value, int) else epoch_millis(value)
        target.seconds, target.nanos = millis // 1000, millis % 1000 * 1_000_000
    else:
        if not isinstance(value, Mapping):
            raise TypeError(f"a struct must be a dict, not {type(value).__name__}")
        fill(target, schema, value)


# ---- Protobuf -> Connect ------------------------------------------------------------------------------------------

_ZERO: dict[str, Any] = {"int8": 0, "int16": 0, "int32": 0, "int64": 0, "float": 0.0, "double": 0.0, "boolean": False}
_ZERO |= {"string": "", "bytes": b""}


def read(schema: Schema, message: Any) -> dict[str, Any]:
    """The struct value of ``message``, a message of Connect struct ``schema`` (:func:`.protobuf_data.to_connect`):
    an unset scalar field is its zero value (proto3 has no null), an unset message or ``optional`` field null."""
    present = {descriptor.name: item for descriptor, item in message.ListFields()}
    made: dict[str, Any] = {}
    for field in schema["fields"]:
        name, kind = field["field"], field.get("type")
        if str(field.get("name") or "").startswith(UNION) and kind == "struct":
            members = [member["field"] for member in field["fields"]]
            made[name] = read(field, message) if any(member in present for member in members) else None
            continue
        item = present.get(name)
        if item is None:
            made[name] = _unset(message, name, field)
        elif kind == "map":
            made[name] = _read_map(field, item)
        elif kind == "array":
            made[name] = [_value(field["items"], element, message, name) for element in item]
        else:
            made[name] = _value(field, item, message, name)
    return made


def _unset(message: Any, name: str, field: Schema) -> Any:
    kind = field.get("type")
    if kind == "array":
        return []
    if kind == "map":
        return {}
    descriptor = message.DESCRIPTOR.fields_by_name[name]
    if descriptor.type == MESSAGE or descriptor.has_presence:
        return None
    if descriptor.type == ENUM_TYPE:
        return descriptor.enum_type.values_by_number[0].name if 0 in descriptor.enum_type.values_by_number else None
    return _ZERO.get(str(kind))


def _read_map(schema: Schema, item: Any) -> dict[Any, Any]:
    keys, values = schema["keys"], schema["values"]
    if hasattr(item, "items"):  # a map<> field
        return {key: _entry_value(values, value) for key, value in item.items()}
    entry_schema = {"fields": [{**keys, "field": "key"}, {**values, "field": "value"}]}
    made = {}
    for entry in item:
        pair = read(entry_schema, entry)
        made[pair["key"]] = pair["value"]
    return made


def _entry_value(schema: Schema, value: Any) -> Any:
    if hasattr(value, "DESCRIPTOR"):
        return _message_value(schema, value)
    return value


def _value(schema: Schema, item: Any, parent: Any, name: str) -> Any:
    if hasattr(item, "DESCRIPTOR"):
        return _message_value(schema, item)
    descriptor = parent.DESCRIPTOR.fields_by_name[name]
    if descriptor.type == ENUM_TYPE:
        found = descriptor.enum_type.values_by_number.get(item)
        return found.name if found is not None else str(item)
    return item


def _message_value(schema: Schema, message: Any) -> Any:
    kind = message.DESCRIPTOR.full_name
    if kind == DECIMAL_TYPE:
        unscaled = int.from_bytes(message.value, "big", signed=True) if message.value else 0
        return decimal.Decimal(unscaled).scaleb(-message.scale)
    if kind == DATE_TYPE:
        return datetime.date(message.year, message.month, message.day)
    if kind == TIME_TYPE:
        micros = message.nanos // 1_000_000 * 1000
        return datetime.time(message.hours, message.minutes, message.seconds, micros)
    if kind == TIMESTAMP_TYPE:
        return EPOCH + datetime.timedelta(milliseconds=message.seconds * 1000 + message.nanos // 1_000_000)
    return read(schema, message)
