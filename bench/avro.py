"""What Headwater's Avro converter costs per record against confluent-kafka's own Avro serializer and deserializer,
on the same records, the same Schema Registry, in one run.

Records: ``--records`` values of an order struct of eleven fields (as ``tests/support/schema_source.py``'s
``ORDER``, with the logical types Decimal, Date, Time and Timestamp, an optional string, bytes, an array, an optional
nested struct), but with a map of string keys: a map with other keys is an array of ``MapEntry`` records in Avro,
which Headwater builds from a dict and confluent's serializer would have to be given ready-made. Headwater's side is
``AvroConverter`` as a worker loads it (``from_connect`` to write, ``to_connect_data`` to read); confluent's side is
``AvroSerializer`` given the Avro schema text Headwater registers for the struct, and ``AvroDeserializer`` with no
reader schema, both called with the topic's ``SerializationContext`` as a producer and a consumer call them. Each
side registers (or looks up) the schema and reads it back once before it is timed, so the times are the per-record
cost, not HTTP. Writing: every record to bytes; reading: the bytes confluent wrote back to values. The bytes of both
sides must be the same, and the values both read back the records: the run checks each, and prints how many
records it verified.

Each measurement runs ``--repeat`` times, alternating the sides; a ratio is the median, over the repeats, of
Headwater's records/s against confluent's in the run just before (the records/s printed are the best runs). Times
are this process's CPU time, after a full collection with the prebuilt input frozen out of the garbage collector.
The last line printed is ``serialize_ratio=<x> deserialize_ratio=<y>``: Headwater's records/s divided by
confluent's (the goal is at least 0.9).

The registry is ``--registry-url``, else Apicurio Registry started here
(:class:`headwater.harness.schema_registry.LocalSchemaRegistry`, Java 21 or newer) and stopped at the end.

Run it with::

    python bench/avro.py [--records N] [--repeat R] [--registry-url URL]
"""

from __future__ import annotations

import argparse
import datetime
import decimal
import gc
import statistics
import time
import uuid
from collections.abc import Callable, Sequence
from typing import Any

from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from headwater.harness.schema_registry import registry_url
from headwater.runtime.converters import AvroConverter, load_converter
from headwater.runtime.converters.avro_data import avro_text, to_avro
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
from headwater.sdk.schemas import decimal as decimal_schema

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
    codes=map_of(STRING, INT64),
    shipping=optional(struct("shop.Address", street=STRING)),
)
"""``tests/support/schema_source.py``'s ``ORDER``, its map keyed by strings."""


def order(n: int) -> dict[str, Any]:
    """Record ``n``'s value."""
    return {
        "id": n,
        "small": n % 100 - 50,
        "note": None if n % 2 else f"note {n}",
        "blob": n.to_bytes(4, "big"),
        "amount": decimal.Decimal(n).scaleb(-2) - decimal.Decimal("5.5"),
        "day": datetime.date(2026, 1, 1) + datetime.timedelta(days=n % 10_000),
        "at_time": datetime.time(n % 24, n % 60, 0, (n % 1000) * 1000),
        "placed": datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC) + datetime.timedelta(milliseconds=n * 1001),
        "tags": [str(n)] * (n % 3),
        "codes": {"self": n, "next": n + 1},
        "shipping": None if n % 3 else {"street": f"{n} Main St"},
    }


