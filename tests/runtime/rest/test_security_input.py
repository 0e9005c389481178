"""Input that cannot hurt the worker, and secrets that never echo (issue 21), through the REST API of a standalone
herder over the in-memory transport: secret values are ``[hidden]`` in every response, status trace and log line;
a ``[hidden]`` sent back keeps the stored value; bad connector names and connector classes are 400s."""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from headwater.runtime.commands.standalone import StandaloneWorker
from headwater.runtime.config.properties import PropertiesError
from headwater.runtime.config.secrets import HIDDEN, is_secret, password_keys
from headwater.runtime.herder import StandaloneHerder
from headwater.runtime.plugins import import_allowed
from headwater.runtime.rest import RestServer, create_app
from headwater.runtime.storage.offsets import MemoryOffsetStore
from headwater.runtime.transport.memory import MemoryBroker, MemoryTransport
from headwater.runtime.worker import Worker
from support.rest_worker import wait_until

ALLOWED = "connector.class.allowed.modules"
SECRET = "hunter2-s3cr3t"
JAAS = f'org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="{SECRET}-jaas";'
CONFIG = {
    "connector.class": "support.leaky_source:SecretSource",
    "database.user": "app",
    "database.password": SECRET,
    "source.sasl.jaas.config": JAAS,
    "source.ssl.key.password": f"{SECRET}-key",
    "connection.string": f"db://app:{SECRET}-url@host",
}
SECRET_KEYS = ["database.password", "source.sasl.jaas.config", "source.ssl.key.password", "connection.string"]


@pytest.fixture
def herder() -> Iterator[StandaloneHerder]:
    worker = Worker({ALLOWED: "support"}, MemoryTransport(MemoryBroker()), MemoryOffsetStore())
    herder = StandaloneHerder(worker)
    yield herder
    herder.stop()


@pytest.fixture
def http(herder: StandaloneHerder) -> Iterator[httpx.Client]:
    server = RestServer(create_app(herder), "127.0.0.1", 0)
    server.start()
    with httpx.Client(base_url=server.url, timeout=30) as client:
        yield client
    server.stop()


def every_get(http: httpx.Client, name: str) -> dict[str, str]:
    """The body of every GET endpoint the served OpenAPI spec lists, for connector ``name`` and its task 0, by
    path; the expanded connector list too."""
    paths = [path for path, methods in http.get("/openapi.json").json()["paths"].items() if "get" in methods]
    assert "/connectors/{connector}/config" in paths and "/connectors/{connector}/tasks" in paths
    filled = [path.replace("{connector}", name).replace("{task}", "0") for path in paths]
    filled = [path.replace("{plugin}", CONFIG["connector.class"]).replace("{logger}", "root") for path in filled]
    filled += ["/connectors?expand=info&expand=status"]
    assert not [path for path in filled if "{" in path], "a GET endpoint with a parameter this test does not fill"
    return {path: http.get(path).text for path in filled}


@pytest.mark.parametrize("fail_in", ["", "start", "poll"])
def test_a_secret_never_shows(http: httpx.Client, herder: StandaloneHerder, caplog: Any, fail_in: str) -> None:
    caplog.set_level(logging.INFO)
    created = http.post("/connectors", json={"name": "c", "config": {**CONFIG, "fail.in": fail_in}})
    assert created.status_code == 201, created.text
    if fail_in == "poll":
        herder.worker.step()
    if fail_in:
        failed = "connector" if fail_in == "start" else "task"
        wait_until(lambda: "FAILED" in http.get("/connectors/c/status").text, f"the {failed} failing")
        assert "cannot connect" in http.get("/connectors/c/status").text or fail_in == "poll"
    bodies = {"POST /connectors": created.text, **every_get(http, "c")}
    validated = http.put("/connector-plugins/support.leaky_source:SecretSource/config/validate", json=CONFIG)
    bodies["validate"] = validated.text
    bodies["PUT"] = http.put("/connectors/c/config", json={**CONFIG, "fail.in": fail_in}).text
    bodies["PATCH"] = http.patch("/connectors/c/config", json={"database.user": "other"}).text
    for where, body in bodies.items():
        assert SECRET not in body, where
    assert all(http.get("/connectors/c/config").json()[key] == HIDDEN for key in SECRET_KEYS)
    tasks = http.get("/connectors/c/tasks").json()
    assert all(task["config"][key] == HIDDEN for task in tasks for key in SECRET_KEYS)
    assert len(tasks) == (0 if fail_in == "start" else 1)
    shown = {info["value"]["name"]: info["value"]["value"] for info in validated.json()["configs"]}
    assert shown["database.password"] == HIDDEN
    assert SECRET not in caplog.text
    assert "starting with" in caplog.text and HIDDEN in caplog.text  # the connector's own line, scrubbed
    assert herder.connector_config("c")["database.password"] == SECRET  # hidden from view, not lost


