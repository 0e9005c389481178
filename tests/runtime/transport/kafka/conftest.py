"""Fixtures for tests of the Kafka transport on a real broker: a transport with a fast metadata refresh, a topic of
three partitions, and the consumers a test makes, closed after it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from headwater.runtime.transport.base import NewTopic
from headwater.runtime.transport.kafka import KafkaConsumer, KafkaTransport


@pytest.fixture
def transport(kafka_bootstrap: str) -> KafkaTransport:
    return KafkaTransport(kafka_bootstrap, {"topic.metadata.refresh.interval.ms": 1000})


@pytest.fixture
def topic(transport: KafkaTransport, unique_name: str) -> str:
    transport.admin().create_topics([NewTopic(unique_name, 3, 1)])
    return unique_name


@pytest.fixture
def consumers(transport: KafkaTransport) -> Iterator[list[KafkaConsumer]]:
    made: list[KafkaConsumer] = []
    yield made
    for consumer in made:
        consumer.close()
