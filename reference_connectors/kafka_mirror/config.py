"""The mirror connector's configuration: KIP-310's standard and advanced options, and its client prefixes.

Client settings: every ``source.`` key, prefix removed, goes to both the source consumer and the partition monitor's
admin client; ``connector.consumer.`` keys override them for the consumer, ``connector.admin.`` keys for the admin
client (``source.fetch.min.bytes=1`` and ``connector.consumer.fetch.min.bytes=1024`` give the consumer 1024). The
options the connector reads itself (``group.id``, ``auto.offset.reset``, ``max.poll.records``, the deserializers,
``enable.auto.commit``) follow the same precedence, and their overrides are validated like the ``source.`` key.

The consumer reads ``isolation.level=read_committed`` unless ``source.isolation.level`` or
``connector.consumer.isolation.level`` says ``read_uncommitted``: then it also mirrors the records of the source's
open and aborted transactions, and the connector cannot deliver exactly once (:func:`isolation_level`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from headwater.reference_connectors.kafka_mirror.deserializers import BYTES, Deserialize, load_deserializer
from headwater.reference_connectors.kafka_mirror.mirrormaker_keys import MIRRORMAKER_KEYS
from headwater.sdk import ConfigDef, ConfigError, Importance, Type, at_least, non_empty_string, one_of

SOURCE_PREFIX = "source."
CONSUMER_PREFIX = "connector.consumer."
ADMIN_PREFIX = "connector.admin."

BOOTSTRAP_SERVERS = "source.bootstrap.servers"
TOPIC_WHITELIST = "source.topic.whitelist"
AUTO_OFFSET_RESET = "source.auto.offset.reset"
GROUP_ID = "source.group.id"
TOPICS_PREFIX = "destination.topics.prefix"
INCLUDE_HEADERS = "include.message.headers"
TOPIC_LIST_TIMEOUT_MS = "topic.list.timeout.ms"
TOPIC_LIST_POLL_INTERVAL_MS = "topic.list.poll.interval.ms"
RECONFIGURE_ON_LEADER_CHANGE = "reconfigure.tasks.on.leader.change"
POLL_LOOP_TIMEOUT_MS = "poll.loop.timeout.ms"
MAX_SHUTDOWN_WAIT_MS = "max.shutdown.wait.ms"
MAX_POLL_RECORDS = "source.max.poll.records"
KEY_DESERIALIZER = "source.key.deserializer"
VALUE_DESERIALIZER = "source.value.deserializer"
ENABLE_AUTO_COMMIT = "source.enable.auto.commit"
ISOLATION_LEVEL = "isolation.level"
READ_COMMITTED, READ_UNCOMMITTED = "read_committed", "read_uncommitted"

CONSUMER_OPTIONS = (
    "bootstrap.servers",
    "group.id",
    "auto.offset.reset",
    "max.poll.records",
    "key.deserializer",
    "value.deserializer",
    "enable.auto.commit",
)
"""Options defined under ``source.`` that ``connector.consumer.`` may override."""
ADMIN_OPTIONS = ("bootstrap.servers",)
"""Options defined under ``source.`` that ``connector.admin.`` may override."""

_CONNECTOR_ONLY = frozenset({"topic.whitelist", "max.poll.records", "key.deserializer", "value.deserializer"})
"""Options under ``source.`` the connector reads and no librdkafka client is given."""
_CONSUMER_ONLY = frozenset({"group.id", "auto.offset.reset", "enable.auto.commit", "isolation.level"})
"""Consumer settings the partition monitor's admin client is not given."""
_HOST_PORT = re.compile(r"(?:[A-Za-z_]+://)?(\[[0-9A-Fa-f:.]+\]|[^\s:/\[\]]+):(\d{1,5})")
_TOPIC_CHARS = re.compile(r"[A-Za-z0-9._-]*")
_MAX_TOPIC_LENGTH = 249


