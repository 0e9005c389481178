"""``${provider:path:key}`` references in ``headwater standalone``'s connector files, accepted where REST accepts
them: a typed key holding a reference passes the file check, the connector starts with the resolved values, and the
stored config (``GET /connectors/{c}/config``) keeps the reference; a reference the worker cannot resolve, or whose
value its key does not accept, stops the command naming the file, line, key and reference, never the value
(in-process, on the in-memory transport)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from headwater.runtime.commands.standalone import StandaloneWorker
from headwater.runtime.config.properties import PropertiesError, read_connector_properties, read_properties
from headwater.runtime.rest import RestServer, create_app
from headwater.runtime.transport.memory import MemoryBroker, MemoryTransport
from support.connectors import ALLOWED_MODULES
from support.rest_worker import wait_until
from support.secret_source import STARTED

SECRET = "s3cret-VALUE-7c1"
CLASS = "support.secret_source:SecretSourceConnector"


@pytest.fixture
def files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A worker file with the file and env providers, and a secrets file; the environment names the topic."""
    (tmp_path / "db.properties").write_text(f"password={SECRET}\nport=5432\n", encoding="utf-8")
    monkeypatch.setenv("HW_TEST_TOPIC", "orders")
    monkeypatch.setenv("HW_TEST_NOT_A_PORT", f"{SECRET} is no port")
    (tmp_path / "worker.properties").write_text(
        f"bootstrap.servers=127.0.0.1:1\noffset.storage.file.filename={tmp_path}/connect.offsets\n"
        "config.providers=file,env\nconfig.providers.file.class=file\nconfig.providers.env.class=env\n"
        f"connector.class.allowed.modules={ALLOWED_MODULES['connector.class.allowed.modules']}\n",
        encoding="utf-8",
    )
    return tmp_path


def connector_file(directory: Path, **values: str) -> Path:
    secrets = directory / "db.properties"
    config = {
        "name": "db",
        "connector.class": CLASS,
        "topic": "${env:HW_TEST_TOPIC}",
        "password": f"${{file:{secrets}:password}}",
        "port": f"${{file:{secrets}:port}}",  # an INT key: checked once resolved
        **values,
    }
    path = directory / "db.properties.connector"
    path.write_text("".join(f"{key}={value}\n" for key, value in config.items()), encoding="utf-8")
    return path


def build(directory: Path, connector: Path) -> StandaloneWorker:
    worker_file = read_properties(directory / "worker.properties")
    transport = MemoryTransport(MemoryBroker())
    return StandaloneWorker(worker_file, [read_connector_properties(connector)], transport=transport)


@pytest.fixture
def running(files: Path) -> Iterator[tuple[StandaloneWorker, httpx.Client]]:
    worker = build(files, connector_file(files))
    worker.offset_store.start()
    server = RestServer(create_app(worker.herder), "127.0.0.1", 0)
    server.start()
    try:
        worker.start_connectors()
        with httpx.Client(base_url=server.url, timeout=30) as client:
            yield worker, client
    finally:
        server.stop()
        worker.herder.stop()
        worker.offset_store.stop()


def test_the_connector_starts_with_resolved_values_and_its_config_keeps_the_references(
    running: tuple[StandaloneWorker, httpx.Client], files: Path
) -> None:
    worker, client = running
    assert wait_until(lambda: ("db", 0) in STARTED, "the task starting")
    resolved = {"topic": "orders", "password": SECRET, "port": "5432"}
    assert {key: STARTED["db", None][key] for key in resolved} == resolved
    assert {key: STARTED["db", 0][key] for key in resolved} == resolved
    written = read_connector_properties(connector_file(files)).values
    served = client.get("/connectors/db/config")
    assert served.status_code == 200 and served.json() == written
    assert worker.herder.configs["db"] == written
    assert SECRET not in served.text


@pytest.mark.parametrize(
    ("values", "problem"),
    [
        ({"password": "${file:{dir}/db.properties:user}"}, "cannot resolve ${file:{dir}/db.properties:user}: no key"),
        (
            {"password": "${file:{dir}/missing.properties:password}"},
            "cannot resolve ${file:{dir}/missing.properties:password}: cannot read properties from file",
        ),
        ({"topic": "${env:HW_TEST_MISSING}"}, "cannot resolve ${env:HW_TEST_MISSING}: no key 'HW_TEST_MISSING'"),
        ({"topic": "${vault:secret/db:topic}"}, "names config provider 'vault', which config.providers does not list"),
        ({"port": "${env:HW_TEST_NOT_A_PORT}"}, "Expected value to be an integer"),
    ],
)
def test_a_reference_that_does_not_resolve_to_a_valid_value_stops_the_command_naming_it(
    files: Path, values: dict[str, str], problem: str
) -> None:
    values = {key: value.replace("{dir}", str(files)) for key, value in values.items()}
    problem = problem.replace("{dir}", str(files))
    path = connector_file(files, **values)
    (key,) = values
    line = ["name", "connector.class", "topic", "password", "port"].index(key) + 1
    with pytest.raises(PropertiesError) as raised:
        build(files, path)
    message = str(raised.value)
    assert message.startswith(f"{path}:{line}: {key}: invalid value '{values[key]}': ")
    assert problem in message
    assert SECRET not in message
