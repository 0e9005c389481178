"""The Spark sink's options: defaults, the column list of ``value.schema``, and what is rejected, by key."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

from headwater.reference_connectors.spark_sink import SPARK_DEFAULTS, SinkConfig, SparkSinkConnector, parse_schema
from headwater.reference_connectors.spark_sink.schema import table_schema
from headwater.sdk import ConfigError

BASE = {"name": "orders-sink", "table.path": "/data/orders"}


def parse(**props: Any) -> SinkConfig:
    return SinkConfig.parse({**BASE, **{k.replace("_", "."): v for k, v in props.items()}})


def test_defaults() -> None:
    config = parse()
    assert config.table_format == "parquet"
    assert config.app_id == "orders-sink"  # the connector's name unless table.app.id is given
    assert config.value_schema is None  # inferred
    assert config.metadata_columns == ("topic", "partition", "offset", "timestamp", "key")
    assert config.metadata_name("offset") == "kafka_offset"
    assert (config.flush_max_records, config.flush_max_bytes, config.flush_interval_ms) == (100_000, 64 << 20, 30_000)
    assert config.spark_conf == SPARK_DEFAULTS


def test_spark_keys_pass_through_over_the_defaults() -> None:
    config = SinkConfig.parse({**BASE, "spark.driver.memory": "2g", "spark.sql.session.timeZone": "UTC"})
    assert config.spark_conf["spark.driver.memory"] == "2g"
    assert config.spark_conf["spark.sql.session.timeZone"] == "UTC"
    assert config.spark_conf["spark.master"] == SPARK_DEFAULTS["spark.master"]


def test_the_runtimes_error_keys_are_accepted_and_the_old_dead_letter_cluster_is_refused() -> None:
    runtime_keys = {
        "errors.tolerance": "all",
        "errors.deadletterqueue.topic.name": "orders-dlq",
        "errors.deadletterqueue.context.headers.enable": "true",
    }
    assert SinkConfig.parse({**BASE, **runtime_keys}).app_id == "orders-sink"
    old = {**BASE, **runtime_keys, "errors.deadletterqueue.bootstrap.servers": "kafka:9092"}
    for parse_old in (SinkConfig.parse, SparkSinkConnector().validate):
        with pytest.raises(ConfigError) as refused:
            parse_old(old)
        assert refused.value.key == "errors.deadletterqueue.bootstrap.servers"
        assert "runtime's dead-letter queue" in str(refused.value)
        assert "worker's Kafka cluster" in str(refused.value)


def test_schema_columns_become_arrow_fields() -> None:
    schema = parse_schema("value.schema", "id BIGINT NOT NULL, name string, price DECIMAL(10, 2), at TIMESTAMP, d DATE")
    assert schema == pa.schema(
        [
            pa.field("id", pa.int64(), nullable=False),
            pa.field("name", pa.string()),
            pa.field("price", pa.decimal128(10, 2)),
            pa.field("at", pa.timestamp("us", tz="UTC")),
            pa.field("d", pa.date32()),
        ]
    )


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("id BIGINT, id STRING", "defined twice"),
        ("id MAP<STRING,INT>", "is not 'name TYPE"),
        ("id VARCHAR", "Unsupported type 'VARCHAR'"),
        ("price DECIMAL(40,2)", "out of range"),
        ("id", "is not 'name TYPE"),
    ],
)
def test_bad_schemas_name_the_key_and_the_problem(text: str, reason: str) -> None:
    with pytest.raises(ConfigError, match=reason) as raised:
        parse(value_schema=text)
    assert raised.value.key == "value.schema"


@pytest.mark.parametrize(
    ("props", "key"),
    [
        ({"table.format": "iceberg"}, "table.format"),
        ({"metadata.columns": "topic,headers"}, "metadata.columns"),
        ({"partition.by": "a-b"}, "partition.by"),
        ({"flush.max.records": "0"}, "flush.max.records"),
        ({"metadata.key.type": "json"}, "metadata.key.type"),
    ],
)
def test_bad_values_name_their_key(props: dict[str, str], key: str) -> None:
    with pytest.raises(ConfigError) as raised:
        SinkConfig.parse({**BASE, **props})
    assert raised.value.key == key


def test_an_app_id_is_needed_when_there_is_no_name() -> None:
    with pytest.raises(ConfigError) as raised:
        SinkConfig.parse({"table.path": "/t"})
    assert raised.value.key == "table.app.id"
    assert SinkConfig.parse({"table.path": "/t", "table.app.id": "ingest"}).app_id == "ingest"


def test_metadata_columns_follow_the_value_columns_and_must_not_clash() -> None:
    values = parse_schema("value.schema", "id BIGINT")
    schema = table_schema(values, ("offset", "key"), "kafka_", "binary")
    assert schema.names == ["id", "kafka_offset", "kafka_key"]
    assert schema.field("kafka_key").type == pa.binary()
    with pytest.raises(ConfigError, match="clashes"):
        table_schema(parse_schema("value.schema", "offset BIGINT"), ("offset",), "", "string")


def test_the_table_path_keeps_its_scheme() -> None:
    assert SinkConfig.parse({**BASE, "table.path": "s3a://lake/orders"}).table_path == "s3a://lake/orders"
    assert [SinkConfig.parse({**BASE, "table.path": path}).scheme for path in ("s3a://lake/t", "/data/t", "t")] == [
        "s3a",
        "file",
        "file",
    ]
    assert SinkConfig.parse({**BASE, "table.path": "s3a://lake/t"}).s3a


@pytest.mark.parametrize(
    ("props", "key", "reason"),
    [
        ({"spark.remote": "sc://localhost:15002"}, "spark.remote", "Spark Connect is not supported"),
        ({"spark.api.mode": "connect"}, "spark.api.mode", "set spark.master"),
        ({"table.path": "s3://lake/orders"}, "table.path", "write s3a://lake/orders"),
        ({"table.path": "s3n://lake/orders"}, "table.path", "no file system for s3n://"),
        (
            {"table.path": "s3a://lake/orders", "table.format": "delta"},
            "table.single.writer",
            "two workers committing at once overwrite each other's commit",
        ),
        (
            {
                "table.path": "s3a://lake/orders",
                "table.format": "delta",
                "spark.delta.logStore.s3a.impl": "io.delta.storage.S3SingleDriverLogStore",
            },
            "table.single.writer",
            "table.commit.coordinator=dynamodb",
        ),
        (
            {"table.commit.coordinator": "dynamodb", "table.commit.coordinator.dynamodb.endpoint": "http://ddb:8000"},
            "table.commit.coordinator",
            "Parquet table commits through its own manifests",
        ),
        (
            {"table.format": "delta", "table.commit.coordinator": "dynamodb"},
            "table.commit.coordinator.dynamodb.endpoint",
            "Required with table.commit.coordinator=dynamodb",
        ),
        (
            {"table.format": "delta", "table.commit.coordinator": "zookeeper"},
            "table.commit.coordinator",
            "must be one of: , dynamodb",
        ),
    ],
)
def test_setups_whose_guarantees_cannot_hold_are_refused(props: dict[str, str], key: str, reason: str) -> None:
    with pytest.raises(ConfigError) as refused:
        SinkConfig.parse({**BASE, **props})
    assert refused.value.key == key
    assert reason in str(refused.value)


@pytest.mark.parametrize(
    "props",
    [
        {"table.single.writer": "true"},
        {"spark.delta.logStore.s3a.impl": "io.delta.storage.S3DynamoDBLogStore"},
        {"table.commit.coordinator": "DynamoDB", "table.commit.coordinator.dynamodb.endpoint": "http://ddb:8000"},
    ],
)
def test_a_delta_table_on_s3a_is_accepted_with_one_writer_or_a_log_store_or_coordinator_for_several(
    props: dict[str, str],
) -> None:
    config = SinkConfig.parse({**BASE, "table.path": "s3a://lake/orders", "table.format": "delta", **props})
    assert config.s3a and config.table_format == "delta"
    assert config.commit_coordinator == ("dynamodb" if "table.commit.coordinator" in props else "")
    assert config.creator  # a config the connector did not mark


def test_the_connector_marks_its_first_task_alone_as_the_tables_creator() -> None:
    connector = SparkSinkConnector()
    props = {**BASE, "table.format": "delta", "table.commit.coordinator": "dynamodb"}
    props["table.commit.coordinator.dynamodb.endpoint"] = "http://ddb:8000"
    connector.start(props)
    configs = connector.task_configs(3)
    assert [SinkConfig.parse(config).creator for config in configs] == [True, False, False]
    assert {SinkConfig.parse(config).dynamodb_table for config in configs} == {"delta_commits"}
    with pytest.raises(ConfigError) as refused:
        SparkSinkConnector().validate({**props, "table.creator": "true"})
    assert refused.value.key == "table.creator"


def test_an_s3_path_is_accepted_where_the_connector_maps_a_file_system_to_it() -> None:
    config = SinkConfig.parse(
        {**BASE, "table.path": "s3://lake/t", "spark.hadoop.fs.s3.impl": "org.apache.hadoop.fs.s3a.S3AFileSystem"}
    )
    assert config.scheme == "s3" and config.s3a  # so hadoop-aws is added to the session
