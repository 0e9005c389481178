"""The connector configuration keys the runtime itself reads (every connector's, a source's, a sink's), a
connector's full definition, and how a worker and a connector config combine for one task."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from headwater.runtime.config import exactly_once_support, sink_topics, topic_creation
from headwater.runtime.config.error_keys import ErrorSettings
from headwater.runtime.config.topic_creation import GROUPS_CONFIG as TOPIC_CREATION_CONFIG
from headwater.runtime.config.transform_keys import CHAIN_CONFIG
from headwater.sdk.config import ConfigDef, Importance, Type, at_least, non_empty_string, one_of, regex
from headwater.sdk.connector import Connector, SinkConnector
from headwater.sdk.errors import ConfigError

ERROR_GROUP = "Error Handling"
"""The group of the ``errors.*`` keys in validate responses, as Kafka Connect names it."""

CONNECTOR_CONFIG = (
    ConfigDef()
    .define(
        "name",
        Type.STRING,
        documentation="Unique name of the connector.",
        validator=non_empty_string,
        importance=Importance.HIGH,
    )
    .define(
        "connector.class",
        Type.CLASS,
        documentation="Connector class: entry-point name, or an import path under a module the worker's "
        "connector.class.allowed.modules allows. A Java class name (Kafka Connect's, Confluent's, Debezium's) is "
        "refused naming Headwater's counterpart, if any (MirrorSourceConnector: kafka-mirror).",
        importance=Importance.HIGH,
    )
    .define("tasks.max", Type.INT, 1, Importance.HIGH, "Most tasks the connector may run.", at_least(1))
    .define(
        "key.converter",
        Type.CLASS,
        None,
        Importance.LOW,
        "Overrides the worker's key.converter; an import path only under a module the worker's "
        "connector.class.allowed.modules allows.",
    )
    .define(
        "value.converter",
        Type.CLASS,
        None,
        Importance.LOW,
        "Overrides the worker's value.converter; an import path only under a module the worker's "
        "connector.class.allowed.modules allows.",
    )
    .define(
        "header.converter",
        Type.CLASS,
        None,
        Importance.LOW,
        "Overrides the worker's header.converter; an import path only under a module the worker's "
        "connector.class.allowed.modules allows.",
    )
    .define(
        "errors.tolerance",
        Type.STRING,
        "none",
        Importance.MEDIUM,
        "Behaviour for a record that fails at some stage (conversion, a sink's put or ErrantRecordReporter, a "
        "source's produce): none fails the task, naming the record; all skips it (after logging it and, for a sink, "
        "sending it to the dead-letter queue when one is configured).",
        one_of("none", "all"),
        group=ERROR_GROUP,
    )
    .define(
        "errors.retry.timeout",
        Type.LONG,
        0,
        Importance.MEDIUM,
        "How long, in milliseconds, a failed operation is retried when its error is retriable; 0 means no retries, "
        "-1 retries without limit. A sink's put that raises RetriableError is redelivered without limit while this "
        "is 0, as in Kafka Connect; set it to bound those redeliveries too.",
        at_least(-1),
        group=ERROR_GROUP,
    )
    .define(
        "errors.retry.delay.max.ms",
        Type.LONG,
        60_000,
        Importance.MEDIUM,
        "The longest wait between two retries; waits double from 300 ms up to this bound.",
        at_least(1),
        group=ERROR_GROUP,
    )
    .define(
        "errors.log.enable",
        Type.BOOLEAN,
        False,
        Importance.MEDIUM,
        "Log each failed operation and its record at ERROR (tolerated ones too); off, only intolerable failures "
        "are logged.",
        group=ERROR_GROUP,
    )
    .define(
        "errors.log.include.messages",
        Type.BOOLEAN,
        False,
        Importance.MEDIUM,
        "Include the record's key, value and headers in the error log lines (not just its topic, partition and "
        "offset).",
        group=ERROR_GROUP,
    )
    .merge(CHAIN_CONFIG)
)

SOURCE_CONNECTOR_CONFIG = CONNECTOR_CONFIG.merge(
    ConfigDef()
    .define(
        "heartbeat.interval.ms",
        Type.LONG,
        None,
        Importance.LOW,
        "Overrides the worker's heartbeat.interval.ms for this connector; 0 turns heartbeats off.",
        at_least(0),
    )
    .define(
        "heartbeat.records.topic",
        Type.STRING,
        None,
        Importance.LOW,
        "Overrides the worker's heartbeat.records.topic for this connector.",
        non_empty_string,
    )
    .merge(TOPIC_CREATION_CONFIG)
    .merge(exactly_once_support.SOURCE_CONFIG)
)

SINK_CONNECTOR_CONFIG = CONNECTOR_CONFIG.merge(
    ConfigDef()
    .define(
        "topics",
        Type.LIST,
        "",
        Importance.HIGH,
        "Topics to consume, separated by commas. Only one of topics or topics.regex may be set.",
    )
    .define(
        "topics.regex",
        Type.STRING,
        "",
        Importance.HIGH,
        "A regular expression (Python's) matched against whole topic names: the sink consumes every topic that "
        "matches, topics created while it runs included; its tasks' consumers look for new topics every "
        "metadata.max.age.ms (5 minutes unless consumer.override.metadata.max.age.ms says otherwise). Only one of "
        "topics or topics.regex may be set.",
        regex,
    )
    .define(
        "errors.deadletterqueue.topic.name",
        Type.STRING,
        "",
        Importance.MEDIUM,
        "Topic that records failing at any stage go to when errors.tolerance=all, with their original key, value "
        "and header bytes (created when missing); empty for no dead-letter queue. A partition's offset is committed "
        "past a failed record only once the dead-letter write is acknowledged.",
        group=ERROR_GROUP,
    )
    .define(
        "errors.deadletterqueue.topic.replication.factor",
        Type.INT,
        3,
        Importance.MEDIUM,
        "Replication factor of the dead-letter topic when the worker creates it; -1 takes the broker's default.",
        at_least(-1),
        group=ERROR_GROUP,
    )
    .define(
        "errors.deadletterqueue.context.headers.enable",
        Type.BOOLEAN,
        False,
        Importance.MEDIUM,
        "Add __connect.errors.* headers to each dead-letter record: where it came from (topic, partition, offset), "
        "the connector and task, the failed stage and class, and the exception.",
        group=ERROR_GROUP,
    )
)


def connector_config_def(connector: Connector, props: Mapping[str, Any] | None = None) -> ConfigDef:
    """The runtime's common keys for the connector's kind plus the connector's own; with the config ``props``, a
    source's also have the keys of the topic creation groups it defines (:func:`topic_creation.definition`)."""
    if isinstance(connector, SinkConnector):
        return SINK_CONNECTOR_CONFIG.merge(connector.config_def())
    found = SOURCE_CONNECTOR_CONFIG.merge(connector.config_def())
    return found if props is None else found.merge(topic_creation.definition(props))


