"""Headwater's pytest plugin (entry point ``pytest11``): fixtures that give a simulated worker, and a real Kafka
cluster for the tests that need one."""

from __future__ import annotations

import gc
import os
import re
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from headwater.harness.broker import BrokerUnavailable
from headwater.harness.cluster import BOOTSTRAP_ENV, SECOND_BOOTSTRAP_ENV, Cluster, find_cluster
from headwater.harness.databases import DatabaseUnavailable, MariadbServer, PostgresServer
from headwater.harness.kafka_worker import KafkaInspector, KafkaSteppedWorker, RawRecords
from headwater.harness.monitorable import HANDLES, RuntimeHandles
from headwater.harness.scratch import ScratchDatabase
from headwater.harness.simulated import SimulatedWorker

REQUIRE_ENV = "HEADWATER_REQUIRE_KAFKA"
REQUIRE_DATABASES_ENV = "HEADWATER_REQUIRE_DATABASES"
DATABASE_URL_ENV = {"postgres": "HEADWATER_POSTGRES_URL", "mariadb": "HEADWATER_MARIADB_URL"}


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("headwater")
    group.addoption(
        "--kafka-bootstrap",
        default=None,
        help=f"bootstrap servers of a Kafka cluster for the real-broker tests (or set {BOOTSTRAP_ENV})",
    )
    group.addoption(
        "--second-kafka-bootstrap",
        default=None,
        help=f"bootstrap servers of a second, independent Kafka cluster (or set {SECOND_BOOTSTRAP_ENV})",
    )
    group.addoption(
        "--require-kafka",
        action="store_true",
        default=os.environ.get(REQUIRE_ENV, "") not in ("", "0"),
        help=f"fail, rather than skip, when no Kafka broker can be had (or set {REQUIRE_ENV}=1)",
    )
    group.addoption(
        "--require-databases",
        action="store_true",
        default=os.environ.get(REQUIRE_DATABASES_ENV, "") not in ("", "0"),
        help=f"fail, rather than skip, when PostgreSQL or MariaDB cannot be had (or set {REQUIRE_DATABASES_ENV}=1)",
    )
    group.addoption(
        "--conformance-kafka",
        action="store_true",
        default=False,
        help="run every conformance suite on a real Kafka broker too, not only on the simulated worker",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "kafka: needs a real Kafka broker")
    config.addinivalue_line("markers", "postgres: needs a PostgreSQL server")
    config.addinivalue_line("markers", "mariadb: needs a MariaDB server")


def _session_cluster(pytestconfig: pytest.Config, option: str, env: str) -> Iterator[Cluster]:
    """The cluster given by command-line ``option`` or environment variable ``env``, else one found or started."""
    given = pytestconfig.getoption(option.removeprefix("--").replace("-", "_"))
    try:
        found = find_cluster(given, env, option)
    except BrokerUnavailable as error:
        if pytestconfig.getoption("require_kafka"):
            pytest.fail(str(error), pytrace=False)
        pytest.skip(str(error))
    try:
        yield found
    finally:
        gc.collect()  # Kafka clients left in reference cycles go while the broker still answers, not after it
        found.stop()


@pytest.fixture(scope="session")
def kafka_cluster(pytestconfig: pytest.Config) -> Iterator[Cluster]:
    """A Kafka cluster for the whole session: given, in a container, or started from the local jars (in that
    order). Skips the test when none can be had, unless ``--require-kafka``."""
    yield from _session_cluster(pytestconfig, "--kafka-bootstrap", BOOTSTRAP_ENV)


@pytest.fixture(scope="session")
def second_kafka_cluster(pytestconfig: pytest.Config) -> Iterator[Cluster]:
    """A second Kafka cluster for the whole session, independent of :func:`kafka_cluster` (a mirror's source, say):
    given by ``--second-kafka-bootstrap`` or ``HEADWATER_SECOND_KAFKA_BOOTSTRAP``, else found the same way, so
    usually a second broker from the same local jars. Skips or fails like :func:`kafka_cluster`."""
    yield from _session_cluster(pytestconfig, "--second-kafka-bootstrap", SECOND_BOOTSTRAP_ENV)


@pytest.fixture(scope="session")
def second_kafka_bootstrap(second_kafka_cluster: Cluster) -> str:
    """The bootstrap servers of :func:`second_kafka_cluster`."""
    return second_kafka_cluster.bootstrap_servers


@pytest.fixture(scope="session")
def kafka_bootstrap(kafka_cluster: Cluster) -> str:
    """The bootstrap servers of :func:`kafka_cluster`."""
    return kafka_cluster.bootstrap_servers


