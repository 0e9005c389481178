"""The values of the change events' columns in their Kafka Connect schemas (``record.schemas=connect``): what turns
each image value (the text or JSON the triggers, the snapshot and ``pgoutput`` give) into the value its column's
schema holds, as Debezium's value converters do (``JdbcValueConverters``, ``PostgresValueConverter``). A value that
does not fit raises :class:`UnfitValue`: nothing is rounded or replaced.
"""

from __future__ import annotations

import datetime
import decimal
import re
from collections.abc import Callable
from typing import Any

from headwater.reference_connectors.jdbc_cdc.json_rows import to_json

Convert = Callable[[Any], Any]
"""An image value to its column's schema value."""

POSITIVE_INFINITY = 9223372036825200000
NEGATIVE_INFINITY = -9223372036832400000
"""PostgreSQL's ``infinity`` and ``-infinity`` timestamps, as Debezium's ``PostgresValueConverter`` writes them
(pgjdbc's ``PGStatement.DATE_POSITIVE_INFINITY``/``DATE_NEGATIVE_INFINITY``)."""

_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)
_EPOCH_DAY = datetime.date(1970, 1, 1).toordinal()
_MICRO = datetime.timedelta(microseconds=1)
_DAY_US = 86_400_000_000
_TIME = re.compile(r"^(-)?(\d+):(\d{2}):(\d{2})(?:\.(\d{1,6}))?$")
_TIMETZ = re.compile(r"^(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,6}))?([+-])(\d{2})(?::?(\d{2}))?(?::?(\d{2}))?$")
_DIGITS = re.compile(r"^-?[0-9]+$")
INTEGER_RANGES = {"int8": 1 << 7, "int16": 1 << 15, "int32": 1 << 31, "int64": 1 << 63}


class UnfitValue(ValueError):
    """A value that does not fit its column's schema (the message says why)."""


def _refuse(value: Any, why: str) -> UnfitValue:
    shown = repr(value)
    return UnfitValue(f"{shown[:60]}{'...' if len(shown) > 60 else ''} {why}")


# ---- value conversions, from the images' JSON-shaped values -----------------------------------------------------


def integer(kind: str) -> Convert:
    bound = INTEGER_RANGES[kind]

    def convert(value: Any) -> int:
        if isinstance(value, str) and _DIGITS.match(value):  # an oid: to_jsonb writes its digits as a string
            value = int(value)
        if isinstance(value, int) and not isinstance(value, bool) and -bound <= value < bound:
            return value
        raise _refuse(value, f"is not an {kind} integer")

    return convert


def unsigned(value: Any) -> decimal.Decimal:
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 1 << 64:
        return decimal.Decimal(value)
    raise _refuse(value, "is not an unsigned 64-bit integer")


def floating(value: Any) -> float:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, str) and value.lower().lstrip("+-") in ("nan", "infinity", "inf"):
        return float(value)
    raise _refuse(value, "is not a floating-point number")


def boolean(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if value in (0, 1) and isinstance(value, int):
        return bool(value)
    raise _refuse(value, "is not a boolean (true, false, 1 or 0)")


def text(value: Any) -> str:
    """A string, or the JSON text of anything else (a MariaDB JSON column's document, a PostgreSQL array)."""
    return value if isinstance(value, str) else to_json(value).decode()


def json_text(value: Any) -> str:
    return to_json(value).decode()


def decimal_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)  # a column added after the triggers were made: its JSON number
    raise _refuse(value, "is not a decimal")


def precise(scale: int, precision: int | None) -> Convert:
    exponent = decimal.Decimal(1).scaleb(-scale)

    def convert(value: Any) -> decimal.Decimal:
        if isinstance(value, (float, bool)):
            raise _refuse(
                value,
                "arrived as a JSON number, which may have lost digits (a column added since the connector "
                "started: restart the connector so its triggers write the column's text)",
            )
        try:
            exact = decimal.Decimal(value if isinstance(value, (str, int)) else str(value))
        except decimal.InvalidOperation:
            raise _refuse(value, "is not a decimal") from None
        if not exact.is_finite():
            raise _refuse(value, "is not a finite decimal: a Kafka Connect Decimal has no NaN or infinity")
        context = decimal.Context(prec=max(precision or 0, len(exact.as_tuple().digits)) + scale + 2)
        made = exact.quantize(exponent, context=context)
        if made != exact:
            raise _refuse(value, f"has more than {scale} digits after the point (never rounded)")
        if precision is not None and len(made.as_tuple().digits) > precision and made != 0:
            raise _refuse(value, f"has more than {precision} digits")
        return made

    return convert