@dataclass(frozen=True)
class TaskSettings:
    """What a task loop reads from the worker and connector configs, resolved once when the task starts."""

    connector: str
    flush_interval_ms: int
    flush_timeout_ms: int
    heartbeat_interval_ms: int
    heartbeat_topic: str
    key_converter: str
    value_converter: str
    header_converter: str
    converter_props: Mapping[str, Any]
    errors: ErrorSettings
    max_poll_records: int
    shutdown_timeout_ms: int
    topics: tuple[str, ...] = ()
    topics_regex: str = ""
    """A sink's ``topics.regex``: the pattern its consumer subscribes to instead of :attr:`topics`."""

    @classmethod
    def resolve(cls, worker: Mapping[str, Any], connector: Mapping[str, Any], sink: bool) -> TaskSettings:
        """Combine a parsed worker config and a parsed connector config: the connector's value wins when set."""

        def pick(key: str) -> Any:
            value = connector.get(key)
            return worker[key] if value is None else value

        topics: tuple[str, ...] = tuple(connector.get("topics") or ())
        pattern = str(connector.get("topics.regex") or "").strip()
        if sink and (not topics) == (not pattern):
            key, found = next(iter(sink_topics.problems(connector).items()))
            raise ConfigError(key, connector.get(key), found[0])
        return cls(
            connector=str(connector["name"]),
            flush_interval_ms=int(worker["offset.flush.interval.ms"]),
            flush_timeout_ms=int(worker["offset.flush.timeout.ms"]),
            heartbeat_interval_ms=0 if sink else int(pick("heartbeat.interval.ms")),
            heartbeat_topic=str(pick("heartbeat.records.topic")) if not sink else "",
            key_converter=str(pick("key.converter")),
            value_converter=str(pick("value.converter")),
            header_converter=str(pick("header.converter")),
            converter_props={**worker, **{k: v for k, v in connector.items() if v is not None}},
            errors=ErrorSettings.parse(connector),
            max_poll_records=int(worker["consumer.max.poll.records"]),
            shutdown_timeout_ms=int(worker["task.shutdown.graceful.timeout.ms"]),
            topics=topics,
            topics_regex=pattern if sink else "",
        )
