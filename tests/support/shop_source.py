"""A source of shop orders with a schema, every field a transform example of docs/transforms.md names (``amount``,
``quantity``, ``card_number``, ``password``, ``created_at``, the nested ``after``), and on even orders the headers
``trace-id`` and ``span-id``: ``count`` records to ``topic``, one source partition, each with its ``created_at`` as
its timestamp."""

from __future__ import annotations

from typing import Any

from headwater.sdk import SourceRecord, SourceTask
from headwater.sdk.schemas import INT64, STRING, TIMESTAMP, struct
from support.schema_source import SchemaSource, SchemaSourceTask

ORDER = struct(
    "shop.Order",
    id=INT64,
    amount=STRING,
    quantity=STRING,
    card_number=STRING,
    password=STRING,
    created_at=TIMESTAMP,
    after=struct("shop.OrderState", status=STRING),
)

CREATED = 1_767_225_600_000
"""2026-01-01T00:00:00Z in milliseconds: a Timestamp field's value in the JSON payload form the transforms take."""


def order(n: int) -> dict[str, Any]:
    return {
        "id": n,
        "amount": f"{n}.25",
        "quantity": str(n + 1),
        "card_number": f"4111-{n:04d}",
        "password": "secret",
        "created_at": CREATED + n * 60_000,
        "after": {"status": "paid"},
    }


def traced(n: int) -> bool:
    """Whether order ``n`` carries the ``trace-id`` and ``span-id`` headers."""
    return n % 2 == 0


class ShopSource(SchemaSource):
    count = 4

    def task_class(self) -> type[SourceTask]:
        return ShopSourceTask


class ShopSourceTask(SchemaSourceTask):
    per_poll = None

    def record(self, n: int) -> SourceRecord:
        headers = [("trace-id", f"t{n}".encode()), ("span-id", f"s{n}".encode())] if traced(n) else []
        timestamp = CREATED + n * 60_000
        return SourceRecord(
            {"orders": "all"}, {"n": n}, self.topic, order(n), timestamp=timestamp, value_schema=ORDER, headers=headers
        )
