"""docs/migration.md's Confluent S3 sink example, rewritten for the Spark sink, runs as written on the real broker
and the session's S3 server: JSON records with schemas become a Parquet table at the S3 sink's place, partitioned
by Kafka partition, keys as strings, each record once. (Its bucket, topic and S3 connection are swapped for the
test's own.)"""

from __future__ import annotations

import json

import pytest
from confluent_kafka import Producer
from pyspark.sql import SparkSession

from headwater.harness.kafka_worker import KafkaInspector, KafkaSteppedWorker
from headwater.sdk import TopicPartition
from support.lake import Lake
from support.migration_guide import migrations, rewritten
from support.spark_services import S3Server

pytestmark = [pytest.mark.kafka, pytest.mark.spark]

SCHEMA = {
    "type": "struct",
    "name": "shop.Order",
    "optional": False,
    "fields": [
        {"field": "id", "type": "int64", "optional": False},
        {"field": "customer", "type": "string", "optional": True},
    ],
}


def test_the_s3_sink_example_writes_the_topic_to_a_parquet_table_on_s3(
    kafka_bootstrap: str, spark: SparkSession, s3_server: S3Server, s3_bucket: str, unique_name: str
) -> None:
    topic = f"{unique_name}-orders"
    KafkaInspector(kafka_bootstrap).create_topic(topic, partitions=2)
    producer = Producer({"bootstrap.servers": kafka_bootstrap})
    for n in range(30):
        value = {"schema": SCHEMA, "payload": {"id": n, "customer": f"c{n % 4}"}}
        producer.produce(topic, json.dumps(value).encode(), f"order-{n}".encode(), partition=n % 2)
    assert producer.flush(30) == 0
    config = rewritten(migrations()["spark-sink"].headwater, {"orders": topic, "s3a://lake/": f"s3a://{s3_bucket}/"})
    config.update(s3_server.hadoop_conf())
    worker = KafkaSteppedWorker(kafka_bootstrap)
    try:
        worker.add_connector(unique_name, config.pop("connector.class"), config)
        end = {TopicPartition(topic, 0): 15, TopicPartition(topic, 1): 15}
        worker.run_until(lambda: worker.group_offsets(unique_name) == end, 300_000, f"commits up to {end}")
    finally:
        worker.close()
    lake = Lake(f"s3a://{s3_bucket}", spark, s3_server)
    table = f"s3a://{s3_bucket}/topics/{topic}"
    rows = lake.rows(table, "parquet")
    assert sorted((r["id"], r["customer"], r["kafka_key"], r["kafka_partition"]) for r in rows) == [
        (n, f"c{n % 4}", f"order-{n}", n % 2) for n in range(30)
    ]
    keys = s3_server.list_keys(s3_bucket, f"topics/{topic}/")
    assert {key.split("/")[2] for key in keys if key.split("/")[2].startswith("kafka_partition=")} == {
        "kafka_partition=0",
        "kafka_partition=1",
    }