@pytest.fixture
def raw_records(kafka_bootstrap: str) -> RawRecords:
    """``raw_records(topic)``: every record of ``topic`` on the real cluster as (partition, key, value), partition
    by partition in offset order, read by a plain consumer (to check the bytes a store or a connector wrote)."""
    inspector = KafkaInspector(kafka_bootstrap)
    return lambda topic: [(m.partition, m.key, m.value) for m in inspector.messages(topic)]


@pytest.fixture
def unique_name(request: pytest.FixtureRequest) -> str:
    """A topic/group/connector name no other test of any run uses: the test's name plus a random suffix."""
    base = re.sub(r"[^A-Za-z0-9]+", "-", request.node.name).strip("-")[-40:]
    return f"{base}-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def runtime_handles() -> Iterator[RuntimeHandles]:
    """The registry monitorable connectors report into, emptied before and after the test."""
    HANDLES.reset()
    yield HANDLES
    HANDLES.reset()


@pytest.fixture
def make_simulated_worker(runtime_handles: RuntimeHandles) -> Iterator[Callable[..., SimulatedWorker]]:
    """A factory: ``make_simulated_worker(config, tick_ms=..., partitions=...)``; every worker is closed after."""
    made: list[SimulatedWorker] = []

    def make(config: dict[str, Any] | None = None, **options: Any) -> SimulatedWorker:
        worker = SimulatedWorker(config, **options)
        made.append(worker)
        return worker

    yield make
    for worker in made:
        worker.close()


@pytest.fixture(params=["simulated", pytest.param("kafka", marks=pytest.mark.kafka)])
def make_worker(
    request: pytest.FixtureRequest, runtime_handles: RuntimeHandles
) -> Iterator[Callable[..., SimulatedWorker]]:
    """Like ``make_simulated_worker``, once per backend: the in-memory transport, then a real Kafka broker (the
    same loops stepped on the same virtual clock, see :mod:`headwater.harness.kafka_worker`). A test using it
    shows its guarantee on both."""
    made: list[SimulatedWorker] = []
    bootstrap = request.getfixturevalue("kafka_bootstrap") if request.param == "kafka" else None

    def make(config: dict[str, Any] | None = None, **options: Any) -> SimulatedWorker:
        worker = (
            SimulatedWorker(config, **options)
            if bootstrap is None
            else KafkaSteppedWorker(bootstrap, config, **options)
        )
        made.append(worker)
        return worker

    yield make
    for worker in made:
        worker.close()


@pytest.fixture
def simulated_worker(make_simulated_worker: Callable[..., SimulatedWorker]) -> SimulatedWorker:
    """A simulated worker with the default config (schemaless JSON, Kafka Connect's intervals)."""
    return make_simulated_worker()


def _database_server(pytestconfig: pytest.Config, kind: str) -> Iterator[str]:
    """The SQLAlchemy URL of a server of ``kind`` for the session: given by the environment, else started here."""
    given = os.environ.get(DATABASE_URL_ENV[kind])
    if given:
        yield given
        return
    server = PostgresServer() if kind == "postgres" else MariadbServer()
    try:
        server.start()
    except (DatabaseUnavailable, OSError) as error:
        server.stop()
        message = f"no {kind} server: {error}"
        if pytestconfig.getoption("require_databases"):
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    try:
        yield server.url
    finally:
        server.stop()


@pytest.fixture(scope="session")
def postgres_server(pytestconfig: pytest.Config) -> Iterator[str]:
    """A PostgreSQL server (``wal_level=logical``) for the session, installed and started by the harness
    (:mod:`headwater.harness.databases`) unless ``HEADWATER_POSTGRES_URL`` names one; its superuser's URL. Skips
    when none can be had, unless ``--require-databases``."""
    yield from _database_server(pytestconfig, "postgres")


@pytest.fixture(scope="session")
def mariadb_server(pytestconfig: pytest.Config) -> Iterator[str]:
    """A MariaDB server for the session, like :func:`postgres_server` (``HEADWATER_MARIADB_URL``)."""
    yield from _database_server(pytestconfig, "mariadb")


@pytest.fixture
def postgres_database(postgres_server: str) -> Iterator[ScratchDatabase]:
    """A new, empty PostgreSQL database, dropped (with its replication slots) after the test."""
    database = ScratchDatabase.on_server("postgres", postgres_server)
    yield database
    database.close()


@pytest.fixture
def mariadb_database(mariadb_server: str) -> Iterator[ScratchDatabase]:
    """A new, empty MariaDB database, dropped after the test."""
    database = ScratchDatabase.on_server("mariadb", mariadb_server)
    yield database
    database.close()
