"""Worker and connector configuration keys the runtime itself reads, and how they combine for one task."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from headwater.runtime import exactly_once, sink_topics
from headwater.runtime.listener_config import LISTENER_CONFIG, METRICS_CONFIG
from headwater.runtime.override_policy import CLIENT_SETTINGS_CONFIG
from headwater.runtime.tasks.tolerance import ErrorSettings
from headwater.runtime.topic_creation import GROUPS_CONFIG as TOPIC_CREATION_CONFIG
from headwater.runtime.transforms.config import CHAIN_CONFIG
from headwater.sdk.config import ConfigDef, Importance, Type, at_least, non_empty_string, one_of, regex
from headwater.sdk.errors import ConfigError


def non_empty_list(key: str, value: Any) -> None:
    if not value:
        raise ConfigError(key, value, "List must name at least one item")


def listener_urls(key: str, value: Any) -> None:
    """One ``http://host:port`` or ``https://host:port`` URL, the port between 0 (any free port) and 65535."""
    if len(value) != 1:
        raise ConfigError(key, value, "Exactly one listener URL is supported")
    parse_listener(key, value[0])


def parse_listener(key: str, url: str) -> tuple[str, int]:
    """The host and port of an ``http://host:port`` or ``https://host:port`` listener URL; an empty host means
    every interface. :func:`is_https` tells the two apart."""
    scheme, separator, rest = url.partition("://")
    host, colon, port = rest.rstrip("/").rpartition(":")
    if (
        scheme.lower() not in ("http", "https")
        or not separator
        or not colon
        or not port.isdecimal()
        or int(port) > 65535
    ):
        raise ConfigError(key, url, "Expected a listener URL of the form http://host:port or https://host:port")
    return host.strip("[]") or "0.0.0.0", int(port)


def is_https(url: str) -> bool:
    """Whether a listener URL (valid for :func:`parse_listener`) asks for TLS."""
    return url.lower().startswith("https://")


