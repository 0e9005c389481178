"""Worker and connector config files, as ``connect-standalone`` reads them: Java ``.properties`` or JSON.

A ``.properties`` file is read like ``java.util.Properties.load`` reads one, but as UTF-8: ``#`` and ``!`` start
comment lines; ``key=value``, ``key: value`` and ``key value`` all set a key; a line ending in an odd number of
backslashes continues on the next one (whose leading blanks are dropped); ``\\t``, ``\\n``, ``\\r``, ``\\f`` and
``\\uXXXX`` are escapes, and a backslash before any other character stands for that character. Unlike Java, a key
set twice and an empty key are errors rather than silently accepted.

A JSON file (named ``*.json``, or whose first non-blank character is ``{``) holds one flat object of string,
number or boolean values, or, for a connector, Kafka Connect's REST shape
``{"name": ..., "config": {...}, "initial_state": ...}``.

Every error is a :class:`PropertiesError` whose message names the file, the line where there is one, the key and
the problem, such as ``worker.properties:3: offset.flush.interval.ms: invalid value 'abc': Expected value to be a
number``.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from headwater.sdk.config import ConfigDef, Type
from headwater.sdk.errors import ConfigError
from headwater.sdk.providers import has_reference

_BLANK = " \t\f"
_NEWLINE = re.compile(r"\r\n|\r|\n")
_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}
_MISSING = "Missing required configuration with no default value"
INITIAL_STATES = ("RUNNING", "PAUSED", "STOPPED")
"""Values of ``initial_state`` in a connector's REST-shaped JSON file."""


class PropertiesError(ConfigError):
    """A config file that cannot be read or holds bad values. The message names the file, the line where there
    is one, the key and the problem; when several keys are bad it lists them all (``errors``), on one line."""

    def __init__(
        self, path: str | os.PathLike[str], problem: str, key: str | None = None, line: int | None = None
    ) -> None:
        super().__init__(key or "", None, problem)
        self.path = str(path)
        self.line = line
        self.problem = problem
        self.errors: list[PropertiesError] = [self]
        self.args = (self._describe(),)

    @classmethod
    def combine(cls, errors: list[PropertiesError]) -> PropertiesError:
        """The first of ``errors``, its message listing every one."""
        first = errors[0]
        first.errors = list(errors)
        first.args = ("; ".join(error._describe() for error in errors),)
        return first

    def _describe(self) -> str:
        where = self.path if self.line is None else f"{self.path}:{self.line}"
        return f"{where}: {self.key}: {self.problem}" if self.key else f"{where}: {self.problem}"


@dataclass
class ConfigFile:
    """The keys of one config file as strings, with the line each was set on (when the format has lines)."""

    path: str
    values: dict[str, str]
    lines: dict[str, int] = field(default_factory=dict)
    initial_state: str = "RUNNING"
    """For a connector: ``RUNNING``, ``PAUSED`` or ``STOPPED`` (REST-shaped JSON only; otherwise RUNNING)."""
    bare: set[str] = field(default_factory=set)
    """Keys set by a ``.properties`` line that holds the key alone, with neither separator nor value, which Java
    reads as an empty value (``key=``)."""

    def error(self, key: str | None, problem: str) -> PropertiesError:
        """An error about ``key`` of this file, at the line that set it."""
        return PropertiesError(self.path, problem, key, self.lines.get(key) if key else None)

    def config_error(self, error: ConfigError, password_keys: Collection[str] = ()) -> PropertiesError:
        """A ``ConfigError`` raised for this file's values, re-raised naming the file and line; the value of a
        secret key (one of ``password_keys`` or a well-known secret name) is shown hidden, as Kafka's
        ``Password.toString`` shows it."""
        from headwater.runtime.config.secrets import HIDDEN, is_secret
        from headwater.sdk.providers import REFERENCE

        if isinstance(error, PropertiesError):
            return error
        value = self.values.get(error.key, error.value)  # the text as written, not as parsed
        hidden = value is not None and is_secret(error.key or "", password_keys) and REFERENCE.sub("", str(value)) != ""
        shown = HIDDEN if hidden else repr(value)  # a ${provider:path:key} reference names where, not what
        problem = error.reason if value is None else f"invalid value {shown}: {error.reason}"
        return self.error(error.key or None, problem)

    def parse(self, definition: ConfigDef) -> dict[str, Any]:
        """The values parsed by ``definition``; raises :class:`PropertiesError` naming every bad key. A value holding
        a ``${provider:path:key}`` reference is left as written, as :meth:`ConfigDef.parse` leaves it: it is checked
        once resolved."""
        errors: list[PropertiesError] = []
        passwords = {key.name for key in definition if key.type is Type.PASSWORD}
        for key in definition:
            raw = self.values.get(key.name)
            try:
                if has_reference(raw):
                    continue
                if raw is not None:
                    key.parse(raw)
                elif key.required:
                    raise ConfigError(key.name, None, _MISSING)
            except ConfigError as error:
                errors.append(self.config_error(error, passwords))
        if errors:
            raise PropertiesError.combine(errors)
        return definition.parse(self.values)


