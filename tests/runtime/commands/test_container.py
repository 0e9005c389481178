"""The image's entrypoint without a container (:mod:`headwater.runtime.commands.container`): ``CONNECT_*`` variables to
worker keys by the Apache and Confluent images' rule, their precedence over a mounted file, bad names refused with
the variable named, secret values kept out of what it prints and logs; and, on the real broker, environment ->
worker -> ``/health`` -> a connector -> SIGTERM -> exit 0."""

from __future__ import annotations

import http.server
import json
import os
import socket
import subprocess
import sys
import threading
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from headwater.runtime.commands import container
from headwater.runtime.commands.container import (
    DEFAULT_WORKER_CONFIG,
    WORKER_CONFIG_ENV,
    check_health,
    health_url,
    main,
    property_name,
    variable_name,
    worker_properties,
)
from headwater.runtime.commands.distributed import DistributedWorker
from headwater.runtime.commands.standalone import STANDALONE_CONFIG
from headwater.runtime.config.properties import PropertiesError
from headwater.runtime.distributed import DISTRIBUTED_CONFIG
from support.process import WorkerProcess

SECRET = "s3cret-value-never-shown"


@pytest.mark.parametrize(
    ("variable", "key"),
    [
        ("CONNECT_BOOTSTRAP_SERVERS", "bootstrap.servers"),
        ("CONNECT_GROUP_ID", "group.id"),
        ("CONNECT_CONFIG_STORAGE_REPLICATION_FACTOR", "config.storage.replication.factor"),
        ("CONNECT_PRODUCER_OVERRIDE__POLICY", "producer.override_policy"),
        ("CONNECT_CONSUMER_CLIENT___RACK", "consumer.client-rack"),
        ("CONNECT_A__B___C_D", "a_b-c.d"),
        ("CONNECT_OFFSET_FLUSH_INTERVAL_MS", "offset.flush.interval.ms"),
    ],
)
def test_a_variable_sets_the_key_the_images_rule_gives(variable: str, key: str) -> None:
    assert property_name(variable) == key
    assert variable_name(key) == variable


def test_every_worker_key_has_a_variable_that_sets_it() -> None:
    keys = {key.name for key in [*DISTRIBUTED_CONFIG, *STANDALONE_CONFIG]}
    assert [key for key in sorted(keys) if property_name(variable_name(key)) != key] == []


