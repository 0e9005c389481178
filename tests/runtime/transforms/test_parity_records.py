"""Headwater's record transformations and predicates against Kafka Connect 4.3's own, on the same records: RegexRouter,
TimestampRouter, Filter, DropHeaders, InsertHeader, HeaderFrom, TimestampConverter, SetSchemaMetadata and the
predicates TopicNameMatches, HasHeaderKey, RecordIsTombstone.

:data:`CASES` is the parity table (each case's records go through both sides and must come out equal, a failure on
one side being a failure on the other); :data:`SCHEMA_CASES` compare the schemas of the output too;
:data:`CONFIG_ERRORS` must be refused by both. :data:`REFUSED` are the configs Headwater refuses because it cannot
do exactly what Kafka Connect does (a Java regex feature Python lacks, a date pattern letter, a literal whose
typing needs Kafka's conversions), or because Kafka Connect would fail on every record they match."""

from __future__ import annotations

import datetime as dt
import inspect
from typing import Any

import pytest

from headwater.runtime.transforms import build_chain
from headwater.runtime.transforms.builtins import BUILTIN_PREDICATES, RECORD_TRANSFORMATIONS
from headwater.sdk.errors import ConfigError
from support.java_transforms import JavaTransforms, TransformConfigError
from support.transform_parity import assert_parity, assert_schema_parity, python_apply

T = "org.apache.kafka.connect.transforms."
P = T + "predicates."
UTC = dt.UTC
INSTANT = dt.datetime(2023, 11, 14, 22, 13, 20, 123000, tzinfo=UTC)  # 1700000000123 ms


def chain(kind: str, guard: dict[str, str] | None = None, **settings: str) -> dict[str, str]:
    """A one-transformation config (``t_format`` for ``t.format``), guarded by ``guard`` when given."""
    config = {"transforms": "x", "transforms.x.type": T + kind}
    config.update({f"transforms.x.{key.replace('_', '.')}": value for key, value in settings.items()})
    return {**config, **(guard or {})}


def guard(kind: str, negate: bool = False, **settings: str) -> dict[str, str]:
    """The keys that guard transformation ``x`` with predicate ``p``."""
    config = {"transforms.x.predicate": "p", "predicates": "p", "predicates.p.type": P + kind}
    config.update({f"predicates.p.{key}": value for key, value in settings.items()})
    return {**config, "transforms.x.negate": "true"} if negate else config


def sink(value: Any = None, **fields: Any) -> dict[str, Any]:
    return {"topic": "orders", "value": value, "timestamp": 0, **fields}


def source(value: Any = None, **fields: Any) -> dict[str, Any]:
    return {"kind": "source", "topic": "orders", "partition": None, "value": value, "timestamp": 0, **fields}


MIXED = [
    sink({"a": 1}),
    sink(None),
    sink({"a": 1}, topic="audit-7", headers=[("trace", None)]),
    source(None, topic="audit", headers=[("trace", 1), ("trace", "again")]),
    source("text", key="k", headers=[("other", 2.5)]),
]
"""Records of both kinds: tombstones, topics that match ``audit-.*`` or not, with and without ``trace`` headers."""

ODD_TOPICS = [
    sink(1, topic=t) for t in ("a\u0085b", "a\rb", "a\nb", "acb", "café", "CAFÉ", "aa1 ", "٣", "aac", "AABBB")
]
"""Topics where Java's regexes and Python's differ unless translated: line terminators, non-ASCII letters, digits."""
AB = [sink(1, topic=t) for t in ("ab", "a", "b", "abc")]
LINE_ENDS = [sink(1, topic="a" + end) for end in ("", "\n", "\r\n", "\r", "\u0085", "\u2028", "\n\n", "\r\r")]
COUNTS = "y yyy yyyyy MMMMM EEEEE SSSS S aa HHH ZZZZ XXX kk KK hh DDDD d"
TOMBSTONE = guard("RecordIsTombstone")
TRACED = guard("HasHeaderKey", name="trace")

