"""``record.schemas=connect`` in log mode (PostgreSQL, pgoutput): the schema follows the Relation message PostgreSQL
sends after ``ALTER TABLE``, every column but the key's optional; heartbeats carry schemas; and, once, the events
through the Avro converter and a real Schema Registry, which registers a second version after a column is added."""

from __future__ import annotations

import base64
import io
import json
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from fastavro import parse_schema, schemaless_writer

from headwater.harness import SimulatedWorker
from headwater.reference_connectors.jdbc_cdc import JdbcCdcSourceConnector
from headwater.runtime.converters.avro import AvroConverter
from headwater.runtime.converters.avro_data import to_avro, to_datum
from support.scratch import ScratchDatabase

from .test_log_mode import log_config

pytestmark = pytest.mark.postgres

Make = Callable[..., SimulatedWorker]
JSON_SCHEMAS = {
    "key.converter": "json",
    "key.converter.schemas.enable": "true",
    "value.converter": "json",
    "value.converter.schemas.enable": "true",
}


def fields(schema: Any) -> dict[str, Any]:
    return {f["field"]: f for f in schema["fields"]}


def assert_writable(schema: Any, value: Any) -> None:
    schemaless_writer(io.BytesIO(), parse_schema(to_avro(schema)), to_datum(schema, value))


def test_a_column_added_mid_stream_is_in_the_schema_from_the_next_change(
    make_simulated_worker: Make, postgres_database: ScratchDatabase, prefix: str
) -> None:
    database = postgres_database
    database.execute(
        "CREATE DOMAIN positive AS integer CHECK (VALUE > 0)",  # pgoutput sends the domain's own type OID
        "CREATE TABLE orders (id integer PRIMARY KEY, amount numeric(10,2) NOT NULL, at timestamp(3), "
        "bin bytea, doc jsonb, qty positive, ref oid)",  # an oid: SQLAlchemy's inspector knows no integer in it
        "INSERT INTO orders VALUES (1, 12.5, '2026-11-23 12:00:00.123', '\\x00ff', '{\"a\": 1}', 5, 42)",
    )
    worker = make_simulated_worker()
    config = {**log_config(database, prefix, record_schemas="connect"), **JSON_SCHEMAS}
    worker.add_connector("cdc", JdbcCdcSourceConnector, config)
    topic = f"{prefix}.public.orders"
    worker.run_until(lambda: len(worker.messages(topic)) >= 1, what="the snapshot row")
    database.execute("INSERT INTO orders VALUES (2, 1, NULL, NULL, NULL, 6, NULL)")
    database.execute("ALTER TABLE orders ADD COLUMN note text")
    database.execute(
        "INSERT INTO orders VALUES (3, 2.25, NULL, NULL, NULL, 7, NULL, 'n')", "DELETE FROM orders WHERE id = 1"
    )
    worker.run_until(lambda: len(worker.messages(topic)) >= 4, what="4 events")
    snapshot, before_alter, after_alter, delete = worker.values(topic)
    assert snapshot["schema"] == before_alter["schema"]  # the snapshot's schema is the stream's: one version
    row = fields(fields(before_alter["schema"])["after"])
    assert {name: (f["type"], f.get("name"), f["optional"]) for name, f in row.items()} == {
        "id": ("int32", None, False),
        "amount": ("string", None, True),  # log mode: pgoutput says nothing of NOT NULL
        "at": ("int64", "io.debezium.time.Timestamp", True),
        "bin": ("bytes", None, True),
        "doc": ("string", "io.debezium.data.Json", True),
        "qty": ("string", None, True),  # a type the mapping does not know: its text
        "ref": ("int64", None, True),
    }
    assert snapshot["payload"]["after"] == {
        "id": 1,
        "amount": "12.50",
        "at": 1795435200123,
        "bin": base64.b64encode(b"\x00\xff").decode(),
        "doc": '{"a":1}',
        "qty": "5",
        "ref": 42,
    }
    assert before_alter["payload"]["after"]["qty"] == "6"
    added = fields(fields(after_alter["schema"])["after"])
    assert list(added) == [*row, "note"] and added["note"] == {"type": "string", "optional": True, "field": "note"}
    assert after_alter["payload"]["after"]["note"] == "n"
    assert delete["schema"] == after_alter["schema"]
    assert delete["payload"]["before"] == dict.fromkeys(added) | {"id": 1}  # REPLICA IDENTITY DEFAULT: the key
    keys = [json.loads(m.key) for m in worker.messages(topic)]
    assert keys[0]["schema"]["name"] == f"{prefix.replace('-', '_')}.public.orders.Key"
    assert [k["payload"] for k in keys] == [{"id": 1}, {"id": 2}, {"id": 3}, {"id": 1}]


