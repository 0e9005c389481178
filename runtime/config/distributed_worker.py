"""The keys a distributed worker reads: the standalone worker's, plus the group it joins and the three internal
topics its stores live in (Kafka Connect's names and defaults), plus how the group's slot topics are named and
how quickly the group notices a worker that is gone."""

from __future__ import annotations

import re
from typing import Any

from headwater.runtime.config.worker import STANDALONE_CONFIG
from headwater.sdk.config import REQUIRED, ConfigDef, Importance, Type, at_least, non_empty_string
from headwater.sdk.errors import ConfigError

MAX_PREFIX_LENGTH = 180
"""Kafka topic names are at most 249 characters; a slot topic adds up to 64 characters to its prefix."""


def topic_name(key: str, value: Any) -> None:
    """A legal Kafka topic name: ASCII letters, digits, ``.``, ``_`` and ``-``, at most 249 characters."""
    if not re.fullmatch(r"[A-Za-z0-9._-]{1,249}", str(value)) or value in (".", ".."):
        raise ConfigError(key, value, "Topic names use only ASCII letters, digits, '.', '_' and '-' (1-249 of them)")


def slot_prefix(key: str, value: Any) -> None:
    """Empty (derived from the config topic) or a topic name short enough for the slot topics' suffixes."""
    if value:
        topic_name(key, value)
        if len(value) > MAX_PREFIX_LENGTH:
            raise ConfigError(key, value, f"A slot topic prefix has at most {MAX_PREFIX_LENGTH} characters")


def _replication(name: str, what: str) -> ConfigDef:
    return ConfigDef().define(
        f"{name}.replication.factor",
        Type.INT,
        3,
        Importance.LOW,
        f"Replication factor of the {what} topic when the worker creates it.",
        at_least(1),
    )


DISTRIBUTED_CONFIG = (
    STANDALONE_CONFIG.merge(
        ConfigDef()
        .define(
            "group.id",
            Type.STRING,
            REQUIRED,
            Importance.HIGH,
            "The cluster this worker belongs to: the Kafka consumer group its workers join.",
            non_empty_string,
        )
        .define(
            "config.storage.topic",
            Type.STRING,
            REQUIRED,
            Importance.HIGH,
            "Topic of connector and task configs (one partition, compacted).",
            topic_name,
        )
        .define(
            "offset.storage.topic",
            Type.STRING,
            REQUIRED,
            Importance.HIGH,
            "Topic of source offsets (compacted).",
            topic_name,
        )
        .define(
            "status.storage.topic",
            Type.STRING,
            REQUIRED,
            Importance.HIGH,
            "Topic of connector, task and active-topic statuses (compacted).",
            topic_name,
        )
        .define(
            "offset.storage.partitions", Type.INT, 25, Importance.LOW, "Partitions of a new offsets topic.", at_least(1)
        )
        .define(
            "status.storage.partitions", Type.INT, 5, Importance.LOW, "Partitions of a new status topic.", at_least(1)
        )
        .define(
            "session.timeout.ms",
            Type.INT,
            10_000,
            Importance.HIGH,
            "How long the group coordinator waits for a worker's heartbeat before it hands the worker's connectors "
            "and tasks to the others. The broker allows 6000 to 300000 by default.",
            at_least(1),
        )
        .define(
            "group.heartbeat.interval.ms",
            Type.INT,
            1_000,
            Importance.LOW,
            "How often a worker heartbeats to the group coordinator, which is also how soon it hears of a "
            "rebalance (Kafka Connect's heartbeat.interval.ms, which names source heartbeats here).",
            at_least(1),
        )
        .define(
            "rebalance.timeout.ms",
            Type.INT,
            60_000,
            Importance.LOW,
            "How long a rebalance waits for every worker to stop what it hands over and rejoin.",
            at_least(1),
        )
        .define(
            "slots.topic.prefix",
            Type.STRING,
            "",
            Importance.LOW,
            "Prefix of the empty topics whose partitions are the cluster's connector and task slots; empty: "
            "<config.storage.topic>.slots.",
            slot_prefix,
        )
        .define(
            "slots.topic.replication.factor",
            Type.INT,
            -1,
            Importance.LOW,
            "Replication factor of new slot topics; -1 takes the broker's default.",
            at_least(-1),
        )
    )
    .merge(_replication("config.storage", "config"))
    .merge(_replication("offset.storage", "offsets"))
    .merge(_replication("status.storage", "status"))
)
"""Every key of a distributed worker's config."""


def slots_prefix(config: dict[str, Any]) -> str:
    """The slot topics' prefix of a parsed config; raises ConfigError when one derived from a long config topic
    name leaves no room for the slot topics' suffixes."""
    prefix = str(config["slots.topic.prefix"] or f"{config['config.storage.topic']}.slots")
    slot_prefix("slots.topic.prefix", prefix)
    return prefix
