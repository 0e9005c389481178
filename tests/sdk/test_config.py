from __future__ import annotations

import re
from typing import Any

import pytest

from headwater.sdk.config import (
    REQUIRED,
    ConfigDef,
    ConfigKey,
    Importance,
    Type,
    at_least,
    in_range,
    non_empty_string,
    one_of,
    regex,
)
from headwater.sdk.errors import ConfigError


def parse_one(kind: Type, value: Any, **kwargs: Any) -> Any:
    return ConfigDef().define("k", kind, **kwargs).parse({"k": value})["k"]


class Plugin:
    pass


@pytest.mark.parametrize(
    ("kind", "raw", "expected"),
    [
        (Type.BOOLEAN, "true", True),
        (Type.BOOLEAN, " FALSE ", False),
        (Type.BOOLEAN, True, True),
        (Type.BOOLEAN, False, False),
        (Type.STRING, "  text  ", "text"),
        (Type.PASSWORD, " secret ", " secret "),
        (Type.CLASS, " pkg.mod:Cls ", "pkg.mod:Cls"),
        (Type.CLASS, Plugin, f"{__name__}.Plugin"),
        (Type.INT, " 42 ", 42),
        (Type.INT, -7, -7),
        (Type.INT, 2**31 - 1, 2**31 - 1),
        (Type.LONG, str(2**63 - 1), 2**63 - 1),
        (Type.LONG, -(2**63), -(2**63)),
        (Type.DOUBLE, "1.5", 1.5),
        (Type.DOUBLE, 3, 3.0),
        (Type.DOUBLE, 2.25, 2.25),
        (Type.LIST, "a, b ,,c", ["a", "b", "c"]),
        (Type.LIST, "", []),
        (Type.LIST, [" a", 1], ["a", "1"]),
        (Type.LIST, ("x",), ["x"]),
    ],
)
def test_each_type_parses_strings_and_native_values(kind: Type, raw: Any, expected: Any) -> None:
    parsed = parse_one(kind, raw)
    assert parsed == expected
    assert type(parsed) is type(expected)


@pytest.mark.parametrize(
    ("kind", "raw", "reason"),
    [
        (Type.BOOLEAN, "yes", "either true or false"),
        (Type.BOOLEAN, 1, "either true or false"),
        (Type.STRING, 5, "Expected value to be a string"),
        (Type.PASSWORD, 5, "Expected value to be a string"),
        (Type.CLASS, 5, "Expected value to be a string"),
        (Type.INT, "4x", "Expected value to be an integer"),
        (Type.INT, 1.5, "Expected value to be an integer"),
        (Type.INT, True, "Expected value to be an integer"),
        (Type.INT, 2**31, "fit a int"),
        (Type.LONG, str(-(2**63) - 1), "fit a long"),
        (Type.DOUBLE, "fast", "Expected value to be a number"),
        (Type.DOUBLE, False, "Expected value to be a number"),
        (Type.DOUBLE, [1.0], "Expected value to be a number"),
        (Type.LIST, 3, "comma-separated list"),
    ],
)
def test_a_bad_value_names_the_key_and_the_value(kind: Type, raw: Any, reason: str) -> None:
    definition = ConfigDef().define("some.key", kind)
    with pytest.raises(ConfigError) as caught:
        definition.parse({"some.key": raw})
    assert caught.value.key == "some.key"
    assert caught.value.value == raw
    assert f"Invalid value {raw!r} for configuration some.key" in str(caught.value)
    assert reason in str(caught.value)


def test_a_missing_required_key_is_an_error() -> None:
    definition = ConfigDef().define("name", Type.STRING)
    with pytest.raises(ConfigError, match="Missing required configuration") as caught:
        definition.parse({})
    assert caught.value.key == "name"
    assert "name" in str(caught.value)
    assert definition.keys["name"].required
    assert definition.keys["name"].default is REQUIRED


def test_a_required_key_set_to_none_is_missing() -> None:
    definition = ConfigDef().define("name", Type.STRING, validator=non_empty_string)
    with pytest.raises(ConfigError, match="Missing required configuration"):
        definition.parse({"name": None})


def test_defaults_are_applied_when_a_key_is_missing_or_none() -> None:
    definition = (
        ConfigDef()
        .define("retries", Type.INT, 3)
        .define("mode", Type.STRING, "fast")
        .define("topic", Type.STRING, None)
    )
    assert definition.parse({}) == {"retries": 3, "mode": "fast", "topic": None}
    assert definition.parse({"retries": None})["retries"] == 3
    assert definition.parse({"retries": "5"})["retries"] == 5


