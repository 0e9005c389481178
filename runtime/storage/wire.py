"""The JSON of Kafka Connect's internal-topic records: compact, UTF-8, no NaN or infinities either way, so what
one store writes any Connect worker reads back the same."""

from __future__ import annotations

import json
from typing import Any


def dumps(value: object, *, sort_keys: bool = False) -> str:
    """Compact JSON text; raises ``ValueError`` for NaN and infinities, ``TypeError`` for what is not JSON."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False, sort_keys=sort_keys)


def json_bytes(value: object) -> bytes:
    """:func:`dumps` as UTF-8 bytes: a record value."""
    return dumps(value).encode("utf-8")


def strict_loads(data: bytes | str) -> Any:
    """Parse a record value; raises ``ValueError`` for invalid JSON and for the NaN/Infinity constants Python's
    parser would otherwise accept."""
    return json.loads(data, parse_constant=_reject)


def _reject(constant: str) -> None:
    raise ValueError(f"{constant} is not JSON")


def parse_record(key: bytes | None, value: bytes | None) -> tuple[str, dict[str, Any] | None] | None:
    """An internal-topic record's key text and JSON object value (``None``: a tombstone); ``None`` for a malformed
    record (a key that is not UTF-8, a value that is not a JSON object), which a store's view skips."""
    try:
        text = (key or b"").decode("utf-8")
        data = None if value is None else strict_loads(value)
    except ValueError:
        return None
    if data is not None and not isinstance(data, dict):
        return None
    return text, data
