"""Java plugin class names in a connector config, told apart from Python import paths without importing anything,
and answered for what they are: a config brought from Kafka Connect names Java classes (Kafka's, Confluent's,
Debezium's), which no module list can make loadable here. Where Headwater has a counterpart, the answer names it."""

from __future__ import annotations

import importlib.util
import re
from collections.abc import Mapping
from dataclasses import dataclass

from headwater.sdk.errors import ConfigError

MIGRATION_GUIDE = "docs/migration.md"
"""The page that maps Kafka Connect configs (MirrorMaker 2, Debezium, Confluent's sinks) to Headwater's."""


@dataclass(frozen=True)
class JavaPlugin:
    """A known Java plugin: the value Headwater takes in its place (``None`` when it has none), a one-line note on
    what it does or why there is none, and the docs page of the counterpart."""

    equivalent: str | None
    note: str
    docs: str | None = None


VENDORS: Mapping[str, str] = {
    "org.apache.kafka.": "Apache Kafka's",
    "io.confluent.": "Confluent's",
    "io.debezium.": "Debezium's",
    "com.github.jcustenborder.": "Jeremy Custenborder's",
    "io.aiven.": "Aiven's",
    "com.mongodb.kafka.": "MongoDB's",
    "io.lenses.": "Lenses'",
    "com.snowflake.": "Snowflake's",
    "io.apicurio.": "Apicurio's",
    "com.blueapron.": "Blue Apron's",
    "com.amazonaws.": "AWS's",
    "com.wepay.": "WePay's",
    "com.splunk.": "Splunk's",
    "com.datastax.": "DataStax's",
    "io.strimzi.": "Strimzi's",
}
"""Packages of Java plugins for Kafka Connect, by whose they are: a name under one is Java without further looking."""

JAVA_TOP_LEVEL = frozenset({"com", "org", "io", "net", "edu", "dev", "ai", "co", "me", "tech", "cloud", "app", "de"})
"""Top-level packages of Java's reverse-domain naming (``com.example.kafka.MyConnector``)."""

_JAVA_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+\.[A-Z][A-Za-z0-9_]*(?:\$[A-Za-z0-9_]+)*")
"""A dotted name ending in a CamelCase class, maybe with nested classes (``Outer$Inner``); no ``:``."""

MIRROR_DOCS = "docs/kafka-mirror.md"
CDC_DOCS = "docs/jdbc-cdc.md"
SPARK_DOCS = "docs/spark-sink.md"
_SPARK_NOTE = (
    "spark-sink writes the topics into a Parquet or Delta Lake table exactly once, at a table.path of any Hadoop "
    "scheme ({scheme}), rather than one object file per partition and flush"
)