def test_password_keys_are_known_before_their_module_is_imported(
    http: httpx.Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A stored connector's class is loaded to know its PASSWORD keys (a distributed worker may not run it yet); a
    request's class is loaded, when allowed, before a [hidden] in it is looked at."""
    assert http.put("/connectors/c/config", json=CONFIG).status_code == 201
    monkeypatch.delitem(sys.modules, "support.leaky_source")
    assert http.get("/connectors/c/config").json()["connection.string"] == HIDDEN
    monkeypatch.delitem(sys.modules, "support.leaky_source")
    new = http.put("/connectors/d/config", json={**CONFIG, "connection.string": HIDDEN})
    assert new.status_code == 400 and "connection.string" in new.json()["message"], new.text


def test_a_config_error_for_a_secret_does_not_quote_it(http: httpx.Client, caplog: Any) -> None:
    refused = http.post("/connectors", json={"name": "c", "config": {**CONFIG, "fail.in": "validate"}})
    assert refused.status_code == 400
    assert "database.password" in refused.text and "refused" in refused.text
    assert SECRET not in refused.text
    validated = http.put(
        "/connector-plugins/support.leaky_source:SecretSource/config/validate", json={**CONFIG, "fail.in": "validate"}
    )
    errors = {info["value"]["name"]: info["value"]["errors"] for info in validated.json()["configs"]}
    unknown = {**CONFIG, "other.sasl.password": SECRET}  # no definition: shown with its error, value hidden
    shown = http.put("/connector-plugins/support.leaky_source:SecretSource/config/validate", json=unknown).json()
    assert [info["value"]["value"] for info in shown["configs"] if info["value"]["name"] == "other.sasl.password"] == [
        HIDDEN
    ]
    assert errors["database.password"] == [
        f"Invalid value '{HIDDEN}' for configuration database.password: the database refused it"
    ]
    assert SECRET not in validated.text and SECRET not in caplog.text


def test_hidden_sent_back_keeps_the_stored_value(http: httpx.Client, herder: StandaloneHerder) -> None:
    assert http.put("/connectors/c/config", json=CONFIG).status_code == 201
    read = http.get("/connectors/c/config").json()
    assert http.put("/connectors/c/config", json={**read, "database.user": "b"}).status_code == 200
    assert http.patch("/connectors/c/config", json={"database.password": HIDDEN}).status_code == 200
    stored = herder.connector_config("c")
    assert {key: stored[key] for key in SECRET_KEYS} == {key: CONFIG[key] for key in SECRET_KEYS}
    assert stored["database.user"] == "b"
    new = http.put("/connectors/d/config", json={**CONFIG, "database.password": HIDDEN})
    assert new.status_code == 400 and "database.password" in new.json()["message"], new.text
    missing = http.put("/connectors/c/config", json={**CONFIG, "source.sasl.password": HIDDEN})
    assert missing.status_code == 400 and "source.sasl.password" in missing.json()["message"], missing.text


@pytest.mark.parametrize(
    "key",
    [
        "sasl.jaas.config",
        "producer.override.sasl.jaas.config",
        "consumer.override.ssl.keystore.password",
        "source.cluster.sasl.password",
        "ssl.truststore.password",
        "sasl.oauthbearer.client.secret",
        "basic.auth.user.info",
        "ssl.key.pem",
        "ssl_key",
        "spark.hadoop.fs.s3a.secret.key",
        "db.password",
    ],
)
def test_well_known_secret_names(key: str) -> None:
    assert is_secret(key)


@pytest.mark.parametrize("key", ["sasl.mechanism", "ssl.keystore.location", "database.user", "passwords.enabled"])
def test_other_names_are_not_secret(key: str) -> None:
    assert not is_secret(key)


@pytest.mark.parametrize(
    ("name", "named"),
    [
        ("a/b", "'/'"),
        ("a\\b", "'\\'"),
        ("a\nb", "U+000A"),
        ("a\tb", "U+0009"),
        ("a\x00b", "U+0000"),
        ("x" * 242, "limit is 241"),
    ],
)
def test_bad_connector_names_are_refused(http: httpx.Client, herder: StandaloneHerder, name: str, named: str) -> None:
    config = {"connector.class": CONFIG["connector.class"]}
    posted = http.post("/connectors", json={"name": name, "config": config})
    assert posted.status_code == 400 and named in posted.json()["message"], posted.text
    assert herder.connectors() == []


def test_a_name_with_a_slash_cannot_come_through_put(http: httpx.Client, herder: StandaloneHerder) -> None:
    config = {"connector.class": CONFIG["connector.class"], "name": "a/b"}
    for path in ("/connectors/a%2Fb/config", "/connectors/a/config"):
        put = http.put(path, json=config)
        assert 400 <= put.status_code < 500, put.text
    assert herder.connectors() == []


def test_an_empty_name_is_refused(http: httpx.Client, herder: StandaloneHerder) -> None:
    posted = http.post("/connectors", json={"name": "  ", "config": {"connector.class": CONFIG["connector.class"]}})
    assert posted.status_code == 400 and "empty" in posted.json()["message"], posted.text
    assert herder.connectors() == []


def test_a_name_at_the_limit_is_taken(http: httpx.Client) -> None:
    posted = http.post(
        "/connectors", json={"name": "x" * 241, "config": {"connector.class": CONFIG["connector.class"]}}
    )
    assert posted.status_code == 201, posted.text


@pytest.mark.parametrize(
    "spec",
    [
        "..x",
        "a..b",
        ":",
        "x:",
        ".",
        "x" * 5000,
        "a." * 3000 + "B",
        "support.leaky_source:nothing",
        "headwater.sdk.connector:SourceConnector",
        "headwater.sdk.records:SourceRecord",
        "support.broken_import:Anything",
        "support.leaky_source:UnmakeableSource",
    ],
)
def test_every_malformed_connector_class_is_a_400(http: httpx.Client, spec: str) -> None:
    posted = http.post("/connectors", json={"name": "c", "config": {"connector.class": spec}})
    assert posted.status_code == 400, posted.text
    put = http.put("/connectors/c/config", json={"connector.class": spec})
    assert put.status_code == 400, put.text
    validated = http.put(
        "/connector-plugins/support.leaky_source:SecretSource/config/validate", json={"connector.class": spec}
    )
    assert validated.status_code in (200, 400), validated.text


@pytest.mark.parametrize(
    ("connector", "message"),
    [
        (
            "name=a/b\nconnector.class=sequence-source\ntopic=t\n",
            "c.properties:1: name: Connector name 'a/b' contains '/'",
        ),
        (
            f"name=c\nconnector.class={CONFIG['connector.class']}\ndatabase.password={SECRET}\nfail.in=validate\n",
            f"c.properties:3: database.password: Invalid value '{HIDDEN}' for configuration database.password: the "
            "database refused it",
        ),
    ],
)
def test_standalone_files_are_checked_the_same_way(tmp_path: Path, connector: str, message: str) -> None:
    worker = tmp_path / "worker.properties"
    worker.write_text(f"bootstrap.servers=127.0.0.1:1\n{ALLOWED}=support\n", encoding="utf-8")
    (tmp_path / "c.properties").write_text(connector, encoding="utf-8")
    with pytest.raises(PropertiesError) as raised:
        StandaloneWorker.from_paths(worker, [tmp_path / "c.properties"])
    assert str(raised.value).startswith(f"{tmp_path}/{message}")
    assert SECRET not in str(raised.value)


@pytest.fixture
def default_http() -> Iterator[httpx.Client]:
    """The REST API of a worker with the default connector.class.allowed.modules (none)."""
    herder = StandaloneHerder(Worker({}, MemoryTransport(MemoryBroker()), MemoryOffsetStore()))
    server = RestServer(create_app(herder), "127.0.0.1", 0)
    server.start()
    with httpx.Client(base_url=server.url, timeout=30) as client:
        yield client
    server.stop()
    herder.stop()


def test_by_default_a_request_imports_no_module(default_http: httpx.Client) -> None:
    spec = "support.never_imported:NeverImported"
    posted = default_http.post("/connectors", json={"name": "c", "config": {"connector.class": spec}})
    assert posted.status_code == 400, posted.text
    assert "add support.never_imported (or a package above it) there to allow it" in posted.json()["message"]
    assert ALLOWED in posted.json()["message"]
    validated = default_http.put(f"/connector-plugins/{spec}/config/validate", json={"connector.class": spec})
    assert validated.json()["error_count"] >= 1, validated.text
    assert default_http.get(f"/connector-plugins/{spec}/config").status_code == 404
    assert "support.never_imported" not in sys.modules
    installed = {"connector.class": "sequence-source", "topic": "t"}  # an installed connector needs no allowing
    assert default_http.post("/connectors", json={"name": "s", "config": installed}).status_code == 201


@pytest.mark.parametrize(
    ("allowed", "module", "imported"),
    [
        ("support", "support.leaky_source", True),
        ("support.leaky_source", "support.leaky_source", True),
        ("*", "anything.at.all", True),
        ("support", "supportive.module", False),
        ("support.secret", "support.leaky_source", False),
        ("", "support.leaky_source", False),
    ],
)
def test_allowed_modules_are_packages_or_modules(allowed: str, module: str, imported: bool) -> None:
    assert import_allowed(module, [found for found in allowed.split(",") if found]) is imported


def test_the_reference_connectors_secrets() -> None:
    """JDBC-CDC's connection.url (it may carry the password) is PASSWORD; the mirror's and the Spark sink's client
    secrets are passed through under prefixes and caught by name."""
    assert "connection.url" in password_keys({"connector.class": "jdbc-cdc"}, stored=True)
    assert is_secret("source.sasl.jaas.config") and is_secret("connector.consumer.ssl.keystore.password")
    assert is_secret("spark.hadoop.fs.s3a.secret.key") and not is_secret("spark.hadoop.fs.s3a.access.key")


def test_a_bad_log_call_still_fails_only_in_the_handler(http: httpx.Client, caplog: Any) -> None:
    """Scrubbing formats a record's message when it is made; a format error is left to the handler, as before."""
    assert http.put("/connectors/c/config", json=CONFIG).status_code == 201
    bad = logging.getLogger("headwater.test").makeRecord("headwater.test", logging.WARNING, "f", 1, "%d", ("x",), None)
    assert (bad.msg, bad.args) == ("%d", ("x",))
    logging.getLogger("headwater.test").warning("with %s", SECRET)
    assert SECRET not in caplog.text and f"with {HIDDEN}" in caplog.text


@pytest.mark.parametrize("key", ["key.converter", "value.converter", "header.converter"])
def test_a_converter_import_path_is_refused_by_default_before_it_is_imported(
    default_http: httpx.Client, key: str
) -> None:
    """A converter named by import path goes through connector.class.allowed.modules too: a connector config must
    not make the worker import a module through its converters."""
    spec = "support.never_imported:NeverImported"
    config = {"connector.class": "sequence-source", "topic": "t", key: spec, f"{key}.some.setting": "x"}
    posted = default_http.post("/connectors", json={"name": "c", "config": config})
    assert posted.status_code == 400, posted.text
    message = posted.json()["message"]
    assert f"Invalid value {spec!r} for configuration {key}" in message
    assert "Converter classes are not imported from module support.never_imported" in message
    assert "add support.never_imported (or a package above it) there to allow it" in message and ALLOWED in message
    validated = default_http.put("/connector-plugins/sequence-source/config/validate", json=config).json()
    errors = {info["value"]["name"]: info["value"]["errors"] for info in validated["configs"]}
    assert any("support.never_imported" in error for error in errors[key]), errors
    assert default_http.put("/connectors/c/config", json=config).status_code == 400
    assert "support.never_imported" not in sys.modules
    assert default_http.get("/connectors").json() == []


def test_an_allowed_or_built_in_converter_is_accepted(http: httpx.Client) -> None:
    config = {
        **CONFIG,
        "key.converter": "org.apache.kafka.connect.storage.StringConverter",
        "value.converter": "support.errant_sink.FlakyConverter",
    }
    assert http.put("/connectors/c/config", json=config).status_code == 201
    unknown = {**config, "value.converter": "support.no_such_module:Converter"}
    refused = http.put("/connectors/c/config", json=unknown)
    assert refused.status_code == 400 and "value.converter" in refused.json()["message"], refused.text
    assert "Cannot load converter class" in refused.json()["message"]


def test_the_worker_files_converters_are_trusted() -> None:
    """The worker file's converters are the operator's: they are not held to connector.class.allowed.modules."""
    worker = Worker(
        {"value.converter": "support.errant_sink.FlakyConverter"}, MemoryTransport(MemoryBroker()), MemoryOffsetStore()
    )
    herder = StandaloneHerder(worker)
    try:
        config = {"connector.class": "sequence-source", "topic": "t", "value.converter.fail.calls": "1"}
        assert herder.put_connector_config("c", config) is True
    finally:
        herder.stop()


def short_secret_warnings(caplog: Any) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING and "too short" in r.getMessage()]


