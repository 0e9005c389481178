"""Built-in transformations that change a record's topic, and filtering, with Kafka Connect's semantics:
RegexRouter, TimestampRouter, Filter."""

from __future__ import annotations

import datetime
import re
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from headwater.runtime.transforms.builtins.parts import DataError
from headwater.sdk.config import REQUIRED, ConfigDef, Importance, Type
from headwater.sdk.errors import ConfigError
from headwater.sdk.transforms import R, Transformation


def compiled(key: str, value: Any) -> re.Pattern[str]:
    """``value`` compiled as a regular expression (Java's syntax and Python's agree on what configs use)."""
    try:
        return re.compile(value)
    except re.error as error:
        raise ConfigError(key, value, f"Invalid regex: {error}") from None


def _regex(key: str, value: Any) -> None:
    compiled(key, value)


def java_replacement(replacement: str) -> str:
    """A ``java.util.regex.Matcher`` replacement (``$1``, ``${name}``, ``\\$``) as a Python ``re`` template."""
    out: list[str] = []
    index = 0
    while index < len(replacement):
        char = replacement[index]
        if char == "\\" and index + 1 < len(replacement):
            out.append(re.escape(replacement[index + 1]) if replacement[index + 1] != "\\" else "\\\\")
            index += 2
        elif char == "$":
            named = re.match(r"\{([A-Za-z][A-Za-z0-9]*)\}", replacement[index + 1 :])
            number = re.match(r"\d+", replacement[index + 1 :])
            if named:
                out.append(f"\\g<{named.group(1)}>")
                index += 1 + named.end()
            elif number:
                out.append(f"\\g<{number.group(0)}>")
                index += 1 + number.end()
            else:
                raise ValueError(f"Illegal group reference in replacement {replacement!r}")
        else:
            out.append("\\\\" if char == "\\" else char)
            index += 1
    return "".join(out)


class RegexRouter(Transformation[R]):
    """Rename the topic of records whose topic matches ``regex`` (all of it) to ``replacement``."""

    def config_def(self) -> ConfigDef:
        return (
            ConfigDef()
            .define("regex", Type.STRING, REQUIRED, Importance.HIGH, "Regular expression the topic must match.", _regex)
            .define("replacement", Type.STRING, REQUIRED, Importance.HIGH, "Replacement string ($1 for a group).")
        )

    def configure(self, config: Mapping[str, Any]) -> None:
        self.regex = compiled("regex", config["regex"])
        try:
            self.replacement = java_replacement(config["replacement"])
        except ValueError as error:
            raise ConfigError("replacement", config["replacement"], str(error)) from None

    def apply(self, record: R) -> R | None:
        match = self.regex.fullmatch(record.topic)
        if match is None:
            return record
        return replace(record, topic=match.expand(self.replacement))


_JAVA_DATE_FIELDS = {
    "yyyy": "%Y",
    "yy": "%y",
    "MM": "%m",
    "dd": "%d",
    "HH": "%H",
    "mm": "%M",
    "ss": "%S",
    "SSS": "{millis}",
}


def java_date_format(pattern: str) -> str:
    """A ``java.text.SimpleDateFormat`` pattern made of the common fields (years, months, days, hours, minutes,
    seconds, milliseconds, quoted text) as a :meth:`datetime.strftime` format; others are refused."""
    out: list[str] = []
    index = 0
    while index < len(pattern):
        if pattern[index] == "'":
            end = pattern.find("'", index + 1)
            if end == -1:
                raise ValueError(f"Unterminated quote in date pattern {pattern!r}")
            out.append(pattern[index + 1 : end].replace("%", "%%") or "'")
            index = end + 1
            continue
        if pattern[index].isalpha():
            run = len(pattern[index:]) - len(pattern[index:].lstrip(pattern[index]))
            field = pattern[index : index + run]
            if field not in _JAVA_DATE_FIELDS:
                raise ValueError(
                    f"Date pattern field {field!r} is not supported (use yyyy, yy, MM, dd, HH, mm, ss, SSS)"
                )
            out.append(_JAVA_DATE_FIELDS[field])
            index += run
            continue
        out.append(pattern[index].replace("%", "%%"))
        index += 1
    return "".join(out)


def _date_format(key: str, value: Any) -> None:
    try:
        java_date_format(value)
    except ValueError as error:
        raise ConfigError(key, value, str(error)) from None


class TimestampRouter(Transformation[R]):
    """Rename the topic to ``topic.format`` with ``${topic}`` and ``${timestamp}`` (the record's timestamp in
    ``timestamp.format``, UTC) replaced."""

    def config_def(self) -> ConfigDef:
        return (
            ConfigDef()
            .define("topic.format", Type.STRING, "${topic}-${timestamp}", Importance.HIGH, "The new topic's format.")
            .define(
                "timestamp.format",
                Type.STRING,
                "yyyyMMdd",
                Importance.HIGH,
                "Format of the timestamp (java.text.SimpleDateFormat patterns: yyyy, MM, dd, HH, mm, ss, SSS).",
                _date_format,
            )
        )

    def configure(self, config: Mapping[str, Any]) -> None:
        self.topic_format = config["topic.format"]
        self.timestamp_format = java_date_format(config["timestamp.format"])

    def apply(self, record: R) -> R | None:
        if record.timestamp is None:
            raise DataError(f"Timestamp missing on record: {record!r}")
        moment = datetime.datetime.fromtimestamp(record.timestamp / 1000, datetime.UTC)
        stamp = moment.strftime(self.timestamp_format).replace("{millis}", f"{record.timestamp % 1000:03d}")
        topic = self.topic_format.replace("${topic}", record.topic).replace("${timestamp}", stamp)
        return replace(record, topic=topic)


class Filter(Transformation[R]):
    """Drop every record (guard it with a predicate to drop some)."""

    def apply(self, record: R) -> R | None:
        return None
