"""Parity of Cast with Kafka Connect's own (4.3.1), schemaless: every target type from every source type, Java's
narrowing, parsing and float32 rounding, and the errors."""

from __future__ import annotations

import datetime as dt
import decimal
import random
import struct

import pytest

from headwater.runtime.transforms import build_chain
from headwater.sdk.errors import ConfigError
from support.java_transforms import JavaTransforms, TransformConfigError
from support.parity_cases import Case, both, chain, sink, source
from support.transform_parity import assert_parity, python_apply

TYPES = ("int8", "int16", "int32", "int64", "float32", "float64", "boolean", "string")
LONG_MAX, LONG_MIN = 2**63 - 1, -(2**63)
INTEGERS = [0, 1, -1, 127, 128, -129, 255, 32767, 32768, -32769, 2**31, -(2**31) - 1, 2**53 + 1, LONG_MAX, LONG_MIN]
FLOATS = [
    0.0,
    -0.0,
    0.5,
    -0.5,
    1.9,
    -1.9,
    127.9,
    128.5,
    1e10,
    -1e10,
    3.4e38,
    3.5e38,
    1e300,
    0.1,
    1e-4,
    1e7,
    123.456,
    float("nan"),
    float("inf"),
    float("-inf"),
    2.0**63,
    1e-50,
]
TEXTS = [
    "0",
    "1",
    "-1",
    "+5",
    "127",
    "128",
    " 5",
    "5 ",
    "1_0",
    "1.5",
    "1e3",
    "0x10",
    "abc",
    "",
    "true",
    "TRUE",
    "false",
    "yes",
    "NaN",
    "Infinity",
    "-Infinity",
    "inf",
    "1.5f",
    "2d",
    "0x1p3",
    " 2.5 ",
    "9223372036854775807",
    "9223372036854775808",
    "3.4028235e38",
    "1e39",
    "0.1",
    "٣",
]
BOOLEANS = [True, False]


def whole(values: list[object]) -> list[dict[str, object]]:
    """One sink record per value, the whole value."""
    return [sink(value) for value in values]


CASES: list[Case] = [
    *[(f"whole integer to {kind}", chain("Cast$Value", {"spec": kind}), whole(INTEGERS)) for kind in TYPES],
    *[(f"whole double to {kind}", chain("Cast$Value", {"spec": kind}), whole(FLOATS)) for kind in TYPES],
    *[(f"whole text to {kind}", chain("Cast$Value", {"spec": kind}), whole(TEXTS)) for kind in TYPES],
    *[(f"whole boolean to {kind}", chain("Cast$Value", {"spec": kind}), whole(BOOLEANS)) for kind in TYPES],
    *[(f"whole bytes to {kind}", chain("Cast$Value", {"spec": kind}), whole([b"\x00\xffhw", b""])) for kind in TYPES],
    ("whole value of a key", chain("Cast$Key", {"spec": "string"}), [sink(1, key=5), source(1, key=2.5)]),
    ("whole value passes tombstones", chain("Cast$Value", {"spec": "int8"}), [*both(None)]),
    ("whole map or list fails", chain("Cast$Value", {"spec": "string"}), [sink({"a": 1}), sink([1])]),
    (
        "whole decimal or timestamp fails",
        chain("Cast$Value", {"spec": "string"}),
        [sink(decimal.Decimal("1.5")), sink(dt.datetime(2026, 1, 1, tzinfo=dt.UTC))],
    ),
    (
        "fields",
        chain("Cast$Value", {"spec": "a:int8,b:string,c:boolean,d:float32"}),
        [*both({"a": 300, "b": 1.5, "c": "TRUE", "d": 0.1, "e": "kept"})],
    ),
    (
        "missing and null fields become null",
        chain("Cast$Value", {"spec": "a:int32,b:string"}),
        [sink({"a": None}), sink({}), sink({"c": 1})],
    ),
    (
        "field types ignore case and spaces",
        chain("Cast$Value", {"spec": " a : INT16 , b:Float64"}),
        [sink({"a": "12", "b": 3})],
    ),
    ("fields of a key", chain("Cast$Key", {"spec": "id:string"}), [sink(1, key={"id": 7}), source(1, key={"id": 8})]),
    ("fields pass tombstones", chain("Cast$Value", {"spec": "a:int8"}), [*both(None)]),
    ("fields of a non-map fail", chain("Cast$Value", {"spec": "a:int8"}), [sink("text"), sink(5), sink([1])]),
    ("a nested map field fails", chain("Cast$Value", {"spec": "a:string"}), [sink({"a": {"b": 1}})]),
    ("a list field fails", chain("Cast$Value", {"spec": "a:int64"}), [sink({"a": [1]})]),
    ("a bytes field to string", chain("Cast$Value", {"spec": "a:string"}), [sink({"a": b"hello"})]),
    ("a bytes field to a number fails", chain("Cast$Value", {"spec": "a:int32"}), [sink({"a": b"hello"})]),
    ("a field cast twice takes the last", chain("Cast$Value", {"spec": "a:int8,a:string"}), [sink({"a": 1})]),
    ("trailing colon is ignored", chain("Cast$Value", {"spec": "a:int8:"}), [sink({"a": 300})]),
    (
        "replace null with default is for schemas",
        chain("Cast$Value", {"spec": "a:int8", "replace.null.with.default": "false"}),
        [sink({"a": None}), sink({"a": 1})],
    ),
]