def binary(value: Any) -> bytes:
    if isinstance(value, str) and value.startswith("\\x"):
        try:
            return bytes.fromhex(value[2:])
        except ValueError:
            pass
    elif isinstance(value, (bytes, bytearray)):
        return bytes(value)
    raise _refuse(value, "is not binary (\\x and hex digits)")


def _wall(value: Any) -> datetime.datetime:
    """A timestamp's text as an aware datetime; a wall time without a zone is taken as UTC."""
    if not isinstance(value, str):
        raise _refuse(value, "is not a timestamp")
    try:
        found = datetime.datetime.fromisoformat(value)
    except ValueError:
        raise _refuse(value, "is not a timestamp between years 1 and 9999") from None
    return found.replace(tzinfo=datetime.UTC) if found.tzinfo is None else found


def _epoch_us(value: Any) -> int:
    return (_wall(value) - _EPOCH) // _MICRO


def _infinite(value: Any) -> int | None:
    if value == "infinity":
        return POSITIVE_INFINITY
    if value == "-infinity":
        return NEGATIVE_INFINITY
    return None


def micro_timestamp(value: Any) -> int:
    infinite = _infinite(value)
    return infinite if infinite is not None else _epoch_us(value)


def milli_timestamp(value: Any) -> int:
    infinite = _infinite(value)
    if infinite is not None:
        return infinite
    micros = _epoch_us(value)
    if micros % 1000:
        raise _refuse(value, "has digits below the millisecond in a column of at most 3 fractional digits")
    return micros // 1000


def connect_timestamp(value: Any) -> datetime.datetime:
    found = _wall(value).astimezone(datetime.UTC)
    return found.replace(microsecond=found.microsecond - found.microsecond % 1000)


def zoned_timestamp(value: Any) -> str:
    if value in ("infinity", "-infinity"):
        return str(value)
    found = _wall(value).astimezone(datetime.UTC)
    text = found.replace(tzinfo=None).isoformat()
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return text + "Z"


def calendar_date(value: Any) -> datetime.date:
    if isinstance(value, str) and len(value) == 10:
        try:
            return datetime.date.fromisoformat(value[:10])
        except ValueError:
            pass
    raise _refuse(value, "is not a date between years 1 and 9999")


def days(value: Any) -> int:
    return calendar_date(value).toordinal() - _EPOCH_DAY


def time_us(value: Any) -> int:
    found = _TIME.match(value) if isinstance(value, str) else None
    if found is None:
        raise _refuse(value, "is not a time of day")
    sign, hours, minutes, seconds, fraction = found.groups()
    micros = ((int(hours) * 60 + int(minutes)) * 60 + int(seconds)) * 1_000_000 + int((fraction or "").ljust(6, "0"))
    return -micros if sign else micros


def milli_time(value: Any) -> int:
    micros = time_us(value)
    if micros % 1000:
        raise _refuse(value, "has digits below the millisecond in a column of at most 3 fractional digits")
    return micros // 1000


def connect_time(value: Any) -> datetime.time:
    micros = time_us(value)
    if not 0 <= micros < _DAY_US:
        raise _refuse(value, "is outside a day, which Kafka Connect's Time cannot hold")
    millis = micros // 1000
    return datetime.time(millis // 3_600_000, millis // 60_000 % 60, millis // 1000 % 60, millis % 1000 * 1000)


def zoned_time(value: Any) -> str:
    found = _TIMETZ.match(value) if isinstance(value, str) else None
    if found is None:
        raise _refuse(value, "is not a time of day with a UTC offset")
    hours, minutes, seconds, fraction, sign, off_h, off_m, off_s = found.groups()
    offset = int(off_h) * 3600 + int(off_m or 0) * 60 + int(off_s or 0)
    utc = (int(hours) * 3600 + int(minutes) * 60 + int(seconds) - (offset if sign == "+" else -offset)) % 86_400
    fraction = (fraction or "").rstrip("0")
    return f"{utc // 3600:02d}:{utc // 60 % 60:02d}:{utc % 60:02d}{'.' + fraction if fraction else ''}Z"


def uuid(value: Any) -> str:
    if isinstance(value, str):
        return value
    raise _refuse(value, "is not a UUID's text")


def year(value: Any) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    raise _refuse(value, "is not a year")