def whitelist_pattern(text: str) -> re.Pattern[str]:
    """KIP-310's whitelist rule: trim, read ``,`` as ``|``, drop spaces and surrounding quotes, then compile; the
    pattern must match a whole topic name (use ``fullmatch``)."""
    expression = text.strip().replace(",", "|").replace(" ", "").strip("\"'")
    return re.compile(expression)


def _whitelist(key: str, value: Any) -> None:
    try:
        pattern = whitelist_pattern(str(value))
    except re.error as error:
        raise ConfigError(key, value, f"Invalid regular expression: {error}") from None
    if not pattern.pattern:
        raise ConfigError(key, value, "The topic whitelist must not be empty")


def _servers(key: str, value: Any) -> None:
    if not value:
        raise ConfigError(key, value, "List must name at least one host:port")
    for server in value:
        match = _HOST_PORT.fullmatch(server)
        if match is None or not 0 < int(match.group(2)) < 65536:
            raise ConfigError(key, value, f"{server!r} is not a host:port pair")


def _topic_prefix(key: str, value: Any) -> None:
    if not _TOPIC_CHARS.fullmatch(value):
        raise ConfigError(key, value, "Topic names may hold only ASCII letters, digits, '.', '_' and '-'")
    if len(value) >= _MAX_TOPIC_LENGTH:
        raise ConfigError(key, value, f"A prefix must be shorter than {_MAX_TOPIC_LENGTH} characters")


def _deserializer(key: str, value: Any) -> None:
    load_deserializer(key, str(value), is_key="key." in key)


_STANDARD = "Standard"
_ADVANCED = "Advanced"

KIP_310_CONFIG = (
    ConfigDef()
    .define(
        BOOTSTRAP_SERVERS,
        Type.LIST,
        importance=Importance.HIGH,
        documentation="Comma-separated host:port list of the source cluster.",
        validator=_servers,
        group=_STANDARD,
    )
    .define(
        TOPIC_WHITELIST,
        Type.STRING,
        importance=Importance.HIGH,
        documentation="Regular expression of the topics to mirror, matched against the whole name; ',' reads as '|'.",
        validator=_whitelist,
        group=_STANDARD,
    )
    .define(
        AUTO_OFFSET_RESET,
        Type.STRING,
        "earliest",
        Importance.MEDIUM,
        "Where a partition with no stored offset starts: earliest, latest, or none (the task fails).",
        one_of("earliest", "latest", "none"),
        _STANDARD,
    )
    .define(
        GROUP_ID,
        Type.STRING,
        importance=Importance.HIGH,
        documentation="Consumer group the mirrored offsets are committed to on the source cluster (lag monitoring).",
        validator=non_empty_string,
        group=_STANDARD,
    )
    .define(
        TOPICS_PREFIX,
        Type.STRING,
        "",
        Importance.MEDIUM,
        "Prefix added to a source topic's name to name its destination topic.",
        _topic_prefix,
        _STANDARD,
    )
    .define(INCLUDE_HEADERS, Type.BOOLEAN, True, Importance.LOW, "Copy the source records' headers.", group=_ADVANCED)
    .define(
        TOPIC_LIST_TIMEOUT_MS,
        Type.INT,
        60_000,
        Importance.LOW,
        "How long the partition monitor waits for the source cluster's topic list before it logs a timeout.",
        at_least(1),
        _ADVANCED,
    )
    .define(
        TOPIC_LIST_POLL_INTERVAL_MS,
        Type.INT,
        300_000,
        Importance.LOW,
        "How often the partition monitor asks the source cluster for the matching topic partitions.",
        at_least(1),
        _ADVANCED,
    )
    .define(
        RECONFIGURE_ON_LEADER_CHANGE,
        Type.BOOLEAN,
        False,
        Importance.LOW,
        "Reconfigure the tasks when partition leaders change, not only when the matching partitions do.",
        group=_ADVANCED,
    )
    .define(
        POLL_LOOP_TIMEOUT_MS,
        Type.INT,
        1_000,
        Importance.LOW,
        "Longest a task's poll waits for source records.",
        at_least(0),
        _ADVANCED,
    )
    .define(
        MAX_SHUTDOWN_WAIT_MS,
        Type.INT,
        2_000,
        Importance.LOW,
        "Longest a stop waits for the consumer and the partition monitor to close.",
        at_least(0),
        _ADVANCED,
    )
    .define(
        MAX_POLL_RECORDS, Type.INT, 500, Importance.LOW, "Most records one task poll returns.", at_least(1), _ADVANCED
    )
    .define(
        KEY_DESERIALIZER,
        Type.CLASS,
        BYTES,
        Importance.LOW,
        "Deserializer of source keys; bytes (the default) passes them through unchanged.",
        _deserializer,
        _ADVANCED,
    )
    .define(
        VALUE_DESERIALIZER,
        Type.CLASS,
        BYTES,
        Importance.LOW,
        "Deserializer of source values; bytes (the default) passes them through unchanged.",
        _deserializer,
        _ADVANCED,
    )
    .define(
        ENABLE_AUTO_COMMIT,
        Type.BOOLEAN,
        True,
        Importance.LOW,
        "Commit the mirrored offsets to source.group.id on the source cluster after each offset commit of the "
        "worker, for lag monitoring; they are never read back.",
        group=_ADVANCED,
    )
    .define_prefix(
        SOURCE_PREFIX,
        "Any other setting of the source cluster's clients (librdkafka's names, prefix removed): the consumer and the "
        "partition monitor's admin client get it.",
    )
    .define_prefix(CONSUMER_PREFIX, "A source consumer setting (prefix removed); it wins over the source.* one.")
    .define_prefix(
        ADMIN_PREFIX, "A partition monitor admin client setting (prefix removed); it wins over the source.* one."
    )
)
"""Every option of KIP-310 with its default and validator, and its client prefixes."""


