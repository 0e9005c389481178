"""The dead-letter topic: where records that do not fit the schema go when ``errors.tolerance=all``.

The runtime has no dead-letter queue of its own yet, so the connector keeps a producer of its own on
``errors.deadletterqueue.bootstrap.servers``. A flush sends its rejected records and waits for every
acknowledgement before it writes the table, so the write that moves a partition past a rejected record's offset
happens only once that record is stored in the topic; a crash in between sends it again (dead letters are
at-least-once). With ``errors.deadletterqueue.context.headers.enable=true`` each record carries Kafka Connect's
``__connect.errors.*`` headers naming where it came from and why it was rejected.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from typing import Any

from confluent_kafka import KafkaError, KafkaException, Message, Producer

from headwater.reference_connectors.spark_sink.columns import Rejected
from headwater.sdk import ConnectError

log = logging.getLogger(__name__)

TIMEOUT_S = 30.0
HEADER_PREFIX = "__connect.errors."


def _bytes(data: Any) -> bytes | None:
    if data is None or isinstance(data, bytes):
        return data
    if isinstance(data, str):
        return data.encode()
    return json.dumps(data, separators=(",", ":")).encode()


class DeadLetterQueue:
    """Sends rejected records to one topic and waits for them to be stored."""

    def __init__(self, topic: str, bootstrap_servers: str, connector: str, context_headers: bool) -> None:
        self.topic = topic
        self.connector = connector
        self.context_headers = context_headers
        self.sent = 0
        try:
            self.producer = Producer(
                {"bootstrap.servers": bootstrap_servers, "enable.idempotence": True, "acks": "all", "linger.ms": 5}
            )
        except KafkaException as error:
            raise ConnectError(f"cannot make the dead-letter producer: {error}") from None

    def headers(self, record: Rejected) -> list[tuple[str, str | bytes | None]]:
        return [
            (HEADER_PREFIX + "topic", record.topic.encode()),
            (HEADER_PREFIX + "partition", str(record.partition).encode()),
            (HEADER_PREFIX + "offset", str(record.offset).encode()),
            (HEADER_PREFIX + "connector.name", self.connector.encode()),
            (HEADER_PREFIX + "stage", b"TASK_PUT"),
            (HEADER_PREFIX + "exception.message", record.reason.encode()),
        ]

    def send(self, records: Sequence[Rejected]) -> None:
        """Produce ``records`` and wait until the broker has stored every one; raises :class:`ConnectError` when
        one could not be."""
        failures: list[str] = []

        def delivered(error: KafkaError | None, message: Message) -> None:
            if error is not None:
                failures.append(error.str())

        for record in records:
            headers = self.headers(record) if self.context_headers else None
            while True:
                try:
                    self.producer.produce(
                        self.topic, _bytes(record.value), _bytes(record.key), headers=headers, on_delivery=delivered
                    )
                    break
                except BufferError:
                    self.producer.poll(0.1)
        remaining = self.producer.flush(TIMEOUT_S)
        if remaining or failures:
            reason = failures[0] if failures else f"{remaining} not acknowledged within {TIMEOUT_S:.0f} s"
            raise ConnectError(
                f"sending {len(records)} records to the dead-letter topic {self.topic!r} failed: {reason}"
            )
        self.sent += len(records)
        log.info("sent %d records that do not fit the schema to %s", len(records), self.topic)

    def close(self) -> None:
        self.producer.flush(TIMEOUT_S)
