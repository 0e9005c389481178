"""The container image of ``deploy/container/``, built and run with podman as an operator would: the worker image
on the locally made Debian base with Headwater from the session's wheel, a derived image that pip installs a
connector package, run with the host's network against the real broker. ``/health`` answers (and the image's
HEALTHCHECK passes), a connector created through REST runs, and ``podman stop`` (SIGTERM) ends the worker with
exit code 0 after it stopped its connector."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from support.distribution import Distribution
from support.podman import DEPLOY, Podman

pytestmark = [pytest.mark.container, pytest.mark.kafka]

ROOT = Path(__file__).resolve().parents[2]
WORKER_IMAGE = "localhost/headwater-worker:test"
CONNECT_IMAGE = "localhost/headwater-connect-example:test"
CONNECTOR_PROJECT = """\
[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "headwater-example-sequence"
version = "1.0.0"
dependencies = ["headwater"]

[project.entry-points."headwater.connectors"]
example-sequence = "synthetic:SequenceSourceConnector"

[tool.setuptools]
py-modules = ["synthetic"]
"""
"""A connector package as an author would publish one: the repository's example source, found by its entry point."""


def connector_wheel(directory: Path, out: Path) -> Path:
    """The example connector package built into a wheel in ``out``."""
    project = directory / "headwater-example-sequence"
    project.mkdir()
    (project / "pyproject.toml").write_text(CONNECTOR_PROJECT)
    shutil.copy(ROOT / "examples" / "synthetic.py", project / "synthetic.py")
    command = [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation"]
    subprocess.run([*command, "-w", str(out), str(project)], check=True, capture_output=True, timeout=300)
    (wheel,) = out.glob("headwater_example_sequence-*.whl")
    return wheel


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def wait_for(predicate: Callable[[], Any], timeout_s: float, what: str, logs: Callable[[], str]) -> Any:
    deadline = time.monotonic() + timeout_s
    while True:
        result = predicate()
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} not within {timeout_s} s; the container's log:\n{logs()[-6000:]}")
        time.sleep(0.5)


def get(url: str) -> tuple[int, Any]:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status, json.load(response)
    except urllib.error.HTTPError as error:
        return error.code, None
    except OSError:
        return 0, None


@pytest.fixture
def images(podman: Podman, container_base_image: str, headwater_distribution: Distribution, tmp_path: Path) -> str:
    """The worker image and, from it, the derived image with the example connector; the derived image's name."""
    context = tmp_path / "context"
    wheels = context / "wheels"
    wheels.mkdir(parents=True)
    for name in ("Containerfile", "connector.Containerfile"):
        shutil.copy(DEPLOY / name, context / name)
    shutil.copy(headwater_distribution.wheel, wheels)
    connector_wheel(tmp_path, wheels)
    podman.build(WORKER_IMAGE, context / "Containerfile", context, {"BASE_IMAGE": container_base_image})
    podman.build(
        CONNECT_IMAGE,
        context / "connector.Containerfile",
        context,
        {"WORKER_IMAGE": WORKER_IMAGE, "CONNECTORS": "headwater-example-sequence"},
    )
    return CONNECT_IMAGE


@pytest.fixture
def container(podman: Podman, unique_name: str) -> Iterator[str]:
    """A container name, removed after the test."""
    name = f"headwater-{unique_name}"
    yield name
    podman.run("rm", "--force", "--time", "0", name, check=False)


def test_the_image_runs_a_connector_and_stops_on_sigterm(
    podman: Podman,
    images: str,
    container: str,
    kafka_bootstrap: str,
    unique_name: str,
    raw_records: Callable[[str], list[Any]],
    tmp_path: Path,
) -> None:
    (image,) = json.loads(podman.run("image", "inspect", images).stdout)
    assert image["Config"]["User"] == "1000:1000"
    assert "8083/tcp" in image["Config"]["ExposedPorts"]
    assert image["Config"]["StopSignal"] == "SIGTERM"
    assert image["Healthcheck"]["Test"] == ["CMD", "python", "-m", "headwater.runtime.commands.container", "health"]

    worker_file = tmp_path / "worker.properties"  # mounted; the environment sets the rest
    worker_file.write_text(
        f"group.id={unique_name}\n"
        f"config.storage.topic={unique_name}-configs\n"
        f"offset.storage.topic={unique_name}-offsets\n"
        f"status.storage.topic={unique_name}-status\n"
    )
    port = free_port()  # the host's network: a port of its own rather than 8083
    env = {
        "CONNECT_BOOTSTRAP_SERVERS": kafka_bootstrap,
        "CONNECT_LISTENERS": f"http://127.0.0.1:{port}",
        **{f"CONNECT_{kind}_STORAGE_REPLICATION_FACTOR": "1" for kind in ("CONFIG", "OFFSET", "STATUS")},
        **{f"CONNECT_{kind}_STORAGE_PARTITIONS": "1" for kind in ("OFFSET", "STATUS")},
    }
    started = time.monotonic()
    podman.run(
        "run", "--detach", "--name", container, "--network", "host",
        "--volume", f"{worker_file}:/etc/headwater/worker.properties:ro",
        *(arg for key, value in env.items() for arg in ("--env", f"{key}={value}")),
        images,
    )  # fmt: skip

    def logs() -> str:
        done = podman.run("logs", container, check=False)
        return done.stdout + done.stderr

    base = f"http://127.0.0.1:{port}"
    wait_for(lambda: get(f"{base}/health")[0] == 200, 120, "/health answering 200", logs)
    podman.timings["container start to /health 200"] = time.monotonic() - started
    checked = podman.run("healthcheck", "run", container, check=False)
    assert checked.returncode == 0, f"the image's HEALTHCHECK failed: {checked.stdout}{checked.stderr}"
    assert podman.run("exec", container, "id", "-u").stdout.strip() == "1000"

    status, plugins = get(f"{base}/connector-plugins")
    assert status == 200 and "synthetic.SequenceSourceConnector" in {plugin["class"] for plugin in plugins}, plugins
    topic = f"{unique_name}-numbers"
    connector = {"connector.class": "example-sequence", "topic": topic, "max.records": "20", "tasks.max": "1"}
    request = urllib.request.Request(
        f"{base}/connectors",
        json.dumps({"name": "numbers", "config": connector}).encode(),
        {"Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        assert response.status == 201
    wait_for(lambda: len(raw_records(topic)) == 20, 60, f"20 records in {topic}", logs)
    status, connector_status = get(f"{base}/connectors/numbers/status")
    assert connector_status["connector"]["state"] == "RUNNING"
    assert [task["state"] for task in connector_status["tasks"]] == ["RUNNING"]

    stopping = time.monotonic()
    podman.run("stop", "--time", "60", container, timeout_s=90)  # SIGTERM, the image's STOPSIGNAL
    podman.timings["podman stop"] = time.monotonic() - stopping
    state = json.loads(podman.run("inspect", "--format", "{{json .State}}", container).stdout)
    log = logs()
    assert state["ExitCode"] == 0, log[-6000:]
    lines = ["received SIGTERM: stopping", "task numbers-0 stopped", "connector numbers stopped", "worker stopped"]
    assert all(line in log for line in lines), log[-3000:]
    assert sorted(lines, key=log.index) == lines, log[-3000:]  # the worker stopped its connector, then itself
    print("timings:", json.dumps({key: round(value, 1) for key, value in podman.timings.items()}))
