"""Kafka Connect's logical types in their numeric forms, the one home of each conversion the converters share: a
Decimal's unscaled bytes, a Date's days since the epoch, a Time's milliseconds since midnight, a Timestamp's
milliseconds since the epoch."""

from __future__ import annotations

import datetime
import decimal

EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)
EPOCH_DAY = datetime.date(1970, 1, 1)


def decimal_bytes(value: decimal.Decimal, scale: int) -> bytes:
    """The unscaled value of ``value`` at ``scale`` as Java's ``BigInteger.toByteArray()``: big-endian two's
    complement of minimal length."""
    unscaled = int(value.scaleb(scale).to_integral_value())
    bits = unscaled.bit_length() if unscaled >= 0 else (~unscaled).bit_length()
    return unscaled.to_bytes(bits // 8 + 1, "big", signed=True)


def epoch_days(value: datetime.date) -> int:
    """A Date's days since 1970-01-01."""
    return (value - EPOCH_DAY).days


def day_millis(value: datetime.time) -> int:
    """A Time's milliseconds since midnight."""
    return ((value.hour * 60 + value.minute) * 60 + value.second) * 1000 + value.microsecond // 1000


def epoch_millis(value: datetime.datetime) -> int:
    """A Timestamp's milliseconds since the epoch; a naive datetime is taken as UTC."""
    delta = (value if value.tzinfo else value.replace(tzinfo=datetime.UTC)) - EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1000 + delta.microseconds // 1000
