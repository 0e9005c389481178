"""The real-broker pipeline benchmark: how it reads offset commits and times them, and one small run end to end."""

from __future__ import annotations

import importlib.util
import re
import struct
import sys
from pathlib import Path
from types import ModuleType

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench" / "kafka_pipeline.py"


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("kafka_pipeline", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is made
    spec.loader.exec_module(module)
    return module


bench = _load()


def _string(text: str) -> bytes:
    data = text.encode()
    return struct.pack(">h", len(data)) + data


def test_java_string_hash_matches_java() -> None:
    assert bench.java_string_hash("") == 0
    assert bench.java_string_hash("hello") == 99162322
    assert bench.java_string_hash("polygenelubricants") == 0x80000000  # Integer.MIN_VALUE


def test_offset_commits_of_other_groups_topics_and_record_kinds_are_skipped() -> None:
    key = struct.pack(">h", 1) + _string("g") + _string("t") + struct.pack(">i", 2)
    value = struct.pack(">hqi", 3, 1234, -1) + _string("") + struct.pack(">q", 0)
    assert bench.parse_offset_commit(key, value, "g", "t") == (2, 1234)
    assert bench.parse_offset_commit(key, value, "other", "t") is None
    assert bench.parse_offset_commit(key, value, "g", "other") is None
    assert bench.parse_offset_commit(key, None, "g", "t") is None  # a tombstone
    group_metadata = struct.pack(">h", 2) + _string("g")
    assert bench.parse_offset_commit(group_metadata, value, "g", "t") is None


def test_the_steady_span_ends_at_the_last_commit_short_of_the_end() -> None:
    samples = [(1000, 100), (1100, 300), (1200, 500), (1350, 1000)]
    assert bench.steady_span(samples, 1000) == (400, 0.2)
    assert bench.steady_span([(1000, 100), (1250, 1000)], 1000) == (900, 0.25)
    with pytest.raises(bench.BenchError):
        bench.steady_span([(1000, 1000)], 1000)


@pytest.mark.kafka
def test_a_small_run_prints_four_runs_and_the_ratios(kafka_bootstrap: str, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["--bootstrap-servers", kafka_bootstrap, "--records", "200000", "--flush-interval-ms", "20"]
    assert bench.main([*argv, "--timeout", "120"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    runs = [line.split() for line in lines if re.match(r"0\s+(source|sink)\s", line)]
    assert sorted((run[1], run[2]) for run in runs) == [
        ("sink", "framework"),
        ("sink", "raw"),
        ("source", "framework"),
        ("source", "raw"),
    ]
    assert all(run[3] == "200000" for run in runs if run[1] == "source")
    assert re.fullmatch(r"source_ratio=\d+\.\d\d sink_ratio=\d+\.\d\d", lines[-1])
