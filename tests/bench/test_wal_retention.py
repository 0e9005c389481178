"""The WAL retention benchmark: a small run on the session's PostgreSQL server, whose figures must show what the
heartbeats are for."""

from __future__ import annotations

import re
from collections.abc import Callable
from types import ModuleType

import pytest


@pytest.mark.slow(seconds=55)
@pytest.mark.postgres
def test_heartbeats_release_an_idle_slots_wal_and_without_them_the_slot_keeps_it(
    load_bench: Callable[[str], ModuleType], postgres_server: str, capsys: pytest.CaptureFixture[str]
) -> None:
    bench = load_bench("wal_retention")
    argv = ["--postgres-url", postgres_server, "--wal-mb", "8", "--chunks", "2", "--settle-s", "30"]
    assert bench.main(argv) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    chunk = re.compile(r"(heartbeat|off): ([\d.]+) MB of WAL written, retained [\d.]+ MB, unconfirmed [\d.]+ MB")
    written = {m.group(1): float(m.group(2)) for m in map(chunk.fullmatch, lines) if m}
    assert set(written) == {"heartbeat", "off"} and min(written.values()) >= 7.5, lines
    last = re.fullmatch(r"retained_mb_heartbeat=([\d.]+) retained_mb_off=([\d.]+)", lines[-1])
    assert last is not None, lines
    heartbeat, off = float(last.group(1)), float(last.group(2))
    assert heartbeat < 1, f"with heartbeats the idle slot still keeps {heartbeat} MB: {lines}"
    assert off >= written["off"] - 0.5, f"without heartbeats the slot kept {off} of {written['off']} MB: {lines}"