STAMPED = [sink(1, timestamp=ms) for ms in (0, -1, 1_700_000_000_123, 951_782_400_000, -86_400_000)] + [
    source(1, timestamp=5),
    sink(1, topic="t${timestamp}", timestamp=5),
]
NO_TIMESTAMP = [sink(1, timestamp=None)]
HEADERED = [
    sink(1, headers=[("a", 1), ("c", 2.5), ("b", None), ("a", b"x"), ("c", "s"), ("d", True)]),
    sink(1, headers=[("a", [1, 2]), ("a", {"k": "v"}), ("e", INSTANT)]),
    sink(1),
    source(None, headers=[("b", "only")]),
]
MAPS = [
    sink({"id": 7, "name": "x", "tags": [1, 2]}),
    sink({"id": None, "other": 1}),
    sink({"name": {"nested": True}}, headers=[("hid", "already")]),
    source({"id": 1.5, "name": "s"}),
    sink(None),
    sink(5),
]
KEYED = [sink(1, key={"id": 7, "z": 2}), sink(1, key=None), source(1, key={"id": "k"}), source(1, key="flat")]

LITERALS = ["42", "3.5", "true", "a string", "[1,2]", '{"a":1}', "0.1", "-5", "300", "70000", "9999999999"]
LITERALS += ["99999999999999999999", "1.0", "1e3", "TRUE", "false", "null", "", " 7 ", "2020-01-01", "12:00:00"]
LITERALS += ["12:00:00.000Z", "2020-01-01T10:20:30.400Z", "[1, 2.5]", '[1,"a"]', "[null, 1]", "[]", "{}", "1,2"]
LITERALS += [" 7\u00a0", "\u00a07", "\t8\n", " true\u2003", "[ 1 ,\t2 ]", "x 5", "1é"]
LITERALS += ["-1.5e-3", "[1, -1.5]", "[300, 1.5]", "[true,1]", '{"a":1,"b":"x"}', "[1,2,]", "1e-46", "-1e-46"]
LITERALS += ["3.40282357e38", "3.4028235e38", "16777217.5", '{"a":null,"b":1}', "2020-02-30", '["a,b", "c"]']
LITERALS += ['{"a":', "[", '["abc', '"a"', '[""]', "[1]]", ":", "[,]", "[[", "\\[1]", "[1\\,2]", "[a]"]
LITERALS += ['{"a":[1,{"b":true}]}', "42abc", "true}", "3.14159265358979", "NaN", "[1,", '["2020-01-01"]']

PLAIN = HEADERED[2:]
UNIX = [sink(v) for v in (1_700_000_000_123, -1, 0, None, "2023-11-14 22:13:20.123", "garbage", 1.5, True)]
UNIX += [sink(INSTANT), sink(dt.datetime(1969, 12, 31, 23, 59, 59, 999000, tzinfo=UTC)), source({"a": 1})]
FIELDS = [
    sink({"ts": 1_700_000_000_123, "o": 1}),
    sink({"o": 1}),
    sink({"ts": None}),
    sink({"ts": INSTANT}),
    sink({"ts": "2023-11-14 22:13:20.123"}),
    sink(None),
    sink(5),
    source({"ts": -1500}),
]
ISO_OFFSETS = [sink("2020-01-02T03:04:05.678" + zone) for zone in ("Z", "+01", "-0130", "+01:30", "", "+1", "+25")]
ISO_OFFSETS += [sink("2020-01-02T03:04:05.678+0099"), sink("2020-01-02T03:04:05.678-00:00")]
PATTERN = "yyyy-MM-dd HH:mm:ss.SSS"
TC, TC_KEY = "TimestampConverter$Value", "TimestampConverter$Key"
PRECISE = {"seconds": 1_700_000_000, "microseconds": 1_700_000_000_123_456, "nanoseconds": -1_700_000_000_123_456_789}

