"""Restart requests in the config topic: Kafka Connect's connector record, Headwater's task record; Kafka Connect's
logger level records; and the last config of a deleted connector, which the config store a distributed worker
follows keeps."""

from __future__ import annotations

import pytest

from headwater.runtime.distributed import RestartRequest
from headwater.runtime.distributed.cluster_configs import (
    ClusterConfigStore,
    logger_record,
    parse_logger_level,
    parse_restart,
    restart_record,
)
from headwater.runtime.storage import ConfigView
from headwater.runtime.storage.configs import connector_record
from headwater.runtime.transport.memory import MemoryBroker, MemoryTransport


def test_connector_request_is_kafka_connects_record() -> None:
    request = RestartRequest("my-conn", None, include_tasks=True, only_failed=False)
    assert restart_record(request) == (b"restart-connector-my-conn", b'{"include-tasks":true,"only-failed":false}')


def test_task_request_names_connector_and_task() -> None:
    assert restart_record(RestartRequest("my-conn-2", 3)) == (b"restart-task-my-conn-2-3", b"{}")


@pytest.mark.parametrize(
    "request_",
    [RestartRequest("c"), RestartRequest("c-1", None, True, True), RestartRequest("c-1", 0), RestartRequest("ü", 12)],
)
def test_requests_round_trip(request_: RestartRequest) -> None:
    assert parse_restart(*restart_record(request_)) == request_


def test_java_records_without_flags_default_to_false() -> None:
    assert parse_restart(b"restart-connector-c", b"{}") == RestartRequest("c", None, False, False)


@pytest.mark.parametrize(
    ("key", "value"),
    [
        (b"restart-connector-", b"{}"),
        (b"restart-connector-c", None),
        (b"restart-connector-c", b"[]"),
        (b"restart-connector-c", b'{"include-tasks":"yes"}'),
        (b"restart-task-c", b"{}"),
        (b"restart-task-c-x", b"{}"),
        (b"restart-task--1", b"{}"),
        (b"connector-c", b'{"properties":{}}'),
        (b"\xff", b"{}"),
        (None, b"{}"),
    ],
)
def test_other_and_malformed_records_are_no_requests(key: bytes | None, value: bytes | None) -> None:
    assert parse_restart(key, value) is None


def test_config_view_skips_restart_records() -> None:
    view = ConfigView()
    view.apply(*restart_record(RestartRequest("c", 1)))
    view.apply(*restart_record(RestartRequest("c")))
    assert view.configs == {}
    assert view.target_states == {}


def test_the_store_keeps_a_deleted_connectors_last_config_for_its_cleanup() -> None:
    store = ClusterConfigStore("127.0.0.1:1", "configs")  # records applied by hand: no broker is asked
    store._apply(*connector_record("c", {"connector.class": "x", "v": 1}))
    store._apply(*connector_record("c", {"connector.class": "x", "v": 2}))
    assert store.last_config("c") == {"connector.class": "x", "v": 2}
    store._apply(*connector_record("c", None))
    assert store.connector_config("c") is None
    assert store.last_config("c") == {"connector.class": "x", "v": 2}
    store._apply(*connector_record("c", {"connector.class": "x", "v": 3}))  # created again
    assert store.last_config("c") == {"connector.class": "x", "v": 3}
    assert store.last_config("never") is None


def test_logger_level_records_are_kafka_connects() -> None:
    assert logger_record("org.acme", "DEBUG") == (b"logger-cluster-org.acme", b'{"level":"DEBUG"}')
    assert parse_logger_level(*logger_record("org.acme", "DEBUG")) == ("org.acme", "DEBUG")


@pytest.mark.parametrize(
    ("key", "value"),
    [
        (b"logger-cluster-a", None),
        (b"logger-cluster-a", b'{"level":10}'),
        (b"logger-cluster-a", b"[]"),
        (b"logger-cluster-a", b"{not json"),
        (b"restart-connector-a", b'{"level":"DEBUG"}'),
        (None, b'{"level":"DEBUG"}'),
    ],
)
def test_other_and_malformed_records_are_no_logger_levels(key: bytes | None, value: bytes | None) -> None:
    assert parse_logger_level(key, value) is None


def test_logger_levels_written_before_the_store_started_are_history() -> None:
    broker = MemoryBroker()
    earlier = ClusterConfigStore(MemoryTransport(broker), "configs")
    earlier.start()
    earlier.put_logger_level("old", "DEBUG")
    store = ClusterConfigStore(MemoryTransport(broker), "configs")
    store.start()
    earlier.put_logger_level("new", "ERROR")
    store.read_available()
    assert store.logger_levels() == [("new", "ERROR")]
    assert store.logger_levels() == []
    assert earlier.logger_levels() == [("old", "DEBUG"), ("new", "ERROR")]
