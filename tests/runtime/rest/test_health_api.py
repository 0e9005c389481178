"""``GET /health`` (KIP-1017): 503 ``starting`` until the worker has started, then 200 ``healthy`` while its herder
answers, 500 ``unhealthy`` when it does not within the deadline or its Kafka cluster has not answered for longer than
``health.broker.unreachable.ms``; served without authentication. In memory, and on a real standalone worker whose
start is held by a connector's ``start`` (a real broker outage: tests/runtime/test_broker_outage.py)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from headwater.runtime.commands.distributed import DistributedWorker
from headwater.runtime.commands.standalone import StandaloneWorker
from headwater.runtime.config.properties import format_properties, read_connector_properties, read_properties
from headwater.runtime.herder.health import HEALTHY, STARTING, UNHEALTHY
from headwater.runtime.transport.reachability import BrokerReachability
from support import slow_start
from support.connectors import ALLOWED_MODULES
from support.distributed_process import cluster_props
from support.rest_worker import MemoryRestWorker, RestWorker, wait_until

MakeMemory = Callable[..., MemoryRestWorker]


def health(worker: MemoryRestWorker | RestWorker) -> tuple[int, dict[str, str]]:
    response = worker.http.get("/health")
    return response.status_code, response.json()


def test_starting_until_ready_then_healthy(make_memory_rest: MakeMemory) -> None:
    worker = make_memory_rest()
    worker.herder.health.starting("starting connector feed from /etc/feed.properties")
    assert health(worker) == (
        503,
        {"status": "starting", "message": f"{STARTING} Starting connector feed from /etc/feed.properties."},
    )
    worker.herder.health.ready()
    assert health(worker) == (200, {"status": "healthy", "message": HEALTHY})


def test_a_herder_held_past_the_deadline_is_unhealthy(make_memory_rest: MakeMemory) -> None:
    worker = make_memory_rest(health_timeout_s=0.2)
    worker.herder.health.ready()
    with worker.herder.lock:  # a request or a loop pass that does not end
        code, body = health(worker)
    assert (code, body["status"]) == (500, "unhealthy"), body
    assert body["message"].startswith(UNHEALTHY)
    assert "held by a request or a loop pass" in body["message"]
    assert health(worker)[0] == 200


def test_a_loop_that_stops_completing_passes_is_unhealthy(make_memory_rest: MakeMemory) -> None:
    worker = make_memory_rest(health_timeout_s=0.2)
    worker.herder.health.ready()
    worker.herder.tick()  # the herder is driven by a loop from now on, which then stops
    code, body = health(worker)
    assert (code, body["status"]) == (500, "unhealthy"), body
    assert "loop has not begun a pass" in body["message"]

    stop = threading.Event()

    def loop() -> None:
        while not stop.wait(0.01):
            worker.herder.tick()

    looping = threading.Thread(target=loop, name="herder-loop")
    looping.start()
    try:
        assert health(worker) == (200, {"status": "healthy", "message": HEALTHY})
    finally:
        stop.set()
        looping.join()


def test_a_cluster_unreachable_past_the_bound_is_unhealthy_until_it_answers(make_memory_rest: MakeMemory) -> None:
    worker = make_memory_rest()
    worker.herder.health.ready()
    now = [0.0]
    broker = BrokerReachability("kafka:9092", 5000, lambda: now[0], lambda: 1_800_000_000 + now[0])
    worker.worker.reachability = broker

    def broker_metrics() -> tuple[float, float]:
        prefix = "headwater_connect_worker_broker_"
        text = worker.http.get("/metrics").text
        lines = dict(line.split(" ") for line in text.splitlines() if line.startswith(prefix))
        return float(lines[f"{prefix}reachable"]), float(lines[f"{prefix}unreachable_seconds"])

    now[0] = 4.0
    broker.failed("Connect to ipv4#10.0.0.1:9092 failed: Connection refused")
    assert health(worker) == (200, {"status": "healthy", "message": HEALTHY}), "within the bound"
    assert broker_metrics() == (1.0, 4.0)
    now[0] = 6.0
    code, body = health(worker)
    assert (code, body["status"]) == (500, "unhealthy"), body
    assert body["message"] == (
        "The worker cannot reach the Kafka cluster at kafka:9092 (bootstrap.servers): no answer since "
        "2027-01-15T08:00:00+00:00 (6.0 s, more than health.broker.unreachable.ms=5000); last error: Connect to "
        "ipv4#10.0.0.1:9092 failed: Connection refused."
    )
    assert broker_metrics() == (0.0, 6.0)
    broker.answered()
    assert health(worker) == (200, {"status": "healthy", "message": HEALTHY})
    assert broker_metrics() == (1.0, 0.0)


def test_health_needs_no_authentication(make_memory_rest: MakeMemory, tmp_path: Path) -> None:
    credentials = tmp_path / "credentials.properties"
    credentials.write_text("admin: s3cret\n", encoding="utf-8")
    worker = make_memory_rest(rest_auth_basic_credentials_file=str(credentials))
    worker.herder.health.ready()
    assert worker.http.get("/connectors").status_code == 401
    assert worker.http.get("/health").status_code == 200
    assert worker.http.get("/health/").status_code == 200
    assert worker.http.get("/connectors", auth=("admin", "s3cret")).status_code == 200


# ---- a real standalone worker ----------------------------------------------------------------------------------


@pytest.fixture
def held_worker(kafka_bootstrap: str, tmp_path: Path, unique_name: str) -> Iterator[RestWorker]:
    """A standalone worker started with a connector file whose connector's ``start`` waits for its gate, and
    ``connector.start.wait.ms`` long enough that the worker waits for it before it counts as started."""
    worker_file = tmp_path / "worker.properties"
    worker_file.write_text(
        format_properties(
            {
                "bootstrap.servers": kafka_bootstrap,
                "listeners": "http://127.0.0.1:0",
                "offset.storage.file.filename": str(tmp_path / "offsets"),
                "connector.start.wait.ms": 120_000,
                "task.shutdown.graceful.timeout.ms": 1000,
                **ALLOWED_MODULES,
            }
        ),
        encoding="utf-8",
    )
    connector_file = tmp_path / "held.properties"
    connector_file.write_text(
        format_properties({"name": unique_name, "connector.class": "support.slow_start:SlowStartSource"}),
        encoding="utf-8",
    )
    standalone = StandaloneWorker(read_properties(worker_file), [read_connector_properties(connector_file)])
    worker = RestWorker(standalone)
    yield worker
    slow_start.gate(unique_name).set()
    worker.stop()


@pytest.mark.kafka
def test_a_standalone_worker_is_starting_until_its_connectors_started(
    held_worker: RestWorker, unique_name: str
) -> None:
    def starting_the_connector() -> dict[str, str] | None:
        code, body = health(held_worker)
        assert (code, body["status"]) == (503, "starting"), body
        return body if f"Starting connector {unique_name} from" in body["message"] else None

    body = wait_until(starting_the_connector, "the health check naming the connector being started")
    assert body["message"].startswith(STARTING), body
    assert not slow_start.returned(unique_name).is_set()

    slow_start.gate(unique_name).set()
    wait_until(lambda: health(held_worker)[0] == 200, "the worker becoming healthy")
    assert health(held_worker) == (200, {"status": "healthy", "message": HEALTHY})
    assert held_worker.status(unique_name)["connector"]["state"] == "RUNNING"


@pytest.mark.kafka
def test_a_distributed_worker_is_starting_until_its_first_pass(
    kafka_bootstrap: str, tmp_path: Path, unique_name: str
) -> None:
    path = tmp_path / "worker.properties"
    path.write_text(format_properties(cluster_props(kafka_bootstrap, unique_name)), encoding="utf-8")
    distributed = DistributedWorker(read_properties(path))
    gate = threading.Event()
    tick = distributed.herder.tick

    def held_tick(timeout_s: float = 0.05) -> None:  # the first pass waits for the gate: not joined yet
        gate.wait()
        tick(timeout_s)

    distributed.herder.tick = held_tick  # type: ignore[method-assign]
    worker = RestWorker(distributed)
    try:
        code, body = health(worker)
        assert (code, body) == (503, {"status": "starting", "message": f"{STARTING} Joining group {unique_name}."})
        gate.set()
        wait_until(lambda: health(worker)[0] == 200, "the worker becoming healthy")
        assert health(worker) == (200, {"status": "healthy", "message": HEALTHY})
    finally:
        gate.set()
        worker.stop()
