"""The mirror connector's configuration: KIP-310's defaults, the whitelist rule, the client prefixes' precedence,
and every key's bad values rejected with a message naming the key."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from headwater.reference_connectors.kafka_mirror import (
    CONFIG_DEF,
    KIP_310_CONFIG,
    KafkaMirrorSourceConnector,
    MirrorConfig,
    whitelist_pattern,
)
from headwater.runtime.config.connector import connector_config_def
from headwater.runtime.plugins import resolve_connector_class
from headwater.sdk import ConfigError
from support.process import WorkerProcess

MINIMAL = {
    "source.bootstrap.servers": "source-1:9092,source-2:9092",
    "source.topic.whitelist": "orders",
    "source.group.id": "kafka-connect",
}

KIP_310_DEFAULTS = {
    "source.auto.offset.reset": "earliest",
    "destination.topics.prefix": "",
    "include.message.headers": True,
    "topic.list.timeout.ms": 60_000,
    "topic.list.poll.interval.ms": 300_000,
    "reconfigure.tasks.on.leader.change": False,
    "poll.loop.timeout.ms": 1_000,
    "max.shutdown.wait.ms": 2_000,
    "source.max.poll.records": 500,
    "source.key.deserializer": "org.apache.kafka.common.serialization.ByteArrayDeserializer",
    "source.value.deserializer": "org.apache.kafka.common.serialization.ByteArrayDeserializer",
    "source.enable.auto.commit": True,
}
"""KIP-310's advanced defaults, as its table gives them."""


def parse(**overrides: Any) -> MirrorConfig:
    return MirrorConfig.parse({**MINIMAL, **{k.replace("_", "."): v for k, v in overrides.items()}})


def test_every_kip_310_option_is_defined_with_its_default() -> None:
    required = {"source.bootstrap.servers", "source.topic.whitelist", "source.group.id"}
    assert set(KIP_310_CONFIG.keys) == required | set(KIP_310_DEFAULTS)
    assert {name for name, key in KIP_310_CONFIG.keys.items() if key.required} == required
    assert {name: KIP_310_CONFIG.keys[name].default for name in KIP_310_DEFAULTS} == KIP_310_DEFAULTS


def test_the_minimal_config_parses_with_the_defaults() -> None:
    config = parse()
    assert config.auto_offset_reset == "earliest"
    assert config.group_id == "kafka-connect"
    assert config.include_headers is True and config.enable_auto_commit is True
    assert config.max_poll_records == 500 and config.poll_loop_timeout_ms == 1000
    assert config.key_deserializer is None and config.value_deserializer is None  # bytes: passed through
    assert config.consumer_config["bootstrap.servers"] == "source-1:9092,source-2:9092"
    assert config.destination("orders") == "orders"


@pytest.mark.parametrize(
    ("whitelist", "matching", "not_matching"),
    [
        ("a,b.*", ["a", "b", "bx"], ["ab", "xa", "c"]),
        ("topic, topic-prefix.*", ["topic", "topic-prefix", "topic-prefix-1"], ["topic2", "my-topic"]),
        ('"orders|payments"', ["orders", "payments"], ["orders-eu", "order"]),
        ("  mirror\\..* ", ["mirror.x"], ["mirrorx", "a.mirror.x"]),
    ],
)
def test_the_whitelist_reads_commas_as_choices_and_must_match_the_whole_name(
    whitelist: str, matching: list[str], not_matching: list[str]
) -> None:
    config = parse(**{"source.topic.whitelist": whitelist})
    assert [t for t in matching if not config.matches(t)] == []
    assert [t for t in not_matching if config.matches(t)] == []


def test_whitelist_pattern_drops_spaces_and_quotes() -> None:
    assert whitelist_pattern(' "a, b" ').pattern == "a|b"


def test_the_prefix_names_the_destination_topic() -> None:
    assert parse(destination_topics_prefix="aggregate.").destination("orders") == "aggregate.orders"


