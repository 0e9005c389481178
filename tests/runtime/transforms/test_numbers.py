"""Java's number rules as the built-in transformations use them (:mod:`headwater.runtime.transforms.builtins.numbers`),
without a JVM: the expected values are what Java 17 gives (the parity tests check the same against Kafka)."""

from __future__ import annotations

import decimal
import math

import pytest

from headwater.runtime.transforms.builtins.numbers import (
    decimal_to_long,
    float32,
    java_double_string,
    java_float_string,
    parse_boolean,
    parse_decimal,
    parse_double,
    parse_integer,
    truncate,
    wrap,
)


@pytest.mark.parametrize(
    ("value", "text"),
    [(1.0, "1.0"), (-0.0, "-0.0"), (1e7, "1.0E7"), (9999999.0, "9999999.0"), (0.001, "0.001"), (1e-4, "1.0E-4"),
     (123.456, "123.456"), (-2.5e-10, "-2.5E-10"), (1e300, "1.0E300"), (math.nan, "NaN"), (-math.inf, "-Infinity")],
)  # fmt: skip
def test_doubles_print_as_java_prints_them(value: float, text: str) -> None:
    assert java_double_string(value) == text


@pytest.mark.parametrize(
    ("value", "text"),
    [(0.1, "0.1"), (1.0, "1.0"), (-2.5, "-2.5"), (16777217.0, "1.6777216E7"), (1e-5, "1.0E-5"), (3.4e38, "3.4E38"),
     (123456.7, "123456.7"), (-0.0, "-0.0"), (math.inf, "Infinity")],
)  # fmt: skip
def test_floats_print_as_java_prints_them(value: float, text: str) -> None:
    """``Float.toString`` of the float32 nearest ``value``: its own shortest digits, not the double's."""
    assert java_float_string(float32(value)) == text


@pytest.mark.parametrize(
    ("text", "value"),
    [("+5", 5.0), (" 2.5 ", 2.5), ("1.5f", 1.5), ("2d", 2.0), ("0x1p3", 8.0), ("-0x.8p1", -1.0), ("1e400", math.inf),
     ("Infinity", math.inf)],
)  # fmt: skip
def test_double_text_parses_as_java_parses_it(text: str, value: float) -> None:
    assert parse_double(text) == value


@pytest.mark.parametrize("text", ["inf", "nan", "1_0", "0x10", "", "abc", "1e", "."])
def test_text_java_refuses_as_a_double_is_refused(text: str) -> None:
    with pytest.raises(ValueError):
        parse_double(text)


def test_integers_parse_in_range_only_and_without_python_extras() -> None:
    assert parse_integer("+127", 8) == 127 and parse_integer("-128", 8) == -128
    for text, bits in [("128", 8), (" 5", 64), ("1_0", 64), ("1.0", 32), ("9223372036854775808", 64)]:
        with pytest.raises(ValueError):
            parse_integer(text, bits)


def test_narrowing_keeps_low_bits_and_doubles_truncate_then_saturate() -> None:
    assert [wrap(300, 8), wrap(2**15, 16), wrap(2**63, 64)] == [44, -(2**15), -(2**63)]
    assert [truncate(-1.9, 32), truncate(1e20, 32), truncate(1e20, 8), truncate(math.nan, 64)] == [-1, 2**31 - 1, -1, 0]
    assert truncate(1e20, 64) == 2**63 - 1


def test_float32_rounds_once_and_overflows_to_infinity() -> None:
    assert float32(0.1) == 0.10000000149011612
    assert float32(2**53 + 1) == float(2**53) and float32(2**63 - 1) == 2.0**63
    assert float32(2**24 + 3) == 2**24 + 4  # half-way, to even
    assert float32(1e300) == math.inf and float32(-1e300) == -math.inf


def test_decimals_booleans_and_long_values() -> None:
    assert parse_decimal("-1e3") == decimal.Decimal(-1000)
    with pytest.raises(ValueError):
        parse_decimal("1_0")
    assert decimal_to_long(decimal.Decimal("-7.9")) == -7 and decimal_to_long(decimal.Decimal("1e20")) == wrap(
        10**20, 64
    )
    assert parse_boolean("TRUE") and not parse_boolean("yes")
