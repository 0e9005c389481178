"""The worker configuration keys the runtime itself reads: every worker's, and a standalone worker's own."""

from __future__ import annotations

from typing import Any

from headwater.runtime.config import exactly_once_support
from headwater.runtime.config.clients import SHARED_CLIENT_PREFIXES
from headwater.runtime.config.listeners import LISTENER_CONFIG, METRICS_CONFIG, listener_urls
from headwater.runtime.config.override_policy import CLIENT_SETTINGS_CONFIG
from headwater.runtime.transport import reachability
from headwater.sdk.config import ConfigDef, Importance, Type, at_least, non_empty_string, one_of
from headwater.sdk.errors import ConfigError


def non_empty_list(key: str, value: Any) -> None:
    if not value:
        raise ConfigError(key, value, "List must name at least one item")


_SHARED = (
    "every Kafka client of the worker gets as it is (its stores, its tasks' producers and consumers, its admin "
    "clients); a client's own prefixed key wins."
)
CLIENT_PREFIXES = ConfigDef()
for _prefix in SHARED_CLIENT_PREFIXES:
    CLIENT_PREFIXES.define_prefix(
        _prefix,
        f"The key itself: the security protocol (plaintext, ssl, sasl_plaintext, sasl_ssl) {_SHARED}"
        if not _prefix.endswith(".")
        else f"A librdkafka {_prefix[:-1].upper()} setting {_SHARED}",
    )
for _client in ("producer", "consumer", "admin"):
    CLIENT_PREFIXES.define_prefix(
        f"{_client}.",
        f"A librdkafka setting of the worker's {_client} clients (prefix removed), as in Kafka Connect; it wins over "
        "the top-level security keys.",
    )

CONVERTER_PREFIXES = ConfigDef()
for _converter in ("key.converter", "value.converter", "header.converter"):
    CONVERTER_PREFIXES.define_prefix(
        f"{_converter}.",
        f"A setting of the {_converter} (prefix removed): the settings its own table lists (schemas.enable, "
        "schema.registry.url, ...); a setting it does not have is an unknown key.",
    )

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
        "say) are refused whatever this says. It rules the worker file's own unknown keys too: warned at start, or "
        "with error the worker refuses to start.",
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
).merge(
    LISTENER_CONFIG.merge(METRICS_CONFIG)
    .merge(CLIENT_SETTINGS_CONFIG)
    .merge(exactly_once_support.WORKER_CONFIG)
    .merge(CLIENT_PREFIXES)
    .merge(CONVERTER_PREFIXES)
)

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
    .define(
        reachability.BOUND_KEY,
        Type.LONG,
        reachability.DEFAULT_BOUND_MS,
        Importance.LOW,
        "How long the running worker may go without an answer from the Kafka cluster (it asks every quarter of this, "
        "at most every 5 s) before GET /health answers 500 unhealthy, saying since when and the last error, and "
        "the headwater_connect_worker_broker_reachable metric turns 0; healthy again at the next answer.",
        at_least(100),
    )
)
"""The worker keys a standalone worker reads: the worker's own plus where Kafka is and how to wait for it."""
