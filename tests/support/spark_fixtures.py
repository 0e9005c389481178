"""The Spark services' session fixtures, registered by ``tests/conftest.py`` so that every test folder reaches them
(the Spark sink's tests, the docs' recipes): the test process's one SparkSession (with Delta Lake, S3A and Delta's
DynamoDB commit coordinator, as the connector makes it), an S3-compatible server (which answers DynamoDB too), a
new bucket of it per test, and a Spark standalone cluster, each started once a session (:mod:`support.spark_services`).

pyspark and boto3 are imported only inside the fixtures: a session without them, or the fast tier, pays nothing,
and a test that asks for one of these fixtures without them is skipped, saying what is missing."""

from __future__ import annotations

import importlib.util
import os
import shutil
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

from headwater.harness.shared_services import SharedServices, Started
from support.spark_services import S3Server, ServiceError, SparkCluster, bucket_name, stop_recorded

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

PYSPARK_MISSING = "the Spark sink needs the spark-sink extra"
CLUSTER_CORES, CLUSTER_MEMORY = 3, "3g"
"""The session's Spark cluster: one worker with a core for the application of each of the services tier's three
pytest-xdist workers (``SERVICE_WORKERS`` in the Makefile), and room for the 512 MB each asks, so that they run at
once."""
TEST_DRIVER_JIT = "-XX:TieredStopAtLevel=1"
"""The JIT of the Spark drivers that tests start (this process's session, and the worker processes' sessions, which
inherit the environment): C1 only, as the test broker runs. A test's driver lives for seconds to minutes and writes
hundreds of rows, so C2's compiler threads cost CPU (on two cores shared by three pytest workers) that they never
pay back: a session with Delta started in 12 to 14 s against 14 to 19 s with C2 (three pairs). Nothing a test
checks depends on the JIT; a driver a user starts keeps Java's default, as do the benches run on their own."""


def pytest_configure(config: pytest.Config) -> None:
    """``SPARK_SUBMIT_OPTS`` (which ``spark-submit`` adds to the driver's JVM options) for every Spark driver the run
    starts, unless the environment gives its own."""
    os.environ.setdefault("SPARK_SUBMIT_OPTS", TEST_DRIVER_JIT)


@pytest.fixture(scope="session")
def spark(s3_server: S3Server) -> SparkSession:
    """The process's SparkSession, made by the connector's own code with Delta Lake, S3A (reaching the session's
    S3 server) and Delta's DynamoDB commit coordinator (reaching the same server, whose credentials the JVM takes
    from this process's environment), before any test writes, so every test shares it (a session is made once per
    process): a worker a test runs in this process gives its Spark sink tasks this session."""
    pytest.importorskip("pyspark", reason=PYSPARK_MISSING)
    if shutil.which("java") is None:
        pytest.skip("the Spark sink needs Java 17")
    from headwater.reference_connectors.spark_sink import SPARK_DEFAULTS, spark_session

    os.environ.update(s3_server.aws_env())  # read by the JVM's AWS SDK when it starts, below
    return spark_session({**SPARK_DEFAULTS, **s3_server.hadoop_conf()}, delta=True, s3a=True, dynamodb=True)


def _start_shared(service: S3Server | SparkCluster) -> Started:
    service.start()
    return Started(service.state(), stop_recorded, holds=service)


@pytest.fixture(scope="session")
def s3_server(pytestconfig: pytest.Config, tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Server]:
    """An S3-compatible server (moto) for the session (under pytest-xdist, one for all workers of the run):
    ``endpoint``, ``access_key``, ``secret_key``, ``region``, ``client()`` (boto3), ``dynamodb()``,
    ``create_bucket(name)``, ``list_keys(bucket, prefix)``, ``hadoop_conf()`` (s3a settings), ``aws_env()``."""
    missing = [name for name in ("moto", "boto3", "flask") if importlib.util.find_spec(name) is None]
    if missing:
        pytest.skip(f"the S3 tests need moto[server] and boto3 (missing: {', '.join(missing)})")
    shared = SharedServices.of(pytestconfig)
    if shared is not None:
        start = lambda: _start_shared(S3Server(tmp_path_factory.mktemp("s3-server")))  # noqa: E731
        yield S3Server.attach(shared.get("s3", start, ServiceError))
        return
    with S3Server(tmp_path_factory.mktemp("s3-server")) as server:
        yield server


@pytest.fixture
def s3_bucket(s3_server: S3Server, request: pytest.FixtureRequest) -> str:
    """A new, empty bucket of ``s3_server`` named after the test, with a random suffix."""
    name = bucket_name(request.node.name)
    s3_server.create_bucket(name)
    return name


@pytest.fixture(scope="session")
def spark_cluster(pytestconfig: pytest.Config, tmp_path_factory: pytest.TempPathFactory) -> Iterator[SparkCluster]:
    """A Spark standalone cluster for the session (one master, one worker with :data:`CLUSTER_CORES` cores and
    :data:`CLUSTER_MEMORY`, so that the applications of the pytest-xdist workers, each asking for 1 core and 512 MB,
    run at once; under pytest-xdist one for all workers of the run): ``master_url``, ``work_dir`` (the executors'
    directories), ``alive_workers()``, ``status()``."""
    pytest.importorskip("pyspark", reason=PYSPARK_MISSING)
    if shutil.which("java") is None:
        pytest.skip("the Spark cluster needs Java 17")
    shared = SharedServices.of(pytestconfig)
    made = lambda: SparkCluster(tmp_path_factory.mktemp("spark-cluster"), cores=CLUSTER_CORES, memory=CLUSTER_MEMORY)  # noqa: E731
    if shared is not None:
        yield SparkCluster.attach(shared.get("spark-cluster", lambda: _start_shared(made()), ServiceError))
        return
    with made() as cluster:
        yield cluster