WORKER_CONFIG = (
    ConfigDef()
    .define(
        "offset.flush.interval.ms",
        Type.LONG,
        60_000,
        Importance.LOW,
        "Interval at which to try committing offsets for tasks.",
        at_least(1),
    )
    .define(
        "offset.flush.timeout.ms",
        Type.LONG,
        5_000,
        Importance.LOW,
        "How long to wait for records to be acknowledged and offsets to be written before a commit is abandoned "
        "and retried at the next interval.",
        at_least(0),
    )
    .define(
        "heartbeat.interval.ms",
        Type.LONG,
        0,
        Importance.LOW,
        "How often source tasks are asked for heartbeat records; 0 turns heartbeats off. A connector may override it.",
        at_least(0),
    )
    .define(
        "heartbeat.records.topic",
        Type.STRING,
        "connect-heartbeats",
        Importance.LOW,
        "Topic heartbeat records go to unless the connector names its own.",
        non_empty_string,
    )
    .define(
        "heartbeat.records.topic.partitions",
        Type.INT,
        1,
        Importance.LOW,
        "Partitions of a heartbeat topic the worker creates (it is created, compacted, when missing).",
        at_least(1),
    )
    .define(
        "heartbeat.records.topic.replication.factor",
        Type.INT,
        -1,
        Importance.LOW,
        "Replication factor of a heartbeat topic the worker creates; -1 takes the broker's default.",
        at_least(-1),
    )
    .define(
        "key.converter",
        Type.CLASS,
        "json",
        Importance.HIGH,
        "Converter for record keys: bytes, string, json, a Kafka class name or a Python import path.",
    )
    .define("value.converter", Type.CLASS, "json", Importance.HIGH, "Converter for record values.")
    .define(
        "header.converter",
        Type.CLASS,
        "org.apache.kafka.connect.storage.SimpleHeaderConverter",
        Importance.LOW,
        "Converter for record header values.",
    )
    .define(
        "task.shutdown.graceful.timeout.ms",
        Type.LONG,
        5_000,
        Importance.LOW,
        "How long to wait for a worker's tasks to stop before those still running are cancelled, and for a "
        "connector's stop() before it is left to finish on its own thread; once a worker command has stopped on a "
        "signal, also how long its process may take to exit before it exits anyway.",
        at_least(0),
    )
    .define(
        "connector.start.wait.ms",
        Type.LONG,
        5_000,
        Importance.LOW,
        "How long a REST request that starts a connector on a standalone worker (create, update, resume, restart) "
        "waits for the connector's start() before it answers. A start() still running then goes on in the "
        "background on the connector's own thread: the connector's status says where it waits, its tasks start "
        "once it returns, and no other request waits for it.",
        at_least(0),
    )
    .define(
        "state.dir",
        Type.STRING,
        None,
        Importance.MEDIUM,
        "Directory the worker keeps its state on this machine in (a standalone worker's offsets file, unless "
        "offset.storage.file.filename names another). Unset, it is $XDG_STATE_HOME/headwater, or "
        "~/.local/state/headwater when XDG_STATE_HOME is not set: per user, never a shared /tmp. The worker creates "
        "it with mode 0700 when it needs it, and refuses to start when the path is not a directory or other users "
        "(its group included) may write to it.",
        non_empty_string,
    )
    .define(
        "offset.storage.file.filename",
        Type.STRING,
        None,
        Importance.HIGH,
        "File a standalone worker stores source offsets in; unset, connect.offsets in the state directory, state.dir.",
        non_empty_string,
    )
    .define(
        "consumer.max.poll.records",
        Type.INT,
        500,
        Importance.LOW,
        "Most records a sink task receives in one put.",
        at_least(1),
    )
    .define(
        "listeners",
        Type.LIST,
        "http://127.0.0.1:8083",
        Importance.LOW,
        "Where the REST API listens: one http://host:port or https://host:port URL (port 0 takes a free port; "
        "https needs listeners.https.ssl.certificate.location). The default binds the loopback interface only.",
        listener_urls,
    )
    .define(
        "topic.tracking.enable",
        Type.BOOLEAN,
        True,
        Importance.LOW,
        "Record the topics each connector uses in the status store (KIP-558) and serve them over REST.",
    )
    .define(
        "topic.creation.enable",
        Type.BOOLEAN,
        True,
        Importance.LOW,
        "Let source connectors create the topics they write to (KIP-158): a source task creates a missing topic "
        "before its first record to it with its connector's topic.creation.* settings. Off, a connector config "
        "with a topic.creation.* key is refused, and a topic a source writes to must exist or be created by the "
        "broker on first use.",
    )
    .define(
        "topic.tracking.allow.reset",
        Type.BOOLEAN,
        True,
        Importance.LOW,
        "Allow resetting a connector's active topics through the REST API.",
    )
    .define(
        "connector.unknown.keys",
        Type.STRING,
        "warn",
        Importance.MEDIUM,
        "What a connector config key that neither the connector nor the worker recognises (a typo, or another "
        "runtime's key) does: warn logs a warning naming it, with the nearest known key, each time the connector is "
        "created or its config changed; error refuses the config (HTTP 400), naming each such key. Validate reports "
        "it as an error on its key either way. Kafka Connect keys Headwater does not implement yet (transforms, "
        "say) are refused whatever this says.",
        one_of("warn", "error"),
    )
    .define(
        "connector.class.allowed.modules",
        Type.LIST,
        "",
        Importance.MEDIUM,
        "Modules an import path (package.module:Class) in a connector config may name, in connector.class and in "
        "its key.converter, value.converter and header.converter: a module is allowed when it is one of these or "
        "inside one (a package allows its submodules); * allows every module. By default none: only installed "
        "connectors (entry-point group headwater.connectors) and the built-in converters can be used, as Kafka "
        "Connect uses only what its plugin.path holds, so that a REST request cannot make the worker import a "
        "module. A refused path is an error naming the key and the module, and nothing is imported. The worker "
        "file's own converters are not restricted.",
    )
    .define(
        "config.providers",
        Type.LIST,
        "",
        Importance.LOW,
        "Names of the config providers that resolve ${name:path:key} references in connector configs (and in this "
        "file) when a connector or task starts; each is set up by config.providers.NAME.class and "
        "config.providers.NAME.param.* keys. See docs/security.md.",
    )
    .define_prefix(
        "config.providers.",
        "config.providers.NAME.class names a provider's class: file, env, directory, a Kafka provider class name, "
        "an entry point of the headwater.config_providers group or an import path; config.providers.NAME.param.KEY "
        "sets one of its parameters (allowed.paths for file and directory, allowlist.pattern for env).",
    )
).merge(LISTENER_CONFIG.merge(METRICS_CONFIG).merge(CLIENT_SETTINGS_CONFIG).merge(exactly_once.WORKER_CONFIG))

STANDALONE_CONFIG = WORKER_CONFIG.merge(
    ConfigDef()
    .define(
        "bootstrap.servers",
        Type.LIST,
        "localhost:9092",
        Importance.HIGH,
        "host:port pairs of the Kafka cluster to connect to, comma-separated.",
        non_empty_list,
    )
    .define(
        "broker.check.timeout.ms",
        Type.LONG,
        5_000,
        Importance.LOW,
        "How long one check that the Kafka cluster answers (a metadata request) may take at startup.",
        at_least(1),
    )
    .define(
        "broker.check.backoff.ms",
        Type.LONG,
        1_000,
        Importance.LOW,
        "Wait after the first failed broker check at startup; it doubles after each further failure.",
        at_least(1),
    )
    .define(
        "broker.check.backoff.max.ms",
        Type.LONG,
        30_000,
        Importance.LOW,
        "Longest wait between two broker checks at startup.",
        at_least(1),
    )
)
"""The worker keys a standalone worker reads: the worker's own plus where Kafka is and how to wait for it."""

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
        "connector.class.allowed.modules allows.",
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
    .merge(exactly_once.SOURCE_CONFIG)
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
