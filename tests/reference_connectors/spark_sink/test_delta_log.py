"""Reading ``txn`` versions from a Delta log by hand-written logs: commits, the kinds of checkpoints, and partial
checkpoints (a table written by Spark is read in test_tables.py)."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from headwater.reference_connectors.spark_sink import txn_versions

TXN = pa.struct([("appId", pa.string()), ("version", pa.int64()), ("lastUpdated", pa.int64())])


def commit(log: Path, version: int, *txns: tuple[str, int]) -> None:
    actions = [{"commitInfo": {"operation": "WRITE"}}, {"add": {"path": f"part-{version}.parquet"}}]
    actions += [{"txn": {"appId": app, "version": v, "lastUpdated": 0}} for app, v in txns]
    (log / f"{version:020d}.json").write_text("\n".join(json.dumps(a) for a in actions) + "\n")


def checkpoint(path: Path, *txns: tuple[str, int]) -> None:
    rows = [{"appId": app, "version": v, "lastUpdated": 0} for app, v in txns] + [None]  # a non-txn action row
    pq.write_table(pa.table({"txn": pa.array(rows, TXN), "add": pa.array([None] * len(rows), pa.string())}), path)


def test_no_table_has_no_versions(tmp_path: Path) -> None:
    assert txn_versions(tmp_path / "missing") == {}
    assert txn_versions(tmp_path) == {}


def test_the_newest_txn_of_each_app_wins_across_commits(tmp_path: Path) -> None:
    log = tmp_path / "_delta_log"
    log.mkdir()
    commit(log, 0)
    commit(log, 1, ("c-orders-0", 99))
    commit(log, 2, ("c-orders-1", 5), ("c-orders-0", 199))
    commit(log, 3)
    (log / "00000000000000000004.json.tmp").write_text("{}")  # not a commit
    assert txn_versions(tmp_path) == {"c-orders-0": 199, "c-orders-1": 5}


def test_a_classic_checkpoint_replaces_the_commits_before_it(tmp_path: Path) -> None:
    log = tmp_path / "_delta_log"
    log.mkdir()
    checkpoint(log / f"{10:020d}.checkpoint.parquet", ("a", 10), ("b", 3))
    commit(log, 11, ("a", 11))
    # commits up to the checkpoint may have been cleaned up; one left over must not count twice or override
    commit(log, 9, ("a", 1), ("z", 1))
    assert txn_versions(tmp_path) == {"a": 11, "b": 3}


def test_a_multi_part_checkpoint_counts_only_when_complete(tmp_path: Path) -> None:
    log = tmp_path / "_delta_log"
    log.mkdir()
    checkpoint(log / f"{5:020d}.checkpoint.parquet", ("a", 5))
    checkpoint(log / f"{8:020d}.checkpoint.{1:010d}.{2:010d}.parquet", ("a", 8))
    checkpoint(log / f"{8:020d}.checkpoint.{2:010d}.{2:010d}.parquet", ("b", 8))
    checkpoint(log / f"{12:020d}.checkpoint.{1:010d}.{2:010d}.parquet", ("a", 12))  # part 2 missing: ignored
    for version in range(9, 13):
        commit(log, version)
    assert txn_versions(tmp_path) == {"a": 8, "b": 8}


def test_a_v2_json_checkpoint_holds_the_txns(tmp_path: Path) -> None:
    log = tmp_path / "_delta_log"
    log.mkdir()
    lines = [{"checkpointMetadata": {"version": 3}}, {"txn": {"appId": "a", "version": 42, "lastUpdated": 0}}]
    lines += [{"sidecar": {"path": "x.parquet"}}]
    (log / f"{3:020d}.checkpoint.{uuid.uuid4()}.json").write_text("\n".join(map(json.dumps, lines)))
    commit(log, 4, ("b", 1))
    assert txn_versions(tmp_path) == {"a": 42, "b": 1}
