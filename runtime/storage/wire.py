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
