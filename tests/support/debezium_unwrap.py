"""A consumer written for Debezium topics: Debezium's ``io.debezium.transforms.ExtractNewRecordState`` over the
messages Kafka's ``JsonConverter`` writes with ``schemas.enable=true``, written from Debezium's documented semantics
(``ExtractNewRecordState.doApply`` and ``extractnewstate.DefaultDeleteHandlingStrategy``), not from Headwater's code,
so a topic it reads is one a Debezium consumer reads unchanged.

- A record whose value schema has no name ending in ``.Envelope`` (``SmtManager.isValidEnvelope``) passes unchanged.
- A tombstone (null value) is dropped (in every mode but ``rewrite-with-tombstone``, not written here).
- An event with neither ``before`` nor ``after`` (a truncate) is dropped.
- A delete (``after`` null): ``tombstone`` (the default ``delete.tombstone.handling.mode``): the key with a null value
  (Debezium keeps the row's schema as the value schema); ``drop``: nothing; ``delete-to-tombstone``: the key with a
  null value and no value schema.
- Anything else: the ``after`` row, with its schema.

:func:`table_rows` replays the unwrapped records as an upserting sink does: the rows of the table, by key.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

MODES = ("tombstone", "drop", "delete-to-tombstone")
"""The modes written here (Debezium's ``rewrite`` modes, which add ``__deleted``, are not)."""


@dataclass(frozen=True)
class Unwrapped:
    """One record after the transform: its key's payload, its value's schema and payload (``None``: a delete)."""

    key: Any
    value_schema: Mapping[str, Any] | None
    value: Mapping[str, Any] | None


def _field(schema: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    for member in schema.get("fields") or ():
        if member.get("field") == name:
            return member
    raise KeyError(f"the envelope schema {schema.get('name')!r} has no field {name!r}")


def unwrap(key: Any, value: Any, mode: str = "tombstone") -> Unwrapped | None:
    """``ExtractNewRecordState`` (``delete.tombstone.handling.mode=mode``) of one message: ``key`` and ``value`` as
    JSON-decoded ``{"schema", "payload"}`` objects (``value`` ``None`` for a tombstone). ``None``: dropped."""
    if mode not in MODES:
        raise ValueError(f"delete.tombstone.handling.mode {mode!r} is not one of {', '.join(MODES)}")
    key_payload = key["payload"] if isinstance(key, Mapping) and "payload" in key else key
    if value is None:
        return None
    schema = value.get("schema") if isinstance(value, Mapping) else None
    if not isinstance(schema, Mapping) or not str(schema.get("name") or "").endswith(".Envelope"):
        return Unwrapped(key_payload, schema, value)  # not an envelope: unchanged
    payload = value["payload"]
    after, before = payload.get("after"), payload.get("before")
    if after is None and before is None:
        return None  # a truncate
    if after is None:
        if mode == "drop":
            return None
        if mode == "delete-to-tombstone":
            return Unwrapped(key_payload, None, None)
        return Unwrapped(key_payload, _field(schema, "after"), None)
    return Unwrapped(key_payload, _field(schema, "after"), after)


def table_rows(messages: Iterable[tuple[Any, Any]], mode: str = "tombstone") -> dict[str, Mapping[str, Any]]:
    """The table an upserting sink keyed on the record key builds from ``messages`` (key, value pairs as
    :func:`unwrap` takes them): the rows by the ``repr`` of their key's sorted items."""
    rows: dict[str, Mapping[str, Any]] = {}
    for key, value in messages:
        record = unwrap(key, value, mode)
        if record is None:
            continue
        name = repr(sorted(record.key.items())) if isinstance(record.key, Mapping) else repr(record.key)
        if record.value is None:
            rows.pop(name, None)
        else:
            rows[name] = record.value
    return rows
