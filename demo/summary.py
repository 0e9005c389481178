"""What the demo prints at the end, gathered from the REST API, the transport and the table read back."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow.dataset as ds

LABEL = 15
OPS = "rcud"
"""The change events' operations in the order the summary lists them: snapshot reads, creates, updates, deletes."""


def read_table(path: Path) -> list[dict[str, Any]]:
    """Every row of the Parquet table at ``path`` as pyarrow reads the directory (``_`` and ``.`` names, such as
    staged or half-written files, skipped); none while it does not exist."""
    if not path.exists() or not any(path.rglob("*.parquet")):
        return []
    rows: list[dict[str, Any]] = ds.dataset(str(path), format="parquet", partitioning="hive").to_table().to_pylist()
    return rows


@dataclass
class Summary:
    """What happened in one run of the demo."""

    transport: str
    sink: str
    rest_url: str
    records: dict[str, int]
    """Records in each topic the pipeline used."""
    source_offsets: list[dict[str, Any]]
    """The source connector's committed offsets, as ``GET /connectors/{c}/offsets`` lists them."""
    last_order_change: int
    """The audit table's id of the last change of ``orders``."""
    last_change: int
    """The audit table's last id (changes of ``customers`` came after, when it was no longer captured)."""
    sink_offsets: dict[str, int]
    """The sink connector's committed offsets, ``{"topic-partition": next offset}``."""
    heartbeats: int
    heartbeat_topic: str
    active_topics: dict[str, list[str]]
    table: Path
    rows: list[dict[str, Any]]
    expected_ops: dict[str, int]
    """The change events the shop's writes should give, by operation."""
    cleanup: str
    seconds: float = 0.0

    @property
    def changes(self) -> int:
        """Distinct change events in the table: distinct (topic, partition, offset)."""
        return len({(r["kafka_topic"], r["kafka_partition"], r["kafka_offset"]) for r in self.rows})

    @property
    def ops(self) -> dict[str, int]:
        found = Counter(str(r["op"]) for r in self.rows)
        return {op: found[op] for op in sorted(found, key=lambda op: (OPS.find(op) % 5, op))}

    @property
    def exactly_once(self) -> bool:
        """Whether the table holds every expected change event once: no more rows than distinct events, and the
        count of each operation the shop's writes give."""
        expected = {op: count for op, count in self.expected_ops.items() if count}
        return len(self.rows) == self.changes and self.ops == expected

    def committed_change(self) -> int | None:
        """The ``change_id`` of the source's committed offset."""
        for entry in self.source_offsets:
            found = entry.get("offset", {}).get("change_id")
            if isinstance(found, int):
                return found
        return None

    def lines(self) -> list[str]:
        def line(label: str, text: str) -> str:
            return f"  {label:<{LABEL}} {text}"

        offsets = "; ".join(f"{json.dumps(e['partition'])}: {json.dumps(e['offset'])}" for e in self.source_offsets)
        moved = self.committed_change() == self.last_change > self.last_order_change
        carried = (
            f"the last order change is {self.last_order_change}; a heartbeat carried it past the customers' changes"
            if moved
            else f"the last order change is {self.last_order_change}, the last change {self.last_change}"
        )
        ops = ", ".join(f"{op} {count}" for op, count in self.ops.items())
        verdict = (
            "each change exactly once" if self.exactly_once else f"NOT each change once (expected {self.expected_ops})"
        )
        topics = "; ".join(f"{c}: {', '.join(t) or '-'}" for c, t in self.active_topics.items())
        return [
            f"headwater demo: done in {self.seconds:.1f} s on {self.transport}, sink: {self.sink}",
            line("records moved", ", ".join(f"{topic} {count}" for topic, count in self.records.items())),
            line("source offset", f"{offsets or '-'} ({carried})"),
            line("sink offsets", ", ".join(f"{tp}: {offset}" for tp, offset in self.sink_offsets.items()) or "-"),
            line(
                "heartbeats", f"{self.heartbeats} record{'s' if self.heartbeats != 1 else ''} in {self.heartbeat_topic}"
            ),
            line("active topics", topics),
            line("REST API", self.rest_url),
            line("table", f"{self.table} (Parquet): {len(self.rows)} rows read back with pyarrow, {verdict} ({ops})"),
            line("cleanup", self.cleanup),
        ]
