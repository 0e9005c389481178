"""librdkafka's own log lines through Python logging, as the logger ``headwater.librdkafka``.

Every Kafka client the transport makes gets a :class:`LibrdkafkaLogger` as confluent-kafka's ``logger`` setting.
confluent-kafka then queues the client's log lines and hands them over in the client's ``poll`` (``flush``,
``consume``), on the thread that calls it, so a task's producer or consumer logs with the task's logging context;
without the setting librdkafka prints them to stderr from its own threads, in a format of its own.

confluent-kafka maps librdkafka's syslog levels to Python's (emergency to critical: CRITICAL; error: ERROR;
warning: WARNING; notice and info: INFO; debug: DEBUG). :data:`RETRIED` lowers to DEBUG the warnings of
conditions librdkafka retries by itself and that a cluster shows on a normal start (a just-started broker's group
coordinator still loading, say): a condition that lasts shows up in the client's own errors (a delivery that times
out, a consumer error), which the runtime reports."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

LOGGER_NAME = "headwater.librdkafka"
"""The Python logger librdkafka's lines go to; each line is ``FACILITY [client name] text``."""

RETRIED: Mapping[str, tuple[str, ...]] = {
    # rdkafka_idempotence.c: rd_kafka_idemp_request_pid_failed logs "Failed to acquire idempotence PID from broker
    # ...: retrying" at LOG_WARNING and asks again; a broker whose transaction coordinator is loading answers
    # COORDINATOR_LOAD_IN_PROGRESS (or not yet available) for its first seconds
    "GETPID": (": retrying",),
}
"""librdkafka log facilities, each with the endings of its warnings that :class:`LibrdkafkaLogger` logs at DEBUG:
librdkafka retries what they report by itself."""


def python_level(level: int, facility: str, text: str) -> int:
    """The level a librdkafka line is logged at: confluent-kafka's ``level``, but DEBUG for a warning of
    :data:`RETRIED`."""
    if level == logging.WARNING and text.rstrip().endswith(RETRIED.get(facility, ())):
        return logging.DEBUG
    return level


class LibrdkafkaLogger:
    """confluent-kafka's ``logger`` setting: takes each line of a client's librdkafka to the ``headwater.librdkafka``
    Python logger (or ``logger``), at :func:`python_level`."""

    def __init__(self, logger: logging.Logger | None = None) -> None:
        self.logger = logger or logging.getLogger(LOGGER_NAME)

    def log(self, level: int, msg: str, *args: Any, **kwargs: Any) -> None:
        """Called by confluent-kafka as ``log(level, "%s [%s] %s", facility, client_name, text)``."""
        if len(args) == 3:
            level = python_level(level, str(args[0]), str(args[2]))
        self.logger.log(level, msg, *args, **kwargs)

    def __repr__(self) -> str:
        return f"LibrdkafkaLogger({self.logger.name!r})"


def with_logger(config: Mapping[str, Any]) -> dict[str, Any]:
    """``config`` with a :class:`LibrdkafkaLogger` as its ``logger``, unless it names one already."""
    return {"logger": LibrdkafkaLogger(), **config}
