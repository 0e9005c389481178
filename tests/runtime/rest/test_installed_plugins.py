"""What a freshly installed worker offers: ``GET /connector-plugins`` of a ``headwater standalone`` process lists
the reference connectors and nothing else, unless the test suite's connector short names are on its path
(:mod:`support.connectors`)."""

from __future__ import annotations

import re
from pathlib import Path

import httpx
import pytest

from support.process import WorkerProcess

pytestmark = pytest.mark.kafka

LISTENING = re.compile(r"REST API listening on (http://127\.0\.0\.1:\d+)")
REFERENCE_CONNECTORS = {
    "headwater.reference_connectors.jdbc_cdc.connector.JdbcCdcSourceConnector",
    "headwater.reference_connectors.kafka_mirror.connector.KafkaMirrorSourceConnector",
    "headwater.reference_connectors.spark_sink.connector.SparkSinkConnector",
}
TEST_CONNECTORS = {
    "headwater.harness.monitorable.MonitorableSinkConnector",
    "headwater.harness.monitorable.MonitorableSourceConnector",
    "synthetic.DiscardSinkConnector",
    "synthetic.SequenceSourceConnector",
}


def listed_plugins(directory: Path, kafka_bootstrap: str, test_connectors: bool) -> set[str]:
    """The classes ``GET /connector-plugins`` lists on a standalone worker process started in ``directory``."""
    with WorkerProcess(
        directory, {"bootstrap.servers": kafka_bootstrap}, {}, test_connectors=test_connectors
    ) as worker:
        worker.start()
        found = LISTENING.search(worker.wait_for_log("REST API listening on"))
        assert found, worker.log_tail()
        plugins = httpx.get(f"{found.group(1)}/connector-plugins", timeout=10).json()
        assert worker.terminate() == 0
    return {plugin["class"] for plugin in plugins}


def test_a_freshly_installed_worker_lists_only_the_reference_connectors(
    kafka_bootstrap: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("PYTHONPATH", raising=False)
    assert listed_plugins(tmp_path / "fresh", kafka_bootstrap, test_connectors=False) == REFERENCE_CONNECTORS


def test_a_worker_with_the_test_connectors_on_its_path_lists_them_too(kafka_bootstrap: str, tmp_path: Path) -> None:
    """The control for the test above: the test suite's registration reaches a worker subprocess."""
    listed = listed_plugins(tmp_path / "tests", kafka_bootstrap, test_connectors=True)
    assert listed == REFERENCE_CONNECTORS | TEST_CONNECTORS
