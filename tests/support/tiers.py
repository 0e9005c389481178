"""The suite's two tiers and its order, registered by ``tests/conftest.py``.

A test that needs a real broker, a database server, Spark, a JVM, an object store, fresh virtual environments, a
container builder or a worker process it kills carries the ``services`` marker; everything else runs in memory on
the virtual clock and is the fast tier (``make test-fast``: ``pytest -m "not services"``), as Kafka's build keeps a
``unitTest`` task beside its integration tests.

- The marker is derived, so it cannot be forgotten: a test that uses a service's fixture gets that service's marker
  (``kafka_bootstrap`` -> ``kafka``, ``postgres_database`` -> ``postgres``, ...), and a test with any service marker
  gets ``services``. A test that is expensive for another reason (it starts ``headwater`` processes and kills them)
  is marked ``services`` by hand.
- Fast tests run first, so that a broken rule fails in the first minutes; the order within each tier is the files'
  (pytest's own conftest runs its slow tests last the same way), except that the services tier starts with its
  tests marked ``slow(seconds=...)``, longest first: the scenarios of minutes (a crash at scale, a cluster). Under
  pytest-xdist (``make test`` runs the services tier on both cores, one test handed out at a time) the two workers
  then share the long ones and the short ones fill in around them, instead of one worker ending the run alone.
- In a fast-tier run (``HEADWATER_FAST_TIER=1``, set by ``make test-fast``) a test that reaches a service fixture
  without the marker, through ``request.getfixturevalue`` say, fails naming the fixture, rather than quietly making
  the fast tier slow.
"""

from __future__ import annotations

import os
from typing import Any

import pytest

SERVICE_MARKERS = {
    "kafka": "needs a real Kafka broker",
    "postgres": "needs a PostgreSQL server",
    "mariadb": "needs a MariaDB server",
    "spark": "starts a SparkSession (pyspark and Java 17)",
    "java": "runs Kafka Connect's own Java classes (a Java 17 JDK and Maven)",
    "s3": "needs the S3-compatible object store (moto_server)",
    "registry": "needs a Schema Registry (Apicurio Registry from Maven Central, Java 21 or newer)",
    "install": "builds fresh virtual environments from the built wheel",
    "container": "builds and runs the container image with podman (root; podman, runc and mmdebstrap from Debian)",
}
"""The services a test may need, by marker, each with what it needs."""

FIXTURE_MARKERS = {
    "kafka_cluster": "kafka",
    "kafka_bootstrap": "kafka",
    "second_kafka_cluster": "kafka",
    "second_kafka_bootstrap": "kafka",
    "raw_records": "kafka",
    "postgres_server": "postgres",
    "postgres_database": "postgres",
    "mariadb_server": "mariadb",
    "mariadb_database": "mariadb",
    "spark": "spark",
    "spark_cluster": "spark",
    "s3_server": "s3",
    "schema_registry_url": "registry",
    "java_transforms": "java",
    "headwater_distribution": "install",
    "podman": "container",
    "container_base_image": "container",
}
"""The session fixtures that start a service, and the marker a test that uses one gets."""

SERVICES = "services"
SLOW = "slow"
FAST_TIER_ENV = "HEADWATER_FAST_TIER"


def pytest_configure(config: pytest.Config) -> None:
    for name, needs in SERVICE_MARKERS.items():
        config.addinivalue_line("markers", f"{name}: {needs}")
    config.addinivalue_line(
        "markers",
        f"{SERVICES}: needs a service ({', '.join(SERVICE_MARKERS)}) or kills worker processes; left out of the "
        "fast tier (make test-fast)",
    )
    config.addinivalue_line(
        "markers",
        f"{SLOW}(seconds): a services test of minutes, with about how long it takes on 2 cores; the services tier "
        "starts with these, longest first",
    )


def slow_seconds(item: pytest.Item) -> float:
    """How long a ``slow`` test takes, by its marker (0 for any other test)."""
    mark = item.get_closest_marker(SLOW)
    if mark is None:
        return 0.0
    seconds = mark.kwargs.get("seconds", mark.args[0] if mark.args else None)
    if not isinstance(seconds, (int, float)) or seconds <= 0:
        raise pytest.UsageError(f"{item.nodeid}: mark it {SLOW}(seconds=N), N its usual duration in seconds")
    return float(seconds)


def service_markers(item: pytest.Item) -> set[str]:
    """The services ``item`` needs: its own markers and those of the fixtures it uses."""
    found = {mark.name for mark in item.iter_markers() if mark.name in SERVICE_MARKERS}
    fixtures: Any = getattr(item, "fixturenames", ())
    return found | {FIXTURE_MARKERS[name] for name in fixtures if name in FIXTURE_MARKERS}


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Marks each test with the services it needs (before ``-m`` deselects), then puts the fast tier first."""
    needing: set[int] = set()
    for index, item in enumerate(items):
        needs = service_markers(item)
        for name in sorted(needs - {mark.name for mark in item.iter_markers()}):
            item.add_marker(getattr(pytest.mark, name))
        if needs or item.get_closest_marker(SERVICES) is not None:
            if item.get_closest_marker(SERVICES) is None:
                item.add_marker(pytest.mark.services)
            needing.add(index)
    services = sorted((items[i] for i in sorted(needing)), key=slow_seconds, reverse=True)  # stable: files' order
    items[:] = [item for i, item in enumerate(items) if i not in needing] + services


@pytest.hookimpl(tryfirst=True)
def pytest_fixture_setup(fixturedef: pytest.FixtureDef[Any], request: pytest.FixtureRequest) -> None:
    if fixturedef.argname in FIXTURE_MARKERS and os.environ.get(FAST_TIER_ENV, "") not in ("", "0"):
        pytest.fail(
            f"{request.node.nodeid} uses {fixturedef.argname!r} (a {FIXTURE_MARKERS[fixturedef.argname]} service) "
            f"in the fast tier: mark it {SERVICES!r} or '{FIXTURE_MARKERS[fixturedef.argname]}'",
            pytrace=False,
        )
