"""Typed values from text as Kafka Connect's ``Values.parseString`` makes them, for InsertHeader's
``value.literal``: ``null``, booleans, integers, floats, decimals, ISO dates, times and timestamps, arrays and maps
(``[1,2]``, ``{"a":1}``), else the text itself. A literal Headwater cannot type exactly as Kafka Connect does (an
array mixing types Kafka converts, a map with non-string keys) raises :class:`UntypableLiteral`."""

from __future__ import annotations

import datetime
import decimal
import re
import struct
from fractions import Fraction
from typing import Any

from headwater.runtime.transforms.builtins.dates import EPOCH, JavaDateFormat, OutOfRange
from headwater.runtime.transforms.builtins.parts import DataError

_DELIMITERS = set(':,{}[]"')
_JAVA_BLANK = "".join(map(chr, range(33)))
"""What Java's ``String.trim`` removes: the characters up to the space, not Unicode spaces."""
_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?", re.ASCII)
_INT_WIDTHS = (("int8", 2**7), ("int16", 2**15), ("int32", 2**31), ("int64", 2**63))
_NUMERIC = ("int8", "int16", "int32", "int64", "float32", "float64")
_TEMPORAL = {
    10: ("date", JavaDateFormat("yyyy-MM-dd")),
    13: ("time", JavaDateFormat("HH:mm:ss.SSS'Z'")),
    24: ("timestamp", JavaDateFormat("yyyy-MM-dd'T'HH:mm:ss.SSS'Z'")),
}
_MIXED = "mixed"
"""The common type of values of unlike types: Kafka Connect leaves them as they are."""
_FLOAT32_MAX = Fraction(struct.unpack(">f", bytes.fromhex("7f7fffff"))[0])


class UntypableLiteral(ValueError):
    """Headwater cannot type this literal exactly as Kafka Connect does."""


class _Failed(Exception):
    """This text is no array or map (Kafka Connect then takes it as a string)."""


def _tokens(text: str) -> list[str]:
    tokens: list[str] = []
    start, escaped = 0, False
    for index, char in enumerate(text):
        if char == "\\":
            escaped = not escaped
            continue
        if char in _DELIMITERS and not escaped:
            if start < index:
                tokens.append(text[start:index])
            tokens.append(char)
            start = index + 1
        escaped = False
    if start < len(text):
        tokens.append(text[start:])
    return tokens


def float32(exact: Fraction) -> float:
    """The float32 nearest ``exact`` (ties to even), as Java's ``BigDecimal.floatValue``, widened to a float."""
    sign, magnitude = (-1.0 if exact < 0 else 1.0), abs(exact)
    if magnitude >= _FLOAT32_MAX + Fraction(2**103):
        return sign * float("inf")
    guess = struct.unpack(">I", struct.pack(">f", float(magnitude)))[0]
    steps = [bits for bits in (guess - 1, guess, guess + 1) if 0 <= bits < 0x7F800000]  # finite, not negative
    candidates: list[float] = [struct.unpack(">f", struct.pack(">I", bits))[0] for bits in steps]
    best = min(candidates, key=lambda value: (abs(Fraction(value) - magnitude), struct.pack(">f", value)[-1] & 1))
    return sign * best


