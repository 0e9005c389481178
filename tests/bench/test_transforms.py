"""The transforms benchmark: one small run end to end (both loops, with and without the chain, checked to have
moved every record and, with the chain, to have transformed them) prints its ratios."""

from __future__ import annotations

import re
from collections.abc import Callable
from types import ModuleType

import pytest


def test_a_small_run_prints_both_ratios(
    load_bench: Callable[[str], ModuleType], capsys: pytest.CaptureFixture[str]
) -> None:
    bench = load_bench("transforms")
    bench.main(["--records", "1000", "--repeat", "1"])
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert re.fullmatch(r"source_ratio=\d+\.\d{3} sink_ratio=\d+\.\d{3}", last), last


def test_a_run_whose_chain_did_not_transform_is_refused(load_bench: Callable[[str], ModuleType]) -> None:
    bench = load_bench("transforms")
    bench.CHAIN = {**bench.CHAIN, "transforms": "stamp"}  # no routing: the check must notice
    with pytest.raises(RuntimeError, match="untransformed"):
        bench.source_run(500, chained=True)
