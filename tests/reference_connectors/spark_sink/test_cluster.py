"""A table on the local file system (``file:``) with a cluster master: accepted when the executors see the driver's
directory, refused at start when they do not (here an executor in a mount namespace of its own, where the directory
is an empty tmpfs, as on another host), before any write could leave files where the driver cannot see them. A
relative table path is taken from the driver's working directory, never the executor's (which the cluster gives a
directory and a process of its own): the rows land where the driver reads."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from support.lake import read_parquet
from support.spark_services import SparkCluster, application_conf, hiding

pytestmark = pytest.mark.spark

# In a process of its own: the test process holds a local SparkContext, and a process has one. With a second argument
# the accepted table then gets one write of 100 rows, and the process prints where the table is, the offsets it
# recovers, and where the executor and the driver ran.
START = """
import json, os, sys
from headwater.reference_connectors.spark_sink import SinkConfig, TableWriter
try:
    table = TableWriter(SinkConfig.parse(json.loads(sys.argv[1]))).start_session()
except Exception as error:
    print("REFUSED:", error)
    sys.exit(3)
print("ACCEPTED")
if len(sys.argv) > 2:
    import pyarrow as pa
    from headwater.sdk import TopicPartition

    tp, rows = TopicPartition("t", 0), int(sys.argv[2])
    offsets = pa.array(range(rows), pa.int64())
    table.write({tp: pa.table({"id": offsets, "kafka_partition": pa.array([0] * rows, pa.int32()),
                               "kafka_offset": offsets})}, {tp: rows - 1})

    def where(_):
        import os, sys
        yield {"cwd": os.getcwd(), "pid": os.getpid(), "python": sys.executable}

    context = table.session.sparkContext
    executor = context.parallelize([0], 1).mapPartitions(where).collect()[0]
    driver = {"cwd": os.getcwd(), "pid": os.getpid(), "jvm_pid": context._jvm.java.lang.ProcessHandle.current().pid()}
    recovered = {str(tp.partition): offset for tp, offset in table.recover([tp]).items()}
    print(json.dumps({"path": table.path, "recovered": recovered, "executor": executor, "driver": driver}))
"""


def start_sink(
    cluster: SparkCluster, table: Path | str, cwd: Path, table_format: str = "parquet", write_rows: int = 0
) -> subprocess.CompletedProcess[str]:
    """Start a Spark sink's session and table in a process of its own, writing on ``cluster`` (and with
    ``write_rows``, write that many rows into the table)."""
    config = {"name": "files", "table.path": str(table), "table.format": table_format}
    config |= application_conf(cluster.master_url, cores=1)
    return subprocess.run(
        [sys.executable, "-c", START, json.dumps(config), *([str(write_rows)] if write_rows else [])],
        cwd=cwd,
        env={**os.environ, "PYSPARK_PYTHON": sys.executable},
        capture_output=True,
        text=True,
        timeout=600,
    )


@pytest.fixture
def hidden(tmp_path: Path) -> Path:
    directory = tmp_path / "hidden"
    directory.mkdir()
    return directory


@pytest.fixture
def cluster_on_another_disk(tmp_path: Path, hidden: Path) -> Iterator[SparkCluster]:
    """A cluster whose worker (and so its executors) sees ``hidden`` as an empty directory of its own."""
    probe = subprocess.run([*hiding(hidden), "true"], capture_output=True, text=True)
    if probe.returncode != 0:
        pytest.fail(f"cannot make a mount namespace for the executor ({probe.stderr.strip()}): the test needs root")
    with SparkCluster(tmp_path / "cluster", worker_wrapper=hiding(hidden)) as cluster:
        yield cluster


@pytest.mark.slow(seconds=50)
def test_a_relative_file_table_the_executors_see_is_accepted_and_written_where_the_driver_reads(
    spark_cluster: SparkCluster, tmp_path: Path
) -> None:
    """The executor works in a directory of the Spark worker's and a process of its own: without the driver making the
    path absolute first, its files would land below its own directory (the start's check, which looks for the
    driver's marker from the executor, would refuse the table first)."""
    assert len(spark_cluster.alive_workers()) == 1
    started = start_sink(spark_cluster, Path("lake") / "t", tmp_path, write_rows=100)
    assert started.returncode == 0 and "ACCEPTED" in started.stdout, started.stdout + started.stderr[-3000:]
    found = json.loads(started.stdout.strip().splitlines()[-1])
    executor, driver = found["executor"], found["driver"]

    assert found["path"] == f"file:{tmp_path / 'lake' / 't'}"  # qualified against the driver's directory
    assert sorted(row["id"] for row in read_parquet(tmp_path / "lake" / "t")) == list(range(100))
    assert found["recovered"] == {"0": 99}
    assert [p.name for p in (tmp_path / "lake" / "t" / "_headwater").iterdir() if "shared-check" in p.name] == []
    assert executor["cwd"] != driver["cwd"]
    assert Path(executor["cwd"]).is_relative_to(spark_cluster.work_dir)
    assert not (Path(executor["cwd"]) / "lake").exists()
    assert executor["pid"] not in (os.getpid(), driver["pid"], driver["jvm_pid"])
    assert executor["python"] == sys.executable


@pytest.mark.slow(seconds=45)
def test_a_delta_table_on_a_file_path_the_executors_do_not_see_is_refused_at_start(
    cluster_on_another_disk: SparkCluster, hidden: Path, tmp_path: Path
) -> None:
    """Without the check, Delta would commit files that exist only on the executor's host, with no error."""
    started = start_sink(cluster_on_another_disk, hidden / "t", tmp_path, "delta")
    assert started.returncode == 3, started.stdout + started.stderr[-3000:]
    assert "do not see the driver's files in it" in started.stdout
    assert f"file:{hidden / 't'}" in started.stdout
