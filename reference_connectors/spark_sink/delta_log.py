"""Reads a Delta table's transaction log for its ``txn`` actions (the last ``version`` of each application id), the
way a Delta reader reconstructs them: the newest complete checkpoint, then every commit after it.

Checkpoints may be classic (``<v>.checkpoint.parquet``), multi-part (``<v>.checkpoint.<i>.<n>.parquet``) or V2
(``<v>.checkpoint.<uuid>.parquet|json``; its ``txn`` actions are in that top-level file, never in sidecars).
Reading the log directly needs no SparkSession, so a task can rewind its partitions as soon as they are assigned.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pyarrow.parquet as pq

LOG_DIR = "_delta_log"
_COMMIT = re.compile(r"(\d{20})\.json")
_CLASSIC = re.compile(r"(\d{20})\.checkpoint\.parquet")
_MULTI_PART = re.compile(r"(\d{20})\.checkpoint\.(\d{10})\.(\d{10})\.parquet")
_V2 = re.compile(r"(\d{20})\.checkpoint\.[0-9a-fA-F-]{36}\.(?:parquet|json)")


def _checkpoint(names: list[str]) -> tuple[int, list[str]]:
    """The newest complete checkpoint: its version and files; ``(-1, [])`` when there is none."""
    found: dict[int, list[str]] = {}
    parts: dict[tuple[int, int], set[int]] = {}
    for name in names:
        if (match := _CLASSIC.fullmatch(name)) or (match := _V2.fullmatch(name)):
            found.setdefault(int(match[1]), [name])
        elif match := _MULTI_PART.fullmatch(name):
            parts.setdefault((int(match[1]), int(match[3])), set()).add(int(match[2]))
    for (version, count), present in parts.items():
        if present == set(range(1, count + 1)) and version not in found:
            found[version] = [f"{version:020d}.checkpoint.{i:010d}.{count:010d}.parquet" for i in range(1, count + 1)]
    if not found:
        return -1, []
    version = max(found)
    return version, found[version]


def _checkpoint_txns(path: Path) -> list[dict[str, object]]:
    if path.suffix == ".json":
        return [action["txn"] for line in path.read_text().splitlines() if "txn" in (action := json.loads(line))]
    schema = pq.read_schema(path)
    if "txn" not in schema.names:
        return []
    column = pq.read_table(path, columns=["txn"]).column("txn").to_pylist()
    return [txn for txn in column if txn is not None]


def txn_versions(table_path: str | os.PathLike[str]) -> dict[str, int]:
    """The newest ``txn`` version of every application id in the table's log; empty when there is no table."""
    log = Path(table_path) / LOG_DIR
    try:
        names = os.listdir(log)
    except FileNotFoundError:
        return {}
    version, checkpoint_files = _checkpoint(names)
    versions: dict[str, int] = {}
    for name in checkpoint_files:
        for txn in _checkpoint_txns(log / name):
            versions[str(txn["appId"])] = int(str(txn["version"]))
    commits = sorted(int(m[1]) for name in names if (m := _COMMIT.fullmatch(name)) and int(m[1]) > version)
    for commit in commits:
        with open(log / f"{commit:020d}.json", encoding="utf-8") as actions:
            for line in actions:
                if '"txn"' in line:
                    action = json.loads(line)
                    if "txn" in action:
                        versions[action["txn"]["appId"]] = int(action["txn"]["version"])
    return versions
