"""The services of the cluster-scale tests: the S3 server stores and lists objects, the standalone cluster runs Python
on an executor in a working directory and a process of its own, and both leave no process behind once stopped."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from support.spark_services import S3Server, ServiceError, SparkCluster, application_conf, bucket_name, pid_alive

pytestmark = pytest.mark.spark

# Runs in a process of its own: the test process may already hold a local SparkContext, and a process has one.
CLUSTER_JOB = """
import json, os, sys
from pyspark.sql import SparkSession

builder = SparkSession.builder.appName("headwater-cluster-check").config("spark.ui.enabled", "false")
for key, value in json.loads(sys.argv[1]).items():
    builder = builder.config(key, value)
spark = builder.getOrCreate()
try:
    def where(rows):
        import os, sys
        yield {"cwd": os.getcwd(), "pid": os.getpid(), "python": sys.executable}

    executor = spark.sparkContext.parallelize([0], 1).mapPartitions(where).collect()[0]
    jvm_pid = spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid()
    driver = {"cwd": os.getcwd(), "pid": os.getpid(), "jvm_pid": jvm_pid}
    print(json.dumps({"executor": executor, "driver": driver}))
finally:
    spark.stop()
"""


def wait_gone(pids: list[int], timeout_s: float = 30.0) -> list[int]:
    """The pids of ``pids`` still alive after waiting up to ``timeout_s`` for all to end."""
    deadline = time.monotonic() + timeout_s
    while (alive := [pid for pid in pids if pid_alive(pid)]) and time.monotonic() < deadline:
        time.sleep(0.05)
    return alive


def test_the_s3_server_lists_every_key_under_a_prefix_across_pages(s3_server: S3Server, s3_bucket: str) -> None:
    client = s3_server.client()
    keys = [f"table/part-{number}.parquet" for number in range(5)]
    for key in [*keys, "elsewhere/part-0.parquet"]:
        client.put_object(Bucket=s3_bucket, Key=key, Body=b"rows")

    assert s3_server.list_keys(s3_bucket, "table/", page_size=2) == keys
    assert len(s3_server.list_keys(s3_bucket)) == 6
    assert client.get_object(Bucket=s3_bucket, Key=keys[0])["Body"].read() == b"rows"
    assert s3_server.hadoop_conf()["spark.hadoop.fs.s3a.endpoint"] == s3_server.endpoint
    assert repr(s3_server) == f"S3Server({s3_server.endpoint}, running)"


@pytest.mark.parametrize("test_name", ["test_x[Delta-PARQUET]", "test_" + "long_name_" * 20, "[]", "Ünïcode/ünd"])
def test_bucket_names_are_valid_s3_names_and_unique(test_name: str) -> None:
    first, second = bucket_name(test_name), bucket_name(test_name)

    assert re.fullmatch(r"[a-z0-9][a-z0-9-]{1,61}[a-z0-9]", first), first
    assert first != second


def test_an_executor_of_the_cluster_runs_in_a_directory_and_process_of_its_own(
    spark_cluster: SparkCluster, tmp_path: Path
) -> None:
    assert len(spark_cluster.alive_workers()) == 1
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    job = [sys.executable, "-c", CLUSTER_JOB, json.dumps(application_conf(spark_cluster.master_url, cores=1))]
    done = subprocess.run(job, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-4000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    executor, driver = found["executor"], found["driver"]

    assert executor["cwd"] != driver["cwd"]
    assert Path(executor["cwd"]).is_relative_to(spark_cluster.work_dir)
    assert executor["pid"] not in (os.getpid(), driver["pid"], driver["jvm_pid"])
    assert executor["python"] == sys.executable


@pytest.mark.skipif(shutil.which("java") is None, reason="the Spark cluster needs Java 17")
@pytest.mark.skipif(importlib.util.find_spec("moto") is None, reason="the S3 server needs moto[server]")
def test_stopped_services_leave_no_process(tmp_path: Path) -> None:
    s3 = S3Server(tmp_path / "s3")
    cluster = SparkCluster(tmp_path / "spark")
    try:
        s3.start()
        cluster.start()
        pids = [pid for pid in (*cluster.pids, s3.process.pid) if pid is not None]
        assert len(pids) == 3
        assert all(pid_alive(pid) for pid in pids)
    finally:
        cluster.stop()
        s3.stop()

    assert wait_gone(pids) == []
    assert not cluster.running
    assert repr(s3) == f"S3Server({s3.endpoint}, not running)"


@pytest.mark.skipif(shutil.which("java") is None, reason="the Spark cluster needs Java 17")
def test_a_worker_that_exits_fails_the_start_with_its_log_and_stops_the_master(tmp_path: Path) -> None:
    cluster = SparkCluster(tmp_path, memory="lots")

    with pytest.raises(ServiceError, match=r"(?s)spark worker exited .*Usage: Worker"):
        cluster.start()
    assert wait_gone(cluster.pids) == []
