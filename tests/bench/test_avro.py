"""The Avro benchmark: one small run on the session's Schema Registry (both sides writing the same bytes and reading
back every record) prints its ratios, and a run whose reader loses a record is refused."""

from __future__ import annotations

import re
from collections.abc import Callable
from types import ModuleType
from typing import Any

import pytest


@pytest.fixture(scope="module")
def bench(load_bench: Callable[[str], ModuleType]) -> ModuleType:
    return load_bench("avro")


def test_a_small_run_prints_both_ratios_for_records_read_back(
    bench: ModuleType, schema_registry_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    bench.main(["--records", "200", "--repeat", "1", "--registry-url", schema_registry_url])
    lines = capsys.readouterr().out.strip().splitlines()
    assert "verified=200" in lines, lines
    ratios = re.fullmatch(r"serialize_ratio=(\d+\.\d{3}) deserialize_ratio=(\d+\.\d{3})", lines[-1])
    assert ratios is not None, lines[-1]
    assert all(float(ratio) > 0 for ratio in ratios.groups()), lines[-1]


def test_a_run_whose_reader_loses_records_is_refused(bench: ModuleType, schema_registry_url: str) -> None:
    sides = bench.Sides(schema_registry_url, "bench-avro-refused")
    try:
        read = sides.read

        def dropping(headwater: bool, data: Any) -> tuple[float, list[Any]]:
            seconds, values = read(headwater, data)
            return seconds, values[:-1] if headwater else values

        sides.read = dropping
        with pytest.raises(RuntimeError, match=r"headwater reading confluent's bytes: 9 of 10 records"):
            bench.measure(sides, [bench.order(i) for i in range(10)], 1)
    finally:
        sides.close()
