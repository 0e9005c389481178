"""The Java side of the transform parity tests: Kafka Connect's own transforms and predicates, driven from Python
(:mod:`support.java_transforms`)."""

from __future__ import annotations

import datetime as dt
import decimal
import json
import math
import os
import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest

from headwater.harness.maven import BrokerUnavailable
from support.java_transforms import (
    DRIVER_CLASS,
    JavaTransforms,
    JavaTransformsError,
    TransformConfigError,
    compile_driver,
    decode,
    encode,
    fetch_transform_jars,
    transforms_pom,
    typed,
)

T = "org.apache.kafka.connect.transforms."
P = "org.apache.kafka.connect.transforms.predicates."


def record(value: Any = None, *, topic: str = "orders", key: Any = None, **fields: Any) -> dict[str, Any]:
    return {"topic": topic, "key": key, "value": value, **fields}


def sink_out(value: Any = None, *, topic: str = "orders", key: Any = None, **fields: Any) -> dict[str, Any]:
    """An output sink record as the driver returns it, defaults filled in."""
    defaults = {"kind": "sink", "partition": 0, "offset": 0, "timestamp": None, "headers": []}
    return {**defaults, "topic": topic, "key": key, "value": value, **fields}


# without Java: the pom and the value mapping


def test_pom_lists_the_transforms_and_the_json_converter_of_the_broker_version() -> None:
    pom = transforms_pom("4.3.1")
    assert "<artifactId>connect-transforms</artifactId><version>4.3.1</version>" in pom
    assert "<artifactId>connect-json</artifactId><version>4.3.1</version>" in pom
    assert "connect-runtime" not in pom and "kafka_2.13" not in pom


