"""The distributed-mode benchmark: a short run end to end prints a line per worker count and the rates."""

from __future__ import annotations

import re
import runpy
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench" / "distributed.py"
main = runpy.run_path(str(BENCH))["main"]


def test_worker_counts_must_divide_the_tasks(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["--workers", "1,4"])
    assert "divide the 6 tasks" in capsys.readouterr().err


@pytest.mark.kafka
def test_a_short_run_prints_a_rate_per_worker_count(kafka_bootstrap: str, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["--bootstrap-servers", kafka_bootstrap, "--workers", "1,2", "--seconds", "1", "--warm-up", "0"]
    assert main(argv) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    runs = [line.split() for line in lines if re.match(r"\s+[12]\s+\d", line)]
    assert [(run[0], run[1]) for run in runs] == [("1", "6"), ("2", "3+3")]
    assert all(int(run[2]) > 0 for run in runs), "records were written in each window"
    assert re.fullmatch(r"workers1=\d+ workers2=\d+", lines[-1])
