"""Headwater's pytest plugin (entry point ``pytest11``): fixtures that give a simulated worker, and a real Kafka
cluster for the tests that need one.

Every project that installs Headwater loads this module, so it imports the runtime and the Kafka client only inside
the fixtures that need them."""

from __future__ import annotations

import gc
import os
import re
import uuid
import warnings
from collections.abc import Callable, Generator, Iterator
from typing import TYPE_CHECKING, Any

import pytest

from headwater.harness.cluster import BOOTSTRAP_ENV, SECOND_BOOTSTRAP_ENV, Cluster, find_cluster
from headwater.harness.maven import BrokerUnavailable
from headwater.harness.reports import is_harness_test, tidy_sections
from headwater.harness.shared_services import WORKERINPUT_KEY, SharedServices, end_run, run_services

if TYPE_CHECKING:
    from headwater.harness.kafka_worker import RawRecords
    from headwater.harness.monitorable import RuntimeHandles
    from headwater.harness.simulated import SimulatedWorker

REQUIRE_ENV = "HEADWATER_REQUIRE_KAFKA"
REGISTRY_ENV = "HEADWATER_SCHEMA_REGISTRY_URL"
REQUIRE_REGISTRY_ENV = "HEADWATER_REQUIRE_REGISTRY"


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
        "--schema-registry-url",
        default=None,
        help=f"URL of a Schema Registry speaking Confluent's API for the registry tests (or set {REGISTRY_ENV})",
    )
    group.addoption(
        "--require-registry",
        action="store_true",
        default=os.environ.get(REQUIRE_REGISTRY_ENV, "") not in ("", "0"),
        help=f"fail, rather than skip, when no Schema Registry can be started (or set {REQUIRE_REGISTRY_ENV}=1)",
    )
    group.addoption(
        "--conformance-kafka",
        action="store_true",
        default=False,
        help="run every conformance suite on a real Kafka broker too, not only on the simulated worker",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "kafka: needs a real Kafka broker")


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """pytest-xdist's hook, on the controller, for each worker it starts: the worker gets the directory where the
    run's shared services are recorded (:mod:`headwater.harness.shared_services`)."""
    node.workerinput[WORKERINPUT_KEY] = str(run_services(node.config).directory)


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session) -> None:
    """On a pytest-xdist controller, once its workers have ended: stops the services they shared."""
    end_run(session.config)


def pytest_unconfigure(config: pytest.Config) -> None:
    end_run(config)  # in case the session's end was cut short


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """A harness test's report is made whatever the project's warning filters, its repeated log records collapsed
    (:mod:`headwater.harness.reports`)."""
    if not is_harness_test(item):
        return (yield)
    with warnings.catch_warnings():
        warnings.simplefilter("always")  # shown in pytest's warnings summary, not raised into INTERNALERROR
        report = yield
    tidy_sections(report)
    return report


def _session_cluster(pytestconfig: pytest.Config, option: str, env: str, name: str) -> Iterator[Cluster]:
    """The cluster given by command-line ``option`` or environment variable ``env``, else one found or started (on a
    pytest-xdist worker, the run's one recorded as ``name``)."""
    given = pytestconfig.getoption(option.removeprefix("--").replace("-", "_"))
    try:
        found = find_cluster(given, env, option, SharedServices.of(pytestconfig), name)
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
    order; under pytest-xdist, one local broker for all workers of the run). Skips the test when none can be had,
    unless ``--require-kafka``."""
    yield from _session_cluster(pytestconfig, "--kafka-bootstrap", BOOTSTRAP_ENV, "kafka")


@pytest.fixture(scope="session")
def second_kafka_cluster(pytestconfig: pytest.Config) -> Iterator[Cluster]:
    """A second Kafka cluster for the whole session, independent of :func:`kafka_cluster` (a mirror's source, say):
    given by ``--second-kafka-bootstrap`` or ``HEADWATER_SECOND_KAFKA_BOOTSTRAP``, else found the same way, so
    usually a second broker from the same local jars. Skips or fails like :func:`kafka_cluster`."""
    yield from _session_cluster(pytestconfig, "--second-kafka-bootstrap", SECOND_BOOTSTRAP_ENV, "second-kafka")


@pytest.fixture(scope="session")
def second_kafka_bootstrap(second_kafka_cluster: Cluster) -> str:
    """The bootstrap servers of :func:`second_kafka_cluster`."""
    return second_kafka_cluster.bootstrap_servers


@pytest.fixture(scope="session")
def schema_registry_url(pytestconfig: pytest.Config) -> Iterator[str]:
    """The URL of a Schema Registry speaking Confluent's REST API for the whole session: given by
    ``--schema-registry-url`` or ``HEADWATER_SCHEMA_REGISTRY_URL``, else Apicurio Registry started from Maven
    Central (:mod:`headwater.harness.schema_registry`; under pytest-xdist, one for all workers of the run). Skips the
    test when none can be had, unless ``--require-registry``."""
    from headwater.harness.schema_registry import RegistryUnavailable, registry_url

    given = pytestconfig.getoption("schema_registry_url") or os.environ.get(REGISTRY_ENV)
    try:
        url, stop = registry_url(given, SharedServices.of(pytestconfig))
    except RegistryUnavailable as error:
        if pytestconfig.getoption("require_registry"):
            pytest.fail(str(error), pytrace=False)
        pytest.skip(str(error))
    try:
        yield url
    finally:
        stop()


@pytest.fixture(scope="session")
def kafka_bootstrap(kafka_cluster: Cluster) -> str:
    """The bootstrap servers of :func:`kafka_cluster`."""
    return kafka_cluster.bootstrap_servers


@pytest.fixture
def raw_records(kafka_bootstrap: str) -> RawRecords:
    """``raw_records(topic)``: every record of ``topic`` on the real cluster as (partition, key, value), partition
    by partition in offset order, read by a plain consumer (to check the bytes a store or a connector wrote)."""
    from headwater.harness.kafka_worker import KafkaInspector

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
    from headwater.harness.monitorable import HANDLES

    HANDLES.reset()
    yield HANDLES
    HANDLES.reset()


@pytest.fixture
def make_simulated_worker(runtime_handles: RuntimeHandles) -> Iterator[Callable[..., SimulatedWorker]]:
    """A factory: ``make_simulated_worker(config, tick_ms=..., partitions=...)``; every worker is closed after."""
    from headwater.harness.simulated import SimulatedWorker

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
    from headwater.harness.kafka_worker import KafkaSteppedWorker
    from headwater.harness.simulated import SimulatedWorker

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
