"""Confluent's S3 sink (``io.confluent.connect.s3.S3SinkConnector``) keys the Spark sink does not read, each answered
with what to write instead (docs/migration.md has the whole table; the keys are those of Confluent's S3 sink
configuration reference)."""

from __future__ import annotations

from headwater.sdk.config import ConfigDef

_S3 = "Confluent's S3 sink key (see docs/migration.md)"
_NONE = "the Spark sink has no equivalent"

S3_SINK_KEYS = (
    ConfigDef()
    .define_replaced(
        ("s3.bucket.name", "topics.dir"), f"{_S3}; give the table's place as table.path=s3a://<bucket>/<dir>/<topic>"
    )
    .define_replaced(
        ("s3.region", "store.url"),
        f"{_S3}; set spark.hadoop.fs.s3a.endpoint.region or spark.hadoop.fs.s3a.endpoint (any S3A setting as "
        "spark.hadoop.fs.s3a.*)",
    )
    .define_replaced(
        ("aws.access.key.id", "aws.secret.access.key", "s3.credentials.provider.class"),
        f"{_S3}; S3A's credential provider chain reads the environment or instance profile, or set "
        "spark.hadoop.fs.s3a.access.key and spark.hadoop.fs.s3a.secret.key",
    )
    .define_replaced("storage.class", f"{_S3}; table.path's scheme (s3a://) chooses the file system")
    .define_replaced("format.class", f"{_S3}; set table.format (parquet or delta); Avro, JSON and raw objects: {_NONE}")
    .define_replaced(
        ("partitioner.class", "partition.field.name"),
        f"{_S3}; set partition.by: kafka_partition for DefaultPartitioner, the field for FieldPartitioner; "
        f"time-based partitioners: {_NONE} (add a date column with a transform and partition by it)",
    )
    .define_replaced("flush.size", f"{_S3}; the Spark sink reads flush.max.records (a task's buffered records)")
    .define_replaced(
        ("rotate.interval.ms", "rotate.schedule.interval.ms"),
        f"{_S3}; the Spark sink reads flush.interval.ms (the oldest buffered record's wait)",
    )
    .define_replaced(
        "schema.compatibility", f"{_S3}; the table follows the record schemas' compatible changes, or value.schema"
    )
    .define_replaced("parquet.codec", f"{_S3}; set spark.sql.parquet.compression.codec")
    .define_replaced("s3.part.size", f"{_S3}; set spark.hadoop.fs.s3a.multipart.size")
    .define_replaced("store.kafka.keys", f"{_S3}; the key is a column by default (metadata.columns)")
    .define_replaced(
        (
            "path.format",
            "partition.duration.ms",
            "locale",
            "timezone",
            "timestamp.extractor",
            "store.kafka.headers",
            "behavior.on.null.values",
            "filename.offset.zero.pad.width",
            "retry.backoff.ms",
            "s3.compression.type",
        ),
        f"{_S3}; {_NONE}",
    )
)
"""The keys, as a definition the Spark sink's own merges."""
