"""The exactly-once throughput benchmark: its check of what a run wrote, one exactly-once run read back
``read_committed``, and a small run end to end printing each pair and the ratio per batch size."""

from __future__ import annotations

import argparse
import re
from collections import Counter
from collections.abc import Callable
from types import ModuleType

import pytest


@pytest.fixture
def bench(load_bench: Callable[[str], ModuleType]) -> ModuleType:
    return load_bench("exactly_once")


def test_the_check_refuses_a_missing_a_doubled_or_a_stray_record(bench: ModuleType) -> None:
    bench.check(Counter(range(5)), 5, "exactly-once")
    bench.check(Counter([0, 1, 1, 2]), 3, "at-least-once")  # at least once: a duplicate is allowed
    with pytest.raises(bench.BenchError, match="1 written twice"):
        bench.check(Counter([0, 1, 1, 2]), 3, "exactly-once")
    with pytest.raises(bench.BenchError, match="1 sequence numbers missing"):
        bench.check(Counter([0, 2]), 3, "at-least-once")
    with pytest.raises(bench.BenchError, match=r"unexpected: \[7\]"):
        bench.check(Counter([0, 1, 2, 7]), 3, "at-least-once")


def test_batch_sizes_must_be_numbers(bench: ModuleType, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as raised:
        bench.main(["--batch-sizes", "1000,many"])
    assert raised.value.code == 2 and "--batch-sizes" in capsys.readouterr().err


@pytest.mark.kafka
def test_an_exactly_once_run_leaves_every_record_once_for_read_committed_readers(
    bench: ModuleType, kafka_bootstrap: str
) -> None:
    args = argparse.Namespace(
        partitions=3, record_bytes=20, flush_interval_ms=60_000, keep_topics=False, boundary="poll", interval_ms=100
    )
    runner = bench.Bench(args, kafka_bootstrap)
    try:
        run = runner.run("exactly-once", 300, 1000, "smoke")
        found = bench.read_committed(runner.transport, runner.admin, runner.topics[-1], 3)
    finally:
        runner.close()
    assert found == Counter(range(1000))
    assert run.commits == 4, "transaction.boundary=poll: one transaction per poll (300, 300, 300, 100 records)"
    assert run.records == 1000 and run.seconds > 0


@pytest.mark.kafka
def test_a_small_run_prints_each_pair_and_the_ratio_per_batch_size(
    bench: ModuleType, kafka_bootstrap: str, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["--bootstrap-servers", kafka_bootstrap, "--records", "2000", "--batch-sizes", "500,1000", "--repeat", "2"]
    assert bench.main(argv) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    runs = [line.split() for line in lines if re.match(r"[01]\s+\d+\s+(at-least-once|exactly-once)\s", line)]
    assert sorted((run[0], run[1], run[2]) for run in runs) == sorted(
        (repeat, batch, mode)
        for repeat in ("0", "1")
        for batch in ("500", "1000")
        for mode in ("at-least-once", "exactly-once")
    )
    assert all(run[3] == "2000" for run in runs)
    transactions = {run[1]: run[6] for run in runs if run[2] == "exactly-once"}
    assert transactions == {"500": "4", "1000": "2"}, "one transaction per poll"
    assert all(run[6] == "0" for run in runs if run[2] == "at-least-once"), "no offset commit within 60 s"
    assert re.fullmatch(r"ratio_batch500=\d+\.\d{3} ratio_batch1000=\d+\.\d{3}", lines[-1]), lines[-1]