def _overrides(prefix: str, options: tuple[str, ...], client: str) -> ConfigDef:
    found = ConfigDef()
    for option in options:
        base = KIP_310_CONFIG.keys[SOURCE_PREFIX + option]
        name = prefix + option
        found.keys[name] = replace(base, name=name, default=None, documentation=f"{base.name} for the {client} only.")
    return found


CONFIG_DEF = (
    KIP_310_CONFIG.merge(_overrides(CONSUMER_PREFIX, CONSUMER_OPTIONS, "consumer"))
    .merge(_overrides(ADMIN_PREFIX, ADMIN_OPTIONS, "admin client"))
    .merge(MIRRORMAKER_KEYS)
)
"""KIP-310's options plus the ``connector.consumer.`` and ``connector.admin.`` overrides of those the clients use,
and MirrorMaker 2's keys answered with what to write instead."""


def isolation_level(props: Mapping[str, Any]) -> str:
    """The source consumer's ``isolation.level`` in a connector config: ``connector.consumer.isolation.level``, else
    ``source.isolation.level``, else ``read_committed`` (librdkafka's default, given explicitly); in lower case, as
    librdkafka reads it. Kafka's ``MirrorSourceConfig.sourceConsumerConfig`` reads it with the same precedence."""
    for key in (CONSUMER_PREFIX + ISOLATION_LEVEL, SOURCE_PREFIX + ISOLATION_LEVEL):
        value = props.get(key)
        if value is not None:
            return str(value).strip().lower()
    return READ_COMMITTED


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return ",".join(str(item) for item in value)
    return str(value)


def _client_settings(props: Mapping[str, Any], prefix: str, dropped: frozenset[str]) -> dict[str, tuple[str, str]]:
    """librdkafka setting -> (value, the config key it came from): ``source.`` keys, overridden by ``prefix`` keys."""
    found: dict[str, tuple[str, str]] = {}
    for start in (SOURCE_PREFIX, prefix):
        for key, value in props.items():
            if key.startswith(start) and value is not None and key[len(start) :] not in dropped:
                found[key[len(start) :]] = (_text(value), key)
    return found