CASES: list[tuple[str, dict[str, str], list[dict[str, Any]]]] = [
    ("RegexRouter one group", chain("RegexRouter", regex="o(.*)", replacement="$1"), MIXED),
    ("RegexRouter no match", chain("RegexRouter", regex="nothing", replacement="x"), MIXED),
    ("RegexRouter two groups, \\$", chain("RegexRouter", regex=r"(\w+)-(\d+)", replacement=r"$2_$1\$"), MIXED),
    ("RegexRouter named group", chain("RegexRouter", regex=r"(?<word>[a-z]+)(-\d)?", replacement="${word}!$2"), MIXED),
    ("RegexRouter $12 with one group", chain("RegexRouter", regex="(.*)", replacement="$12"), MIXED),
    ("RegexRouter escapes", chain("RegexRouter", regex=r"a\.(.)", replacement=r"\\\1$1"), [sink(1, topic="a.b")]),
    ("RegexRouter \\z, flags", chain("RegexRouter", regex=r"(?i)AUDIT(.*)\z", replacement="x$1"), MIXED),
    ("RegexRouter possessive", chain("RegexRouter", regex="(o++)(.*)", replacement="$2"), MIXED),
    ("RegexRouter Java's dot", chain("RegexRouter", regex="a.b", replacement="dot"), ODD_TOPICS),
    ("RegexRouter Java's $", chain("RegexRouter", regex=r"(a)$|a$\r", replacement="$1!"), LINE_ENDS),
    ("RegexRouter first match replaced", chain("RegexRouter", regex="a|ab|(b)", replacement="<$1>"), AB),
    ("RegexRouter quantifiers", chain("RegexRouter", regex=r"\x41{2}\u0042{1,}c{0,1}", replacement="q"), ODD_TOPICS),
    ("RegexRouter leading (?s)", chain("RegexRouter", regex="(?s)a.b", replacement="dot"), ODD_TOPICS),
    ("RegexRouter ASCII classes", chain("RegexRouter", regex=r"(\w+)\d*\s?", replacement="<$1>"), ODD_TOPICS),
    ("RegexRouter scoped flag", chain("RegexRouter", regex="(?i:CAF)é|a(?-i:A)c", replacement="f"), ODD_TOPICS),
    ("RegexRouter ASCII ignore-case", chain("RegexRouter", regex="(?i)CAFÉ|A.B", replacement="i"), ODD_TOPICS),
    ("RegexRouter lookbehind", chain("RegexRouter", regex=r"(?<=a)b|(a)\1(?:c)", replacement="x$1"), ODD_TOPICS),
    ("RegexRouter unmatched group", chain("RegexRouter", regex="(a)|b", replacement="[$1]"), [sink(1, topic="b")]),
    ("TimestampRouter default", chain("TimestampRouter"), STAMPED + NO_TIMESTAMP),
    ("TimestampRouter ISO", chain("TimestampRouter", timestamp_format="yyyy-MM-dd'T'HH:mm:ss.SSS"), STAMPED),
    ("TimestampRouter short fields", chain("TimestampRouter", timestamp_format="yy_M_d H:m:s.S"), STAMPED),
    ("TimestampRouter names", chain("TimestampRouter", timestamp_format="EEE EEEE MMM MMMM"), STAMPED),
    ("TimestampRouter 12-hour", chain("TimestampRouter", timestamp_format="hh:mm a K k D"), STAMPED),
    ("TimestampRouter counts", chain("TimestampRouter", timestamp_format=COUNTS), STAMPED),
    ("TimestampRouter zone, quotes", chain("TimestampRouter", timestamp_format="''yyyy'' Z X 'at' HH"), STAMPED),
    ("TimestampRouter topic.format", chain("TimestampRouter", topic_format="${timestamp}/${topic}/${topic}"), STAMPED),
    ("Filter", chain("Filter"), MIXED),
    ("Filter TopicNameMatches", chain("Filter", guard("TopicNameMatches", pattern="audit-.*")), MIXED),
    ("Filter negated TopicNameMatches", chain("Filter", guard("TopicNameMatches", True, pattern="audit.*")), MIXED),
    ("Filter HasHeaderKey", chain("Filter", guard("HasHeaderKey", name="trace")), MIXED),
    ("Filter negated HasHeaderKey", chain("Filter", guard("HasHeaderKey", True, name="trace")), MIXED),
    ("Filter RecordIsTombstone", chain("Filter", guard("RecordIsTombstone")), MIXED),
    ("Filter negated RecordIsTombstone", chain("Filter", guard("RecordIsTombstone", True)), MIXED),
    ("InsertHeader on tombstones", chain("InsertHeader", TOMBSTONE, header="t", value_literal="1"), MIXED),
    ("RegexRouter on traced", chain("RegexRouter", TRACED, regex="(.*)", replacement="t-$1"), MIXED),
    ("DropHeaders duplicates", chain("DropHeaders", headers="a,b"), HEADERED),
    ("DropHeaders absent", chain("DropHeaders", headers="zzz"), HEADERED),
    ("HeaderFrom$Value copy", chain("HeaderFrom$Value", fields="id,name", headers="hid,hname", operation="copy"), MAPS),
    ("HeaderFrom$Value move", chain("HeaderFrom$Value", fields="id,name", headers="hid,hname", operation="move"), MAPS),
    ("HeaderFrom$Value twice", chain("HeaderFrom$Value", fields="id,id", headers="h1,h2", operation="move"), MAPS),
    ("HeaderFrom$Key copy", chain("HeaderFrom$Key", fields="id", headers="kid", operation="copy"), KEYED),
    ("HeaderFrom$Key move", chain("HeaderFrom$Key", fields="id", headers="kid", operation="move"), KEYED),
    *[(f"InsertHeader {text!r}", chain("InsertHeader", header="h", value_literal=text), PLAIN) for text in LITERALS],
    *[
        (f"TimestampConverter$Value {target}", chain(TC, target_type=target, format=PATTERN), UNIX)
        for target in ("string", "unix", "Date", "Time", "Timestamp")
    ],
    *[
        (f"TimestampConverter field {target}", chain(TC, field="ts", target_type=target, format=PATTERN), FIELDS)
        for target in ("string", "unix", "Date", "Time", "Timestamp")
    ],
    *[
        (f"TimestampConverter {unit} {target}",
         chain(TC, target_type=target, unix_precision=unit, format=PATTERN),
         [sink(number), sink(-number), sink(INSTANT), sink("1970-01-02 00:00:00.001")])
        for unit, number in PRECISE.items()
        for target in ("unix", "Timestamp", "string")
    ],
    ("TimestampConverter unix saturates", chain(TC, target_type="unix", unix_precision="nanoseconds"),
     [sink(2**62), sink(-(2**62)), sink(INSTANT)]),
    ("TimestampConverter$Key lenient parse", chain(TC_KEY, target_type="Timestamp", format="yyyyMMdd"),
     [sink(1, key=k) for k in ("20200229", "20201301", "2020", "x2020", 86_400_000 * 3 + 5, None)]),
    ("TimestampConverter 12-hour parse", chain(TC, target_type="unix", format="dd/MM/yyyy hh:mm a"),
     [sink(v) for v in ("01/02/2020 03:04 PM", "01/02/2020 12:00 AM", "1/2/2020 12:30 pm", "01/02/2020")]),
    ("TimestampConverter lenient hours", chain(TC, target_type="unix", format="s h 'x' DD"),
     [sink(v) for v in ("5 13 x 40", "59 12 x 1", "1 911 x 365")]),
    ("TimestampConverter K and a", chain(TC, target_type="unix", format="K:mm a"),
     [sink(v) for v in ("11:30 PM", "0:00 AM", "12:00 PM", "13:00 am")]),
    ("TimestampConverter abutting fields", chain(TC, target_type="unix", format="shmm"),
     [sink(v) for v in ("591230", "5911", "1234567")]),
    ("TimestampConverter month names", chain(TC, target_type="string", format="dd MMM yyyy"),
     [sink(v) for v in ("01 Feb 2020", "01 february 2020", "01 Fe 2020", 0)]),
    *[
        (f"TimestampConverter ISO offsets {'X' * count}",
         chain(TC, target_type="unix", format="yyyy-MM-dd'T'HH:mm:ss.SSS" + "X" * count), ISO_OFFSETS)
        for count in (1, 2, 3)
    ],
    ("TimestampConverter string without format", chain(TC, target_type="unix"), [sink("2020"), sink(5)]),
    ("SetSchemaMetadata schemaless", chain("SetSchemaMetadata$Value", schema_name="N"), MIXED),
]  # fmt: skip
"""The parity table: (case, config, records)."""

