"""Parity of Flatten with Kafka Connect's own (4.3.1), schemaless."""

from __future__ import annotations

import datetime as dt
import decimal

import pytest

from headwater.runtime.transforms.builtins import FIELD_TRANSFORMATIONS
from headwater.runtime.transforms.builtins.parts import DataError
from support.java_transforms import JavaTransforms
from support.parity_cases import Case, both, chain, sink, source
from support.transform_parity import assert_parity, to_record

DEEP = {
    "id": 1,
    "user": {"name": "ada", "address": {"city": "Oslo", "geo": {"lat": 59.9, "lon": 10.7}}, "nick": None},
    "tags": ["a", {"inside": "a list"}],
    "raw": b"\x00\x01",
    "ok": True,
    "empty": {},
}

CASES: list[Case] = [
    ("flatten nested maps", chain("Flatten$Value"), [*both(DEEP)]),
    ("flatten with a delimiter", chain("Flatten$Value", {"delimiter": "_"}), [*both(DEEP)]),
    ("flatten with a long delimiter", chain("Flatten$Value", {"delimiter": "::"}), [sink({"a": {"b": {"c": 1}}})]),
    ("flatten with an empty delimiter", chain("Flatten$Value", {"delimiter": ""}), [sink({"a": {"b": 1}})]),
    (
        "flatten collisions keep the later field",
        chain("Flatten$Value"),
        [sink({"a.b": 1, "a": {"b": 2}}), sink({"a": {"b": 2}, "a.b": 1})],
    ),
    ("flatten a flat map", chain("Flatten$Value"), [sink({"a": 1, "b": "x"}), sink({})]),
    ("flatten key", chain("Flatten$Key"), [sink(1, key={"k": {"a": 1}}), source(None, key={"k": {"b": None}})]),
    ("flatten passes tombstones", chain("Flatten$Value"), [*both(None), sink(None, key={"k": {"a": 1}})]),
    ("flatten refuses non-maps", chain("Flatten$Value"), [sink("text"), sink(5), sink([{"a": {"b": 1}}])]),
    (
        "flatten refuses decimals and timestamps",
        chain("Flatten$Value"),
        [sink({"a": {"d": decimal.Decimal("1.5")}}), sink({"t": dt.datetime(2026, 1, 1, tzinfo=dt.UTC)})],
    ),
    (
        "flatten with the Java class name of the key",
        chain("Flatten$Key", {"delimiter": "/"}),
        [sink(None, key={"a": {"b": {"c": [1]}}})],
    ),
]


@pytest.mark.parametrize(("name", "config", "records"), CASES, ids=[case[0] for case in CASES])
def test_flatten_agrees_with_kafka(
    java_transforms: JavaTransforms, name: str, config: dict[str, str], records: list[dict[str, object]]
) -> None:
    assert_parity(java_transforms, config, records)


def test_flatten_names_the_field_it_cannot_flatten() -> None:
    flatten = FIELD_TRANSFORMATIONS["Flatten$Value"]()
    flatten.configure(flatten.config_def().parse({}))
    with pytest.raises(DataError, match=r"Decimal \(field a\.d\)"):
        flatten.apply(to_record(sink({"a": {"d": decimal.Decimal(1)}})))
