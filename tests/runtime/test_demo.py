"""The README's main job: an end-to-end smoke of the threaded worker on the real clock, and its command line.

These runs use real threads and sleep inside the demo itself; they check what the pipeline did, never how fast.
"""

from __future__ import annotations

import re
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest

from headwater.harness import SimulatedWorker
from headwater.runtime import cli, demo
from headwater.sdk import TopicPartition


def test_demo_moves_every_row_and_heartbeats_move_the_source_offset(tmp_path: Path) -> None:
    summary = demo.run(seconds=2.5, rows=120, directory=str(tmp_path))
    assert summary["records_produced"] == 120
    assert summary["sink_rows_written"] == 120
    assert len((tmp_path / "orders.jsonl").read_text().splitlines()) == 120
    assert summary["sink_committed_offsets"] == {"orders-0": 120}
    assert summary["heartbeat_records"] >= 1
    assert summary["committed_source_offset"]["position"] >= 120
    assert {"orders", "connect-heartbeats"} <= set(summary["active_topics"]["orders-source"])
    assert "orders" in summary["active_topics"]["orders-sink"]
    assert summary["output"] == str(tmp_path)


def test_cli_demo_prints_the_summary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(tempfile, "mkdtemp", lambda prefix: str(tmp_path))  # the CLI has no --directory
    assert cli.main(["demo", "--seconds", "1"]) == 0
    out = capsys.readouterr().out
    assert "headwater demo: order log -> topic 'orders' -> JSON lines, for 1 s ..." in out
    assert re.search(r"^records produced to 'orders' +250$", out, re.MULTILINE)
    assert re.search(r"^rows written by the sink +250$", out, re.MULTILINE)
    heartbeats = re.search(r"^heartbeat records +(\d+)$", out, re.MULTILINE)
    assert heartbeats is not None
    assert int(heartbeats.group(1)) >= 1
    assert re.search(r"^committed source offset +\{'position': \d+\}$", out, re.MULTILINE)
    assert re.search(r"^sink committed offsets +\{'orders-0': \d+\}$", out, re.MULTILINE)
    assert re.search(r"^active topics +\{'orders-source': \[.*'orders'.*\], 'orders-sink': \['orders'\]\}$", out, re.M)
    assert re.search(rf"^output +{re.escape(str(tmp_path))}$", out, re.MULTILINE)


def test_demo_shorter_than_the_heartbeat_interval_reports_no_heartbeats(tmp_path: Path) -> None:
    summary = demo.run(seconds=0, rows=10, directory=str(tmp_path))
    assert summary["heartbeat_records"] == 0


def test_demo_sink_commits_the_rows_it_writes_at_shutdown(
    make_simulated_worker: Callable[..., SimulatedWorker], tmp_path: Path
) -> None:
    worker = make_simulated_worker()
    config = {"topics": "orders", "directory": str(tmp_path), "batch.size": 100}
    worker.add_connector("sink", demo.JsonLinesSink, config)
    for n in range(100):
        worker.produce("orders", {"order_id": n})
    worker.run_until(lambda: worker.group_offsets("sink") != {}, what="the first batch's commit")
    for n in range(100, 120):
        worker.produce("orders", {"order_id": n})
    task = worker.sink_task("sink")
    worker.run_until(lambda: task.records_put == 120, what="the last 20 rows reaching put")
    worker.close()
    assert len((tmp_path / "orders.jsonl").read_text().splitlines()) == 120
    assert worker.group_offsets("sink") == {TopicPartition("orders", 0): 120}