# ---- reading -----------------------------------------------------------------------------------------------------


def read_properties(path: str | os.PathLike[str]) -> ConfigFile:
    """A worker config file: ``.properties`` or a flat JSON object."""
    text = _read_text(path)
    if _is_json(path, text):
        return parse_json(text, path, connector=False)
    return parse_properties(text, path)


def read_connector_properties(path: str | os.PathLike[str]) -> ConfigFile:
    """A connector config file: ``.properties``, a flat JSON object, or Kafka Connect's REST shape (whose ``name``
    becomes the ``name`` key of the config)."""
    text = _read_text(path)
    if _is_json(path, text):
        return parse_json(text, path, connector=True)
    return parse_properties(text, path)


def _read_text(path: str | os.PathLike[str]) -> str:
    try:
        data = Path(path).read_bytes()
    except OSError as error:
        raise PropertiesError(path, f"cannot read the file: {error.strerror or error}") from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        line = data[: error.start].count(b"\n") + 1
        raise PropertiesError(path, f"not UTF-8: byte 0x{data[error.start]:02x} cannot be decoded", line=line) from None


def _is_json(path: str | os.PathLike[str], text: str) -> bool:
    suffix = Path(path).suffix.lower()
    if suffix == ".json":
        return True
    return suffix != ".properties" and text.lstrip().startswith("{")


def parse_properties(text: str, path: str | os.PathLike[str] = "<string>") -> ConfigFile:
    """The keys of Java ``.properties`` text; ``path`` only names the source in errors."""
    result = ConfigFile(str(path), {})
    for line, logical in _logical_lines(text):
        key_raw, value_raw = _split(logical)
        key = _unescape(key_raw, path, line, None)
        if not key:
            raise PropertiesError(path, f"empty key (the line starts with {logical[:1]!r})", line=line)
        value = _unescape(value_raw, path, line, key)
        if key in result.values:
            raise PropertiesError(path, f"duplicate key (first set on line {result.lines[key]})", key, line)
        result.values[key] = value
        result.lines[key] = line
        if len(key_raw) == len(logical.rstrip(_BLANK)):  # the key alone: no separator, no value
            result.bare.add(key)
    return result


def _logical_lines(text: str) -> Iterable[tuple[int, str]]:
    """(first natural line number, logical line) for each line that is neither blank nor a comment."""
    natural = _NEWLINE.split(text)
    index = 0
    while index < len(natural):
        start = index
        current = natural[index].lstrip(_BLANK)
        index += 1
        if not current or current[0] in "#!":
            continue
        parts: list[str] = []
        while _continues(current):
            parts.append(current[:-1])
            if index >= len(natural):  # a trailing backslash at the end of the file is dropped, as in Java
                current = ""
                break
            current = natural[index].lstrip(_BLANK)
            index += 1
        parts.append(current)
        yield start + 1, "".join(parts)


def _continues(line: str) -> bool:
    return (len(line) - len(line.rstrip("\\"))) % 2 == 1


def _split(line: str) -> tuple[str, str]:
    """Key and value text, still escaped: the key ends at the first unescaped ``=``, ``:`` or blank."""
    escaped = False
    end = len(line)
    separator = False
    for index, char in enumerate(line):
        if escaped:
            escaped = False
            continue
        if char == "\\":
            escaped = True
        elif char in "=:":
            end, separator = index, True
            break
        elif char in _BLANK:
            end = index
            break
    rest = line[end + 1 :] if end < len(line) else ""
    rest = rest.lstrip(_BLANK)
    if not separator and rest[:1] in ("=", ":"):
        rest = rest[1:].lstrip(_BLANK)
    return line[:end], rest


def _unescape(raw: str, path: str | os.PathLike[str], line: int, key: str | None) -> str:
    if "\\" not in raw:
        return raw
    out: list[str] = []
    index = 0
    while index < len(raw):
        char = raw[index]
        index += 1
        if char != "\\":
            out.append(char)
            continue
        escape = raw[index] if index < len(raw) else ""
        index += 1
        if escape == "u":
            digits = raw[index : index + 4]
            if len(digits) != 4 or not all(c in "0123456789abcdefABCDEF" for c in digits):
                raise PropertiesError(path, f"malformed \\uXXXX escape: \\u{digits}", key, line)
            out.append(chr(int(digits, 16)))
            index += 4
        else:
            out.append(_ESCAPES.get(escape, escape))
    text = "".join(out)
    try:
        # \\uD83D\\uDE00 is one character, as in Java's UTF-16 strings
        return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le")
    except UnicodeDecodeError:
        raise PropertiesError(path, "malformed \\uXXXX escape: an unpaired surrogate", key, line) from None


