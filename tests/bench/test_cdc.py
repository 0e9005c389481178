"""The CDC benchmark: one small run of its three sides on the session's PostgreSQL server and broker, and its
argument checks."""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest


@pytest.fixture(scope="module")
def bench(load_bench: Callable[[str], ModuleType]) -> ModuleType:
    return load_bench("cdc")


@pytest.mark.parametrize("sides", ["raw,debezium", "headwater,maxwell", ""])
def test_sides_must_include_headwater_and_be_known(
    bench: ModuleType, sides: str, assert_rejects_sides: Callable[[ModuleType, str], None]
) -> None:
    assert_rejects_sides(bench, sides)


def test_the_debezium_side_says_what_to_install_without_java_and_maven(
    bench: ModuleType, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(SystemExit, match=r"java and mvn not found.*apt-get install .*--sides headwater,raw"):
        bench.main(["--sides", "headwater,debezium"])


@pytest.mark.kafka
@pytest.mark.postgres
def test_a_small_run_counts_every_row_on_every_side_and_prints_the_ratios(
    bench: ModuleType, kafka_bootstrap: str, postgres_server: str, capsys: pytest.CaptureFixture[str]
) -> None:
    if shutil.which("java") is None or shutil.which("mvn") is None:
        pytest.skip("the Debezium side needs java and mvn")
    argv = ["--kafka-bootstrap", kafka_bootstrap, "--postgres-url", postgres_server]
    assert bench.main([*argv, "--rows", "20000", "--steady-rate", "1000", "--steady-s", "1"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert any(re.fullmatch(r"raw: 20000 rows in [\d.]+ s = \d+ rows/s", line) for line in lines)
    for side in ("headwater", f"debezium {bench.DEBEZIUM_VERSION}"):
        assert any(re.fullmatch(rf"{side}: 20000 rows at [1-9]\d* rows/s.*", line) for line in lines), side
    latencies = [line for line in lines if re.match(r"(headwater|debezium) latency over [1-9]\d* events", line)]
    assert len(latencies) == 2
    assert re.fullmatch(r"events_per_s=[1-9]\d* p99_ms=\d+ vs_raw=\d+\.\d\d vs_debezium=\d+\.\d\d", lines[-1])
