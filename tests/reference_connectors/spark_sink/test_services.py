"""The services of the cluster-scale tests: the S3 server stores and lists objects, and it and the standalone cluster
leave no process behind once stopped. That the cluster runs Python on an executor in a working directory and a
process of its own is shown where it matters, by the Spark sink's relative table path (test_cluster)."""

from __future__ import annotations

import importlib.util
import re
import shutil
import time
from pathlib import Path

import pytest

from support.spark_services import S3Server, ServiceError, SparkCluster, bucket_name, pid_alive

pytestmark = pytest.mark.spark


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