CONNECTORS: Mapping[str, JavaPlugin] = {
    "org.apache.kafka.connect.mirror.MirrorSourceConnector": JavaPlugin(
        "kafka-mirror",
        "Headwater's mirror (KIP-310) copies the records, keys, headers and timestamps of the source topics that "
        "source.topic.whitelist matches; destination.topics.prefix takes the place of the replication policy's "
        "source-alias prefix, and topic configs, ACLs and consumer offsets are not synced",
        MIRROR_DOCS,
    ),
    "org.apache.kafka.connect.mirror.MirrorCheckpointConnector": JavaPlugin(
        None, "kafka-mirror translates no consumer-group offsets: it writes no checkpoints topic and syncs no groups"
    ),
    "org.apache.kafka.connect.mirror.MirrorHeartbeatConnector": JavaPlugin(
        None,
        "nothing writes MirrorMaker 2's heartbeats topic; kafka-mirror's heartbeat.interval.ms is another thing "
        "(KIP-910 heartbeat records that let an idle mirrored partition's offset move on)",
    ),
    "io.debezium.connector.postgresql.PostgresConnector": JavaPlugin(
        "jdbc-cdc",
        "with capture.mode=log it reads the table changes from PostgreSQL's logical replication (pgoutput, as "
        "Debezium's plugin.name=pgoutput) into change events of Debezium's shape (before, after, source, op, ts_ms)",
        CDC_DOCS,
    ),
    "io.debezium.connector.mysql.MySqlConnector": JavaPlugin(
        "jdbc-cdc",
        "with connection.url=mysql+pymysql://... it captures MySQL/MariaDB tables in trigger mode (the default): "
        "AFTER triggers write each change to an audit table it reads, instead of reading the binlog (capture.mode=log "
        "is PostgreSQL's only)",
        CDC_DOCS,
    ),
    "io.debezium.connector.mariadb.MariaDbConnector": JavaPlugin(
        "jdbc-cdc",
        "with connection.url=mysql+pymysql://... it captures MariaDB tables in trigger mode (the default): AFTER "
        "triggers write each change to an audit table it reads, instead of reading the binlog (capture.mode=log is "
        "PostgreSQL's only)",
        CDC_DOCS,
    ),
    "io.debezium.connector.": JavaPlugin(
        None, "jdbc-cdc captures SQLite, PostgreSQL and MariaDB/MySQL tables only", CDC_DOCS
    ),
    "io.confluent.connect.jdbc.JdbcSourceConnector": JavaPlugin(
        "jdbc-cdc",
        "it sends each row change of SQLite, PostgreSQL or MariaDB/MySQL tables (captured by triggers or from "
        "PostgreSQL's log) as a change event, where Confluent's connector polls rows by query (bulk, incrementing, "
        "timestamp); the jdbc-cdc-unwrap transform turns the events into plain rows",
        CDC_DOCS,
    ),
    "io.confluent.connect.jdbc.JdbcSinkConnector": JavaPlugin(
        None, "no sink writes database tables over JDBC; spark-sink writes Parquet or Delta Lake tables", SPARK_DOCS
    ),
    "io.confluent.connect.s3.S3SinkConnector": JavaPlugin(
        "spark-sink", _SPARK_NOTE.format(scheme="s3a://bucket/path"), SPARK_DOCS
    ),
    "io.confluent.connect.hdfs.HdfsSinkConnector": JavaPlugin(
        "spark-sink", _SPARK_NOTE.format(scheme="hdfs://..."), SPARK_DOCS
    ),
    "io.confluent.connect.hdfs3.Hdfs3SinkConnector": JavaPlugin(
        "spark-sink", _SPARK_NOTE.format(scheme="hdfs://..."), SPARK_DOCS
    ),
}
"""Known Java connector classes (a key ending in ``.`` stands for the package's other classes)."""

REGISTRY_DOCS = "docs/schema-registry.md"

CONVERTERS: Mapping[str, JavaPlugin] = {
    "io.confluent.connect.json.JsonConverter": JavaPlugin(
        "json",
        "Confluent ships no class of this name: Kafka's org.apache.kafka.connect.json.JsonConverter is json, "
        "Confluent's io.confluent.connect.json.JsonSchemaConverter is jsonschema",
    ),
    "io.apicurio.registry.utils.converter.AvroConverter": JavaPlugin(
        "avro",
        "Headwater's Avro converter speaks Confluent's Schema Registry wire format (a magic byte and a 4-byte schema "
        "id; Apicurio Registry serves Confluent's API under /apis/ccompat/), not Apicurio's own id framing",
        REGISTRY_DOCS,
    ),
    "com.blueapron.connect.protobuf.ProtobufConverter": JavaPlugin(
        None,
        "it writes a compiled message class's plain Protobuf bytes; Headwater's protobuf converter reads and writes "
        "Confluent's Schema Registry framing, which those bytes lack",
        REGISTRY_DOCS,
    ),
    "org.apache.kafka.connect.converters.": JavaPlugin(
        None,
        "Kafka's number converters (KIP-305) and BooleanConverter have no counterpart; bytes passes their bytes on "
        "unchanged",
    ),
}
"""Known Java converter classes besides the built-ins' Java names (which load as they are)."""

