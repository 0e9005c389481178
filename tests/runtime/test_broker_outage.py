"""A broker outage an operator can see: the broker of a running standalone worker stops answering for 30 s (its
process frozen with SIGSTOP, as a hung broker or a network partition: no connection refused, no answer at all);
``GET /health`` turns 500 unhealthy within ``health.broker.unreachable.ms`` and says why, the
``headwater_connect_worker_broker_*`` metrics say the same, both turn healthy again once the broker answers, and every
record a source made, before, during and after the outage, arrives.

The broker is this module's own: the session's shared broker must never be frozen under other tests."""

from __future__ import annotations

import gc
import json
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from headwater.harness.broker import LocalKafkaBroker
from headwater.harness.kafka_worker import KafkaInspector
from headwater.harness.maven import BrokerUnavailable
from headwater.runtime.commands.standalone import StandaloneWorker
from headwater.runtime.config.properties import format_properties, read_properties
from headwater.runtime.herder.health import HEALTHY
from support import paced_source
from support.connectors import ALLOWED_MODULES
from support.rest_worker import RestWorker, wait_until

OUTAGE_S = 30.0
"""How long the broker is frozen: the issue's outage."""
BOUND_MS = 3000
"""``health.broker.unreachable.ms`` of the worker under test (the probe asks every 0.75 s)."""


@pytest.fixture(scope="module")
def own_broker(pytestconfig: pytest.Config, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalKafkaBroker]:
    try:
        with LocalKafkaBroker(data_dir=tmp_path_factory.mktemp("outage") / "broker") as broker:
            yield broker
            gc.collect()  # Kafka clients left in reference cycles go while the broker still answers
    except BrokerUnavailable as error:
        if pytestconfig.getoption("require_kafka"):
            pytest.fail(str(error), pytrace=False)
        pytest.skip(str(error))


def health(worker: RestWorker) -> tuple[int, dict[str, str]]:
    response = worker.http.get("/health")
    return response.status_code, response.json()


def metrics(worker: RestWorker) -> dict[str, float]:
    """The worker's broker metrics, by name."""
    text = worker.http.get("/metrics").text
    found = {}
    for line in text.splitlines():
        name, _, value = line.partition(" ")
        if name.startswith("headwater_connect_worker_broker_"):
            found[name.removeprefix("headwater_connect_worker_broker_")] = float(value)
    return found


def committed_seq(worker: RestWorker, name: str) -> int:
    """The source offset the worker has committed for task 0 (-1 before any)."""
    offsets = worker.offsets(name)
    return max((int(found["offset"]["seq"]) for found in offsets if found["partition"]["task"] == 0), default=-1)


@pytest.mark.kafka
def test_a_broker_outage_is_unhealthy_within_the_bound_healthy_after_and_loses_nothing(
    own_broker: LocalKafkaBroker, tmp_path: Path, unique_name: str
) -> None:
    assert own_broker.pid is not None
    path = tmp_path / "worker.properties"
    path.write_text(
        format_properties(
            {
                "bootstrap.servers": own_broker.bootstrap_servers,
                "listeners": "http://127.0.0.1:0",
                "offset.storage.file.filename": str(tmp_path / "offsets"),
                "offset.flush.interval.ms": 500,
                "value.converter.schemas.enable": "false",
                "health.broker.unreachable.ms": BOUND_MS,
                **ALLOWED_MODULES,
            }
        ),
        encoding="utf-8",
    )
    worker = RestWorker(StandaloneWorker(read_properties(path), []))
    try:
        wait_until(lambda: health(worker)[0] == 200, "the worker becoming healthy")
        config = {"connector.class": "support.paced_source:PacedSourceConnector", "topic": unique_name}
        worker.create(unique_name, {**config, "pace.ms": "100", "tasks.max": "1"})
        wait_until(lambda: committed_seq(worker, unique_name) >= 30, "the source's first records committed")
        assert metrics(worker) == {"reachable": 1.0, "unreachable_seconds": 0.0}

        os.kill(own_broker.pid, signal.SIGSTOP)
        frozen_at = time.monotonic()
        try:
            code, body = wait_until(lambda: (found := health(worker))[0] != 200 and found, "/health turning unhealthy")
            took_s = time.monotonic() - frozen_at
            assert (code, body["status"]) == (500, "unhealthy"), body
            # past the bound, noticed by the next probe (every quarter of the bound, each waiting as long)
            assert took_s <= BOUND_MS / 1000 + 2 * BOUND_MS / 4000 + 3, took_s
            message = body["message"]
            assert f"cannot reach the Kafka cluster at {own_broker.bootstrap_servers}" in message, message
            assert f"more than health.broker.unreachable.ms={BOUND_MS}" in message, message
            assert "no answer since " in message and "last error: " in message, message
            found = metrics(worker)
            assert found["reachable"] == 0.0 and found["unreachable_seconds"] > BOUND_MS / 1000, found
            while time.monotonic() - frozen_at < OUTAGE_S:  # unhealthy throughout the outage
                assert health(worker)[0] == 500
                time.sleep(0.5)
            made_in_outage = paced_source.MADE[unique_name]
        finally:
            os.kill(own_broker.pid, signal.SIGCONT)

        wait_until(lambda: health(worker) == (200, {"status": "healthy", "message": HEALTHY}), "/health healthy again")
        assert metrics(worker) == {"reachable": 1.0, "unreachable_seconds": 0.0}
        assert worker.states(unique_name) == ("RUNNING", ["RUNNING"])
        wait_until(
            lambda: committed_seq(worker, unique_name) >= made_in_outage - 1,
            "every record made before the broker came back committed",
        )
        seqs = {json.loads(m.value)["seq"] for m in KafkaInspector(own_broker.bootstrap_servers).messages(unique_name)}
        assert set(range(made_in_outage)) <= seqs, sorted(set(range(made_in_outage)) - seqs)[:20]
    finally:
        worker.stop()