@pytest.mark.parametrize(
    "variable",
    ["CONNECT_bootstrap_servers", "CONNECT_A____B", "CONNECT__A", "CONNECT_A_", "CONNECT_", "CONNECT_A.B", "CONNECT_É"],
)
def test_a_bad_name_is_refused_naming_the_variable(variable: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(PropertiesError, match=f"environment variable {variable}: names no worker key"):
        property_name(variable)
    assert main(["distributed"], {variable: "x", "CONNECT_GROUP_ID": "g"}) == 2
    error = capsys.readouterr().err
    assert error.startswith(f"headwater distributed: error: environment variable {variable}: names no worker key")
    assert "__ for '_'" in error


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_the_environment_overrides_the_file_which_overrides_the_image(tmp_path: Path) -> None:
    file = write(tmp_path / "worker.properties", "group.id=from-file\nlisteners=http://0.0.0.0:9000\nx.y=1\n")
    environ = {WORKER_CONFIG_ENV: str(file), "CONNECT_GROUP_ID": "from-env", "CONNECT_BOOTSTRAP_SERVERS": "k:9092"}
    properties = worker_properties(environ)
    assert properties.config.values == {
        "listeners": "http://0.0.0.0:9000",
        "group.id": "from-env",
        "x.y": "1",
        "bootstrap.servers": "k:9092",
    }
    assert properties.origins == {
        "listeners": "file",
        "group.id": "CONNECT_GROUP_ID",
        "x.y": "file",
        "bootstrap.servers": "CONNECT_BOOTSTRAP_SERVERS",
    }
    assert properties.config.lines == {"listeners": 2, "x.y": 3}


def test_without_a_file_the_image_default_listener_serves_the_exposed_port() -> None:
    environ = {WORKER_CONFIG_ENV: "", "CONNECT_GROUP_ID": "g"}
    if Path(DEFAULT_WORKER_CONFIG).exists():
        pytest.skip(f"{DEFAULT_WORKER_CONFIG} exists on this machine")
    properties = worker_properties(environ)
    assert properties.file is None
    assert properties.config.values == {"listeners": "http://0.0.0.0:8083", "group.id": "g"}
    assert properties.origins["listeners"] == "default"


def test_a_named_file_that_is_missing_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(PropertiesError, match=f"no such file \\({WORKER_CONFIG_ENV} names it\\)"):
        worker_properties({WORKER_CONFIG_ENV: str(tmp_path / "missing.properties")})


def test_config_errors_say_where_each_key_was_set(tmp_path: Path) -> None:
    file = write(tmp_path / "worker.properties", "bootstrap.servers=k:9092\nsession.timeout.ms=soon\n")
    environ = {WORKER_CONFIG_ENV: str(file), "CONNECT_OFFSET_FLUSH_INTERVAL_MS": "abc", "CONNECT_GROUP_ID": "g"}
    properties = worker_properties(environ)
    with pytest.raises(PropertiesError) as raised:
        properties.build(DistributedWorker)
    problems = [str(error) for error in raised.value.errors]
    assert (
        "environment variable CONNECT_OFFSET_FLUSH_INTERVAL_MS: offset.flush.interval.ms: invalid value 'abc'"
        in problems[0]
    )
    assert f"{file}:2: session.timeout.ms: invalid value 'soon'" in str(raised.value)
    assert (
        "worker config: config.storage.topic: Missing required configuration with no default value "
        f"(set it with CONNECT_CONFIG_STORAGE_TOPIC, or in {file})"
    ) in problems


def test_secret_values_are_neither_printed_nor_logged(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    file = write(tmp_path / "worker.properties", f"producer.ssl.key.password={SECRET}\n")
    environ = {
        WORKER_CONFIG_ENV: str(file),
        "CONNECT_LISTENERS_HTTPS_SSL_KEY_PASSWORD": SECRET,
        "CONNECT_PRODUCER_SASL_JAAS_CONFIG": SECRET,
        "CONNECT_GROUP_ID": "g",
    }
    assert main(["properties"], environ) == 0
    printed = capsys.readouterr().out
    assert printed.splitlines() == [
        "group.id=g",
        "listeners=http://0.0.0.0:8083",
        "listeners.https.ssl.key.password=[hidden]",
        "producer.sasl.jaas.config=[hidden]",
        "producer.ssl.key.password=[hidden]",
    ]
    caplog.set_level("DEBUG")
    topics = {f"CONNECT_{kind}_STORAGE_TOPIC": kind.lower() for kind in ("CONFIG", "OFFSET", "STATUS")}
    environ = {**environ, **topics, "CONNECT_BOOTSTRAP_SERVERS": "127.0.0.1:1"}
    # the worker refuses TLS settings on an http listener, and the Java-only JAAS setting, both at once
    assert container.run("distributed", [], environ) == 2
    said = capsys.readouterr()
    assert "CONNECT_LISTENERS_HTTPS_SSL_KEY_PASSWORD" in caplog.text
    assert said.err.startswith("headwater distributed: error: ")
    assert (
        "environment variable CONNECT_LISTENERS_HTTPS_SSL_KEY_PASSWORD: "
        "listeners.https.ssl.key.password: invalid value [hidden]: TLS settings are given but the listener"
    ) in said.err
    assert "environment variable CONNECT_PRODUCER_SASL_JAAS_CONFIG: producer.sasl.jaas.config: a Java" in said.err
    assert SECRET not in caplog.text + said.out + said.err


def test_standalone_takes_connector_files_and_directories(tmp_path: Path) -> None:
    (tmp_path / "connectors").mkdir()
    write(tmp_path / "connectors" / "b.json", json.dumps({"name": "b", "config": {"connector.class": "x"}}))
    write(tmp_path / "connectors" / "a.properties", "name=a\nconnector.class=x\n")
    write(tmp_path / "connectors" / "notes.txt", "not a connector")
    single = write(tmp_path / "c.properties", "name=c\nconnector.class=x\n")
    files = container.connector_files([str(tmp_path / "connectors"), str(single)])
    assert [file.values["name"] for file in files] == ["a", "b", "c"]


@pytest.mark.parametrize(
    ("listeners", "url"),
    [
        ("http://0.0.0.0:8083", "http://127.0.0.1:8083/health"),
        ("https://:8443", "https://127.0.0.1:8443/health"),
        ("http://[::]:8083", "http://[::1]:8083/health"),
        ("http://worker-1.example:9000", "http://worker-1.example:9000/health"),
    ],
)
def test_the_health_check_asks_the_workers_own_listener(listeners: str, url: str) -> None:
    assert health_url({"listeners": listeners}) == url


@pytest.fixture
def health_server() -> Iterator[Callable[[int], str]]:
    """A server whose ``/health`` answers the status code a test sets; the URL for a code."""
    answer = {"code": 200}

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = b'{"status":"starting"}'
            self.send_response(answer["code"])
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()

    def url(code: int) -> str:
        answer["code"] = code
        return f"http://127.0.0.1:{server.server_address[1]}/health"

    yield url
    server.shutdown()
    server.server_close()


def test_only_a_200_is_healthy(health_server: Callable[[int], str]) -> None:
    assert check_health(health_server(200)) == (True, '200 {"status":"starting"}')
    assert check_health(health_server(503)) == (False, '503 {"status":"starting"}')
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
    healthy, said = check_health(f"http://127.0.0.1:{port}/health", timeout_s=2)
    assert not healthy and "refused" in said


# ---- the entrypoint as a process, on the real broker -------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class EntrypointProcess(WorkerProcess):
    """``python -m headwater.runtime.commands.container distributed`` with the worker file at
    ``HEADWATER_WORKER_CONFIG`` and the rest of its config in ``CONNECT_*`` variables (``env``)."""

    def command(self) -> list[str]:
        return [sys.executable, "-m", "headwater.runtime.commands.container", "distributed"]


def get_json(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=10) as response:
        return json.load(response)


@pytest.mark.kafka
def test_the_entrypoint_runs_a_worker_from_the_environment_until_sigterm(
    tmp_path: Path, kafka_bootstrap: str, unique_name: str, raw_records: Callable[[str], list[Any]]
) -> None:
    port = free_port()
    file_props = {  # the mounted file; the environment overrides its bootstrap.servers
        "bootstrap.servers": "127.0.0.1:1",
        "group.id": unique_name,
        "config.storage.topic": f"{unique_name}-configs",
        "offset.storage.topic": f"{unique_name}-offsets",
        "status.storage.topic": f"{unique_name}-status",
    }
    env = {
        WORKER_CONFIG_ENV: str(tmp_path / "worker.properties"),
        "CONNECT_BOOTSTRAP_SERVERS": kafka_bootstrap,
        "CONNECT_LISTENERS": f"http://127.0.0.1:{port}",
        "CONNECT_CONFIG_STORAGE_REPLICATION_FACTOR": "1",
        "CONNECT_OFFSET_STORAGE_REPLICATION_FACTOR": "1",
        "CONNECT_STATUS_STORAGE_REPLICATION_FACTOR": "1",
        "CONNECT_OFFSET_STORAGE_PARTITIONS": "1",
        "CONNECT_STATUS_STORAGE_PARTITIONS": "1",
        "CONNECT_PRODUCER_SSL_KEY_PASSWORD": SECRET,  # unused by a plaintext producer: only to be kept secret
    }
    worker = EntrypointProcess(tmp_path, file_props, {}, env=env)
    worker.worker_props.pop("offset.storage.file.filename")
    worker.worker_props.pop("listeners")

    def probe() -> bool:
        done = subprocess.run(
            [sys.executable, "-m", "headwater.runtime.commands.container", "health"],
            env={**os.environ, **env},
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
        return done.returncode == 0 and "200" in done.stdout

    with worker.start():
        worker.wait_until(probe, timeout=90, interval=0.5, message="the health check to pass")
        topic = f"{unique_name}-numbers"
        config = {"connector.class": "sequence-source", "topic": topic, "max.records": "20", "tasks.max": "1"}
        body = json.dumps({"name": "numbers", "config": config}).encode()
        request = urllib.request.Request(
            f"http://127.0.0.1:{port}/connectors", body, {"Content-Type": "application/json"}, method="POST"
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            assert response.status == 201
        worker.wait_until(lambda: len(raw_records(topic)) == 20, timeout=60, interval=0.5, message="20 records")
        status = get_json(f"http://127.0.0.1:{port}/connectors/numbers/status")
        assert status["connector"]["state"] == "RUNNING"
        assert [task["state"] for task in status["tasks"]] == ["RUNNING"]
        assert worker.terminate(timeout=60) == 0
    log = worker.log_text()
    worker.assert_log_contains("CONNECT_BOOTSTRAP_SERVERS", "received SIGTERM: stopping", "distributed worker stopped")
    assert SECRET not in log
