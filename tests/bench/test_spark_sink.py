"""The Spark sink benchmark: one small run of its three sides on the test broker, and its argument checks."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest

pytest.importorskip("pyspark", reason="the Spark sink needs the spark-sink extra")


@pytest.fixture(scope="module")
def bench(load_bench: Callable[[str], ModuleType]) -> ModuleType:
    return load_bench("spark_sink")


@pytest.mark.parametrize("sides", ["pyarrow,headwater", "headwater,flink", ""])
def test_sides_must_start_with_headwater_and_be_known(
    bench: ModuleType, sides: str, assert_rejects_sides: Callable[[ModuleType, str], None]
) -> None:
    assert_rejects_sides(bench, sides)


@pytest.mark.parametrize("size", [100, 180])
def test_values_are_json_objects_of_the_asked_size(bench: ModuleType, size: int) -> None:
    for n in (0, 7, 999_999):
        value = bench.json_value(n, size)
        assert len(value) == size and json.loads(value)["id"] == n


@pytest.mark.kafka
@pytest.mark.spark
def test_a_small_run_writes_every_side_and_prints_the_ratios(
    bench: ModuleType, kafka_bootstrap: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    if shutil.which("java") is None or shutil.which("mvn") is None:
        pytest.skip("the Spark sides need java, and mvn for the spark-sql-kafka jars")
    argv = ["--bootstrap-servers", kafka_bootstrap, "--records", "6000", "--flush-records", "2000"]
    assert bench.main([*argv, "--timeout", "300", "--keep", str(tmp_path)]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    runs = [line.split() for line in lines if re.match(r"0\s+\S+\s+6000\s", line)]
    assert sorted(run[1] for run in runs) == ["headwater", "pyarrow", "structured-streaming"]
    assert all(float(run[4].replace(",", "")) > 0 for run in runs)
    assert re.fullmatch(r"vs_structured_streaming=\d+\.\d\d vs_pyarrow=\d+\.\d\d", lines[-1])
