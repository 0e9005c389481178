"""Built-in transformations that change a record's topic, and filtering, with Kafka Connect's semantics:
RegexRouter, TimestampRouter, Filter. Regular expressions and replacements are Java's (``java.util.regex``):
:func:`compiled` translates the syntax both languages share and refuses the rest with a :class:`ConfigError`."""

from __future__ import annotations

import re
import warnings
from collections.abc import Mapping
from typing import Any

from headwater.runtime.transforms.builtins.dates import JavaDateFormat
from headwater.runtime.transforms.builtins.parts import DataError
from headwater.runtime.transforms.records import Rewriting
from headwater.sdk.config import REQUIRED, ConfigDef, Importance, Type
from headwater.sdk.errors import ConfigError
from headwater.sdk.transforms import R, Transformation

_ESCAPES = set("dDwWsSAtnrfxu123456789")
"""The escapes ``\\x`` that mean the same in Java and Python regular expressions (``\\z`` is translated)."""
_FLAGS = set("is-")
_JAVA_DOT = "[^\n\r\x85\u2028\u2029]"
"""Java's ``.``: any character but its line terminators (Python's excludes only ``\n``)."""
_JAVA_END = "(?=(?:\r\n|[\n\r\x85\u2028\u2029])?\\Z)"
"""Java's ``$``: the end, or before a last line terminator (Python's ``$`` knows only ``\n``)."""
_QUANTIFIER = re.compile(r"\{\d+(,\d*)?\}")
_GROUP_NAME = re.compile(r"\(\?<([a-zA-Z][a-zA-Z0-9]*)>")


def _unsupported(key: str, value: str, what: str) -> ConfigError:
    return ConfigError(key, value, f"Headwater cannot match Java's regex {what} the same way; rewrite the pattern")


def _translated(key: str, value: str) -> str:
    out: list[str] = []
    index, in_class = 0, False
    dotall = re.match(r"\(\?[a-z]*s[a-z]*\)", value) is not None
    while index < len(value):
        char = value[index]
        if char == "\\":
            escaped = value[index + 1 : index + 2]
            if escaped == "z" and not in_class:
                out.append("\\Z")
            elif escaped.isalnum() and escaped not in _ESCAPES:
                raise _unsupported(key, value, f"escape \\{escaped}")
            elif escaped.isdigit() and value[index + 2 : index + 3].isdigit():
                raise _unsupported(key, value, "back reference of more than one digit")
            else:
                out.append(char + escaped)
            index += 2
            continue
        if in_class:
            if char == "[" or value.startswith("&&", index):
                raise _unsupported(key, value, "nested or intersected character class")
            if char == "]":
                if out[-1] == "[" or out[-2:] == ["[", "^"]:
                    raise _unsupported(key, value, "character class starting with ]")
                in_class = False
        elif char == "[":
            in_class = True
        elif value.startswith("(?<", index) and value[index + 3 : index + 4] not in ("=", "!"):
            if _GROUP_NAME.match(value, index) is None:
                raise ConfigError(key, value, "Invalid regex: a group name is a letter then letters or digits")
            out.append("(?P<")
            index += 3
            continue
        elif char == "{" and _QUANTIFIER.match(value, index) is None:
            raise ConfigError(key, value, "Invalid regex: Illegal repetition (Java reads { as a quantifier)")
        elif char == "$":
            out.append(_JAVA_END)
            index += 1
            continue
        elif value.startswith("(?", index) and value[index + 2 : index + 3] not in ("=", "!", "<", ":", ">"):
            flags = re.match(r"\(\?([a-zA-Z-]*)[:)]", value[index:])
            if flags is None or not set(flags.group(1)) <= _FLAGS:
                raise _unsupported(key, value, "group construct or inline flag")
            if flags.group(0).endswith(")") and (index != 0 or "-" in flags.group(1)):
                raise _unsupported(key, value, "inline flag other than flags set at the start")
            if "s" in flags.group(1) and not (index == 0 and dotall):
                raise _unsupported(key, value, "flag s other than at the start of the pattern")
        elif char == "." and not dotall:
            out.append(_JAVA_DOT)
            index += 1
            continue
        out.append(char)
        index += 1
    return "".join(out)


def compiled(key: str, value: Any) -> re.Pattern[str]:
    """``value``, a Java regular expression, compiled to match as Java matches it (ASCII classes as Java's
    defaults); a :class:`ConfigError` on ``key`` for an invalid one or one using what Python matches differently
    (``\\p{...}``, ``\\Q...\\E``, ``\\Z``, word boundaries, nested or intersected classes, flags but i and
    a leading s)."""
    translated = _translated(key, value)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            return re.compile(translated, re.ASCII)
    except FutureWarning:
        raise _unsupported(key, value, "character class") from None
    except re.error as error:
        raise ConfigError(key, value, f"Invalid regex for Headwater's (Python's) regex engine: {error}") from None


def _regex(key: str, value: Any) -> None:
    compiled(key, value)


