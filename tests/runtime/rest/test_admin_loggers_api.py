"""``/admin/loggers`` (KIP-495, KIP-976) on Python's logging: levels read and changed at run time in Kafka
Connect's names and shapes, on this worker or, through the config topic, on every worker of a cluster."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator

import pytest

from headwater.harness import SimulatedCluster
from headwater.runtime.logs.loggers import OFF, TRACE
from headwater.sdk.errors import ConfigError
from support.rest_worker import MemoryRestWorker
from support.unknown_keys import UnknownKeyWarnings

NAMESPACE = "headwater.runtime"
WARNING_FROM = "headwater.runtime.herder.base"
"""Warns about each unknown key of a connector config it stores."""
MakeMemory = Callable[..., MemoryRestWorker]
SOURCE = {"connector.class": "monitorable-source", "topic": "t", "max.messages": "0"}


@pytest.fixture(autouse=True)
def restored_levels() -> Iterator[None]:
    """Every logger's level as it was before the test (levels are the process's, not the worker's)."""
    loggers = [logging.getLogger(), *logging.Logger.manager.loggerDict.values()]
    before = {logger: logger.level for logger in loggers if isinstance(logger, logging.Logger)}
    yield
    for logger in logging.Logger.manager.loggerDict.values():
        if isinstance(logger, logging.Logger) and logger not in before:
            logger.setLevel(logging.NOTSET)
    for logger, level in before.items():
        logger.setLevel(level)


def put_level(worker: MemoryRestWorker, name: str, level: str, scope: str | None = None) -> list[str]:
    params = {} if scope is None else {"scope": scope}
    response = worker.http.put(f"/admin/loggers/{name}", json={"level": level}, params=params)
    assert response.status_code == 200, response.text
    found: list[str] = response.json()
    return found


def warns_about_an_unknown_key(worker: MemoryRestWorker, warnings: UnknownKeyWarnings, name: str) -> bool:
    """Create a connector with an unknown key; whether the worker's warning about it was logged (a handler on
    ``headwater`` that takes every record its loggers let through)."""
    response = worker.http.post("/connectors", json={"name": name, "config": {**SOURCE, "no.such.key": "x"}})
    assert response.status_code == 201, response.text
    return warnings.take() == ["no.such.key"]


def test_a_level_set_on_a_namespace_changes_what_is_logged(
    memory_rest: MemoryRestWorker, unknown_key_warnings: UnknownKeyWarnings
) -> None:
    put_level(memory_rest, NAMESPACE, "WARN")
    assert warns_about_an_unknown_key(memory_rest, unknown_key_warnings, "first")
    covered = put_level(memory_rest, NAMESPACE, "ERROR")
    assert NAMESPACE in covered and WARNING_FROM in covered
    assert covered == sorted(covered)
    assert not any(name == "headwater.runtimex" or not name.startswith(NAMESPACE) for name in covered)
    assert not warns_about_an_unknown_key(memory_rest, unknown_key_warnings, "second")
    assert logging.getLogger(WARNING_FROM).getEffectiveLevel() == logging.ERROR
    put_level(memory_rest, NAMESPACE, "debug")  # any case, as Kafka Connect takes it
    assert warns_about_an_unknown_key(memory_rest, unknown_key_warnings, "third")


def test_levels_are_read_in_kafka_connects_names_and_shapes(memory_rest: MemoryRestWorker) -> None:
    for name, python in [("TRACE", TRACE), ("WARN", logging.WARNING), ("FATAL", logging.CRITICAL), ("OFF", OFF)]:
        put_level(memory_rest, NAMESPACE, name)
        assert logging.getLogger(NAMESPACE).level == python
        found = memory_rest.http.get(f"/admin/loggers/{NAMESPACE}").json()
        assert found["level"] == name
        assert isinstance(found["last_modified"], int)
    assert OFF > logging.CRITICAL and TRACE < logging.DEBUG
    listed = memory_rest.http.get("/admin/loggers").json()
    assert listed[NAMESPACE] == {"level": "OFF", "last_modified": listed[NAMESPACE]["last_modified"]}
    assert set(listed["root"]) == {"level", "last_modified"}
    assert all(set(info) == {"level", "last_modified"} for info in listed.values())
    # a logger without a level of its own shows its effective one, never changed by this worker
    logging.getLogger("tests.loggers.plain")
    assert memory_rest.http.get("/admin/loggers/tests.loggers.plain").json() == {
        "level": memory_rest.http.get("/admin/loggers/root").json()["level"],
        "last_modified": None,
    }
    assert "tests.loggers.plain" not in memory_rest.http.get("/admin/loggers").json()