@dataclass(frozen=True)
class MirrorConfig:
    """A parsed mirror config; the consumer's options are the effective ones (overrides applied)."""

    whitelist: re.Pattern[str]
    auto_offset_reset: str
    group_id: str
    topics_prefix: str
    include_headers: bool
    topic_list_timeout_ms: int
    topic_list_poll_interval_ms: int
    reconfigure_on_leader_change: bool
    poll_loop_timeout_ms: int
    max_shutdown_wait_ms: int
    max_poll_records: int
    key_deserializer: Deserialize | None
    value_deserializer: Deserialize | None
    enable_auto_commit: bool
    consumer_settings: Mapping[str, tuple[str, str]]
    """librdkafka setting -> (value, config key it came from), for the consumer."""
    admin_settings: Mapping[str, tuple[str, str]]
    """The same for the partition monitor's admin client."""

    @classmethod
    def parse(cls, props: Mapping[str, Any]) -> MirrorConfig:
        """Parse a connector or task config; raises :class:`ConfigError` naming every bad key."""
        parsed = CONFIG_DEF.parse(props)

        def consumer(option: str) -> Any:
            override = parsed.get(CONSUMER_PREFIX + option)
            return parsed[SOURCE_PREFIX + option] if override is None else override

        reset = str(consumer("auto.offset.reset")).lower()
        consumer_settings = _client_settings(parsed, CONSUMER_PREFIX, _CONNECTOR_ONLY)
        consumer_settings["auto.offset.reset"] = ("error" if reset == "none" else reset, "")
        consumer_settings["enable.auto.commit"] = ("false", "")  # commits to the source follow the worker's commits
        consumer_settings.setdefault(ISOLATION_LEVEL, (READ_COMMITTED, ""))
        return cls(
            whitelist=whitelist_pattern(parsed[TOPIC_WHITELIST]),
            auto_offset_reset=reset,
            group_id=consumer("group.id"),
            topics_prefix=parsed[TOPICS_PREFIX],
            include_headers=parsed[INCLUDE_HEADERS],
            topic_list_timeout_ms=parsed[TOPIC_LIST_TIMEOUT_MS],
            topic_list_poll_interval_ms=parsed[TOPIC_LIST_POLL_INTERVAL_MS],
            reconfigure_on_leader_change=parsed[RECONFIGURE_ON_LEADER_CHANGE],
            poll_loop_timeout_ms=parsed[POLL_LOOP_TIMEOUT_MS],
            max_shutdown_wait_ms=parsed[MAX_SHUTDOWN_WAIT_MS],
            max_poll_records=consumer("max.poll.records"),
            key_deserializer=load_deserializer(KEY_DESERIALIZER, consumer("key.deserializer"), is_key=True),
            value_deserializer=load_deserializer(VALUE_DESERIALIZER, consumer("value.deserializer"), is_key=False),
            enable_auto_commit=consumer("enable.auto.commit"),
            consumer_settings=consumer_settings,
            admin_settings=_client_settings(parsed, ADMIN_PREFIX, _CONNECTOR_ONLY | _CONSUMER_ONLY),
        )

    @property
    def reads_committed(self) -> bool:
        """Whether the source consumer reads ``read_committed``: records of committed transactions only."""
        return self.consumer_settings[ISOLATION_LEVEL][0].strip().lower() == READ_COMMITTED

    @property
    def consumer_config(self) -> dict[str, str]:
        """The source consumer's librdkafka settings."""
        return {name: value for name, (value, _) in self.consumer_settings.items()}

    @property
    def admin_config(self) -> dict[str, str | int | float | bool]:
        """The partition monitor's admin client settings."""
        return {name: value for name, (value, _) in self.admin_settings.items()}

    def destination(self, topic: str) -> str:
        """The destination topic of a source topic."""
        return self.topics_prefix + topic

    def matches(self, topic: str) -> bool:
        """Whether the whitelist matches the whole of ``topic``."""
        return self.whitelist.fullmatch(topic) is not None