def test_defaults_are_parsed_like_given_values() -> None:
    definition = (
        ConfigDef().define("n", Type.INT, "5").define("topics", Type.LIST, "a, b").define("s", Type.STRING, " x ")
    )
    assert definition.keys["n"].default == 5
    assert definition.parse({}) == {"n": 5, "topics": ["a", "b"], "s": "x"}


def test_undefined_keys_pass_through_unchanged() -> None:
    definition = ConfigDef().define("known", Type.INT, 1)
    extra = {"nested": [1, 2]}
    parsed = definition.parse({"known": "2", "other.key": " kept as is ", "obj": extra})
    assert parsed == {"known": 2, "other.key": " kept as is ", "obj": extra}
    assert parsed["obj"] is extra


def test_at_least() -> None:
    definition = ConfigDef().define("n", Type.INT, 1, validator=at_least(1))
    assert definition.parse({"n": "1"})["n"] == 1
    with pytest.raises(ConfigError, match=r"Invalid value 0 for configuration n: Value must be at least 1"):
        definition.parse({"n": 0})


def test_in_range() -> None:
    definition = ConfigDef().define("ratio", Type.DOUBLE, 0.5, validator=in_range(0, 1))
    assert definition.parse({"ratio": "0"})["ratio"] == 0.0
    assert definition.parse({"ratio": 1})["ratio"] == 1.0
    for bad in (-0.1, 1.01):
        with pytest.raises(ConfigError, match=rf"Invalid value {bad} for configuration ratio: .*between 0 and 1"):
            definition.parse({"ratio": bad})


def test_one_of_ignores_case_unless_told_otherwise() -> None:
    loose = ConfigDef().define("mode", Type.STRING, "none", validator=one_of("none", "all"))
    assert loose.parse({"mode": "ALL"})["mode"] == "ALL"
    with pytest.raises(ConfigError, match=r"'some'.*mode.*String must be one of: none, all"):
        loose.parse({"mode": "some"})
    strict = ConfigDef().define("mode", Type.STRING, "none", validator=one_of("none", "all", case_sensitive=True))
    assert strict.parse({"mode": "all"})["mode"] == "all"
    with pytest.raises(ConfigError, match="'ALL'"):
        strict.parse({"mode": "ALL"})


def test_non_empty_string() -> None:
    definition = ConfigDef().define("name", Type.STRING, validator=non_empty_string)
    assert definition.parse({"name": "x"})["name"] == "x"
    with pytest.raises(ConfigError, match=r"name.*String must be non-empty") as caught:
        definition.parse({"name": "   "})
    assert caught.value.key == "name"


def test_regex() -> None:
    definition = ConfigDef().define("pattern", Type.STRING, ".*", validator=regex)
    assert definition.parse({"pattern": "^a+$"})["pattern"] == "^a+$"
    with pytest.raises(ConfigError, match=r"Invalid value '\(unclosed' for configuration pattern: Invalid regular"):
        definition.parse({"pattern": "(unclosed"})


def test_validators_are_not_called_for_none() -> None:
    definition = ConfigDef().define("n", Type.INT, None, validator=at_least(1))
    assert definition.parse({})["n"] is None


def test_parse_reports_every_bad_key_in_one_message() -> None:
    definition = (
        ConfigDef()
        .define("b.count", Type.INT, 1, validator=at_least(1))
        .define("a.flag", Type.BOOLEAN, False)
        .define("c.name", Type.STRING)
        .define("d.ok", Type.STRING, "fine")
    )
    with pytest.raises(ConfigError) as caught:
        definition.parse({"b.count": 0, "a.flag": "maybe"})
    message = str(caught.value)
    assert caught.value.key == "a.flag"
    assert caught.value.value == "maybe"
    assert "Invalid value 'maybe' for configuration a.flag" in message
    assert "Invalid value 0 for configuration b.count" in message
    assert "configuration c.name: Missing required configuration" in message
    assert "d.ok" not in message
    assert sorted(definition.errors({"b.count": 0, "a.flag": "maybe"})) == ["a.flag", "b.count", "c.name"]
    assert definition.errors({"c.name": "x"}) == {}


def test_a_bad_default_fails_at_define() -> None:
    with pytest.raises(ConfigError, match=r"'many'.*configuration retries"):
        ConfigDef().define("retries", Type.INT, "many")
    with pytest.raises(ConfigError, match="configuration retries: Value must be at least 0"):
        ConfigDef().define("retries", Type.INT, -1, validator=at_least(0))


def test_defining_a_key_twice_fails() -> None:
    definition = ConfigDef().define("k", Type.STRING, "x")
    with pytest.raises(ValueError, match="Configuration k is defined twice"):
        definition.define("k", Type.INT, 1)
    assert definition.keys["k"].type is Type.STRING