def test_source_settings_reach_both_clients_and_the_options_the_connector_reads_reach_neither() -> None:
    config = parse(**{"source.client.id": "mirror", "source.fetch.min.bytes": "1", "source.max.poll.records": "7"})
    assert config.consumer_config["client.id"] == config.admin_config["client.id"] == "mirror"
    for internal in ("topic.whitelist", "max.poll.records", "key.deserializer", "value.deserializer"):
        assert internal not in config.consumer_config and internal not in config.admin_config
    assert config.consumer_config["group.id"] == "kafka-connect"
    assert "group.id" not in config.admin_config and "auto.offset.reset" not in config.admin_config
    assert config.consumer_config["enable.auto.commit"] == "false"  # the task commits what the worker committed
    assert config.max_poll_records == 7


def test_connector_consumer_settings_override_source_settings_for_the_consumer_only() -> None:
    config = parse(
        **{
            "source.client.id": "both",
            "connector.consumer.client.id": "consumer",
            "connector.admin.client.id": "admin",
            "source.fetch.min.bytes": "1",
            "connector.consumer.fetch.min.bytes": "1024",
        }
    )
    assert config.consumer_config["client.id"] == "consumer" and config.admin_config["client.id"] == "admin"
    assert config.consumer_config["fetch.min.bytes"] == "1024" and config.admin_config["fetch.min.bytes"] == "1"


def test_connector_consumer_overrides_the_options_the_connector_reads() -> None:
    config = parse(
        **{
            "connector.consumer.max.poll.records": "9",
            "connector.consumer.group.id": "lag-group",
            "connector.consumer.enable.auto.commit": "false",
            "connector.consumer.auto.offset.reset": "latest",
            "connector.consumer.value.deserializer": "string",
            "connector.admin.bootstrap.servers": "admin-only:9093",
        }
    )
    assert (config.max_poll_records, config.group_id, config.enable_auto_commit) == (9, "lag-group", False)
    assert config.auto_offset_reset == "latest" and config.consumer_config["auto.offset.reset"] == "latest"
    assert config.value_deserializer is not None and config.value_deserializer("t", b"caf\xc3\xa9") == "café"
    assert config.admin_config["bootstrap.servers"] == "admin-only:9093"
    assert config.consumer_config["bootstrap.servers"] == "source-1:9092,source-2:9092"


def test_reset_none_asks_librdkafka_to_report_an_error() -> None:
    assert parse(source_auto_offset_reset="none").consumer_config["auto.offset.reset"] == "error"


@pytest.mark.parametrize(
    ("spec", "data", "expected"),
    [
        ("string", b"abc", "abc"),
        ("org.apache.kafka.common.serialization.StringDeserializer", b"abc", "abc"),
        ("org.apache.kafka.common.serialization.IntegerDeserializer", b"\x00\x00\x01\x00", 256),
        ("org.apache.kafka.common.serialization.DoubleDeserializer", b"?\xf0\x00\x00\x00\x00\x00\x00", 1.0),
    ],
)
def test_deserializers_other_than_bytes_decode(spec: str, data: bytes, expected: object) -> None:
    config = parse(source_key_deserializer=spec)
    assert config.key_deserializer is not None and config.key_deserializer("t", data) == expected
    assert config.value_deserializer is None