def java_replacement(replacement: str, pattern: re.Pattern[str]) -> list[str | int]:
    """A ``java.util.regex.Matcher`` replacement for ``pattern`` as literal text and group numbers: ``\\c`` is
    ``c``, ``${name}`` a named group and ``$12`` group 12 if ``pattern`` has one, else group 1 then ``2``.
    :class:`ValueError` with Java's reason for a replacement Java would fail on."""
    parts: list[str | int] = []
    index = 0
    while index < len(replacement):
        char = replacement[index]
        if char == "\\":
            if index + 1 == len(replacement):
                raise ValueError("character to be escaped is missing")
            parts.append(replacement[index + 1])
            index += 2
        elif char == "$":
            index += 1
            if index == len(replacement):
                raise ValueError("Illegal group reference: group index is missing")
            if replacement[index] == "{":
                named = re.compile(r"\{([a-zA-Z][a-zA-Z0-9]*)\}").match(replacement, index)
                if named is None:
                    raise ValueError("named capturing group is missing trailing '}' or has an invalid name")
                if named.group(1) not in pattern.groupindex:
                    raise ValueError(f"No group with name {{{named.group(1)}}}")
                parts.append(pattern.groupindex[named.group(1)])
                index = named.end()
            elif replacement[index].isdigit() and replacement[index].isascii():
                number = int(replacement[index])
                if number > pattern.groups:
                    raise ValueError(f"No group {number}")
                index += 1
                while index < len(replacement) and replacement[index] in "0123456789":
                    longer = number * 10 + int(replacement[index])
                    if longer > pattern.groups:
                        break
                    number, index = longer, index + 1
                parts.append(number)
            else:
                raise ValueError("Illegal group reference")
        else:
            parts.append(char)
            index += 1
    return parts


ROUTES_KEPT = 10_000
"""How many topics a RegexRouter remembers the new name of: a connector reads or writes few topics, and routing
each again is most of what a chain costs per record."""


class RegexRouter(Rewriting[R]):
    """Rename the topic of records whose topic matches ``regex`` (all of it): the first match of ``regex`` in the
    topic is replaced by ``replacement``, as Kafka Connect does (``a|ab`` turns ``ab`` into the replacement then
    ``b``). Headwater refuses at configuration a replacement Kafka Connect would fail on at each matching record."""

    def config_def(self) -> ConfigDef:
        return (
            ConfigDef()
            .define(
                "regex",
                Type.STRING,
                REQUIRED,
                Importance.HIGH,
                "Java regular expression the whole topic must match; records whose topic does not pass unchanged.",
                _regex,
            )
            .define(
                "replacement",
                Type.STRING,
                REQUIRED,
                Importance.HIGH,
                "The new topic, Java's replacement syntax: $1 or ${name} for a group, \\$ for a dollar sign.",
            )
        )

    def configure(self, config: Mapping[str, Any]) -> None:
        self.regex = compiled("regex", config["regex"])
        self._routed: dict[str, str] = {}
        try:
            self.replacement = java_replacement(config["replacement"], self.regex)
        except ValueError as error:
            raise ConfigError("replacement", config["replacement"], str(error)) from None

    def rewrite(self, record: R) -> R | None:
        topic = record.topic
        routed = self._routed.get(topic)
        if routed is None:
            routed = self._route(topic)
            if len(self._routed) >= ROUTES_KEPT:
                self._routed.clear()
            self._routed[topic] = routed
        record.topic = routed
        return record

    def _route(self, topic: str) -> str:
        """The topic's new name (itself when the regex does not match all of it)."""
        if self.regex.fullmatch(topic) is None:
            return topic
        # Kafka Connect then replaces the first match found, which may be shorter than the whole topic
        first = self.regex.search(topic)
        assert first is not None
        replaced = "".join(part if isinstance(part, str) else first.group(part) or "" for part in self.replacement)
        return topic[: first.start()] + replaced + topic[first.end() :]


def _date_format(key: str, value: Any) -> None:
    try:
        JavaDateFormat(value)
    except ValueError as error:
        raise ConfigError(key, value, str(error)) from None


class TimestampRouter(Rewriting[R]):
    """Rename the topic to ``topic.format`` with ``${topic}`` and ``${timestamp}`` (the record's timestamp in
    ``timestamp.format``, UTC) replaced."""

    def config_def(self) -> ConfigDef:
        return (
            ConfigDef()
            .define(
                "topic.format",
                Type.STRING,
                "${topic}-${timestamp}",
                Importance.HIGH,
                "The new topic: ${topic} stands for the record's topic, ${timestamp} for its formatted timestamp.",
            )
            .define(
                "timestamp.format",
                Type.STRING,
                "yyyyMMdd",
                Importance.HIGH,
                "java.text.SimpleDateFormat pattern of ${timestamp}, in UTC. Headwater renders the letters "
                "y M d H m s S E a h k K D Z X and quoted text and refuses the others; records with a timestamp "
                "before 1582-10-15 or after 9999 fail.",
                _date_format,
            )
        )

    def configure(self, config: Mapping[str, Any]) -> None:
        self.topic_format = config["topic.format"]
        self.timestamp_format = JavaDateFormat(config["timestamp.format"])

    def rewrite(self, record: R) -> R | None:
        if record.timestamp is None:
            raise DataError(f"Timestamp missing on record: {record!r}")
        stamp = self.timestamp_format.format(record.timestamp)
        record.topic = self.topic_format.replace("${topic}", record.topic).replace("${timestamp}", stamp)
        return record


class Filter(Transformation[R]):
    """Drop every record: guard it with a predicate (and ``negate``) to drop only some. It has no settings."""

    def apply(self, record: R) -> R | None:
        return None