def test_encode_and_decode_are_inverse_with_markers_for_bytes_instants_and_decimals() -> None:
    value = {
        "b": b"\x00\xff",
        "t": dt.datetime(2026, 11, 26, 23, 5, 1, 123000, tzinfo=dt.UTC),
        "d": decimal.Decimal("-12.3400"),
        "nested": [1, 2.5, None, True, "s", {"x": b""}],
    }
    wire = encode(value)
    assert wire["b"] == {"$bytes": "AP8="}
    assert wire["t"] == {"$timestamp": 1795734301123}
    assert wire["d"] == {"$decimal": "-12.3400"}
    assert typed(decode(json.loads(json.dumps(wire)))) == typed(value)


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        (2**63, "64-bit"),
        (-(2**63) - 1, "64-bit"),
        (dt.datetime(2026, 1, 1), "timezone"),
        ({"$bytes": "AA=="}, "marker"),
        ({1: "a"}, "str"),
        ({1, 2}, "no Kafka Connect value"),
    ],
)
def test_values_kafka_connect_cannot_hold_are_refused_before_java(value: Any, problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        encode(value)


def test_missing_java_tools_are_named(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(BrokerUnavailable, match="openjdk-17-jdk-headless maven") as raised:
        fetch_transform_jars(cache_dir=tmp_path / "cache")
    assert raised.value.missing_tools == ("java", "javac", "mvn")
    assert not (tmp_path / "cache").exists()


FAKE_JAVAC = """#!/bin/sh
echo "$@" >> "$(dirname "$0")/calls"
[ -n "$FAIL" ] && { echo "error: $FAIL" >&2; exit 1; }
while [ "$1" != "-d" ]; do shift; done
touch "$2/TransformDriver.class"
"""


def test_the_driver_is_compiled_once_per_source_text(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    bin_dir, jars, cache = tmp_path / "bin", tmp_path / "jars", tmp_path / "cache"
    bin_dir.mkdir()
    jars.mkdir()
    (bin_dir / "javac").write_text(FAKE_JAVAC)
    (bin_dir / "javac").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")  # this javac first
    source = tmp_path / "TransformDriver.java"
    source.write_text("class TransformDriver {}")
    first = compile_driver(jars, source, cache)
    assert compile_driver(jars, source, cache) == first
    source.write_text("class TransformDriver { }")
    second = compile_driver(jars, source, cache)
    assert second != first and (second / "TransformDriver.class").exists()
    assert len((bin_dir / "calls").read_text().splitlines()) == 2
    source.write_text("class TransformDriver { int broken; }")
    monkeypatch.setenv("FAIL", "cannot find symbol")
    with pytest.raises(JavaTransformsError, match="error: cannot find symbol"):
        compile_driver(jars, source, cache)
    assert sorted(path.name for path in cache.iterdir()) == sorted([".lock", first.name, second.name])


def test_typed_tells_int_float_and_bool_apart() -> None:
    assert typed({"a": [1]}) != typed({"a": [1.0]}) != typed({"a": [True]})
    assert typed(math.nan) == typed(float("nan"))


# with Kafka Connect's jars


def test_insert_field_value_adds_the_static_field(java_transforms: JavaTransforms) -> None:
    config = {
        "transforms": "ins",
        "transforms.ins.type": T + "InsertField$Value",
        "transforms.ins.static.field": "src",
        "transforms.ins.static.value": "hw",
    }
    out = java_transforms.apply(config, [record({"a": 1, "b": 2.0}, timestamp=5, headers=[("h", b"v")])])
    assert typed(out) == typed([sink_out({"a": 1, "b": 2.0, "src": "hw"}, timestamp=5, headers=[("h", b"v")])])


def test_regex_router_renames_matching_topics_only(java_transforms: JavaTransforms) -> None:
    config = {
        "transforms": "route",
        "transforms.route.type": T + "RegexRouter",
        "transforms.route.regex": "(.*)-raw",
        "transforms.route.replacement": "$1-clean",
    }
    out = java_transforms.apply(config, [record(1, topic="orders-raw"), record(2, topic="orders-raw-x")])
    assert [(r["topic"], r["value"]) for r in out if r] == [("orders-clean", 1), ("orders-raw-x", 2)]


@pytest.mark.parametrize(("negate", "keys"), [("false", ["k1", None]), ("true", [None, "k2"])])
def test_filter_with_the_tombstone_predicate_and_negate(
    java_transforms: JavaTransforms, negate: str, keys: list[str | None]
) -> None:
    config = {
        "transforms": "drop",
        "transforms.drop.type": T + "Filter",
        "transforms.drop.predicate": "tomb",
        "transforms.drop.negate": negate,
        "predicates": "tomb",
        "predicates.tomb.type": P + "RecordIsTombstone",
    }
    out = java_transforms.apply(config, [record("live", key="k1"), record(None, key="k2")])
    assert [None if r is None else r["key"] for r in out] == keys  # None: dropped


def test_hoist_field_key_wraps_the_key(java_transforms: JavaTransforms) -> None:
    config = {"transforms": "hoist", "transforms.hoist.type": T + "HoistField$Key", "transforms.hoist.field": "id"}
    out = java_transforms.apply(config, [record("v", key=42)])
    assert typed(out) == typed([sink_out("v", key={"id": 42})])


def test_a_transform_that_raises_gives_that_record_its_error_and_the_others_go_on(
    java_transforms: JavaTransforms,
) -> None:
    config = {"transforms": "x", "transforms.x.type": T + "ExtractField$Value", "transforms.x.field": "id"}
    out = java_transforms.apply(config, [record("not a map"), record({"id": 7, "other": 1})])
    assert out[0] == {
        "error": "org.apache.kafka.connect.errors.DataException: Only Map objects supported in absence of schema "
        "for [field extraction], found: java.lang.String"
    }
    assert typed(out[1]) == typed(sink_out(7))


def test_stages_run_in_alias_order_and_a_predicate_guards_only_its_stage(java_transforms: JavaTransforms) -> None:
    config = {
        "transforms": "hoist,route",
        "transforms.hoist.type": T + "HoistField$Value",
        "transforms.hoist.field": "wrapped",
        "transforms.hoist.predicate": "isA",
        "transforms.route.type": T + "RegexRouter",
        "transforms.route.regex": ".*",
        "transforms.route.replacement": "all",
        "predicates": "isA",
        "predicates.isA.type": P + "TopicNameMatches",
        "predicates.isA.pattern": "a",
    }
    out = java_transforms.apply(config, [record(1, topic="a"), record(2, topic="b")])
    assert typed(out) == typed([sink_out({"wrapped": 1}, topic="all"), sink_out(2, topic="all")])


@pytest.mark.parametrize(
    ("config", "error"),
    [
        ({"transforms": "x", "transforms.x.type": "no.such.Transform"}, "Class no.such.Transform could not be found"),
        ({"transforms": "x"}, 'Missing required configuration "transforms.x.type"'),
        (
            {"transforms": "x", "transforms.x.type": T + "Filter", "transforms.x.negate": "true"},
            "there is no config 'transforms.x.predicate'",
        ),
        ({"transforms": "x", "transforms.x.type": T + "RegexRouter"}, 'Missing required configuration "regex"'),
        (
            {"transforms": "x,x", "transforms.x.type": T + "Filter"},
            r"Invalid value \[x, x\] for configuration transforms: Duplicate alias provided\.",
        ),
        (
            {"transforms": "x", "transforms.x.type": T + "InsertField"},
            r"Transformation is abstract and cannot be created\. Did you mean .*InsertField\$(Key|Value), "
            r".*InsertField\$(Key|Value)\?",
        ),
        ({"transforms": "x", "transforms.x.type": P + "HasHeaderKey"}, "Not a Transformation"),
        (
            {"predicates": "p", "predicates.p.type": P + "TopicNameMatches"},
            'Missing required configuration "pattern"',  # listed, used by no transform, still checked
        ),
    ],
)
def test_a_chain_kafka_connect_cannot_build_raises_its_config_error(
    java_transforms: JavaTransforms, config: dict[str, str], error: str
) -> None:
    with pytest.raises(TransformConfigError, match=error) as raised:
        java_transforms.apply(config, [record(1)])
    assert raised.value.java_class == "org.apache.kafka.common.config.ConfigException"


def test_every_schemaless_value_round_trips_through_java(java_transforms: JavaTransforms) -> None:
    values = [
        None,
        0,
        -(2**63),
        2**63 - 1,
        1.0,
        -0.0,
        math.inf,
        True,
        "ünïcode ✓",
        b"\x00\x01\xfe",
        dt.datetime(1969, 12, 31, 23, 59, 59, 999000, tzinfo=dt.UTC),
        decimal.Decimal("123456789012345678901234567890.5"),
        {"map": {"of": [[], {}, [1, "x"]]}},
    ]
    records = [
        record(v, key=v, headers=[("h", v)], timestamp=i, partition=i % 3, offset=i) for i, v in enumerate(values)
    ]
    out = java_transforms.apply({}, records)
    assert typed(out) == typed(
        [sink_out(v, key=v, headers=[("h", v)], timestamp=i, partition=i % 3, offset=i) for i, v in enumerate(values)]
    )
    (nan,) = java_transforms.apply({}, [record(math.nan)])
    assert nan is not None and math.isnan(nan["value"])


def test_source_records_have_no_offset_and_may_have_no_partition(java_transforms: JavaTransforms) -> None:
    config = {
        "transforms": "ts",
        "transforms.ts.type": T + "InsertField$Value",
        "transforms.ts.timestamp.field": "at",
        "transforms.ts.partition.field": "p",
    }
    out = java_transforms.apply(config, [record({}, kind="source", partition=None, timestamp=1000)])
    assert out == [
        {
            "kind": "source",
            "topic": "orders",
            "partition": None,
            "key": None,
            "value": {"at": 1000},  # schemaless: the epoch ms; no partition, no field
            "timestamp": 1000,
            "headers": [],
        }
    ]


def test_records_with_schemas_go_through_the_json_converter(java_transforms: JavaTransforms) -> None:
    schema = {"type": "struct", "optional": False, "fields": [{"field": "id", "type": "int32", "optional": False}]}
    config = {
        "transforms": "ins,meta",
        "transforms.ins.type": T + "InsertField$Value",
        "transforms.ins.static.field": "src",
        "transforms.ins.static.value": "hw",
        "transforms.meta.type": T + "SetSchemaMetadata$Value",
        "transforms.meta.schema.name": "Order",
    }
    (out,) = java_transforms.apply(config, [record({"id": 7}, value_schema=schema, key=b"k")])
    assert out is not None and out["value"] == {"id": 7, "src": "hw"}
    assert out["value_schema"] == {
        "type": "struct",
        "optional": False,
        "name": "Order",
        "fields": [
            {"field": "id", "type": "int32", "optional": False},
            {"field": "src", "type": "string", "optional": True},
        ],
    }
    assert out["key"] == b"k" and "key_schema" not in out


def test_header_from_copies_a_struct_field_and_its_schema_into_a_header(java_transforms: JavaTransforms) -> None:
    schema = {"type": "struct", "optional": False, "fields": [{"field": "id", "type": "int64", "optional": False}]}
    config = {
        "transforms": "h",
        "transforms.h.type": T + "HeaderFrom$Value",
        "transforms.h.fields": "id",
        "transforms.h.headers": "order-id",
        "transforms.h.operation": "copy",
    }
    given = ("trace", "AQI=", {"type": "bytes", "optional": False})  # a header with a schema: payload as is
    (out,) = java_transforms.apply(
        config, [record({"id": 7}, value_schema=schema, headers=[given])], header_schemas=True
    )
    assert out is not None
    assert out["headers"] == [given, ("order-id", 7, {"type": "int64", "optional": False})]


def test_header_schemas_on_request(java_transforms: JavaTransforms) -> None:
    config = {
        "transforms": "h",
        "transforms.h.type": T + "InsertHeader",
        "transforms.h.header": "n",
        "transforms.h.value.literal": "42",
    }
    records = [record(1, headers=[("plain", "x")])]
    (bare,) = java_transforms.apply(config, records)
    (schemas,) = java_transforms.apply(config, records, header_schemas=True)
    assert bare is not None and bare["headers"] == [("plain", "x"), ("n", 42)]
    assert schemas is not None and schemas["headers"] == [
        ("plain", "x"),
        ("n", 42, {"type": "int8", "optional": False}),
    ]


def test_one_jvm_serves_many_requests_and_a_large_one(java_transforms: JavaTransforms) -> None:
    starts = java_transforms.starts
    many = [record({"i": i, "pad": "x" * 200}, offset=i) for i in range(5000)]  # far beyond a pipe's buffer
    out = java_transforms.apply({}, many)
    assert [r["offset"] for r in out if r is not None] == list(range(5000))
    for i in range(20):
        assert java_transforms.apply({}, [record(i)])[0] == sink_out(i)
    assert java_transforms.starts == starts and java_transforms.running
    assert f"running pid={java_transforms.pid} requests=" in repr(java_transforms)


@pytest.mark.parametrize(
    ("given", "reason"),
    [
        ({"value": 1}, 'needs a "topic" string'),
        ({"topic": "t", "timestmp": 5}, 'unknown record field "timestmp"'),
        ({"topic": "t", "timestamp": 5.5}, 'record field "timestamp" is not an integer: 5.5'),
        ({"topic": "t", "kind": "other"}, '"kind" is "sink" or "source"'),
        ({"topic": "t", "headers": [["h"]]}, "a header is \\[name, value\\]"),
    ],
)
def test_a_malformed_request_raises_with_the_drivers_reason(
    java_transforms: JavaTransforms, given: dict[str, Any], reason: str
) -> None:
    with pytest.raises(JavaTransformsError, match=reason):
        java_transforms.request({"transforms": {}, "records": [given]})
    assert java_transforms.apply({}, [record(1)]) == [sink_out(1)]  # the same JVM goes on


def test_a_killed_jvm_is_reported_then_replaced(java_transforms: JavaTransforms) -> None:
    driver = JavaTransforms(java_transforms.classes, java_transforms.jars)
    with driver:
        assert driver.apply({}, [record(1)]) == [sink_out(1)]
        assert driver.pid is not None
        os.kill(driver.pid, signal.SIGKILL)
        with pytest.raises(JavaTransformsError, match=r"exited \(-9\)"):
            driver.apply({}, [record(2)])
        assert driver.apply({}, [record(3)]) == [sink_out(3)]
        assert driver.starts == 2
    assert not driver.running


def test_a_jvm_that_cannot_start_surfaces_its_stderr(java_transforms: JavaTransforms, tmp_path: Path) -> None:
    driver = JavaTransforms(tmp_path, java_transforms.jars)  # no compiled driver there
    with driver, pytest.raises(JavaTransformsError, match=f"Could not find or load main class {DRIVER_CLASS}"):
        driver.apply({}, [record(1)])


def test_a_request_without_an_answer_in_time_fails(java_transforms: JavaTransforms) -> None:
    driver = JavaTransforms(java_transforms.classes, java_transforms.jars, timeout_s=0.0)
    with driver, pytest.raises(JavaTransformsError, match=r"no answer from the driver in 0\.0 s"):
        driver.apply({}, [record(1)])
    assert not driver.running


def test_the_driver_reads_one_pretty_printed_document_from_stdin(java_transforms: JavaTransforms) -> None:
    request = {
        "transforms": {"transforms": "h", "transforms.h.type": T + "HoistField$Value", "transforms.h.field": "v"},
        "records": [{"topic": "t", "value": 1}],
    }
    done = subprocess.run(
        java_transforms.command(), input=json.dumps(request, indent=2), capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {
        "records": [
            {
                "kind": "sink",
                "topic": "t",
                "partition": 0,
                "offset": 0,
                "key": None,
                "value": {"v": 1},
                "timestamp": None,
                "headers": [],
            }
        ]
    }


UTC = dt.UTC
BUILT_INS: list[tuple[str, dict[str, str], dict[str, Any], dict[str, Any] | None]] = [
    # (type, settings, record fields, the output's fields that differ from the record's; None: dropped)
    ("Cast$Value", {"spec": "a:int8,b:float32,c:string,d:float64"}, {"value": {"a": 300, "b": 0.1, "c": 5, "d": 2}},
     {"value": {"a": 44, "b": 0.10000000149011612, "c": "5", "d": 2.0}}),
    ("Cast$Key", {"spec": "int16"}, {"key": 70000}, {"key": 4464}),
    ("DropHeaders", {"headers": "a,b"}, {"headers": [("a", 1), ("c", 2), ("b", 3), ("a", 4)]}, {"headers": [("c", 2)]}),
    ("ExtractField$Key", {"field": "id"}, {"key": {"id": 7}}, {"key": 7}),
    ("ExtractField$Value", {"field": "a.b", "field.syntax.version": "V2"}, {"value": {"a": {"b": 1}}}, {"value": 1}),
    ("Filter", {}, {"value": 1}, None),
    ("Flatten$Value", {"delimiter": "_"}, {"value": {"a": {"b": 1, "c": {"d": [1]}}, "e": None}},
     {"value": {"a_b": 1, "a_c_d": [1], "e": None}}),
    ("HeaderFrom$Value", {"fields": "id", "headers": "hid", "operation": "move"}, {"value": {"id": 7, "x": 1}},
     {"value": {"x": 1}, "headers": [("hid", 7)]}),
    ("HoistField$Value", {"field": "v"}, {"value": [1, 2]}, {"value": {"v": [1, 2]}}),
    ("InsertField$Key", {"topic.field": "t", "offset.field": "o!"}, {"key": {}, "offset": 12},
     {"key": {"t": "orders", "o": 12}}),
    ("InsertHeader", {"header": "h", "value.literal": "true"}, {"value": 1}, {"headers": [("h", True)]}),
    ("MaskField$Value", {"fields": "s,n,f,b,l,m"},
     {"value": {"s": "x", "n": 5, "f": 1.5, "b": True, "l": [1], "m": {"a": 1}}},
     {"value": {"s": "", "n": 0, "f": 0.0, "b": False, "l": [], "m": {}}}),
    ("MaskField$Value", {"fields": "s", "replacement": "***"}, {"value": {"s": "x"}}, {"value": {"s": "***"}}),
    ("RegexRouter", {"regex": "o(.*)", "replacement": "$1"}, {"value": 1}, {"topic": "rders"}),
    ("ReplaceField$Value", {"exclude": "x", "renames": "a:b"}, {"value": {"a": 1, "x": 2, "y": 3}},
     {"value": {"b": 1, "y": 3}}),
    ("SetSchemaMetadata$Value", {"schema.name": "N"}, {"value": {"a": 1}},
     {"error": "org.apache.kafka.connect.errors.DataException: Schema required for [updating schema metadata]"}),
    ("TimestampConverter$Value", {"field": "ts", "target.type": "Timestamp"}, {"value": {"ts": 1000}},
     {"value": {"ts": dt.datetime(1970, 1, 1, 0, 0, 1, tzinfo=UTC)}}),
    ("TimestampConverter$Value", {"field": "ts", "target.type": "string", "format": "yyyy-MM-dd HH:mm"},
     {"value": {"ts": 86_400_000}}, {"value": {"ts": "1970-01-02 00:00"}}),
    ("TimestampConverter$Value", {"field": "ts", "target.type": "Date"}, {"value": {"ts": 86_400_005}},
     {"value": {"ts": dt.datetime(1970, 1, 2, tzinfo=UTC)}}),
    ("TimestampRouter", {"topic.format": "${topic}-${timestamp}", "timestamp.format": "yyyyMMdd"},
     {"value": 1, "timestamp": 0}, {"topic": "orders-19700101"}),
    ("ValueToKey", {"fields": "id"}, {"value": {"id": 7, "x": 1}}, {"key": {"id": 7}}),
]  # fmt: skip


@pytest.mark.parametrize(("kind", "settings", "given", "changed"), BUILT_INS, ids=[case[0] for case in BUILT_INS])
def test_each_built_in_runs_with_kafkas_schemaless_behaviour(
    java_transforms: JavaTransforms,
    kind: str,
    settings: dict[str, str],
    given: dict[str, Any],
    changed: dict[str, Any] | None,
) -> None:
    config = {"transforms": "x", "transforms.x.type": T + kind, **{f"transforms.x.{k}": v for k, v in settings.items()}}
    (out,) = java_transforms.apply(config, [record(**given)])
    if changed is None or "error" in changed:
        assert out == changed
    else:
        assert typed(out) == typed({**sink_out(**given), **changed})


def test_filter_on_has_header_key(java_transforms: JavaTransforms) -> None:
    config = {
        "transforms": "f",
        "transforms.f.type": T + "Filter",
        "transforms.f.predicate": "traced",
        "predicates": "traced",
        "predicates.traced.type": P + "HasHeaderKey",
        "predicates.traced.name": "trace",
    }
    out = java_transforms.apply(config, [record(1, headers=[("trace", None)]), record(2, headers=[("other", 1)])])
    assert [None if r is None else r["value"] for r in out] == [None, 2]


def test_logical_types_with_schemas_are_the_json_converters_payloads(java_transforms: JavaTransforms) -> None:
    schema = {"type": "struct", "optional": False, "fields": [{"field": "ts", "type": "int64", "optional": False}]}
    config = {
        "transforms": "ts",
        "transforms.ts.type": T + "TimestampConverter$Value",
        "transforms.ts.field": "ts",
        "transforms.ts.target.type": "Timestamp",
    }
    (out,) = java_transforms.apply(
        config, [record({"ts": 1000}, value_schema=schema, key="k", key_schema={"type": "string"})]
    )
    assert out is not None and out["value"] == {"ts": 1000} and out["key"] == "k"
    assert out["key_schema"] == {"type": "string", "optional": False}
    timestamp = {"type": "int64", "optional": False, "name": "org.apache.kafka.connect.data.Timestamp", "version": 1}
    assert out["value_schema"] == {"type": "struct", "optional": False, "fields": [{**timestamp, "field": "ts"}]}
