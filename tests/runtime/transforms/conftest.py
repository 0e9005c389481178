"""The transform tests' fixtures: Kafka Connect's own transforms in a JVM (:mod:`support.java_transforms`) for the
parity tests. A test that uses ``java_transforms`` is marked ``java`` (:mod:`support.tiers`)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from headwater.harness.maven import BrokerUnavailable
from support.java_transforms import JavaTransforms


@pytest.fixture(scope="session")
def java_transforms(pytestconfig: pytest.Config) -> Iterator[JavaTransforms]:
    """One JVM running Kafka Connect's transforms for the whole session (jars fetched and the driver compiled on
    first use, both cached). Skips when Java, javac or Maven is missing, unless ``--require-kafka``."""
    try:
        driver = JavaTransforms.start()
    except BrokerUnavailable as error:
        if not error.missing_tools:
            raise
        if pytestconfig.getoption("require_kafka"):
            pytest.fail(str(error), pytrace=False)
        pytest.skip(str(error))
    with driver:
        yield driver