class _Parser:
    def __init__(self, text: str) -> None:
        self.original, self.tokens, self.at = text, _tokens(text), 0

    def more(self) -> bool:
        return self.at < len(self.tokens)

    def take(self, expected: str) -> bool:
        """Consume the next non-blank token if it is ``expected`` (blank tokens before it are consumed anyway)."""
        start = self.at
        while self.at < len(self.tokens) - 1 and not self.tokens[self.at].strip(_JAVA_BLANK):
            self.at += 1
        if self.more() and self.tokens[self.at].strip(_JAVA_BLANK) == expected:
            self.at += 1
            return True
        self.at = start
        return False

    def value(self, embedded: bool) -> tuple[str | None, Any]:
        """(type, value) of the next value; ``(None, None)`` for null (and when there is none)."""
        if not self.more():
            return None, None
        if embedded and self.take('"'):
            content = []
            while self.more() and not self.take('"'):
                content.append(self.tokens[self.at])
                self.at += 1
            text = "".join(content)
            kind, parsed = parse_literal_typed(text)
            return (kind, parsed) if kind in ("date", "time", "timestamp") else ("string", text)
        for word, result in (("null", (None, None)), ("true", ("boolean", True)), ("false", ("boolean", False))):
            start = self.at
            if self.take(word) and (embedded or not self.more()):
                return result
            self.at = start
        start = self.at
        try:
            if self.take("["):
                return self._array()
            if self.take("{"):
                return self._map()
        except _Failed:
            self.at = start
        token = self.tokens[self.at]
        self.at += 1
        if not token.strip(_JAVA_BLANK):
            return "string", token
        token = token.strip(_JAVA_BLANK)
        if (token[0].isdigit() or token[0] in "+-") and any(c.isdigit() and not c.isascii() for c in token):
            raise UntypableLiteral(f"non-ASCII digits in {token!r}")  # Java reads them as digits, Headwater does not
        if token[0].isdigit():
            if len(self.tokens) - self.at >= 4:
                joined = token + "".join(self.tokens[self.at : self.at + 4])
                temporal = _temporal(joined)
                if temporal is not None:
                    self.at += 4
                    return temporal
            temporal = _temporal(token)
            if temporal is not None:
                return temporal
        if (token[0].isdigit() or token[0] in "+-") and _NUMBER.fullmatch(token):
            return _number(token)
        if embedded:
            raise _Failed
        return "string", self.original

    def _array(self) -> tuple[str, Any]:
        items: list[tuple[str | None, Any]] = []
        common: str | None = None
        while self.more():
            if self.take("]"):
                return "array", _aligned(items, common)
            if self.take(","):
                raise _Failed
            item = self.value(True)
            common = _common(common, item[0])
            items.append(item)
            mark = self.at
            if self.take("]"):
                self.at = mark
            elif not self.take(","):
                raise _Failed
        raise _Failed

    def _map(self) -> tuple[str, Any]:
        entries: list[tuple[tuple[str | None, Any], tuple[str | None, Any]]] = []
        key_type: str | None = None
        value_type: str | None = None
        while self.more():
            if self.take("}"):
                keys = _aligned([key for key, _ in entries], key_type)
                values = _aligned([value for _, value in entries], value_type)
                if any(not isinstance(key, str) for key in keys):
                    raise UntypableLiteral("a map with keys other than strings")
                return "map", dict(zip(keys, values, strict=True))
            if self.take(","):
                raise _Failed
            key = self.value(True)
            if key[1] is None or not self.take(":"):
                raise _Failed
            value = self.value(True)
            self.take(",")
            entries.append((key, value))
            key_type, value_type = _common(key_type, key[0]), _common(value_type, value[0])
        raise _Failed


def _temporal(token: str) -> tuple[str, datetime.datetime] | None:
    token = token.replace("\\:", ":")
    if len(token) not in _TEMPORAL:
        return None
    kind, pattern = _TEMPORAL[len(token)]
    try:
        millis = pattern.parse(token)
    except OutOfRange:
        raise UntypableLiteral(f"a date before 1582-10-15 ({token!r})") from None
    except DataError:
        return None
    return kind, EPOCH + datetime.timedelta(milliseconds=millis)


def _number(token: str) -> tuple[str, Any]:
    number = decimal.Decimal(token)
    exponent = number.as_tuple().exponent
    assert isinstance(exponent, int)
    if number == number.to_integral_value():
        for kind, bound in _INT_WIDTHS:
            if -bound <= int(number) < bound:
                return kind, int(number)
    if exponent != 0:
        single = float32(Fraction(number))
        if abs(single) != float("inf"):
            return "float32", single
        if abs(float(number)) != float("inf"):
            return "float64", float(number)
    return "decimal", number


def _common(previous: str | None, latest: str | None) -> str | None:
    """Kafka Connect's common schema of an array's elements (or a map's keys or values) so far."""
    if latest is None or previous == _MIXED:
        return previous
    if previous is None or previous == latest:
        return latest
    if previous in _NUMERIC and latest in _NUMERIC:
        return max(previous, latest, key=_NUMERIC.index)
    return _MIXED


def _aligned(items: list[tuple[str | None, Any]], common: str | None) -> list[Any]:
    """The values converted to their common type as Kafka Connect converts them; refused where that would need
    Kafka's conversions between unlike types."""
    if common is None or common == _MIXED:
        return [value for _, value in items]
    out: list[Any] = []
    for kind, value in items:
        if kind is None:
            raise _Failed  # Kafka Connect's conversion refuses a null for the (required) common type
        if kind == common or (kind.startswith("int") and common.startswith("int")):
            out.append(value)
        elif kind in _NUMERIC and common in _NUMERIC:
            out.append(float32(Fraction(value)) if common == "float32" else float(value))
        else:
            raise UntypableLiteral(f"an element of type {kind} Kafka converts to {common}")
    return out


def parse_literal_typed(text: str) -> tuple[str | None, Any]:
    """(Kafka Connect's type name, value) of ``text``."""
    if not text:
        return "string", text
    return _Parser(text).value(False)


def parse_literal(text: str) -> Any:
    """The value Kafka Connect's ``Values.parseString`` gives ``text``."""
    return parse_literal_typed(text)[1]
