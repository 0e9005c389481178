"""A source whose records carry a schema (:mod:`headwater.sdk.schemas`): ``count`` records of
:data:`ORDER`, with every logical type, to the topic ``topic``, one source partition; :func:`order` is record n."""

from __future__ import annotations

import datetime
import decimal
from collections.abc import Mapping, Sequence
from typing import Any

from headwater.sdk import ConfigDef, Importance, SourceConnector, SourceRecord, SourceTask, Type
from headwater.sdk.schemas import (
    BYTES,
    DATE,
    INT8,
    INT64,
    STRING,
    TIME,
    TIMESTAMP,
    array,
    map_of,
    optional,
    struct,
)
from headwater.sdk.schemas import (
    decimal as decimal_schema,
)

ORDER = struct(
    "shop.Order",
    id=INT64,
    small=INT8,
    note=optional(STRING),
    blob=BYTES,
    amount=decimal_schema(2, 10),
    day=DATE,
    at_time=TIME,
    placed=TIMESTAMP,
    tags=array(STRING),
    codes=map_of(INT64, STRING),
    shipping=optional(struct("shop.Address", street=STRING)),
)
KEY = STRING


def order(n: int) -> dict[str, Any]:
    return {
        "id": n,
        "small": n % 100 - 50,
        "note": None if n % 2 else f"note {n}",
        "blob": n.to_bytes(4, "big"),
        "amount": decimal.Decimal(n).scaleb(-2) - decimal.Decimal("5.5"),
        "day": datetime.date(2026, 1, 1) + datetime.timedelta(days=n),
        "at_time": datetime.time(n % 24, n % 60, 0, (n % 1000) * 1000),
        "placed": datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC) + datetime.timedelta(milliseconds=n * 1001),
        "tags": [str(n)] * (n % 3),
        "codes": {n: "self", n + 1: "next"},
        "shipping": None if n % 3 else {"street": f"{n} Main St"},
    }


class SchemaSource(SourceConnector):
    """``count`` orders (:attr:`count` by default) to ``topic``; a subclass names its own task class."""

    count = 10

    def config_def(self) -> ConfigDef:
        return (
            ConfigDef()
            .define("topic", Type.STRING, importance=Importance.HIGH, documentation="Where the orders go.")
            .define("count", Type.INT, self.count, Importance.MEDIUM, "How many orders.")
        )

    def start(self, config: Mapping[str, Any]) -> None:
        self.config = {
            "count": str(self.count),
            **{key: str(value) for key, value in config.items() if value is not None},
        }

    def task_class(self) -> type[SourceTask]:
        return SchemaSourceTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [dict(self.config)]


class SchemaSourceTask(SourceTask):
    """Order n is :meth:`record` ``(n)``, in one source partition (offset ``{"n": n}``), at most :attr:`per_poll` a
    poll (``None``: all that are left)."""

    per_poll: int | None = 5

    def start(self, config: Mapping[str, str]) -> None:
        self.topic, self.count = config["topic"], int(config["count"])
        stored = self.context.offset_storage_reader.offset({"orders": "all"})
        self.next = 0 if stored is None else int(stored["n"]) + 1

    def poll(self) -> Sequence[SourceRecord]:
        made = []
        while self.next < self.count and (self.per_poll is None or len(made) < self.per_poll):
            made.append(self.record(self.next))
            self.next += 1
        return made

    def record(self, n: int) -> SourceRecord:
        return SourceRecord(
            {"orders": "all"}, {"n": n}, self.topic, order(n), key=f"order-{n}", key_schema=KEY, value_schema=ORDER
        )
