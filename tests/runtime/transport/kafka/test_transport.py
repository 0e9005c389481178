"""The Kafka transport's settings, no broker needed: bootstrap servers are required, and the worker's Kafka consumers
(its sink tasks') read ``read_committed`` unless a setting says otherwise: records of open and aborted transactions,
an exactly-once source's among them, never reach a sink task (librdkafka's consumer is replaced by a stand-in that
keeps its settings)."""

from __future__ import annotations

from typing import Any, ClassVar

import pytest

import headwater.runtime.transport.kafka.consumer as consumer_module
from headwater.runtime.transport.kafka import KafkaTransport
from headwater.sdk.errors import ConfigError


class Settings:
    """Keeps the settings librdkafka's consumer would be made with."""

    made: ClassVar[list[dict[str, Any]]] = []

    def __init__(self, config: dict[str, Any]) -> None:
        Settings.made.append(config)


@pytest.fixture(autouse=True)
def stand_in(monkeypatch: pytest.MonkeyPatch) -> None:
    Settings.made = []
    monkeypatch.setattr(consumer_module, "RdConsumer", Settings)


def test_a_consumer_reads_committed_by_default_and_as_its_settings_say_otherwise() -> None:
    transport = KafkaTransport("127.0.0.1:9")
    transport.consumer("connect-sink", {})
    transport.consumer("connect-sink", {"isolation.level": "read_uncommitted"})  # consumer.override.isolation.level
    assert [made["isolation.level"] for made in Settings.made] == ["read_committed", "read_uncommitted"]


def test_bootstrap_servers_are_required() -> None:
    with pytest.raises(ConfigError, match=r"bootstrap\.servers"):
        KafkaTransport("")