def parse_json(text: str, path: str | os.PathLike[str] = "<string>", connector: bool = False) -> ConfigFile:
    """The keys of a JSON config: a flat object, or (``connector=True``) Kafka Connect's REST shape."""

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        found: dict[str, Any] = {}
        for key, value in items:
            if key in found:
                raise PropertiesError(path, "duplicate key", key, _json_line(text, key, 1))
            found[key] = value
        return found

    def constant(name: str) -> Any:
        raise ValueError(f"{name} is not a JSON number")

    try:
        content = json.loads(text, object_pairs_hook=pairs, parse_constant=constant)
    except PropertiesError:
        raise
    except json.JSONDecodeError as error:
        raise PropertiesError(path, f"invalid JSON: {error.msg} (column {error.colno})", line=error.lineno) from None
    except ValueError as error:
        raise PropertiesError(path, f"invalid JSON: {error}") from None
    if not isinstance(content, dict):
        raise PropertiesError(path, f"JSON is not an object but {_json_type(content)}", line=1)
    if connector and isinstance(content.get("config"), dict):
        return _rest_shape(content, text, path)
    return _flat(content, text, path, 0)


def _rest_shape(content: dict[str, Any], text: str, path: str | os.PathLike[str]) -> ConfigFile:
    extra = sorted(set(content) - {"name", "config", "initial_state"})
    if extra:
        problem = "unknown field in a REST-shaped connector config (expected name, config, initial_state)"
        raise PropertiesError(path, problem, extra[0], _json_line(text, extra[0]))
    name = content.get("name")
    if not isinstance(name, str) or not name.strip():
        where = _json_line(text, "name")
        raise PropertiesError(path, f"the connector name must be a non-empty string, not {name!r}", "name", where)
    state = content.get("initial_state", "RUNNING")
    if state not in INITIAL_STATES:
        problem = f"invalid value {state!r}: expected one of {', '.join(INITIAL_STATES)}"
        raise PropertiesError(path, problem, "initial_state", _json_line(text, "initial_state"))
    config_at = _json_key_at(text, "config")
    result = _flat(content["config"], text, path, config_at)
    if "name" in result.values and result.values["name"] != name:
        problem = f"{result.values['name']!r} in config does not match the connector name {name!r}"
        raise PropertiesError(path, problem, "name", result.lines.get("name"))
    if "name" not in result.values:
        result.values["name"] = name
        if (line := _json_line(text, "name")) is not None:
            result.lines["name"] = line
    result.initial_state = state
    return result


def _flat(content: dict[str, Any], text: str, path: str | os.PathLike[str], search_from: int) -> ConfigFile:
    result = ConfigFile(str(path), {})
    for key, value in content.items():
        line = _json_line(text, key, start=search_from)
        if not key:
            raise PropertiesError(path, "empty key", line=line)
        if isinstance(value, bool):
            text_value = "true" if value else "false"
        elif isinstance(value, int | float | str):
            text_value = str(value)
        else:
            problem = f"value is {_json_type(value)}, not a string, number or boolean"
            raise PropertiesError(path, problem, key, line)
        result.values[key] = text_value
        if line is not None:
            result.lines[key] = line
    return result


def _json_type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "an array"
    return f"a {type(value).__name__}"


def _json_key_at(text: str, key: str, nth: int = 0, start: int = 0) -> int:
    """Index of the ``nth`` occurrence of member name ``key`` (as ``json.dumps`` writes it) at or after ``start``."""
    pattern = re.compile(re.escape(json.dumps(key, ensure_ascii=False)) + r"\s*:")
    for count, match in enumerate(pattern.finditer(text, start)):
        if count == nth:
            return match.start()
    return -1


def _json_line(text: str, key: str, nth: int = 0, start: int = 0) -> int | None:
    """Best effort: the line of the ``nth`` member named ``key``, or None when it is written with escapes."""
    found = _json_key_at(text, key, nth, start)
    return None if found < 0 else text.count("\n", 0, found) + 1


# ---- writing -----------------------------------------------------------------------------------------------------


def format_properties(values: Mapping[str, object]) -> str:
    """``.properties`` text (UTF-8, one key per line) that :func:`parse_properties` reads back as ``values``;
    booleans are written ``true``/``false``, other values with ``str``."""
    lines = []
    for key, value in values.items():
        text = ("true" if value else "false") if isinstance(value, bool) else str(value)
        lines.append(f"{_escape(key, key=True)}={_escape(text, key=False)}")
    return "\n".join(lines) + "\n"


def _escape(text: str, key: bool) -> str:
    out = []
    for index, char in enumerate(text):
        if char == "\\":
            out.append("\\\\")
        elif char in "\t\n\r\f":
            out.append("\\" + {"\t": "t", "\n": "n", "\r": "r", "\f": "f"}[char])
        elif (key or index == 0) and char in " =:#!":
            out.append("\\" + char)
        elif ord(char) < 0x20 or 0xD800 <= ord(char) <= 0xDFFF or ord(char) in (0x85, 0x2028, 0x2029):
            out.append(f"\\u{ord(char):04x}")
        else:
            out.append(char)
    return "".join(out)