STRUCT = {
    "type": "struct",
    "name": "Old",
    "version": 3,
    "doc": "d",
    "parameters": {"p": "1"},
    "fields": [
        {"field": "id", "type": "int32"},
        {"field": "ts", "type": "int64", "optional": True},
        {
            "field": "m",
            "type": "map",
            "keys": {"type": "string"},
            "values": {"type": "array", "items": {"type": "int8"}},
        },
    ],
}
STRUCTS = [
    source({"id": 1, "ts": 1_700_000_000_123, "m": {"a": [1]}}, value_schema=STRUCT),
    source({"id": 1, "ts": None, "m": {}}, value_schema=STRUCT),
    source({"id": 2, "ts": -1, "m": {}}, value_schema={**STRUCT, "optional": True}),
    source(None, value_schema={**STRUCT, "optional": True}),
    source(5, value_schema={"type": "int64"}),
    source(5),
]
WHOLE = [
    source(1_700_000_000_123, value_schema={"type": "int64"}),
    source(5, value_schema={"type": "int64", "optional": True}),
    source("2020-01-02 03:04:05.678", value_schema={"type": "string"}),
    source(19_000, value_schema={"type": "int32", "name": "org.apache.kafka.connect.data.Date", "version": 1}),
    source(3_600_000, value_schema={"type": "int32", "name": "org.apache.kafka.connect.data.Time", "version": 1}),
    source(-1, value_schema={"type": "int64", "name": "org.apache.kafka.connect.data.Timestamp", "version": 1}),
    source(1.5, value_schema={"type": "double"}),
]
STRING = {"type": "string"}
TIMESTAMP = {"type": "int64", "optional": True, "name": "org.apache.kafka.connect.data.Timestamp", "version": 1}
HEADER_STRUCT = {
    "type": "struct",
    "name": "Old",
    "version": 3,
    "doc": "d",
    "optional": True,
    "fields": [{"field": "id", "type": "int32"}, {"field": "ts", **TIMESTAMP}, {"field": "s", "type": "string"}],
}
TYPED_STRUCT = {
    "type": "struct",
    "fields": [
        {"field": "b", "type": "bytes"},
        {"field": "d", "type": "bytes", "name": "org.apache.kafka.connect.data.Decimal", "parameters": {"scale": "2"}},
        {"field": "dt", "type": "int32", "name": "org.apache.kafka.connect.data.Date", "version": 1},
        {"field": "tm", "type": "int32", "name": "org.apache.kafka.connect.data.Time", "version": 1},
        {"field": "a", "type": "array", "items": TIMESTAMP},
        {"field": "m", "type": "map", "keys": {"type": "string"}, "values": {"type": "bytes"}},
        {"field": "f", "type": "float"},
        {"field": "i8", "type": "int8"},
        {"field": "bo", "type": "boolean"},
    ],
}
TYPED_VALUE = {"b": "AAE=", "d": "MDk=", "dt": 3, "tm": 1000, "a": [5, None], "m": {"k": "eg=="}, "f": 0.1, "i8": 3}
TYPED_VALUE |= {"bo": True}
TYPED_FIELDS = ",".join(TYPED_VALUE)
HEADER_STRUCTS = [
    source({"id": 1, "ts": 5, "s": "x"}, value_schema=HEADER_STRUCT),
    source(None, value_schema=HEADER_STRUCT),
    source("x", value_schema=STRING),
    source({"id": 1}),
]
KEY_STRUCT = {"type": "struct", "fields": [{"field": "a", "type": "string"}]}

