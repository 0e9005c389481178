"""librdkafka's own log lines reach Python logging as ``headwater.librdkafka``, on the thread that polls the client
(so a task's client logs in the task's context), never as librdkafka's own lines on stderr; the warnings of what
librdkafka retries by itself on a normal start are DEBUG."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

import pytest

from headwater.harness.broker import free_ports
from headwater.runtime.logs.context import ConnectorContextFilter, for_task
from headwater.runtime.transport.kafka import KafkaTransport
from headwater.runtime.transport.kafka.logger import LOGGER_NAME, LibrdkafkaLogger, python_level

PID_RETRY = (
    "[thrd:main]: Failed to acquire idempotence PID from broker localhost:9092/1: "
    "Broker: Coordinator load in progress: retrying"
)


def test_what_librdkafka_retries_by_itself_is_debug_and_the_rest_keeps_its_level() -> None:
    assert python_level(logging.WARNING, "GETPID", PID_RETRY) == logging.DEBUG
    assert python_level(logging.WARNING, "GETPID", "Acquired invalid PID{1,2}: ignoring") == logging.WARNING
    assert python_level(logging.WARNING, "MAXPOLL", "maximum poll interval exceeded: retrying") == logging.WARNING
    assert python_level(logging.ERROR, "GETPID", PID_RETRY) == logging.ERROR
    assert python_level(logging.INFO, "CONFWARN", "anything") == logging.INFO


def test_the_logger_takes_confluent_kafkas_call_to_python_logging(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, LOGGER_NAME)
    LibrdkafkaLogger().log(logging.WARNING, "%s [%s] %s", "GETPID", "rdkafka#producer-1", PID_RETRY)
    [record] = caplog.records
    assert (record.name, record.levelno) == (LOGGER_NAME, logging.DEBUG)
    assert record.getMessage() == f"GETPID [rdkafka#producer-1] {PID_RETRY}"


def wait_for_line(caplog: pytest.LogCaptureFixture, serve: Callable[[], object], what: str) -> logging.LogRecord:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        serve()
        found = [r for r in caplog.records if r.name == LOGGER_NAME and what in r.getMessage()]
        if found:
            return found[0]
    raise AssertionError(f"no {LOGGER_NAME} line with {what!r} in 10 s: {caplog.text}")


@pytest.fixture
def nowhere() -> str:
    """A loopback address nothing listens on: every client connecting there logs librdkafka's ``FAIL`` line."""
    [port] = free_ports(1)
    return f"127.0.0.1:{port}"


def test_a_tasks_producer_logs_through_python_in_the_tasks_context(
    caplog: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str], nowhere: str
) -> None:
    caplog.set_level(logging.INFO)
    caplog.handler.addFilter(ConnectorContextFilter())
    producer = KafkaTransport(nowhere).producer({})
    try:
        with for_task("orders", 1):
            record = wait_for_line(caplog, lambda: producer.poll(100), "Connection refused")
    finally:
        producer.close()
    assert record.levelno == logging.ERROR
    assert record.getMessage().startswith("FAIL [rdkafka#producer-")
    assert record.connector_context == "[orders|task-1] "  # type: ignore[attr-defined]
    assert "|FAIL|" not in capfd.readouterr().err, "librdkafka printed its own line to stderr"


def test_an_admin_client_hands_its_lines_over_after_each_request(
    caplog: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str], nowhere: str
) -> None:
    caplog.set_level(logging.INFO)
    admin = KafkaTransport(nowhere).admin()
    record = wait_for_line(caplog, lambda: admin.create_topics([]), "Connection refused")
    assert record.getMessage().startswith("FAIL [rdkafka#producer-")  # librdkafka names an admin client so
    assert "|FAIL|" not in capfd.readouterr().err
