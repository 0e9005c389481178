"""docs/distributed.md names every key a distributed worker reads on top of the standalone worker's."""

from __future__ import annotations

from pathlib import Path

from headwater.runtime.config.worker import STANDALONE_CONFIG
from headwater.runtime.distributed import DISTRIBUTED_CONFIG

DOC = Path(__file__).resolve().parents[2] / "docs" / "distributed.md"


def test_every_distributed_key_is_in_the_key_table() -> None:
    text = DOC.read_text()
    table = text[text.index("## Keys") : text.index("## How work is shared")]
    keys = sorted(set(DISTRIBUTED_CONFIG.keys) - set(STANDALONE_CONFIG.keys))
    missing = [key for key in keys if f"`{key}`" not in table]
    assert missing == []


def test_documented_defaults_are_the_config_defaults() -> None:
    text = DOC.read_text()
    for key, shown in [
        ("session.timeout.ms", "10000"),
        ("group.heartbeat.interval.ms", "1000"),
        ("rebalance.timeout.ms", "60000"),
        ("config.storage.replication.factor", "3"),
    ]:
        assert DISTRIBUTED_CONFIG.keys[key].default == int(shown)
        assert f"`{key}`" in text and f"| {shown} |" in text
