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


def test_master_and_cluster_are_one_or_the_other(bench: ModuleType, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as raised:
        bench.main(["--master", "local[1]", "--cluster"])
    assert raised.value.code == 2 and "--cluster" in capsys.readouterr().err


def test_a_local_master_gets_only_the_master(bench: ModuleType) -> None:
    assert bench.application_conf("local[2]", 2, bench.EXECUTOR_MEMORY) == {"spark.master": "local[2]"}


def test_a_standalone_master_gets_cores_executor_memory_and_a_local_driver(bench: ModuleType) -> None:
    assert bench.application_conf("spark://127.0.0.1:7077", 3, bench.EXECUTOR_MEMORY) == {
        "spark.master": "spark://127.0.0.1:7077",
        "spark.cores.max": "3",
        "spark.executor.memory": "512m",
        "spark.driver.host": "127.0.0.1",
        "spark.driver.bindAddress": "127.0.0.1",
    }


@pytest.mark.slow(seconds=40)
@pytest.mark.kafka
@pytest.mark.spark
def test_a_small_run_writes_every_side_and_prints_the_ratios(
    bench: ModuleType, kafka_bootstrap: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    if shutil.which("java") is None:
        pytest.skip("the Spark sides need java")
    argv = ["--bootstrap-servers", kafka_bootstrap, "--records", "6000", "--flush-records", "2000"]
    assert bench.main([*argv, "--timeout", "300", "--keep", str(tmp_path)]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert "spark master: local[2]" in lines
    runs = [line.split() for line in lines if re.match(r"0\s+\S+\s+6000\s", line)]
    assert sorted(run[1] for run in runs) == ["headwater", "pyarrow", "structured-streaming"]
    assert all(float(run[4].replace(",", "")) > 0 for run in runs)
    assert re.fullmatch(r"vs_structured_streaming=\d+\.\d\d vs_pyarrow=\d+\.\d\d", lines[-1])
