"""A source of shop orders with a schema, every field a transform example of docs/transforms.md names (``amount``,
``quantity``, ``card_number``, ``password``, ``created_at``, the nested ``after``), and on even orders the headers
``trace-id`` and ``span-id``: ``count`` records to ``topic``, one source partition, each with its ``created_at`` as
its timestamp."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from headwater.sdk import ConfigDef, Importance, SourceConnector, SourceRecord, SourceTask, Type
from headwater.sdk.schemas import INT64, STRING, TIMESTAMP, struct

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


class ShopSource(SourceConnector):
    def config_def(self) -> ConfigDef:
        return (
            ConfigDef()
            .define("topic", Type.STRING, importance=Importance.HIGH, documentation="Where the orders go.")
            .define("count", Type.INT, 4, Importance.MEDIUM, "How many orders.")
        )

    def start(self, config: Mapping[str, Any]) -> None:
        self.config = {key: str(value) for key, value in config.items() if value is not None}

    def task_class(self) -> type[SourceTask]:
        return ShopSourceTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [dict(self.config)]


class ShopSourceTask(SourceTask):
    def start(self, config: Mapping[str, str]) -> None:
        self.topic, self.count = config["topic"], int(config.get("count", 4))
        stored = self.context.offset_storage_reader.offset({"orders": "all"})
        self.next = 0 if stored is None else int(stored["n"]) + 1

    def poll(self) -> Sequence[SourceRecord]:
        made = []
        while self.next < self.count:
            n = self.next
            headers = [("trace-id", f"t{n}".encode()), ("span-id", f"s{n}".encode())] if traced(n) else []
            made.append(
                SourceRecord(
                    {"orders": "all"},
                    {"n": n},
                    self.topic,
                    order(n),
                    timestamp=CREATED + n * 60_000,
                    value_schema=ORDER,
                    headers=headers,
                )
            )
            self.next += 1
        return made