def test_heartbeats_carry_a_key_and_a_value_schema(
    make_simulated_worker: Make, postgres_database: ScratchDatabase, prefix: str
) -> None:
    database = postgres_database
    database.execute("CREATE TABLE orders (id integer PRIMARY KEY)", "CREATE TABLE notes (id integer PRIMARY KEY)")
    worker = make_simulated_worker({"offset.flush.interval.ms": 100})
    config = log_config(database, prefix, record_schemas="connect", heartbeat_interval_ms=100)
    worker.add_connector("cdc", JdbcCdcSourceConnector, {**config, **JSON_SCHEMAS})
    worker.advance(300)
    database.execute("INSERT INTO notes VALUES (1)")
    worker.run_until(lambda: worker.messages("connect-heartbeats"), what="a heartbeat")
    (beat, *_) = worker.values("connect-heartbeats")
    key = json.loads(worker.messages("connect-heartbeats")[0].key)
    assert key["schema"]["name"] == "headwater.jdbc_cdc.HeartbeatKey"
    assert beat["schema"]["name"] == "headwater.jdbc_cdc.Heartbeat"
    assert list(fields(beat["schema"])) == ["connector", "name", "server", "lsn", "seq", "flush", "ts_ms"]
    assert beat["payload"]["server"] == prefix and beat["payload"]["seq"] == -1
    assert_writable(key["schema"], key["payload"])
    assert_writable(beat["schema"], beat["payload"])


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_through_the_avro_converter_the_registry_gets_a_second_version_after_a_column_is_added(
    make_simulated_worker: Make, postgres_database: ScratchDatabase, prefix: str, schema_registry_url: str
) -> None:
    database = postgres_database
    database.execute(
        "CREATE TABLE orders (id integer PRIMARY KEY, amount numeric(10,2), at timestamptz)",
        "INSERT INTO orders VALUES (1, 12.5, '2026-11-23 06:30:00.5+00')",
    )
    avro = {
        "key.converter": "avro",
        "key.converter.schema.registry.url": schema_registry_url,
        "value.converter": "avro",
        "value.converter.schema.registry.url": schema_registry_url,
    }
    worker = make_simulated_worker()
    config = log_config(database, prefix, record_schemas="connect", decimal_handling_mode="precise")
    worker.add_connector("cdc", JdbcCdcSourceConnector, {**config, **avro})
    topic = f"{prefix}.public.orders"
    worker.run_until(lambda: len(worker.messages(topic)) >= 1, what="the snapshot row")
    database.execute("INSERT INTO orders VALUES (2, 1, NULL)")
    database.execute("ALTER TABLE orders ADD COLUMN note text")
    database.execute("INSERT INTO orders VALUES (3, 2.25, NULL, 'n')")
    worker.run_until(lambda: len(worker.messages(topic)) >= 3, what="3 events")

    versions = httpx.get(f"{schema_registry_url}/subjects/{topic}-value/versions", timeout=30).json()
    assert versions == [1, 2]
    reader = AvroConverter()
    reader.configure({"schema.registry.url": schema_registry_url}, False)
    try:
        read = [reader.to_connect_data(topic, m.value) for m in worker.messages(topic)]
    finally:
        reader.close()
    assert [value["after"]["id"] for _, value in read] == [1, 2, 3]
    assert str(read[0][1]["after"]["amount"]) == "12.50"
    assert read[0][1]["after"]["at"] == "2026-11-23T06:30:00.5Z"
    assert "note" not in fields(fields(read[1][0])["after"])
    assert read[2][1]["after"]["note"] == "n"