SCHEMA_CASES: list[tuple[str, dict[str, str], list[dict[str, Any]]]] = [
    ("SetSchemaMetadata name", chain("SetSchemaMetadata$Value", schema_name="N"), STRUCTS),
    ("SetSchemaMetadata version", chain("SetSchemaMetadata$Value", schema_version="5"), STRUCTS),
    ("SetSchemaMetadata both", chain("SetSchemaMetadata$Value", schema_name="N", schema_version="7"), STRUCTS),
    ("SetSchemaMetadata empty name", chain("SetSchemaMetadata$Value", schema_name=""), STRUCTS),
    ("SetSchemaMetadata$Key", chain("SetSchemaMetadata$Key", schema_name="K"),
     [source(1, key={"a": "k"}, key_schema=KEY_STRUCT), source(1, key="k", key_schema=STRING), source(1, key="k")]),
    *[
        (f"TimestampConverter field {target} with schema",
         chain(TC, field="ts", target_type=target, format=PATTERN), STRUCTS)
        for target in ("string", "unix", "Date", "Time", "Timestamp")
    ],
    *[
        (f"TimestampConverter {target} with schema", chain(TC, target_type=target, format=PATTERN), WHOLE)
        for target in ("string", "unix", "Date", "Time", "Timestamp")
    ],
    ("TimestampConverter$Key seconds with schema",
     chain(TC_KEY, target_type="Date", unix_precision="seconds"),
     [source(1, key=1_700_000_000, key_schema={"type": "int64"})]),
    *[
        (f"HeaderFrom {operation} with schema",
         chain("HeaderFrom$Value", fields="id,ts", headers="a,b", operation=operation), HEADER_STRUCTS)
        for operation in ("copy", "move")
    ],
    *[
        (f"HeaderFrom {operation} logical types", chain("HeaderFrom$Value", fields=TYPED_FIELDS, headers=TYPED_FIELDS,
         operation=operation), [source(TYPED_VALUE, value_schema=TYPED_STRUCT)])
        for operation in ("copy", "move")
    ],
    ("HeaderFrom missing field with schema",
     chain("HeaderFrom$Value", fields="nope", headers="a", operation="copy"), HEADER_STRUCTS),
]  # fmt: skip
"""Cases whose output schemas (``key_schema``/``value_schema``, the JsonConverter's JSON) must agree too."""

