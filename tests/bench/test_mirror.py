"""The mirror benchmark: one small run of its three sides between the two test brokers, and its argument checks."""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable
from types import ModuleType

import pytest


@pytest.fixture(scope="module")
def bench(load_bench: Callable[[str], ModuleType]) -> ModuleType:
    return load_bench("mirror")


@pytest.mark.parametrize("sides", ["raw,headwater", "headwater,mm2,kafka", ""])
def test_sides_must_start_with_headwater_and_be_known(
    bench: ModuleType, sides: str, assert_rejects_sides: Callable[[ModuleType, str], None]
) -> None:
    assert_rejects_sides(bench, sides)


@pytest.mark.kafka
def test_a_small_run_mirrors_every_side_and_prints_the_ratios(
    bench: ModuleType, kafka_bootstrap: str, second_kafka_bootstrap: str, capsys: pytest.CaptureFixture[str]
) -> None:
    if shutil.which("java") is None or shutil.which("mvn") is None:
        pytest.skip("the MirrorMaker 2 side needs java and mvn")
    argv = ["--source-bootstrap", second_kafka_bootstrap, "--destination-bootstrap", kafka_bootstrap]
    assert bench.main([*argv, "--records", "20000", "--timeout", "120"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    runs = [line.split() for line in lines if re.match(r"0\s+mirror\s", line)]
    assert sorted(run[2] for run in runs) == ["headwater", "mm2", "raw"]
    assert all(run[3] == "20000" and float(run[5].replace(",", "")) > 0 for run in runs)
    assert re.fullmatch(r"vs_raw=\d+\.\d\d vs_mm2=\d+\.\d\d", lines[-1])
