"""Kafka's default partitioner for keyed records, as the in-memory broker computes it."""

from __future__ import annotations

import pytest

from headwater.runtime.transport.memory import murmur2


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b"21", -973932308),
        (b"foobar", -790332482),
        (b"a-little-bit-long-string", -985981536),
        (b"a-little-bit-longer-string", -1486304829),
        (b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971),
        (b"abc", 479470107),
        (b"", 275646681),
    ],
)
def test_murmur2_matches_kafka_utils(data: bytes, expected: int) -> None:
    assert murmur2(data) == expected