CONFIG_ERRORS: list[tuple[str, dict[str, str]]] = [
    ("RegexRouter no replacement", chain("RegexRouter", regex="a")),
    ("RegexRouter invalid regex", chain("RegexRouter", regex="(", replacement="a")),
    ("RegexRouter Python-only syntax", chain("RegexRouter", regex="(?P<n>a)", replacement="a")),
    ("RegexRouter group name with _", chain("RegexRouter", regex="(?<a_b>x)", replacement="a")),
    ("RegexRouter literal {", chain("RegexRouter", regex="a{b", replacement="a")),
    ("RegexRouter {,n}", chain("RegexRouter", regex="a{,3}", replacement="a")),
    ("DropHeaders empty", chain("DropHeaders", headers="")),
    ("InsertHeader no literal", chain("InsertHeader", header="h")),
    ("InsertHeader no header", chain("InsertHeader", value_literal="1")),
    ("HeaderFrom unequal lists", chain("HeaderFrom$Value", fields="a", headers="h1,h2", operation="copy")),
    ("HeaderFrom bad operation", chain("HeaderFrom$Value", fields="a", headers="h", operation="cut")),
    ("HeaderFrom operation in capitals", chain("HeaderFrom$Value", fields="a", headers="h", operation="MOVE")),
    ("DropHeaders only commas", chain("DropHeaders", headers=",")),
    ("HeaderFrom empty fields", chain("HeaderFrom$Value", fields="", headers="", operation="copy")),
    ("TopicNameMatches empty", chain("Filter", guard("TopicNameMatches", pattern=""))),
    ("TopicNameMatches invalid", chain("Filter", guard("TopicNameMatches", pattern="("))),
    ("TopicNameMatches no pattern", chain("Filter", guard("TopicNameMatches"))),
    ("HasHeaderKey empty name", chain("Filter", guard("HasHeaderKey", name=""))),
    ("HasHeaderKey no name", chain("Filter", guard("HasHeaderKey"))),
    ("unknown predicate alias", {**chain("Filter", guard("RecordIsTombstone")), "transforms.x.predicate": "q"}),
    ("negate not a boolean", chain("Filter", guard("RecordIsTombstone"), negate="maybe")),
    ("negate without predicate", chain("Filter", negate="true")),
    ("TimestampConverter no target", chain("TimestampConverter$Value")),
    ("TimestampConverter target case", chain("TimestampConverter$Value", target_type="STRING", format="yyyy")),
    ("TimestampConverter string without format", chain("TimestampConverter$Value", target_type="string")),
    ("TimestampConverter blank format", chain("TimestampConverter$Value", target_type="string", format="  ")),
    ("TimestampConverter bad precision", chain("TimestampConverter$Value", target_type="unix", unix_precision="ms")),
    ("TimestampConverter bad pattern", chain("TimestampConverter$Value", target_type="string", format="bad")),
    ("SetSchemaMetadata nothing to set", chain("SetSchemaMetadata$Value")),
    ("SetSchemaMetadata version not an int", chain("SetSchemaMetadata$Value", schema_version="x")),
]
"""Configs both sides refuse."""

