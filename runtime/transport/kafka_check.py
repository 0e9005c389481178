"""Two questions a worker asks a Kafka cluster with an admin client before it starts: does it answer, and what is
its id. Both keep librdkafka's log lines of the client to themselves, to explain a failure in one line."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping
from typing import Any

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient

from headwater.sdk.errors import ConfigError


def kafka_cluster_id(config: Mapping[str, Any], timeout_s: float = 5.0) -> str | None:
    """The id of the Kafka cluster (``GET /`` shows it), ``None`` when the cluster does not say."""
    settings: dict[str, Any] = {**config, "logger": _CollectedLog()}
    try:
        found = AdminClient(settings).list_topics(timeout=timeout_s).cluster_id
    except KafkaException:
        return None
    return str(found) if found else None


class _CollectedLog(logging.Logger):
    """librdkafka's log lines of one client, kept to explain a failed check rather than printed."""

    def __init__(self) -> None:
        super().__init__("headwater.runtime.transport.kafka_check.librdkafka")
        self.lines: list[str] = []

    def log(self, level: int, msg: object, *args: object, **kwargs: Any) -> None:
        if level >= logging.WARNING and len(args) == 3:
            text = str(args[2])
            self.lines.append(text.split("]: ", 1)[-1])


def check_broker(config: Mapping[str, Any], timeout_ms: int, stop: threading.Event | None = None) -> str | None:
    """None when the cluster answers an admin metadata request within ``timeout_ms``, else the reason. Returns
    early (with a reason) when ``stop`` is set. Raises ConfigError when librdkafka rejects ``config``."""
    collected = _CollectedLog()
    settings: dict[str, Any] = {**config, "logger": collected}
    try:
        admin = AdminClient(settings)
    except KafkaException as error:
        raise ConfigError("bootstrap.servers", None, f"invalid Kafka client settings: {_describe(error)}") from None
    deadline = time.monotonic() + timeout_ms / 1000
    reason = f"no answer within {timeout_ms} ms"
    while stop is None or not stop.is_set():
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            break
        try:
            admin.list_topics(timeout=min(remaining, 0.25))
            return None
        except KafkaException as error:
            reason = _describe(error)
    admin.poll(0)
    return collected.lines[-1] if collected.lines else reason


def _describe(error: KafkaException) -> str:
    found = error.args[0] if error.args else error
    return found.str() if isinstance(found, KafkaError) else str(found)