BAD_VALUES: list[tuple[str, Any]] = [
    ("source.bootstrap.servers", None),
    ("source.bootstrap.servers", ""),
    ("source.bootstrap.servers", "source-1"),
    ("source.bootstrap.servers", "source-1:99999"),
    ("source.bootstrap.servers", "source 1:9092"),
    ("source.topic.whitelist", None),
    ("source.topic.whitelist", "  "),
    ("source.topic.whitelist", "orders("),
    ("source.topic.whitelist", "a,[b"),
    ("source.auto.offset.reset", "middle"),
    ("source.group.id", None),
    ("source.group.id", " "),
    ("destination.topics.prefix", "bad prefix"),
    ("destination.topics.prefix", "a/b."),
    ("destination.topics.prefix", "x" * 249),
    ("include.message.headers", "maybe"),
    ("topic.list.timeout.ms", "soon"),
    ("topic.list.timeout.ms", "0"),
    ("topic.list.poll.interval.ms", "-5"),
    ("topic.list.poll.interval.ms", "1.5"),
    ("reconfigure.tasks.on.leader.change", "yes"),
    ("poll.loop.timeout.ms", "-1"),
    ("poll.loop.timeout.ms", str(2**31)),
    ("max.shutdown.wait.ms", "-1"),
    ("max.shutdown.wait.ms", "forever"),
    ("source.max.poll.records", "0"),
    ("source.max.poll.records", "many"),
    ("source.key.deserializer", "org.apache.kafka.common.serialization.LongDeserializer"),
    ("source.key.deserializer", "confluent_kafka.serialization:StringDeserializer"),
    ("source.value.deserializer", "json"),
    ("source.value.deserializer", ""),
    ("source.enable.auto.commit", "sometimes"),
    ("connector.consumer.max.poll.records", "0"),
    ("connector.consumer.group.id", ""),
    ("connector.consumer.auto.offset.reset", "anywhere"),
    ("connector.consumer.key.deserializer", "nope"),
    ("connector.consumer.value.deserializer", "a.b:C"),
    ("connector.consumer.enable.auto.commit", "2"),
    ("connector.consumer.bootstrap.servers", "no-port"),
    ("connector.admin.bootstrap.servers", "no-port"),
]


def _rejection(props: dict[str, Any]) -> ConfigError:
    with pytest.raises(ConfigError) as raised:
        KafkaMirrorSourceConnector().validate(props)
    return raised.value


@pytest.mark.parametrize(("key", "value"), BAD_VALUES)
def test_a_bad_value_is_rejected_naming_its_key(key: str, value: Any) -> None:
    props = {**MINIMAL, key: value}
    if value is None:
        del props[key]
    assert key in str(_rejection(props))
    with pytest.raises(ConfigError, match=key.replace(".", r"\.")):  # the worker's own validation says the same
        connector_config_def(KafkaMirrorSourceConnector()).parse(props)


def test_every_defined_key_has_a_bad_value_above() -> None:
    assert set(CONFIG_DEF.keys) - {key for key, _ in BAD_VALUES} == set()


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("source.fetch.min.bytes", "lots"),
        ("source.no.such.setting", "1"),
        ("connector.consumer.fetch.wait.max.ms", "-7"),
        ("connector.consumer.no.such.setting", "1"),
        ("connector.admin.no.such.setting", "1"),
        ("connector.admin.socket.timeout.ms", "slow"),
    ],
)
def test_client_settings_librdkafka_rejects_are_rejected_naming_their_key(key: str, value: str) -> None:
    error = _rejection({**MINIMAL, key: value})
    assert error.key == key and key in str(error) and "librdkafka" in str(error)


def test_several_bad_keys_are_all_named() -> None:
    error = _rejection({**MINIMAL, "poll.loop.timeout.ms": "-1", "source.max.poll.records": "0"})
    assert "poll.loop.timeout.ms" in str(error) and "source.max.poll.records" in str(error)


def test_the_entry_point_names_the_connector() -> None:
    assert resolve_connector_class("kafka-mirror") is KafkaMirrorSourceConnector


def test_a_standalone_worker_refuses_a_bad_connector_file_naming_the_key(tmp_path: Path) -> None:
    connector = {"connector.class": "kafka-mirror", **MINIMAL, "topic.list.poll.interval.ms": "often"}
    with WorkerProcess(tmp_path, {"bootstrap.servers": "127.0.0.1:1"}, {"mirror": connector}) as worker:
        worker.start().assert_exited(2)
        worker.assert_log_contains("topic.list.poll.interval.ms", "often")