TRANSFORMATIONS: Mapping[str, JavaPlugin] = {
    "io.debezium.transforms.ExtractNewRecordState": JavaPlugin(
        "jdbc-cdc-unwrap",
        "it turns jdbc-cdc's change events (envelope=headwater) into the plain rows, with Debezium's "
        "delete.handling.mode (drop, rewrite, none), drop.tombstones, add.fields and add.fields.prefix",
        CDC_DOCS,
    ),
    "io.debezium.transforms.ByLogicalTableRouter": JavaPlugin(
        None, "RegexRouter renames topics by a regular expression, without changing the keys"
    ),
    "io.confluent.connect.transforms.": JavaPlugin(None, "the built-in transformations are Kafka's own"),
}
"""Known Java transformation classes besides Kafka's own (built in under their Java names)."""


def is_java_class(spec: str) -> bool:
    """Whether ``spec`` is a Java class name rather than a Python import path: a dotted name ending in a CamelCase
    class, under a known Java plugin vendor's package, or under a reverse-domain top-level package (``com``, ``org``,
    ``io``...) that is no Python package here. Nothing is imported: a top-level package is only looked up."""
    name = spec.strip()
    if not _JAVA_NAME.fullmatch(name):
        return False
    if name.startswith(tuple(VENDORS)):
        return True
    top = name.partition(".")[0]
    return top in JAVA_TOP_LEVEL and not _python_package(top)


def _python_package(top: str) -> bool:
    """Whether ``top`` is an importable Python package (a module with submodules), found without running it."""
    try:
        found = importlib.util.find_spec(top)
    except (ImportError, ValueError):
        return False
    return found is not None and found.submodule_search_locations is not None


def known_plugin(spec: str, known: Mapping[str, JavaPlugin]) -> JavaPlugin | None:
    """The entry of ``known`` for ``spec``: its own, else the one of the longest package (a key ending in ``.``)
    it is in."""
    name = spec.strip()
    if name in known:
        return known[name]
    packages = [key for key in known if key.endswith(".") and name.startswith(key)]
    return known[max(packages, key=len)] if packages else None


def java_answer(key: str, spec: str, known: Mapping[str, JavaPlugin], instead: str) -> str | None:
    """What to answer for ``key=spec`` when ``spec`` is a Java class name (``None`` when it is not one): that it is a
    Java plugin Headwater cannot run, and the value to use instead from ``known`` (or that there is none, with
    ``instead``: what can be used, such as the installed connectors)."""
    name = spec.strip()
    plugin = known_plugin(name, known)
    if plugin is None and not is_java_class(name):
        return None
    vendor = next((whose for package, whose in VENDORS.items() if name.startswith(package)), None)
    what = (
        f"a Java plugin for Kafka Connect ({vendor} class)"
        if vendor
        else "a Java class name (its package is a reverse domain, as a Kafka Connect plugin's)"
    )
    text = f"{name} is {what}: Headwater runs Python connectors, converters and transforms, never Java classes"
    if plugin is not None and plugin.equivalent is not None:
        text += f"; use {key}={plugin.equivalent} instead: {plugin.note}"
    else:
        text += f"; Headwater has no equivalent{f': {plugin.note}' if plugin else ''}; {instead}"
    if plugin is not None and plugin.docs:
        text += f" (see {plugin.docs})"
    return f"{text}. {MIGRATION_GUIDE} maps Kafka Connect configs to Headwater's"


def refuse_java(key: str, spec: str, known: Mapping[str, JavaPlugin], instead: str) -> None:
    """Raise :class:`ConfigError` on ``key`` with :func:`java_answer`'s answer when ``spec`` is a Java class name:
    the check that comes before any module list is asked and anything is imported."""
    answer = java_answer(key, spec, known, instead)
    if answer is not None:
        raise ConfigError(key, spec, answer)