REFUSED: list[tuple[str, dict[str, str], str]] = [
    ("\\p class", chain("RegexRouter", regex=r"\p{Alpha}+", replacement="a"), "regex"),
    ("class intersection", chain("RegexRouter", regex="[a-z&&[^b]]+", replacement="a"), "regex"),
    ("\\Q quoting", chain("RegexRouter", regex=r"\Qa.b\E", replacement="a"), "regex"),
    ("Java \\Z", chain("RegexRouter", regex=r"a\Z", replacement="a"), "regex"),
    ("Java-only flag", chain("RegexRouter", regex="(?U)a", replacement="a"), "regex"),
    ("predicate \\p class", chain("Filter", guard("TopicNameMatches", pattern=r"\p{L}+")), "pattern"),
    ("missing group", chain("RegexRouter", regex="(.*)", replacement="$2"), "replacement"),
    ("unknown named group", chain("RegexRouter", regex="(.*)", replacement="${n}"), "replacement"),
    ("trailing $", chain("RegexRouter", regex="(.*)", replacement="a$"), "replacement"),
    ("trailing backslash", chain("RegexRouter", regex="(.*)", replacement="a\\"), "replacement"),
    ("illegal letter", chain("TimestampRouter", timestamp_format="bb"), "timestamp.format"),
    ("open quote", chain("TimestampRouter", timestamp_format="yyyy'x"), "timestamp.format"),
    ("five X", chain("TimestampRouter", timestamp_format="XXXXX"), "timestamp.format"),
    ("week year", chain("TimestampRouter", timestamp_format="YYYY"), "timestamp.format"),
    ("era", chain("TimestampRouter", timestamp_format="G yyyy"), "timestamp.format"),
    ("word boundary", chain("RegexRouter", regex=r"caf\b.*", replacement="a"), "regex"),
    ("back reference to no group", chain("RegexRouter", regex=r"a\1", replacement="a"), "regex"),
    ("leading quantifier", chain("RegexRouter", regex="{2}a", replacement="a"), "regex"),
    ("octal escape", chain("RegexRouter", regex=r"\0101", replacement="a"), "regex"),
    ("two-digit back reference", chain("RegexRouter", regex=r"(a)\10", replacement="a"), "regex"),
    ("multiline flag", chain("RegexRouter", regex="(?m)a$", replacement="a"), "regex"),
    ("flag mid-pattern", chain("RegexRouter", regex="a(?i)b", replacement="a"), "regex"),
    ("flag turned off", chain("RegexRouter", regex="(?-i)a", replacement="a"), "regex"),
    ("scoped s flag", chain("RegexRouter", regex="(?s:a.)b", replacement="a"), "regex"),
    ("zone name", chain("TimestampConverter$Value", target_type="string", format="yyyy z"), "format"),
    ("literal with non-ASCII digits", chain("InsertHeader", header="h", value_literal="1\u0661"), "value.literal"),
    ("literal before 1582", chain("InsertHeader", header="h", value_literal="1500-01-01"), "value.literal"),
]
"""Configs Headwater refuses, naming the key, where Kafka Connect builds the chain (and then fails on each record
they match, or renders them its own way)."""


