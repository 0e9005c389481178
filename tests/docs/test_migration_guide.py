"""docs/migration.md: each Java example config is refused naming the Headwater connector its section maps it to;
each key of a Java example is in its section's table, and each Headwater key the table names exists; and the
examples run on the real broker: the MirrorMaker 2 one copies topics with their keys, values, headers and
timestamps, the Debezium one, on PostgreSQL, fills topics that a consumer unwrapping Debezium's envelope reads as
the table's rows, and the Confluent S3 sink's one, rewritten for the Spark sink, writes the topic to a Parquet table
on the session's S3 server. (Its bucket, topic and S3 connection are swapped for the test's own.)"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from confluent_kafka import Producer

from headwater.harness import SimulatedWorker
from headwater.harness.kafka_worker import KafkaInspector, KafkaSteppedWorker
from headwater.runtime.commands.standalone import StandaloneWorker
from headwater.runtime.config.properties import format_properties, read_properties
from headwater.runtime.config.worker import STANDALONE_CONFIG
from headwater.runtime.herder.validation import DEFAULT_WORKER_CONFIG, unknown_connector_keys
from headwater.runtime.plugins import resolve_connector_class
from headwater.sdk.errors import ConfigError
from support.debezium_unwrap import table_rows
from support.migration_guide import Migration, migrations, rewritten
from support.rest_worker import RestWorker, wait_until
from support.scratch import ScratchDatabase
from support.spark_services import S3Server

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

GUIDE = migrations()
Make = Callable[..., SimulatedWorker]
KEY = re.compile(r"^[a-z][a-z0-9_-]*(\.[a-z0-9_-]+)+$")


def test_the_guide_maps_the_three_connectors() -> None:
    assert sorted(GUIDE) == ["jdbc-cdc", "kafka-mirror", "spark-sink"]


@pytest.mark.parametrize("name", sorted(GUIDE))
def test_the_java_example_is_refused_naming_its_headwater_connector(name: str) -> None:
    java_class = GUIDE[name].java["connector.class"]
    with pytest.raises(ConfigError) as refused:
        resolve_connector_class(java_class, allowed_modules=())
    message = str(refused.value)
    assert name in message and "Java" in message, message
    assert "allowed.modules" not in message, message


@pytest.mark.parametrize("name", sorted(GUIDE))
def test_every_key_of_the_java_example_is_in_the_table(name: str) -> None:
    migration = GUIDE[name]
    listed = migration.java_keys_in_table()
    prefixes = tuple(key[:-1] for key in listed if key.endswith("*"))
    missing = [key for key in migration.java if key not in listed and not key.startswith(prefixes)]
    assert missing == [], f"{migration.title}: Java keys the table does not map"


@pytest.mark.parametrize("name", sorted(GUIDE))
def test_a_java_example_key_left_in_a_headwater_config_is_answered_with_what_to_write_instead(name: str) -> None:
    """The Java example under the Headwater connector: every key the connector does not read is reported with its
    replacement (the guide's answer), never only as a key that would be ignored."""
    connector = resolve_connector_class(name)()
    props = {**GUIDE[name].java, "connector.class": name}
    unknown = unknown_connector_keys(props, connector, DEFAULT_WORKER_CONFIG)
    assert unknown, "the Java example has keys the connector does not read"
    bare = {key: message for key, message in unknown.items() if "see docs/migration.md" not in message}
    assert bare == {}


def headwater_keys(migration: Migration) -> set[str]:
    """The config keys the table's Headwater column names (``key=value`` cells by their key)."""
    found = set()
    for _, cell in migration.rows:
        for code in re.findall(r"`([^`]+)`", cell):
            key = code.split("=")[0]
            if KEY.match(key) and "*" not in key and "<" not in key:
                found.add(key)
    return found


@pytest.mark.parametrize("name", sorted(GUIDE))
def test_every_headwater_key_the_table_names_exists(name: str) -> None:
    connector = resolve_connector_class(name)()
    known = set(connector.config_def().keys) | set(STANDALONE_CONFIG.keys)
    passthrough = ("spark.", "source.", "connector.consumer.", "connector.admin.", "key.converter.", "value.converter.")
    unknown = sorted(k for k in headwater_keys(GUIDE[name]) if k not in known and not k.startswith(passthrough))
    assert unknown == []


@pytest.fixture
def kafka_worker(kafka_bootstrap: str) -> Iterator[Make]:
    """``kafka_worker(config)``: a worker on the real broker, stepped on its virtual clock; closed after the test."""
    made: list[KafkaSteppedWorker] = []

    def make(config: dict[str, Any]) -> KafkaSteppedWorker:
        made.append(KafkaSteppedWorker(kafka_bootstrap, config))
        return made[-1]

    yield make
    for worker in made:
        worker.close()


def produce(bootstrap: str, topic: str, count: int, partitions: int) -> list[tuple[Any, ...]]:
    """``count`` records with keys, values, headers (on every other one) and timestamps, spread over partitions."""
    producer = Producer({"bootstrap.servers": bootstrap})
    sent = []
    for n in range(count):
        headers = [("trace", b"\x00\xff%d" % n)] if n % 2 else []
        record = (n % partitions, b"k%d" % n, b"v%d" % n, tuple(headers), 1_700_000_000_000 + n)
        producer.produce(topic, record[2], record[1], record[0], timestamp=record[4], headers=headers or None)
        sent.append(record)
    assert producer.flush(30) == 0
    return sent


@pytest.mark.kafka
def test_the_mirrormaker_example_copies_topics_with_keys_values_headers_and_timestamps(
    kafka_bootstrap: str, unique_name: str, kafka_worker: Make
) -> None:
    """The worker's cluster is the source too: the copies' prefix keeps them out of the whitelist."""
    inspector = KafkaInspector(kafka_bootstrap)
    orders, payments = f"{unique_name}-orders", f"{unique_name}-payments-eu"
    inspector.create_topic(orders, partitions=2)
    inspector.create_topic(payments)
    sent = {orders: produce(kafka_bootstrap, orders, 40, 2), payments: produce(kafka_bootstrap, payments, 10, 1)}
    config = rewritten(
        GUIDE["kafka-mirror"].headwater,
        {"orders": orders, "payments-": f"{unique_name}-payments-"},
        source_bootstrap_servers=kafka_bootstrap,
        source_group_id=unique_name,
    )
    worker = kafka_worker({"offset.flush.interval.ms": 100})
    worker.add_connector(unique_name, config.pop("connector.class"), config)

    def copied(topic: str) -> list[tuple[Any, ...]]:
        """The copy's records without their partition, which the destination's partitioner chose."""
        return [(m.key, m.value, tuple(m.headers or ()), m.timestamp) for m in inspector.messages(f"primary.{topic}")]

    for topic, records in sent.items():
        worker.run_until(lambda t=topic: len(copied(t)) >= len(sent[t]), 120_000, f"the copy of {topic}")
        assert sorted(copied(topic)) == sorted(record[1:] for record in records)


@pytest.mark.kafka
@pytest.mark.postgres
def test_the_debezium_example_fills_topics_a_debezium_consumer_reads_as_the_tables(
    kafka_bootstrap: str, postgres_database: ScratchDatabase, unique_name: str, kafka_worker: Make
) -> None:
    """A snapshot, then an insert, an update and a delete: a consumer unwrapping Debezium's envelope (as
    ``ExtractNewRecordState`` does) over the JSON the connector wrote rebuilds both tables, and the delete is
    followed by a tombstone, as Debezium's ``tombstones.on.delete`` default has it."""
    database = postgres_database
    database.execute(
        "CREATE TABLE customers (id INTEGER PRIMARY KEY, email TEXT)",
        "CREATE TABLE orders (id INTEGER PRIMARY KEY, customer INTEGER, amount NUMERIC(10, 2))",
        "INSERT INTO customers VALUES (1, 'a@example.com'), (2, 'b@example.com')",
        "INSERT INTO orders VALUES (10, 1, 12.50)",
    )
    name = "inventory_" + unique_name.rsplit("-", 1)[-1]  # slot names are the server's: unique, at most 48 characters
    config = rewritten(GUIDE["jdbc-cdc"].headwater, {"inventory": name}, connection_url=database.url)
    worker = kafka_worker({"offset.flush.interval.ms": 100})
    worker.add_connector(unique_name, config.pop("connector.class"), config)
    inspector = KafkaInspector(kafka_bootstrap)
    customers, orders = f"{name}.public.customers", f"{name}.public.orders"

    def messages(topic: str) -> list[tuple[Any, Any]]:
        decoded = lambda raw: None if raw is None else json.loads(raw)  # noqa: E731
        return [(decoded(m.key), decoded(m.value)) for m in inspector.messages(topic)]

    worker.run_until(lambda: len(messages(customers)) == 2 and len(messages(orders)) == 1, 120_000, "the snapshot")
    database.execute(
        "INSERT INTO customers VALUES (3, 'c@example.com')",
        "UPDATE orders SET amount = 13.75 WHERE id = 10",
        "DELETE FROM customers WHERE id = 2",
    )
    database.execute("INSERT INTO customers VALUES (4, 'd@example.com')")  # a later transaction: the last event

    def last_arrived() -> bool:
        found = messages(customers)
        return bool(found) and found[-1][1] is not None and found[-1][1]["payload"]["after"]["id"] == 4

    worker.run_until(lambda: last_arrived() and len(messages(orders)) == 2, 120_000, "the changes")
    assert sorted(row["email"] for row in table_rows(messages(customers)).values()) == [
        "a@example.com",
        "c@example.com",
        "d@example.com",
    ]
    (order,) = table_rows(messages(orders)).values()
    cents = int.from_bytes(base64.b64decode(order["amount"]), "big", signed=True)  # a Connect Decimal, scale 2
    assert (order["id"], order["customer"], cents) == (10, 1, 1375)
    found = messages(customers)
    assert [None if value is None else value["payload"]["op"] for _, value in found] == ["r", "r", "c", "d", None, "c"]
    delete, tombstone = found[3:5]
    assert (delete[1]["payload"]["before"]["id"], tombstone) == (2, (delete[0], None))  # the tombstone: the same key
    assert delete[1]["schema"]["name"] == f"{name}.public.customers.Envelope"
    assert delete[1]["payload"]["source"]["connector"] == "postgresql"


S3_SINK_SCHEMA = {
    "type": "struct",
    "name": "shop.Order",
    "optional": False,
    "fields": [
        {"field": "id", "type": "int64", "optional": False},
        {"field": "customer", "type": "string", "optional": True},
    ],
}


@pytest.mark.kafka
def test_the_s3_sink_example_writes_the_topic_to_a_parquet_table_on_s3(
    kafka_bootstrap: str, spark: SparkSession, s3_server: S3Server, s3_bucket: str, unique_name: str, tmp_path: Path
) -> None:
    """JSON records with schemas become a Parquet table at the S3 sink's place, partitioned by Kafka partition, keys
    as strings, each record once. A standalone worker in this process (its SparkSession) on the real clock: the
    example flushes after its default flush.interval.ms, 30 s, which on a stepped virtual clock costs minutes."""
    from support.lake import Lake  # pyspark's: imported once the session exists

    topic = f"{unique_name}-orders"
    KafkaInspector(kafka_bootstrap).create_topic(topic, partitions=2)
    producer = Producer({"bootstrap.servers": kafka_bootstrap})
    for n in range(30):
        value = {"schema": S3_SINK_SCHEMA, "payload": {"id": n, "customer": f"c{n % 4}"}}
        producer.produce(topic, json.dumps(value).encode(), f"order-{n}".encode(), partition=n % 2)
    assert producer.flush(30) == 0
    swaps = {"orders": topic, "s3a://lake/": f"s3a://{s3_bucket}/"}
    config = rewritten(GUIDE["spark-sink"].headwater, swaps, name=unique_name)
    config.update(s3_server.hadoop_conf())
    props = {
        "bootstrap.servers": kafka_bootstrap,
        "offset.storage.file.filename": str(tmp_path / "offsets"),
        "listeners": "http://127.0.0.1:0",
    }
    (tmp_path / "worker.properties").write_text(format_properties(props), encoding="utf-8")
    worker = RestWorker(StandaloneWorker(read_properties(tmp_path / "worker.properties"), []))
    lake = Lake(f"s3a://{s3_bucket}", spark, s3_server)
    table = f"s3a://{s3_bucket}/topics/{topic}"
    try:
        assert worker.create(unique_name, config).status_code == 201
        wait_until(lambda: len(lake.rows(table, "parquet")) >= 30, "the 30 rows in the table", 300)
        assert worker.states(unique_name) == ("RUNNING", ["RUNNING", "RUNNING"])
    finally:
        worker.stop()
    rows = lake.rows(table, "parquet")
    assert sorted((r["id"], r["customer"], r["kafka_key"], r["kafka_partition"]) for r in rows) == [
        (n, f"c{n % 4}", f"order-{n}", n % 2) for n in range(30)
    ]
    keys = s3_server.list_keys(s3_bucket, f"topics/{topic}/")
    assert {key.split("/")[2] for key in keys if key.split("/")[2].startswith("kafka_partition=")} == {
        "kafka_partition=0",
        "kafka_partition=1",
    }
