"""Which Kafka cluster real-broker tests run against, chosen in order: bootstrap servers given by the
``--kafka-bootstrap`` option or the ``HEADWATER_KAFKA_BOOTSTRAP`` environment variable; a testcontainers broker
when a Docker engine answers; a local broker started from Maven Central jars. When none is possible the reason
says what to install.

Under pytest-xdist the local broker is the run's one, shared by its workers (:mod:`.shared_services`): the first
worker that needs it starts it, the controller stops it when the run ends. A container broker is each worker's own."""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from headwater.harness.broker import LocalKafkaBroker, stop_detached
from headwater.harness.maven import INSTALL_HINT, BrokerUnavailable

if TYPE_CHECKING:  # shared_services needs pytest, which the core install does not have
    from headwater.harness.shared_services import SharedServices, Started

log = logging.getLogger(__name__)

BOOTSTRAP_ENV = "HEADWATER_KAFKA_BOOTSTRAP"
SECOND_BOOTSTRAP_ENV = "HEADWATER_SECOND_KAFKA_BOOTSTRAP"
"""Where a second, independent cluster answers (mirroring tests); otherwise one is started like the first."""
DOCKER_IMAGE_ENV = "HEADWATER_KAFKA_IMAGE"
DEFAULT_DOCKER_IMAGE = "confluentinc/cp-kafka:7.6.0"
DEFAULT_DOCKER_SOCKET = "/var/run/docker.sock"


@dataclass
class Cluster:
    """A running cluster: where it answers, how it was found, and how to let it go."""

    bootstrap_servers: str
    source: str
    """``external``, ``testcontainers`` or ``local jars``."""
    stop: Callable[[], None] = field(default=lambda: None, repr=False)


def docker_answers() -> bool:
    """Whether the ``docker`` package is installed and a Docker engine answers a ping (not asked at all when
    neither ``DOCKER_HOST`` nor the default socket exists)."""
    if not os.environ.get("DOCKER_HOST") and not Path(DEFAULT_DOCKER_SOCKET).exists():
        return False
    try:
        import docker  # type: ignore[import-untyped]
    except ImportError:
        return False
    try:
        client = docker.from_env(timeout=5)
        try:
            return bool(client.ping())
        finally:
            client.close()
    except Exception:
        return False


def _testcontainers() -> Cluster:
    from testcontainers.community.kafka import KafkaContainer

    container = KafkaContainer(os.environ.get(DOCKER_IMAGE_ENV, DEFAULT_DOCKER_IMAGE)).with_kraft()
    container.start()
    return Cluster(container.get_bootstrap_server(), "testcontainers", container.stop)


def _local_jars() -> Cluster:
    broker = LocalKafkaBroker().start()
    return Cluster(broker.bootstrap_servers, "local jars", broker.stop)


def _shared_local_jars(shared: SharedServices, name: str) -> Cluster:
    """The run's broker from the local jars, recorded as ``name``: started detached by the first worker that asks;
    stopped by the controller at the end of the run, not by ``stop``."""
    from headwater.harness.shared_services import Started

    def start() -> Started:
        broker = LocalKafkaBroker().start()
        broker.detach()
        state = {"bootstrap_servers": broker.bootstrap_servers, "data_dir": str(broker.data_dir)}
        return Started(state, stop_detached, holds=broker)

    return Cluster(shared.get(name, start, BrokerUnavailable)["bootstrap_servers"], "local jars")


def find_cluster(
    bootstrap: str | None = None,
    env: str = BOOTSTRAP_ENV,
    option: str = "--kafka-bootstrap",
    shared: SharedServices | None = None,
    name: str = "kafka",
) -> Cluster:
    """The first cluster available in the documented order (given servers: ``bootstrap``, else the environment
    variable ``env``); raises :class:`BrokerUnavailable` naming what was tried and what to install. With ``shared``
    (on a pytest-xdist worker) a local broker is the run's one named ``name``, started by the first worker to ask."""
    given = bootstrap or os.environ.get(env)
    if given:
        return Cluster(given, "external")
    tried: list[str] = []
    if docker_answers():
        try:
            return _testcontainers()
        except Exception as error:  # fall through to the local jars
            log.warning("testcontainers could not start Kafka, trying the local jars: %s", error)
            tried.append(f"testcontainers failed: {error}")
    else:
        tried.append("no Docker engine answers")
    try:
        return _local_jars() if shared is None else _shared_local_jars(shared, name)
    except BrokerUnavailable as error:
        tried.append(str(error))
    raise BrokerUnavailable(
        f"no Kafka broker for the real-broker tests ({'; '.join(tried)}). Give one with {option} or "
        f"{env}, run a Docker engine, or {INSTALL_HINT}"
    )


@contextlib.contextmanager
def cluster(bootstrap: str | None = None) -> Iterator[Cluster]:
    """:func:`find_cluster`, stopped on exit when it was started here."""
    found = find_cluster(bootstrap)
    try:
        yield found
    finally:
        found.stop()