def test_setting_the_level_a_logger_has_keeps_its_last_modified(memory_rest: MemoryRestWorker) -> None:
    put_level(memory_rest, NAMESPACE, "INFO")
    first = memory_rest.http.get(f"/admin/loggers/{NAMESPACE}").json()
    memory_rest.worker.clock = type("Later", (), {"now_ms": lambda self: first["last_modified"] + 60_000})()
    memory_rest.herder.loggers.clock = memory_rest.worker.clock
    put_level(memory_rest, NAMESPACE, "INFO")
    assert memory_rest.http.get(f"/admin/loggers/{NAMESPACE}").json() == first
    put_level(memory_rest, NAMESPACE, "ERROR")
    assert (
        memory_rest.http.get(f"/admin/loggers/{NAMESPACE}").json()["last_modified"] == first["last_modified"] + 60_000
    )


@pytest.mark.parametrize(
    ("body", "params", "message"),
    [
        (
            {"level": "LOUD"},
            {},
            "Invalid log level 'LOUD': expected one of TRACE, DEBUG, INFO, WARN, ERROR, FATAL, OFF",
        ),
        ({"level": 10}, {}, "The 'level' parameter must be a string, got 10"),
        ({}, {}, "Desired 'level' parameter was not specified in request."),
        ({"level": "INFO"}, {"scope": "galaxy"}, "Unknown scope 'galaxy': expected worker or cluster"),
    ],
)
def test_a_bad_request_is_a_400_naming_the_problem(
    memory_rest: MemoryRestWorker, body: dict[str, object], params: dict[str, str], message: str
) -> None:
    before = logging.getLogger(NAMESPACE).level
    response = memory_rest.http.put(f"/admin/loggers/{NAMESPACE}", json=body, params=params)
    assert (response.status_code, response.json()) == (400, {"error_code": 400, "message": message})
    assert logging.getLogger(NAMESPACE).level == before


def test_an_unknown_logger_is_a_404(memory_rest: MemoryRestWorker) -> None:
    response = memory_rest.http.get("/admin/loggers/no.such.logger.anywhere")
    assert (response.status_code, response.json()["message"]) == (404, "Logger no.such.logger.anywhere not found.")


def test_cluster_scope_on_a_standalone_worker_applies_here(memory_rest: MemoryRestWorker) -> None:
    response = memory_rest.http.put(f"/admin/loggers/{NAMESPACE}", json={"level": "ERROR"}, params={"scope": "cluster"})
    assert response.status_code == 204, response.text
    assert logging.getLogger(NAMESPACE).level == logging.ERROR


def test_cluster_scope_reaches_every_worker_through_the_config_topic() -> None:
    cluster = SimulatedCluster(2)
    first, second = cluster.live
    cluster.step()
    first.herder.loggers.set_level("tests.loggers.cluster", "DEBUG")  # worker scope: this worker only
    assert second.herder.loggers.level("tests.loggers.cluster") == {"level": "DEBUG", "last_modified": None}

    second.herder.set_cluster_logger_level("tests.loggers.cluster", "ERROR")
    assert [(m.key, m.value) for m in cluster.broker.messages("connect-configs") if m.key.startswith(b"logger")] == [
        (b"logger-cluster-tests.loggers.cluster", b'{"level":"ERROR"}')
    ]
    for worker in (first, second):  # levels are the process's: undo the other worker's change to see each apply
        logging.getLogger("tests.loggers.cluster").setLevel(logging.DEBUG)
        worker.step()
        assert logging.getLogger("tests.loggers.cluster").level == logging.ERROR, worker
        assert worker.herder.loggers.level("tests.loggers.cluster")["last_modified"] is not None, worker
    logging.getLogger("tests.loggers.cluster").setLevel(logging.DEBUG)
    cluster.step()
    assert logging.getLogger("tests.loggers.cluster").level == logging.DEBUG, "a record is applied once"


def test_an_empty_admin_listeners_disables_the_admin_endpoints(make_memory_rest: MakeMemory) -> None:
    worker = make_memory_rest(admin_listeners="")
    assert worker.http.get("/admin/loggers").status_code == 404
    assert worker.http.put(f"/admin/loggers/{NAMESPACE}", json={"level": "ERROR"}).status_code == 404
    assert worker.http.get("/connectors").status_code == 200
    same = make_memory_rest(admin_listeners="http://127.0.0.1:0")  # the listeners value: served there
    assert same.http.get("/admin/loggers").status_code == 200


def test_an_admin_listener_of_its_own_is_refused_naming_the_key(make_memory_rest: MakeMemory) -> None:
    with pytest.raises(ConfigError) as refused:
        make_memory_rest(admin_listeners="http://127.0.0.1:9093")
    assert refused.value.key == "admin.listeners"
    assert "leave this unset, empty (no admin endpoints) or equal to listeners" in str(refused.value)