def _ids(cases: list[Any]) -> list[str]:
    return [case[0] for case in cases]


@pytest.mark.parametrize(("name", "config", "records"), CASES, ids=_ids(CASES))
def test_headwater_agrees_with_kafka(
    java_transforms: JavaTransforms, name: str, config: dict[str, str], records: list[dict[str, Any]]
) -> None:
    assert_parity(java_transforms, config, records)


@pytest.mark.parametrize(("name", "config", "records"), SCHEMA_CASES, ids=_ids(SCHEMA_CASES))
def test_headwater_agrees_with_kafka_on_schemas(
    java_transforms: JavaTransforms, name: str, config: dict[str, str], records: list[dict[str, Any]]
) -> None:
    assert_schema_parity(java_transforms, config, records)


@pytest.mark.parametrize(("name", "config"), CONFIG_ERRORS, ids=_ids(CONFIG_ERRORS))
def test_both_refuse_a_bad_config(java_transforms: JavaTransforms, name: str, config: dict[str, str]) -> None:
    with pytest.raises(ConfigError):
        build_chain(config)
    with pytest.raises(TransformConfigError):
        java_transforms.apply(config, [sink(1)])


@pytest.mark.parametrize(("name", "config", "key"), REFUSED, ids=_ids(REFUSED))
def test_what_headwater_refuses_kafka_accepts(
    java_transforms: JavaTransforms, name: str, config: dict[str, str], key: str
) -> None:
    with pytest.raises(ConfigError) as refused:
        build_chain(config)
    assert refused.value.key.endswith(key)
    java_transforms.apply(config, [sink(1, topic="ab")])  # Kafka builds the chain


@pytest.mark.parametrize(
    ("config", "value"),
    [
        (chain("TimestampRouter"), sink(1, timestamp=-12_219_292_800_001)),  # Julian calendar in Java
        (chain("TimestampRouter", timestamp_format="yyyy"), sink(1, timestamp=253_402_300_800_000)),  # year 10000
        (chain("TimestampConverter$Value", target_type="string", format="yyyy"), sink(-62_135_596_800_001)),
        (chain("TimestampConverter$Value", target_type="unix", format="yyyy-MM-dd"), sink("1500-01-01")),
        (chain("TimestampConverter$Value", target_type="unix", format="EEE yyyy"), sink("Thu 2020")),
        (chain("TimestampConverter$Value", target_type="unix", format="HH a"), sink("10 PM")),
        (chain("TimestampConverter$Value", target_type="unix", format="yyyy yyyy"), sink("2020 2021")),
        (chain("TimestampConverter$Value", target_type="unix", format="m"), sink("99999999999")),
        (chain("TimestampConverter$Value", target_type="unix", format="ydddd"), sink("73080015")),  # from year 7
    ],
    ids=[
        "before 1582",
        "after 9999",
        "year 0",
        "parse before 1582",
        "weekday",
        "HH and a",
        "twice",
        "overflow",
        "year 7",
    ],
)
def test_what_headwater_cannot_render_or_parse_fails_the_record(
    java_transforms: JavaTransforms, config: dict[str, str], value: dict[str, Any]
) -> None:
    (ours,) = python_apply(config, [value])
    assert ours is not None and "Headwater cannot" in ours["error"]
    (kafka,) = java_transforms.apply(config, [value])
    assert kafka is not None and "error" not in kafka  # Kafka renders it (in the Julian calendar, or year 10000)


@pytest.mark.parametrize("kind", sorted(set(RECORD_TRANSFORMATIONS) | set(BUILTIN_PREDICATES)))
def test_every_setting_is_documented(kind: str) -> None:
    registry = {**RECORD_TRANSFORMATIONS, **BUILTIN_PREDICATES}
    keys = registry[kind]().config_def().keys
    for name, key in keys.items():
        assert len(key.documentation) > 15, f"{kind}: {name} is undocumented"
    assert inspect.getdoc(registry[kind]), f"{kind} has no docstring"