def test_merge_combines_keys_in_order_without_changing_either_side() -> None:
    first = ConfigDef().define("a", Type.INT, 1)
    second = ConfigDef().define("b", Type.STRING, "x", Importance.HIGH, "doc", group="g", display_name="B")
    merged = first.merge(second)
    assert [key.name for key in merged] == ["a", "b"]
    assert merged.parse({}) == {"a": 1, "b": "x"}
    assert merged.keys["b"] == ConfigKey("b", Type.STRING, "x", Importance.HIGH, "doc", None, "g", "B")
    assert list(first.keys) == ["a"]
    assert list(second.keys) == ["b"]


def test_merge_rejects_a_key_defined_on_both_sides() -> None:
    with pytest.raises(ValueError, match=re.escape("Configuration a is defined twice")):
        ConfigDef().define("a", Type.INT, 1).merge(ConfigDef().define("a", Type.INT, 2))


def test_required_repr_says_required() -> None:
    assert repr(REQUIRED) == "REQUIRED"


def test_a_declared_prefix_covers_its_keys_and_parse_leaves_them_as_they_are() -> None:
    definition = ConfigDef().define("spark.master", Type.STRING, "local").define_prefix("spark.", "Session settings.")
    assert definition.prefixes == {"spark.": "Session settings."}
    assert definition.covers("spark.driver.memory") and definition.covers("spark.master")
    assert not definition.covers("sparks.driver.memory")
    parsed = definition.parse({"spark.driver.memory": " 2g ", "spark.master": " local[2] "})
    assert parsed == {"spark.driver.memory": " 2g ", "spark.master": "local[2]"}


def test_merge_keeps_the_prefixes_of_both_and_refuses_one_declared_twice() -> None:
    merged = ConfigDef().define_prefix("a.", "A.").merge(ConfigDef().define_prefix("b.", "B."))
    assert list(merged.prefixes) == ["a.", "b."]
    with pytest.raises(ValueError, match="declared twice"):
        merged.merge(ConfigDef().define_prefix("a.", "again"))
    with pytest.raises(ValueError, match="every key"):
        ConfigDef().define_prefix("", "everything")


def test_a_replaced_key_is_not_covered_merges_with_its_answer_and_is_never_also_defined() -> None:
    definition = ConfigDef().define_prefix("source.", "Clients.").define_replaced(("topics", "source.alias"), "Use x.")
    merged = ConfigDef().define("a", Type.INT, 1).merge(definition)
    assert merged.replaced == {"topics": "Use x.", "source.alias": "Use x."}
    assert not merged.covers("topics")
    with pytest.raises(ValueError, match="topics is defined twice"):
        merged.merge(ConfigDef().define("topics", Type.STRING, ""))
    with pytest.raises(ValueError, match="a is defined twice"):
        merged.define_replaced("a", "Use b.")


@pytest.mark.parametrize("value", ["${file:/etc/db.properties:port}", "${env:PORT}", "x${vault:a:b}y"])
def test_a_value_holding_a_config_provider_reference_is_checked_once_resolved(value: str) -> None:
    definition = ConfigDef().define("port", Type.INT, 1, validator=at_least(1))
    assert definition.errors({"port": value}) == {}
    assert definition.parse({"port": value})["port"] == value
    assert definition.errors({"port": "${no colon}"}) != {}


def test_a_task_config_is_parsed_with_defaults_and_its_own_keys_kept() -> None:
    definition = (
        ConfigDef()
        .define("size", Type.INT, 10)
        .define("host", Type.STRING)
        .define("secret", Type.PASSWORD, None, validator=non_empty_string)
    )
    parsed = definition.parse_task_config({"size": "3", "partitions": "0,1"})
    assert dict(parsed) == {"size": 3, "secret": None, "partitions": "0,1"}
    with pytest.raises(KeyError, match="host: the connector's config_def requires it"):
        parsed["host"]
    with pytest.raises(ConfigError, match="Invalid value 'x' for configuration size") as bad:
        definition.parse_task_config({"size": "x"})
    assert bad.value.key == "size"


def test_a_bad_password_in_a_task_config_is_not_shown() -> None:
    definition = ConfigDef().define("secret", Type.PASSWORD, validator=non_empty_string)
    with pytest.raises(ConfigError) as bad:
        definition.parse_task_config({"secret": "   "})
    assert str(bad.value) == "Invalid value [hidden] for configuration secret: String must be non-empty"
    assert "   " not in repr(bad.value.value)
