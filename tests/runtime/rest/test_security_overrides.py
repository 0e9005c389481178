"""Client overrides an unauthenticated caller could abuse (issue 21), through the REST API of a real worker on the
real broker, as an attacker would send them: a client setting that loads code (``plugin.library.paths``) is refused
with a 400 naming the key and is never loaded, not even by a connector's validate that makes its own clients (the
mirror's); the worker's override policy refuses what it does not allow; a JDBC URL never creates a file. The
attacks on client settings go to a standalone and a distributed worker alike."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from headwater.runtime.commands.distributed import DistributedWorker
from headwater.runtime.config.properties import format_properties, read_properties
from support.distributed_process import cluster_props
from support.rest_worker import RestWorker, wait_until

pytestmark = pytest.mark.kafka

MakeWorker = Callable[..., RestWorker]

SOURCE = {"connector.class": "support.counting_source:CountingSourceConnector", "topic": "overrides"}
POLICY = "connector.client.config.override.policy"
ALLOWED_UNSAFE = "connector.client.config.allowed.unsafe.keys"


@pytest.fixture(params=["standalone", "distributed"])
def make_worker(
    request: pytest.FixtureRequest, make_rest_worker: MakeWorker, kafka_bootstrap: str, tmp_path: Path, unique_name: str
) -> Iterator[MakeWorker]:
    """``make_worker(**worker_props)``: a running standalone worker, or the one worker of a distributed cluster."""
    if request.param == "standalone":
        yield make_rest_worker
        return
    made: list[RestWorker] = []

    def make(**props: Any) -> RestWorker:
        path = tmp_path / f"distributed-{len(made)}.properties"
        path.write_text(format_properties({**cluster_props(kafka_bootstrap, unique_name), **props}), encoding="utf-8")
        made.append(RestWorker(DistributedWorker(read_properties(path))))
        return made[-1]

    yield make
    for worker in made:
        if worker.thread.is_alive():
            worker.stop()


@pytest.fixture
def evil_library(tmp_path: Path) -> tuple[Path, Path]:
    """A shared library that creates a marker file the moment it is loaded (its constructor runs on dlopen)."""
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        pytest.skip("no C compiler to build the library a dlopen would run")
    marker = tmp_path / "dlopened"
    source = tmp_path / "evil.c"
    source.write_text(
        "#include <stdio.h>\n"
        f'__attribute__((constructor)) static void run(void) {{ FILE *f = fopen("{marker}", "w"); '
        "if (f) fclose(f); }\n",
        encoding="utf-8",
    )
    library = tmp_path / "evil.so"
    subprocess.run([compiler, "-shared", "-fPIC", "-o", str(library), str(source)], check=True)
    return library, marker


def mirror(bootstrap: str, **settings: Any) -> dict[str, Any]:
    return {
        "name": "evil-mirror",
        "connector.class": "kafka-mirror",
        "source.bootstrap.servers": bootstrap,
        "source.topic.whitelist": "orders",
        "source.group.id": "evil",
        **settings,
    }


def validate_errors(http: httpx.Client, config: dict[str, Any]) -> dict[str, list[str]]:
    plugin = config["connector.class"]
    response = http.put(f"/connector-plugins/{plugin}/config/validate", json=config)
    assert response.status_code == 200, response.text
    return {info["value"]["name"]: info["value"]["errors"] for info in response.json()["configs"]}


def refused(response: httpx.Response, key: str, *words: str) -> None:
    assert response.status_code == 400, response.text
    message = response.json()["message"]
    assert key in message and all(word in message for word in words), message


def test_a_plugin_library_path_is_refused_and_never_loaded(
    make_worker: MakeWorker, kafka_bootstrap: str, evil_library: tuple[Path, Path]
) -> None:
    library, marker = evil_library
    worker = make_worker()
    http = worker.http
    attack = {**SOURCE, "producer.override.plugin.library.paths": str(library)}
    key = "producer.override.plugin.library.paths"
    refused(http.post("/connectors", json={"name": "evil", "config": attack}), key, ALLOWED_UNSAFE)
    refused(http.put("/connectors/evil/config", json=attack), key, "loads a shared library")
    worker.create("good", SOURCE)
    refused(http.patch("/connectors/good/config", json={key: str(library)}), key)
    assert validate_errors(http, attack)[key] and "loads a shared library" in validate_errors(http, attack)[key][0]
    for mirror_key in ("source.plugin.library.paths", "connector.consumer.plugin.library.paths"):
        config = mirror(kafka_bootstrap, **{mirror_key: str(library)})
        assert "loads a shared library" in validate_errors(http, config)[mirror_key][0]
        refused(http.post("/connectors", json={"name": "evil-mirror", "config": config}), mirror_key)
    wait_until(lambda: http.get("/connectors").json() == ["good"], "the good connector listed, alone")
    assert "producer.override.plugin.library.paths" not in http.get("/connectors/good/config").json()
    assert not marker.exists(), "the worker loaded the library"


def test_the_probe_sees_a_load_when_the_worker_allows_it(
    make_rest_worker: MakeWorker, kafka_bootstrap: str, evil_library: tuple[Path, Path]
) -> None:
    """The check above can fail: with the worker's allowance the mirror's validate hands the path to librdkafka,
    which loads it (and refuses it, as it is no librdkafka plugin)."""
    library, marker = evil_library
    worker = make_rest_worker(**{ALLOWED_UNSAFE: "plugin.library.paths"})
    errors = validate_errors(worker.http, mirror(kafka_bootstrap, **{"source.plugin.library.paths": str(library)}))
    assert marker.exists(), errors
    assert any("conf_init" in error for found in errors.values() for error in found), "it is no librdkafka plugin"


def test_policy_none_refuses_every_override(make_worker: MakeWorker) -> None:
    worker = make_worker(
        **{POLICY: "org.apache.kafka.connect.connector.policy.NoneConnectorClientConfigOverridePolicy"}
    )
    config = {**SOURCE, "producer.override.acks": "all"}
    wording = "The 'None' policy does not allow 'acks' to be overridden in the connector configuration"
    refused(worker.http.post("/connectors", json={"name": "c", "config": config}), "producer.override.acks", wording)
    refused(worker.http.put("/connectors/c/config", json=config), "producer.override.acks", wording)
    assert wording in validate_errors(worker.http, config)["producer.override.acks"][0]
    assert worker.http.get("/connectors").json() == []


def test_policy_principal_allows_the_identity_and_refuses_the_rest(make_worker: MakeWorker) -> None:
    worker = make_worker(**{POLICY: "Principal"})
    identity = {"producer.override.security.protocol": "PLAINTEXT", "producer.override.sasl.mechanism": "PLAIN"}
    worker.create("c", {**SOURCE, **identity})
    wait_until(lambda: worker.http.get("/connectors/c/status").status_code == 200, "a status for c")
    worker.wait_for_states("c", "RUNNING", ["RUNNING"])
    jaas = {"producer.override.sasl.jaas.config": "org.apache.kafka.common.security.plain.PlainLoginModule required;"}
    assert not validate_errors(worker.http, {**SOURCE, **jaas}).get("producer.override.sasl.jaas.config")
    wording = "The 'Principal' policy does not allow 'acks' to be overridden"
    response = worker.http.patch("/connectors/c/config", json={"producer.override.acks": "0"})
    refused(response, "producer.override.acks", wording)
    assert "producer.override.acks" not in worker.http.get("/connectors/c/config").json()


def test_a_jdbc_url_never_creates_a_file(make_rest_worker: MakeWorker, tmp_path: Path) -> None:
    worker = make_rest_worker()
    missing = tmp_path / "created-by-the-worker.db"
    for url, words in [
        (f"sqlite:///{missing}", ("does not exist", "never creates one")),
        (f"sqlite:///{missing}?mode=rwc", ("takes no query parameters",)),
        ("postgresql+psycopg2://u@db/shop?sslkey=/etc/ssh/ssh_host_rsa_key", ("sslkey makes libpq read",)),
    ]:
        config = {"connector.class": "jdbc-cdc", "connection.url": url}
        refused(worker.http.post("/connectors", json={"name": "cdc", "config": config}), "connection.url", *words)
        assert any(words[0] in error for error in validate_errors(worker.http, config)["connection.url"])
    assert not missing.exists()
    assert worker.http.get("/connectors").json() == []