class Sides:
    """Both sides' writers and readers for one topic, each warmed up (schema registered and read back) on one
    record, which each reads back from the other's bytes."""

    def __init__(self, url: str, topic: str) -> None:
        self.topic = topic
        self.context = SerializationContext(topic, MessageField.VALUE)
        converter = load_converter("avro", {"schema.registry.url": url}, is_key=False)
        assert isinstance(converter, AvroConverter)
        self.converter = converter
        self.client = SchemaRegistryClient({"url": url})
        self.serializer = AvroSerializer(self.client, avro_text(to_avro(ORDER)))
        self.deserializer = AvroDeserializer(self.client)
        first = order(0)
        ours = self.converter.from_connect(topic, ORDER, first)
        theirs = self.serializer(first, self.context)
        if ours != theirs:
            raise RuntimeError(f"the two sides wrote different bytes for record 0: {ours!r} and {theirs!r}")
        if self.converter.to_connect_data(topic, theirs)[1] != first or self.deserializer(ours, self.context) != first:
            raise RuntimeError("a side did not read back record 0 from the other's bytes")

    def close(self) -> None:
        self.converter.close()
        self.client.close()

    def write(self, headwater: bool, records: Sequence[dict[str, Any]]) -> tuple[float, list[bytes | None]]:
        if headwater:
            from_connect, topic = self.converter.from_connect, self.topic
            return timed(lambda: [from_connect(topic, ORDER, record) for record in records])
        serializer, context = self.serializer, self.context
        return timed(lambda: [serializer(record, context) for record in records])

    def read(self, headwater: bool, data: Sequence[bytes]) -> tuple[float, list[Any]]:
        if headwater:
            to_connect_data, topic = self.converter.to_connect_data, self.topic
            return timed(lambda: [to_connect_data(topic, item)[1] for item in data])
        deserializer, context = self.deserializer, self.context
        return timed(lambda: [deserializer(item, context) for item in data])


def timed(run: Callable[[], list[Any]]) -> tuple[float, list[Any]]:
    """CPU seconds of ``run()`` and what it returned; after a full collection, with what exists so far (the
    prebuilt input) frozen out of the garbage collector, so that neither side pays for scanning it."""
    gc.collect()
    gc.freeze()
    begin = time.process_time()
    made = run()
    seconds = time.process_time() - begin
    gc.unfreeze()
    return seconds, made


def check(what: str, made: Sequence[Any], expected: Sequence[Any]) -> None:
    if len(made) != len(expected):
        raise RuntimeError(f"{what}: {len(made)} of {len(expected)} records")
    wrong = next((i for i, (got, want) in enumerate(zip(made, expected, strict=True)) if got != want), None)
    if wrong is not None:
        raise RuntimeError(f"{what}: record {wrong} is {made[wrong]!r}, expected {expected[wrong]!r}")


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--registry-url", help="a Schema Registry speaking Confluent's API; else one started here")
    args = parser.parse_args(argv)
    records = [order(i) for i in range(args.records)]
    url, stop = registry_url(args.registry_url)
    try:
        sides = Sides(url, f"bench-avro-{uuid.uuid4().hex[:8]}")
        try:
            rates = measure(sides, records, args.repeat)
        finally:
            sides.close()
    finally:
        stop()
    ratios = {}
    for step in ("serialize", "deserialize"):
        ours, theirs = rates[step, True], rates[step, False]
        # each Headwater run against confluent's run just before it: the median of those pairs, which a slower or
        # faster stretch of the machine moves less than a ratio of bests
        ratios[step] = statistics.median(o / t for o, t in zip(ours, theirs, strict=True))
        print(f"{step}: headwater {max(ours):,.0f} records/s, confluent {max(theirs):,.0f} records/s")
    print(f"verified={len(records)}")
    print(f"serialize_ratio={ratios['serialize']:.3f} deserialize_ratio={ratios['deserialize']:.3f}")


def measure(sides: Sides, records: Sequence[dict[str, Any]], repeat: int) -> dict[tuple[str, bool], list[float]]:
    """Records/s of each step and side (``True``: Headwater), ``repeat`` runs each, alternating; every run's output
    checked: the same bytes from both writers, the records back from both readers."""
    n = len(records)
    rates: dict[tuple[str, bool], list[float]] = {
        (step, headwater): [] for step in ("serialize", "deserialize") for headwater in (False, True)
    }
    written: list[bytes | None] = []
    for _ in range(repeat):
        seconds, theirs = sides.write(False, records)
        rates["serialize", False].append(n / seconds)
        seconds, ours = sides.write(True, records)
        rates["serialize", True].append(n / seconds)
        check("headwater's bytes against confluent's", ours, theirs)
        written = theirs
    data = [item for item in written if item is not None]
    for _ in range(repeat):
        for headwater in (False, True):
            seconds, values = sides.read(headwater, data)
            rates["deserialize", headwater].append(n / seconds)
            check(f"{'headwater' if headwater else 'confluent'} reading confluent's bytes", values, records)
    return rates


if __name__ == "__main__":
    main()
