"""Java's number rules where Kafka Connect's transformations rely on them: parsing text (``Long.parseLong``,
``Double.parseDouble``, ``new BigDecimal``, ``Boolean.parseBoolean``), narrowing to Java's integer widths, float32
rounding, ``Double.toString`` and ``Float.toString``. Python's own parsers accept more (``1_0``, `` 5``, ``inf``);
a transformation that must refuse what Kafka refuses uses these."""

from __future__ import annotations

import decimal
import math
import re
import struct
from collections.abc import Callable

INT_BITS = {"int8": 8, "int16": 16, "int32": 32, "int64": 64}
"""The width of each of Kafka Connect's integer types."""

_INTEGER = re.compile(r"[+-]?\d+")
_BIG_DECIMAL = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")
_DOUBLE = re.compile(r"[+-]?(NaN|Infinity|((\d+\.?\d*|\.\d+)([eE][+-]?\d+)?)[fFdD]?)", re.ASCII)
_HEX_DOUBLE = re.compile(r"[+-]?0[xX]([0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)[pP][+-]?\d+[fFdD]?")


def parse_integer(text: str, bits: int) -> int:
    """``Byte/Short/Integer/Long.parseXxx``: an optionally signed run of digits in the range of ``bits``; else
    ValueError."""
    if not _INTEGER.fullmatch(text):
        raise ValueError(f"For input string: {text!r}")
    parsed = int(text)
    if not -(2 ** (bits - 1)) <= parsed < 2 ** (bits - 1):
        raise ValueError(f"Value out of range. Value:{text!r}")
    return parsed


def parse_double(text: str) -> float:
    """``Double.parseDouble``: Java's decimal and hexadecimal literals, ``NaN`` and ``Infinity``, surrounding
    whitespace (characters up to U+0020) ignored; else ValueError."""
    stripped = text.strip("".join(chr(code) for code in range(33)))
    if _DOUBLE.fullmatch(stripped):
        return float(stripped.rstrip("fFdD").replace("Infinity", "inf"))
    if _HEX_DOUBLE.fullmatch(stripped):
        sign = -1.0 if stripped.startswith("-") else 1.0
        return sign * float.fromhex(stripped.lstrip("+-").rstrip("fFdD"))
    raise ValueError(f"For input string: {text!r}")


def parse_float(text: str) -> float:
    """``Float.parseFloat``, as the float32 it gives widened to a Python float."""
    return float32(parse_double(text))


def parse_decimal(text: str) -> decimal.Decimal:
    """``new BigDecimal(text)``: an optionally signed decimal with an optional exponent; else ValueError."""
    if not _BIG_DECIMAL.fullmatch(text):
        raise ValueError(f"Character array is not a valid decimal number: {text!r}")
    return decimal.Decimal(text)


def parse_boolean(text: str) -> bool:
    """``Boolean.parseBoolean``: true for ``true`` in any case, false for anything else."""
    return text.lower() == "true"


def wrap(value: int, bits: int) -> int:
    """An integer narrowed to ``bits`` as Java's casts narrow it: its low-order bits, two's complement."""
    half = 1 << (bits - 1)
    return (value + half) % (2 * half) - half


def truncate(value: float, bits: int) -> int:
    """A double cast to a Java integer type: NaN is 0, the rest rounds toward zero and saturates at the int (for
    8, 16 and 32 bits, which Java narrows further) or long range."""
    if math.isnan(value):
        return 0
    saturated_bits = 64 if bits == 64 else 32
    low, high = -(2 ** (saturated_bits - 1)), 2 ** (saturated_bits - 1) - 1
    whole = low if value <= low else high if value >= high else int(value)
    return wrap(whole, bits)


def decimal_to_long(value: decimal.Decimal) -> int:
    """``BigDecimal.longValue()``: its integer part's low-order 64 bits."""
    return wrap(int(value), 64)


def float32(value: float | int) -> float:
    """``value`` rounded to the nearest float32 (``floatValue()``), widened back; beyond float32's range it is an
    infinity, as in Java."""
    if isinstance(value, int) and abs(value) >= 2**53:
        # round the integer itself to 24 significant bits (half to even), not through a double
        shift = abs(value).bit_length() - 24
        kept, rest = divmod(abs(value), 2**shift)
        if rest > 2 ** (shift - 1) or (rest == 2 ** (shift - 1) and kept % 2):
            kept += 1
        value = math.copysign(float(kept * 2**shift), value)
    try:
        return float(struct.unpack("f", struct.pack("f", float(value)))[0])
    except OverflowError:
        return math.copysign(math.inf, value)


def java_double_string(value: float) -> str:
    """``Double.toString``: ``NaN``, ``Infinity``, plain digits with at least one decimal for magnitudes in
    [10^-3, 10^7), else ``d.dddE<exponent>``; the shortest digits that read back as the same double."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    digits, exponent = _shortest(abs(value), lambda text: float(text) == abs(value))
    return _java_notation("-" if value < 0 else "", abs(value), digits, exponent)


def _java_notation(sign: str, magnitude: float, digits: str, exponent: int) -> str:
    """Java's ``toString`` of a number with these significant digits: plain for magnitudes in [10^-3, 10^7)."""
    if 1e-3 <= magnitude < 1e7:
        point = exponent + 1
        if point <= 0:
            return f"{sign}0.{'0' * -point}{digits}"
        whole, fraction = digits[:point].ljust(point, "0"), digits[point:]
        return f"{sign}{whole}.{fraction or '0'}"
    return f"{sign}{digits[0]}.{digits[1:] or '0'}E{exponent}"


def _shortest(value: float, reads_back: Callable[[str], bool]) -> tuple[str, int]:
    """The shortest significant digits of a positive number that still read back as it, and the exponent of the
    first one."""
    mantissa, _, exponent = f"{value:.16e}".partition("e")
    for places in range(17):
        text = f"{value:.{places}e}"
        if reads_back(text):
            mantissa, _, exponent = text.partition("e")
            break
    return mantissa.replace(".", "").rstrip("0") or "0", int(exponent)


def java_float_string(value: float) -> str:
    """``Float.toString`` of a float32 (given widened to a Python float): as :func:`java_double_string`, with the
    shortest digits that read back as the same float32."""
    if math.isnan(value) or math.isinf(value) or value == 0:
        return java_double_string(value)
    digits, exponent = _shortest(abs(value), lambda text: float32(float(text)) == abs(value))
    return _java_notation("-" if value < 0 else "", abs(value), digits, exponent)
