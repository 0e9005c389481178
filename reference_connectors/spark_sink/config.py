"""The Spark sink's configuration: the table, its columns, the flush policy and the settings of the worker process's
SparkSession. Records that do not fit the schema are handled by the runtime's ``errors.*`` keys (tolerance, log,
dead-letter queue), which every sink has.

Every ``spark.`` key goes to the SparkSession builder as it is (``spark.driver.memory=2g``); the session is made
once per worker process, so the first Spark sink task to start in a process decides them. Packages are merged with
the ones the table needs (see :mod:`.packages`), never replaced.

Refused at config time, with the reason: a Spark Connect session (``spark.remote``, ``spark.api.mode=connect``), an
``s3://`` or ``s3n://`` table path Hadoop has no file system for, a Delta table on s3a written with Delta's
default S3 log store unless ``table.single.writer`` declares that one worker process writes it or
``table.commit.coordinator`` gives its commits to a coordinator, a commit coordinator for a Parquet table, and
``errors.deadletterqueue.bootstrap.servers``, the key of the sink's former dead-letter producer.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from headwater.reference_connectors.spark_sink.packages import S3A_FILESYSTEM
from headwater.reference_connectors.spark_sink.s3_sink_keys import S3_SINK_KEYS
from headwater.reference_connectors.spark_sink.schema import METADATA_FIELDS, parse_schema
from headwater.sdk import ConfigDef, ConfigError, Importance, Type, at_least, non_empty_string, one_of

TABLE_PATH = "table.path"
TABLE_FORMAT = "table.format"
TABLE_APP_ID = "table.app.id"
SINGLE_WRITER = "table.single.writer"
COMMIT_COORDINATOR = "table.commit.coordinator"
DYNAMODB_TABLE = "table.commit.coordinator.dynamodb.table"
DYNAMODB_ENDPOINT = "table.commit.coordinator.dynamodb.endpoint"
TABLE_CREATOR = "table.creator"
"""Set by the connector in each task config, ``true`` for its first task only: with a commit coordinator, the one
task that creates a missing table (Delta's first commit goes to the file system, where two creators would overwrite
each other's). Not a connector option."""
VALUE_SCHEMA = "value.schema"
METADATA_COLUMNS = "metadata.columns"
METADATA_PREFIX = "metadata.column.prefix"
KEY_TYPE = "metadata.key.type"
PARTITION_BY = "partition.by"
FLUSH_RECORDS = "flush.max.records"
FLUSH_BYTES = "flush.max.bytes"
FLUSH_INTERVAL_MS = "flush.interval.ms"
WRITE_FILES = "write.max.files"
WRITE_BACKGROUND = "write.background"
DLQ_BOOTSTRAP = "errors.deadletterqueue.bootstrap.servers"
"""No longer an option: the sink's own dead-letter producer went to this cluster. Refused, with what to do."""
SPARK_PREFIX = "spark."

SPARK_DEFAULTS: dict[str, str] = {
    "spark.master": "local[2]",
    "spark.driver.memory": "1g",
    "spark.driver.extraJavaOptions": "-XX:+UseParallelGC",
    "spark.sql.execution.arrow.localRelationThreshold": "0",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.shuffle.partitions": "2",
    "spark.databricks.delta.snapshotPartitions": "2",
    "spark.log.level": "ERROR",
}
"""Session settings a connector does not give: a small local session, no UI, few shuffle partitions. Two are for
the write path's speed: the throughput collector (a flush is a batch job; G1's concurrent marking took a quarter of
the JVM's CPU), and no local relation for Arrow batches (below that threshold, 48 MB by default, Spark turns a whole
flush into rows on the driver in one thread and ships them inside the tasks; with 0 the executors convert the
batches in parallel: a warm 250,000-row write went from about 1.9 s to 1.2 s, a first one from 5.5 s to 2.2 s)."""

_COLUMN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*")
DELTA_LOG_STORES = ("spark.delta.logStore.s3a.impl", "spark.delta.logStore.class")
SINGLE_DRIVER_LOG_STORE = "io.delta.storage.S3SingleDriverLogStore"


def is_local_master(master: str) -> bool:
    """Whether ``master`` runs the executors inside the driver's JVM (``local``, ``local[4]``, ``local[*]``)."""
    return master.startswith("local")


def _schema(key: str, value: Any) -> None:
    if str(value).strip():
        parse_schema(key, str(value))


def _metadata(key: str, value: Any) -> None:
    unknown = [name for name in value if name not in METADATA_FIELDS]
    if unknown:
        raise ConfigError(key, value, f"Unknown metadata columns {unknown}; choose from {', '.join(METADATA_FIELDS)}")


def _prefix(key: str, value: Any) -> None:
    if value and not _COLUMN.fullmatch(value):
        raise ConfigError(key, value, "A column prefix may hold only ASCII letters, digits and '_'")


def _columns(key: str, value: Any) -> None:
    bad = [name for name in value if not _COLUMN.fullmatch(name)]
    if bad:
        raise ConfigError(key, value, f"Not column names: {bad}")


CONFIG_DEF = (
    ConfigDef()
    .define(
        TABLE_PATH,
        Type.STRING,
        importance=Importance.HIGH,
        documentation="Hadoop path of the table's directory, its scheme kept: a local path or file:/..., "
        "s3a://bucket/path, hdfs://, abfs://, gs://. A relative path is taken from the worker's working directory.",
        validator=non_empty_string,
    )
    .define(TABLE_FORMAT, Type.STRING, "parquet", Importance.HIGH, "parquet or delta.", one_of("parquet", "delta"))
    .define(
        TABLE_APP_ID,
        Type.STRING,
        None,
        Importance.MEDIUM,
        "Names this connector's offsets in the table (Delta txnAppId prefix, Parquet manifest owner); "
        "default the connector's name.",
    )
    .define(
        SINGLE_WRITER,
        Type.BOOLEAN,
        False,
        Importance.MEDIUM,
        "Declare that one worker process (a standalone worker) writes this table. Required for a Delta table on "
        "s3a with Delta's default S3 log store, which keeps commits apart within one process only: with several "
        "workers (distributed mode) set table.commit.coordinator=dynamodb (or a log store for concurrent "
        "writers, spark.delta.logStore.s3a.impl=io.delta.storage.S3DynamoDBLogStore) and leave this false.",
    )
    .define(
        COMMIT_COORDINATOR,
        Type.STRING,
        "",
        Importance.MEDIUM,
        "Delta only: 'dynamodb' gives the table's commits to Delta's DynamoDB commit coordinator (Delta's "
        "coordinated commits), so that several worker processes can write one Delta table on s3a; empty: Delta "
        "commits through the file system's log store. A new table is created with it by the connector's first "
        "task when it starts (from value.schema); an existing table must have been created with it.",
        one_of("", "dynamodb"),
    )
    .define(
        DYNAMODB_TABLE,
        Type.STRING,
        "delta_commits",
        Importance.LOW,
        "The DynamoDB table of the commit coordinator (made by Delta if missing; one can serve many Delta tables).",
        non_empty_string,
    )
    .define(
        DYNAMODB_ENDPOINT,
        Type.STRING,
        "",
        Importance.MEDIUM,
        "The DynamoDB endpoint of the commit coordinator, like https://dynamodb.us-east-1.amazonaws.com; required "
        "with table.commit.coordinator=dynamodb. Credentials come from the AWS SDK's default chain (environment, "
        "profile, instance role).",
    )
    .define(
        VALUE_SCHEMA,
        Type.STRING,
        "",
        Importance.HIGH,
        "Columns of the record values, like 'id BIGINT NOT NULL, name STRING'; a record's own schema (Avro, JSON "
        "with schemas) is checked against them. Empty: the records' schemas make and evolve the table's columns "
        "(new optional fields, safe widenings); records without one: the table's own, else inferred from the first "
        "batch written to a new table.",
        _schema,
    )
    .define(
        METADATA_COLUMNS,
        Type.LIST,
        ",".join(METADATA_FIELDS),
        Importance.MEDIUM,
        "Record metadata written as columns: any of topic, partition, offset, timestamp, key.",
        _metadata,
    )
    .define(METADATA_PREFIX, Type.STRING, "kafka_", Importance.LOW, "Prefix of the metadata column names.", _prefix)
    .define(
        KEY_TYPE,
        Type.STRING,
        "string",
        Importance.LOW,
        "Type of the key column: string or binary.",
        one_of("string", "binary"),
    )
    .define(PARTITION_BY, Type.LIST, "", Importance.MEDIUM, "Columns the table is partitioned by.", _columns)
    .define(
        FLUSH_RECORDS, Type.INT, 100_000, Importance.MEDIUM, "Flush once this many records are buffered.", at_least(1)
    )
    .define(
        FLUSH_BYTES,
        Type.LONG,
        64 * 1024 * 1024,
        Importance.MEDIUM,
        "Flush once the buffered keys and values hold this many bytes.",
        at_least(1),
    )
    .define(
        FLUSH_INTERVAL_MS,
        Type.LONG,
        30_000,
        Importance.MEDIUM,
        "Flush once the oldest buffered record has waited this long.",
        at_least(1),
    )
    .define(
        WRITE_FILES,
        Type.INT,
        0,
        Importance.LOW,
        "Most Spark write tasks (so files per table partition) per flush; 0: the session's default parallelism.",
        at_least(0),
    )
    .define(
        WRITE_BACKGROUND,
        Type.BOOLEAN,
        True,
        Importance.LOW,
        "Write each flush on a background thread while the next records are buffered (at most one write in "
        "flight; its offsets are committed once it is in the table); false: put waits for every write.",
    )
    .define_prefix(
        SPARK_PREFIX,
        "SparkSession settings, given to its builder as they are (spark.hadoop.* reach Hadoop's configuration); the "
        "first Spark sink task of a worker process decides them.",
    )
    .merge(S3_SINK_KEYS)
)
"""Every option of the Spark sink with its default and validator, the ``spark.`` prefix of the session's settings
(passed through), and Confluent's S3 sink keys answered with what to write instead."""


@dataclass(frozen=True)
class SinkConfig:
    """A parsed Spark sink config."""

    table_path: str
    table_format: str
    app_id: str
    value_schema: pa.Schema | None
    """``None``: inferred."""
    metadata_columns: tuple[str, ...]
    metadata_prefix: str
    key_type: str
    partition_by: tuple[str, ...]
    flush_max_records: int
    flush_max_bytes: int
    flush_interval_ms: int
    write_max_files: int
    write_background: bool
    spark_conf: Mapping[str, str]
    single_writer: bool = False
    commit_coordinator: str = ""
    """``""`` (the file system's log store) or ``dynamodb``."""
    dynamodb_table: str = "delta_commits"
    dynamodb_endpoint: str = ""
    creator: bool = True
    """Whether this task creates a missing table when its commits go to a coordinator (see :data:`TABLE_CREATOR`)."""

    @property
    def scheme(self) -> str:
        """The table path's URI scheme, lower case; ``file`` for a path without one."""
        head, colon, _ = self.table_path.partition(":")
        return head.lower() if colon and _SCHEME.fullmatch(head) and len(head) > 1 else "file"

    @property
    def s3a(self) -> bool:
        """Whether the table is on S3 through Hadoop's S3A file system (``s3a://``, or a scheme mapped to it)."""
        mapped = self.spark_conf.get(f"spark.hadoop.fs.{self.scheme}.impl")
        return self.scheme == "s3a" or mapped == S3A_FILESYSTEM

    @property
    def local_master(self) -> bool:
        return is_local_master(self.spark_conf.get("spark.master", "local"))

    @classmethod
    def parse(cls, props: Mapping[str, Any]) -> SinkConfig:
        """Parse a connector or task config; raises :class:`ConfigError` naming every bad key."""
        if props.get(DLQ_BOOTSTRAP) is not None:
            raise ConfigError(
                DLQ_BOOTSTRAP,
                props[DLQ_BOOTSTRAP],
                "The Spark sink no longer has a dead-letter producer of its own: records that do not fit the schema "
                "go to the runtime's dead-letter queue (errors.deadletterqueue.topic.name), which every sink has and "
                "which writes to the worker's Kafka cluster (its producer settings: producer.override.* per "
                "connector); remove this key",
            )
        parsed = CONFIG_DEF.parse(props)
        app_id = parsed[TABLE_APP_ID] or str(props.get("name") or "")
        if not app_id:
            raise ConfigError(TABLE_APP_ID, None, "Required when the config has no connector name")
        schema_text = parsed[VALUE_SCHEMA]
        spark_conf = {
            **SPARK_DEFAULTS,
            **{str(k): str(v) for k, v in props.items() if str(k).startswith(SPARK_PREFIX) and v is not None},
        }
        found = cls(
            table_path=parsed[TABLE_PATH],
            table_format=parsed[TABLE_FORMAT].lower(),
            app_id=app_id,
            value_schema=parse_schema(VALUE_SCHEMA, schema_text) if schema_text else None,
            metadata_columns=tuple(parsed[METADATA_COLUMNS]),
            metadata_prefix=parsed[METADATA_PREFIX],
            key_type=parsed[KEY_TYPE].lower(),
            partition_by=tuple(parsed[PARTITION_BY]),
            flush_max_records=parsed[FLUSH_RECORDS],
            flush_max_bytes=parsed[FLUSH_BYTES],
            flush_interval_ms=parsed[FLUSH_INTERVAL_MS],
            write_max_files=parsed[WRITE_FILES],
            write_background=parsed[WRITE_BACKGROUND],
            spark_conf=spark_conf,
            single_writer=parsed[SINGLE_WRITER],
            commit_coordinator=parsed[COMMIT_COORDINATOR].lower(),
            dynamodb_table=parsed[DYNAMODB_TABLE],
            dynamodb_endpoint=parsed[DYNAMODB_ENDPOINT].strip(),
            creator=str(props.get(TABLE_CREATOR, "true")).strip().lower() == "true",
        )
        found.refuse_unsafe()
        return found

    def refuse_unsafe(self) -> None:
        """Raise :class:`ConfigError` for a setup whose guarantees cannot hold."""
        conf = self.spark_conf
        if conf.get("spark.remote") or conf.get("spark.api.mode", "").strip().lower() == "connect":
            key = "spark.remote" if conf.get("spark.remote") else "spark.api.mode"
            raise ConfigError(
                key,
                conf[key],
                "Spark Connect is not supported: the sink commits each write through the driver's JVM (Delta's "
                "transaction log, Hadoop's FileSystem API), which a Spark Connect client cannot reach; set "
                "spark.master (local[*], spark://host:port, yarn, k8s://...) so the worker is the Spark driver",
            )
        if self.scheme in ("s3", "s3n") and f"spark.hadoop.fs.{self.scheme}.impl" not in conf:
            raise ConfigError(
                TABLE_PATH,
                self.table_path,
                f"Hadoop has no file system for {self.scheme}://; write s3a://{self.table_path.split('://', 1)[-1]}",
            )
        if self.commit_coordinator and self.table_format != "delta":
            raise ConfigError(
                COMMIT_COORDINATOR,
                self.commit_coordinator,
                "A commit coordinator is Delta's: a Parquet table commits through its own manifests; set "
                "table.format=delta or leave this empty",
            )
        if self.commit_coordinator and not self.dynamodb_endpoint:
            raise ConfigError(DYNAMODB_ENDPOINT, None, f"Required with {COMMIT_COORDINATOR}={self.commit_coordinator}")
        stores = [conf[key] for key in DELTA_LOG_STORES if conf.get(key)]
        single_driver = not stores or SINGLE_DRIVER_LOG_STORE in stores
        coordinated = bool(self.commit_coordinator)
        if self.table_format == "delta" and self.s3a and single_driver and not (self.single_writer or coordinated):
            raise ConfigError(
                SINGLE_WRITER,
                self.single_writer,
                "A Delta table on s3a with Delta's default S3 log store (S3SingleDriverLogStore) is safe only when "
                "one process writes it: two workers committing at once overwrite each other's commit and lose its "
                "rows. Set table.single.writer=true if one standalone worker writes this table; for several "
                "workers set table.commit.coordinator=dynamodb (Delta's DynamoDB commit coordinator, with "
                "table.commit.coordinator.dynamodb.endpoint), or set spark.delta.logStore.s3a.impl to a log store "
                "for concurrent writers (io.delta.storage.S3DynamoDBLogStore, with its DynamoDB table)",
            )

    def metadata_name(self, field: str) -> str:
        """The column name of one metadata field (``offset`` -> ``kafka_offset``)."""
        return self.metadata_prefix + field
