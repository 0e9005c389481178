"""A table on the local file system (``file:``) with a cluster master: accepted when the executors see the driver's
directory, refused at start when they do not (here an executor in a mount namespace of its own, where the directory
is an empty tmpfs, as on another host), before any write could leave files where the driver cannot see them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from support.spark_services import SparkCluster, application_conf, hiding

pytestmark = pytest.mark.spark

# In a process of its own: the test process holds a local SparkContext, and a process has one.
START = """
import json, sys
from headwater.reference_connectors.spark_sink import SinkConfig, TableWriter
try:
    TableWriter(SinkConfig.parse(json.loads(sys.argv[1]))).start_session()
except Exception as error:
    print("REFUSED:", error)
    sys.exit(3)
print("ACCEPTED")
"""


def start_sink(
    cluster: SparkCluster, table: Path, cwd: Path, table_format: str = "parquet"
) -> subprocess.CompletedProcess[str]:
    """Start a Spark sink's session and table in a process of its own, writing on ``cluster``."""
    config = {"name": "files", "table.path": str(table), "table.format": table_format}
    config |= application_conf(cluster.master_url, cores=1)
    return subprocess.run(
        [sys.executable, "-c", START, json.dumps(config)],
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


def test_a_file_table_the_executors_see_is_accepted(spark_cluster: SparkCluster, tmp_path: Path) -> None:
    started = start_sink(spark_cluster, tmp_path / "lake" / "t", tmp_path)
    assert started.returncode == 0 and "ACCEPTED" in started.stdout, started.stdout + started.stderr[-3000:]
    assert [p.name for p in (tmp_path / "lake" / "t" / "_headwater").iterdir()] == []  # the marker is gone


def test_a_delta_table_on_a_file_path_the_executors_do_not_see_is_refused_at_start(
    cluster_on_another_disk: SparkCluster, hidden: Path, tmp_path: Path
) -> None:
    """Without the check, Delta would commit files that exist only on the executor's host, with no error."""
    started = start_sink(cluster_on_another_disk, hidden / "t", tmp_path, "delta")
    assert started.returncode == 3, started.stdout + started.stderr[-3000:]
    assert "do not see the driver's files in it" in started.stdout
    assert f"file:{hidden / 't'}" in started.stdout