CONFIG_ERRORS: list[tuple[str, dict[str, str]]] = [
    ("no spec", chain("Cast$Value")),
    ("empty spec", chain("Cast$Value", {"spec": ""})),
    ("unknown type", chain("Cast$Value", {"spec": "a:int128"})),
    ("unknown whole type", chain("Cast$Value", {"spec": "number"})),
    ("cast to bytes", chain("Cast$Value", {"spec": "a:bytes"})),
    ("cast to a map", chain("Cast$Value", {"spec": "map"})),
    ("cast to a struct", chain("Cast$Key", {"spec": "a:struct"})),
    ("three parts", chain("Cast$Value", {"spec": "a:b:int8"})),
    ("whole value and fields", chain("Cast$Value", {"spec": "int8,a:string"})),
    ("two whole values", chain("Cast$Value", {"spec": "int8,string"})),
    ("field without type", chain("Cast$Value", {"spec": "a:"})),
    ("bad replace null with default", chain("Cast$Value", {"spec": "int8", "replace.null.with.default": "maybe"})),
]


@pytest.mark.parametrize(("name", "config", "records"), CASES, ids=[case[0] for case in CASES])
def test_cast_agrees_with_kafka(
    java_transforms: JavaTransforms, name: str, config: dict[str, str], records: list[dict[str, object]]
) -> None:
    assert_parity(java_transforms, config, records)


@pytest.mark.parametrize(("name", "config"), CONFIG_ERRORS, ids=[case[0] for case in CONFIG_ERRORS])
def test_bad_cast_configs_are_refused_by_both(
    java_transforms: JavaTransforms, name: str, config: dict[str, str]
) -> None:
    with pytest.raises(TransformConfigError):
        java_transforms.apply(config, [sink({"a": 1})])
    with pytest.raises(ConfigError) as refused:
        build_chain(config)
    assert refused.value.key.startswith("transforms.t.")


def sweep(seed: int = 22) -> dict[str, list[object]]:
    """Seeded random doubles (any bits, and every magnitude), longs of every width, and their text."""
    rng = random.Random(seed)
    doubles = [struct.unpack("d", struct.pack("Q", rng.getrandbits(64)))[0] for _ in range(300)]
    doubles += [rng.uniform(-1, 1) * 10 ** rng.randint(-30, 30) for _ in range(300)]
    longs = [rng.getrandbits(rng.randint(1, 63)) * rng.choice((1, -1)) for _ in range(400)]
    texts = [repr(value) for value in doubles[:200]] + [str(value) for value in longs[:200]]
    return {"double": doubles, "long": longs, "text": texts}


@pytest.mark.parametrize("kind", [kind for kind in TYPES if kind != "string"])
def test_random_values_cast_as_in_kafka(java_transforms: JavaTransforms, kind: str) -> None:
    for values in sweep().values():
        assert_parity(java_transforms, chain("Cast$Value", {"spec": kind}), whole(values))


def test_random_doubles_cast_to_the_same_text_or_its_shortest_form(java_transforms: JavaTransforms) -> None:
    """Double.toString before Java 19 (the parity JVM is Java 17) sometimes gives more digits than the shortest that
    read back as the same double (2.04081096433879808E17 for 2.040810964338798E17); Headwater gives Java 19's
    shortest form. Both must read back as the same double, Headwater's text never the longer."""
    config = chain("Cast$Value", {"spec": "string"})
    values = sweep()["double"]
    ours, theirs = python_apply(config, whole(values)), java_transforms.apply(config, whole(values))
    longer = 0
    for value, mine, kafka in zip(values, ours, theirs, strict=True):
        assert mine is not None and kafka is not None
        if mine["value"] != kafka["value"]:
            longer += 1
            assert float(mine["value"].replace("Infinity", "inf")) == float(kafka["value"]) == value
            assert len(mine["value"]) < len(kafka["value"])
    assert longer < len(values) // 20