def test_a_secret_too_short_to_hide_in_logs_is_warned_about_once_per_start(
    http: httpx.Client, herder: StandaloneHerder, caplog: Any
) -> None:
    """A secret under MIN_SCRUBBED_LENGTH characters is not scrubbed from log lines: one warning names the
    connector and the key, never the value; REST responses still hide it."""
    caplog.set_level(logging.INFO)
    short = "q7Z"
    assert http.post("/connectors", json={"name": "c", "config": {**CONFIG, "database.password": short}}).is_success
    wait_until(lambda: short_secret_warnings(caplog), "the short secret warning")
    (warning,) = short_secret_warnings(caplog)
    assert warning.startswith("connector c: the value of secret key database.password is shorter than 4 characters")
    assert f"REST responses still show it as {HIDDEN}" in warning
    assert short not in warning
    assert http.get("/connectors/c/config").json()["database.password"] == HIDDEN
    assert http.put("/connectors/c/pause").status_code == 202 and http.put("/connectors/c/resume").status_code == 202
    wait_until(lambda: "RUNNING" in http.get("/connectors/c/status").text, "the connector resuming")
    assert len(short_secret_warnings(caplog)) == 1, "pausing and resuming is not a new start"
    assert http.put("/connectors/c/config", json={**CONFIG, "database.password": "ab"}).status_code == 200
    wait_until(lambda: len(short_secret_warnings(caplog)) == 2, "the warning for the new config")
    assert http.post("/connectors", json={"name": "long", "config": CONFIG}).is_success
    wait_until(lambda: "RUNNING" in http.get("/connectors/long/status").text, "the other connector running")
    assert not [w for w in short_secret_warnings(caplog) if "connector long" in w]


def test_the_worker_configs_secrets_are_hidden_in_logs_and_a_short_one_is_warned_about(caplog: Any) -> None:
    caplog.set_level(logging.INFO)
    config = {ALLOWED: "support", "producer.sasl.password": "pw", "consumer.ssl.key.password": f"{SECRET}-worker"}
    herder = StandaloneHerder(Worker(config, MemoryTransport(MemoryBroker()), MemoryOffsetStore()))
    try:
        (warning,) = short_secret_warnings(caplog)
        assert warning.startswith("the worker config: the value of secret key producer.sasl.password is shorter")
        assert "pw" not in warning.replace("password", "")
        logging.getLogger("headwater.test").warning("client said %s", f"{SECRET}-worker")
        assert f"client said {HIDDEN}" in caplog.text and f"{SECRET}-worker" not in caplog.text
    finally:
        herder.stop()
