"""Config files as connect-standalone reads them: Java ``.properties`` and JSON; every error names file, line, key
and problem."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from headwater.runtime.config.properties import (
    ConfigFile,
    PropertiesError,
    format_properties,
    parse_json,
    parse_properties,
    read_connector_properties,
    read_properties,
)
from headwater.runtime.config.worker import WORKER_CONFIG
from headwater.sdk.errors import ConfigError

# ---- .properties ------------------------------------------------------------------------------------------------


def test_separators_comments_and_blank_lines() -> None:
    text = "# a comment\n! another\n\n   \na=1\nb : 2\nc 3\n  d\t=\t4\ne\nf=\ng:h=i\n"
    parsed = parse_properties(text, "w.properties")
    assert parsed.values == {"a": "1", "b": "2", "c": "3", "d": "4", "e": "", "f": "", "g": "h=i"}
    assert parsed.lines == {"a": 5, "b": 6, "c": 7, "d": 8, "e": 9, "f": 10, "g": 11}


def test_value_keeps_trailing_blanks_and_inner_separators() -> None:
    parsed = parse_properties("url = jdbc:postgresql://h:5432/db?a=b  \n")
    assert parsed.values == {"url": "jdbc:postgresql://h:5432/db?a=b  "}


def test_a_second_separator_belongs_to_the_value() -> None:
    assert parse_properties("a = = b\nc : : d\ne  =:f\n").values == {"a": "= b", "c": ": d", "e": ":f"}


def test_continuation_lines_drop_leading_blanks_and_count_from_the_first_line() -> None:
    text = "x=1\nlist = a,\\\n        b,\\\n\t c\ny=2\n"
    parsed = parse_properties(text)
    assert parsed.values == {"x": "1", "list": "a,b,c", "y": "2"}
    assert parsed.lines == {"x": 1, "list": 2, "y": 5}


def test_even_backslashes_do_not_continue_and_odd_ones_do() -> None:
    parsed = parse_properties("a=C:\\\\\nb=x\\\\\\\ny\n")
    assert parsed.values == {"a": "C:\\", "b": "x\\y"}


def test_continued_line_is_not_a_comment_but_a_comment_is_never_continued() -> None:
    parsed = parse_properties("a=1\\\n# not a comment\n# a comment \\\nb=2\n")
    assert parsed.values == {"a": "1# not a comment", "b": "2"}


def test_trailing_backslash_at_end_of_file_is_dropped() -> None:
    assert parse_properties("a=b\\").values == {"a": "b"}


def test_any_line_ending() -> None:
    assert parse_properties("a=1\r\nb=2\rc=3\n").lines == {"a": 1, "b": 2, "c": 3}


def test_escapes() -> None:
    text = "k\\ e\\:y\\=z = \\ lead\\ttab\\nnl\\rcr\\ff\\\\bs\\u00e9\\q\\#\nsmile=\\uD83D\\uDE00\n"
    parsed = parse_properties(text)
    assert parsed.values == {"k e:y=z": " lead\ttab\nnl\rcr\ff\\bséq#", "smile": "😀"}


def test_utf8_text_and_byte_order_mark(tmp_path: Path) -> None:
    path = tmp_path / "c.properties"
    path.write_bytes("\ufefftopic=café\nname=ünï\n".encode())
    assert read_properties(path).values == {"topic": "café", "name": "ünï"}


@pytest.mark.parametrize(
    ("text", "line", "key", "problem"),
    [
        ("a=1\nbad=x\\u12G4\n", 2, "bad", "malformed \\uXXXX escape: \\u12G4"),
        ("a=1\n\nbad=\\u00\n", 3, "bad", "malformed \\uXXXX escape: \\u00"),
        ("lone=\\uD83D\n", 1, "lone", "unpaired surrogate"),
        ("x=1\ny=2\nx=3\n", 3, "x", "duplicate key (first set on line 1)"),
    ],
)
def test_errors_name_file_line_key_and_problem(text: str, line: int, key: str, problem: str) -> None:
    with pytest.raises(PropertiesError) as raised:
        parse_properties(text, "conf/worker.properties")
    error = raised.value
    assert (error.path, error.line, error.key) == ("conf/worker.properties", line, key)
    assert problem in error.problem
    assert str(error).startswith(f"conf/worker.properties:{line}: {key}: ")
    assert problem in str(error)


def test_a_bad_escape_in_a_key_names_the_line() -> None:
    with pytest.raises(PropertiesError, match=r"^w.properties:2: malformed \\uXXXX escape: \\uzz") as raised:
        parse_properties("a=1\nk\\uzz=1\n", "w.properties")
    assert isinstance(raised.value, ConfigError)


def test_empty_key_is_an_error() -> None:
    with pytest.raises(PropertiesError, match=r"^w.properties:2: empty key"):
        parse_properties("a=1\n= value\n", "w.properties")


def test_file_errors(tmp_path: Path) -> None:
    with pytest.raises(PropertiesError, match=r"missing.properties: cannot read the file: No such file"):
        read_properties(tmp_path / "missing.properties")
    latin = tmp_path / "latin.properties"
    latin.write_bytes(b"a=1\nb=caf\xe9\n")
    with pytest.raises(PropertiesError, match=r"latin.properties:2: not UTF-8: byte 0xe9"):
        read_properties(latin)


@given(
    st.dictionaries(
        st.text(st.characters(exclude_categories=("Cs",)), min_size=1, max_size=12),
        st.text(st.characters(exclude_categories=("Cs",)), max_size=20),
        max_size=6,
    )
)
def test_written_properties_read_back(values: dict[str, str]) -> None:
    assert parse_properties(format_properties(values)).values == values


# ---- JSON --------------------------------------------------------------------------------------------------------


def test_flat_json_values_become_strings(tmp_path: Path) -> None:
    path = tmp_path / "source.json"
    path.write_text('{\n  "name": "src",\n  "tasks.max": 2,\n  "ratio": 0.5,\n  "enabled": true\n}\n')
    parsed = read_connector_properties(path)
    assert parsed.values == {"name": "src", "tasks.max": "2", "ratio": "0.5", "enabled": "true"}
    assert parsed.lines == {"name": 2, "tasks.max": 3, "ratio": 4, "enabled": 5}
    assert parsed.initial_state == "RUNNING"


def test_rest_shape_puts_the_name_into_the_config(tmp_path: Path) -> None:
    path = tmp_path / "sink.json"
    body = {"name": "sink", "config": {"connector.class": "discard-sink", "topics": "t"}, "initial_state": "PAUSED"}
    path.write_text(json.dumps(body, indent=2))
    parsed = read_connector_properties(path)
    assert parsed.values == {"connector.class": "discard-sink", "topics": "t", "name": "sink"}
    assert parsed.initial_state == "PAUSED"
    assert parsed.lines["topics"] == 5


def test_json_is_recognised_by_content_when_the_name_does_not_say(tmp_path: Path) -> None:
    path = tmp_path / "connector.conf"
    path.write_text('  {"name": "x", "connector.class": "discard-sink"}')
    assert read_connector_properties(path).values == {"name": "x", "connector.class": "discard-sink"}
    props = tmp_path / "odd.properties"
    props.write_text("{a=1\n")
    assert read_properties(props).values == {"{a": "1"}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('["a", "b"]', "c.json:1: JSON is not an object but an array"),
        ('"text"', "c.json:1: JSON is not an object but a str"),
        ('{\n"a": 1,\n"a": 2\n}', "c.json:3: a: duplicate key"),
        ('{\n"a": 1,\n"b": null\n}', "c.json:3: b: value is null, not a string, number or boolean"),
        ('{\n"b": [1]\n}', "c.json:2: b: value is an array, not a string, number or boolean"),
        ('{"b": {"c": 1}}', "c.json:1: b: value is an object, not a string, number or boolean"),
        ('{\n"a": 1,\n"b": }', "c.json:3: invalid JSON: Expecting value (column 6)"),
        ('{"a": NaN}', "c.json: invalid JSON: NaN is not a JSON number"),
        ('{"name": "x", "config": {}, "tasks": 1}', "c.json:1: tasks: unknown field in a REST-shaped connector"),
        ('{"name": 7, "config": {}}', "c.json:1: name: the connector name must be a non-empty string, not 7"),
        ('{"name": "x", "config": {}, "initial_state": "GONE"}', "c.json:1: initial_state: invalid value 'GONE'"),
        (
            '{"name": "x",\n "config": {\n  "name": "y"}}',
            "c.json:3: name: 'y' in config does not match the connector name 'x'",
        ),
    ],
)
def test_json_errors_name_file_line_key_and_problem(text: str, message: str) -> None:
    with pytest.raises(PropertiesError) as raised:
        parse_json(text, "c.json", connector=True)
    assert str(raised.value).startswith(message)


def test_a_worker_file_has_no_rest_shape() -> None:
    with pytest.raises(PropertiesError, match="config: value is an object"):
        parse_json('{"name": "x", "config": {"a": "b"}}', "w.json", connector=False)


# ---- validation against a ConfigDef --------------------------------------------------------------------------------


def test_parse_names_every_bad_key_with_its_line() -> None:
    parsed = parse_properties(
        "offset.flush.interval.ms=abc\nkey.converter=bytes\ntask.shutdown.graceful.timeout.ms=-5\n",
        "worker.properties",
    )
    with pytest.raises(PropertiesError) as raised:
        parsed.parse(WORKER_CONFIG)
    message = str(raised.value)
    assert message == (
        "worker.properties:1: offset.flush.interval.ms: invalid value 'abc': Expected value to be an integer; "
        "worker.properties:3: task.shutdown.graceful.timeout.ms: invalid value '-5': Value must be at least 0"
    )
    assert [e.key for e in raised.value.errors] == ["offset.flush.interval.ms", "task.shutdown.graceful.timeout.ms"]
    assert "\n" not in message


def test_an_error_about_a_secret_key_hides_its_value() -> None:
    secret = "hunter2-not-for-logs"
    parsed = parse_properties(f"producer.ssl.key.password={secret}\nrest.token={secret}\n", "worker.properties")
    by_name = parsed.config_error(ConfigError("producer.ssl.key.password", secret, "Expected an integer"))
    by_type = parsed.config_error(ConfigError("rest.token", secret, "too short"), password_keys={"rest.token"})
    plain = parsed.config_error(ConfigError("rest.token", secret, "too short"))
    assert "producer.ssl.key.password: invalid value [hidden]: Expected an integer" in str(by_name)
    assert "rest.token: invalid value [hidden]: too short" in str(by_type)
    assert secret in str(plain), "a key that is not secret keeps its value in the message"


def test_parse_returns_parsed_values_and_passes_unknown_keys() -> None:
    parsed = ConfigFile("w.properties", {"offset.flush.interval.ms": "500", "producer.acks": "all"})
    values = parsed.parse(WORKER_CONFIG)
    assert values["offset.flush.interval.ms"] == 500
    assert values["producer.acks"] == "all"


def test_config_error_of_a_missing_key_names_file_and_key() -> None:
    parsed = ConfigFile("c.properties", {"a": "1"})
    error = parsed.config_error(ConfigError("topic", None, "Missing required configuration with no default value"))
    assert str(error) == "c.properties: topic: Missing required configuration with no default value"
