"""The unwrap transform (``jdbc-cdc-unwrap``) on the events the JDBC-CDC source really produces from SQLite, on the
simulated worker: rows instead of envelopes, deletes dropped, as tombstones or rewritten with ``__deleted``,
envelope fields added on request, JSON bytes (the ``bytes`` converters) unwrapped as bytes; a dropped delete's
offset is still committed."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from headwater.harness import SimulatedWorker
from headwater.reference_connectors.jdbc_cdc import JdbcCdcSourceConnector, source_partition
from headwater.runtime.error_handling.tolerance import StageFailed
from headwater.runtime.transforms import build_chain
from headwater.sdk import ConfigError, SourceRecord
from support.scratch import ScratchDatabase

Make = Callable[..., SimulatedWorker]
BYTES = {"key.converter": "bytes", "value.converter": "bytes", "header.converter": "bytes"}


def unwrapping(database: ScratchDatabase, prefix: str, **settings: Any) -> dict[str, Any]:
    """A connector config of the source with the unwrap transform, ``settings`` its own (``_`` for ``.``)."""
    return {
        "connection.url": database.url,
        "topic.prefix": prefix,
        "table.include.list": "orders",
        "poll.interval.ms": 0,
        "transforms": "unwrap",
        "transforms.unwrap.type": "jdbc-cdc-unwrap",
        **{f"transforms.unwrap.{key.replace('_', '.')}": value for key, value in settings.items()},
    }


def changes(make_simulated_worker: Make, database: ScratchDatabase, config: dict[str, Any]) -> SimulatedWorker:
    """The source run over: two snapshot rows, an insert, an update and a delete; returns once the delete has been
    read (its offset committed)."""
    database.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY, item VARCHAR(40), qty INTEGER)")
    database.execute("INSERT INTO orders VALUES (1, 'apple', 3)", "INSERT INTO orders VALUES (2, 'pear', 1)")
    worker = make_simulated_worker({"offset.flush.interval.ms": 100})
    worker.add_connector("cdc", JdbcCdcSourceConnector, config)
    partition = source_partition(config["topic.prefix"])
    worker.run_until(lambda: worker.source_offset("cdc", partition) is not None, what="the snapshot committed")
    database.execute("INSERT INTO orders VALUES (3, 'fig', 7)", "UPDATE orders SET qty = 4 WHERE id = 1")
    database.execute("DELETE FROM orders WHERE id = 2")
    last = database.scalar(f"SELECT max(id) FROM {config.get('audit.table.name', 'headwater_cdc_cdc')}")
    worker.run_until(
        lambda: worker.source_offset("cdc", partition) == {"change_id": last}, what="the delete's offset committed"
    )
    return worker


def row(id: int, item: str, qty: int, **extra: Any) -> dict[str, Any]:
    return {"id": id, "item": item, "qty": qty, **extra}


def test_rows_arrive_instead_of_envelopes_and_deletes_are_dropped(
    make_simulated_worker: Make, sqlite_database: ScratchDatabase, prefix: str
) -> None:
    worker = changes(make_simulated_worker, sqlite_database, unwrapping(sqlite_database, prefix))
    topic = f"{prefix}.orders"
    assert worker.values(topic) == [row(1, "apple", 3), row(2, "pear", 1), row(3, "fig", 7), row(1, "apple", 4)]
    assert [m.key for m in worker.messages(topic)] == [b'{"id":1}', b'{"id":2}', b'{"id":3}', b'{"id":1}']


def test_a_delete_can_be_a_tombstone(
    make_simulated_worker: Make, sqlite_database: ScratchDatabase, prefix: str
) -> None:
    config = unwrapping(sqlite_database, prefix, delete_handling_mode="none")
    worker = changes(make_simulated_worker, sqlite_database, config)
    last = worker.messages(f"{prefix}.orders")[-1]
    assert (last.key, last.value) == (b'{"id":2}', None)
    assert len(worker.messages(f"{prefix}.orders")) == 5


def test_a_delete_can_be_rewritten_with_fields_of_the_envelope(
    make_simulated_worker: Make, sqlite_database: ScratchDatabase, prefix: str
) -> None:
    config = unwrapping(sqlite_database, prefix, delete_handling_mode="rewrite", add_fields="op,table,source.ts_ms")
    worker = changes(make_simulated_worker, sqlite_database, config)
    values = worker.values(f"{prefix}.orders")
    assert [(value["__op"], value["__deleted"]) for value in values] == [
        ("r", "false"),
        ("r", "false"),
        ("c", "false"),
        ("u", "false"),
        ("d", "true"),
    ]
    assert values[-1] == row(
        2, "pear", 1, __op="d", __table="orders", __deleted="true", __source_ts_ms=values[-1]["__source_ts_ms"]
    )
    assert all(isinstance(value["__source_ts_ms"], int) for value in values[2:]), "the changes' database times"


def test_json_bytes_from_the_bytes_converters_are_unwrapped_as_bytes(
    make_simulated_worker: Make, sqlite_database: ScratchDatabase, prefix: str
) -> None:
    config = {**unwrapping(sqlite_database, prefix, add_fields="op"), **BYTES}
    worker = changes(make_simulated_worker, sqlite_database, config)
    assert [m.value for m in worker.messages(f"{prefix}.orders")][2:] == [
        b'{"id":3,"item":"fig","qty":7,"__op":"c"}',
        b'{"id":1,"item":"apple","qty":4,"__op":"u"}',
    ]


def test_an_unknown_field_or_mode_is_refused_naming_its_key() -> None:
    base = {"transforms": "u", "transforms.u.type": "jdbc-cdc-unwrap"}
    with pytest.raises(ConfigError, match=r"transforms\.u\.add\.fields.*Unknown field colour"):
        build_chain({**base, "transforms.u.add.fields": "op,colour"})
    with pytest.raises(ConfigError, match=r"transforms\.u\.delete\.handling\.mode"):
        build_chain({**base, "transforms.u.delete.handling.mode": "rewrite-with-tombstone"})


def test_a_record_that_is_not_a_change_event_fails_at_stage_transformation() -> None:
    chain = build_chain({"transforms": "u", "transforms.u.type": "jdbc-cdc-unwrap"})
    with pytest.raises(StageFailed, match="Not a JDBC-CDC change event") as failed:
        chain.apply(SourceRecord(None, None, "t", {"id": 1}))
    assert failed.value.failure.stage.value == "TRANSFORMATION"
    tombstone = SourceRecord(None, None, "t", None, {"id": 1})
    assert chain.apply(tombstone) is None, "drop.tombstones defaults to true"
    kept = build_chain(
        {"transforms": "u", "transforms.u.type": "jdbc-cdc-unwrap", "transforms.u.drop.tombstones": "false"}
    )
    assert kept.apply(tombstone) is tombstone


JSON_SCHEMAS = {
    "record.schemas": "connect",
    "key.converter": "json",
    "key.converter.schemas.enable": "true",
    "value.converter": "json",
    "value.converter.schemas.enable": "true",
}


def test_with_record_schemas_a_row_carries_the_row_schema_and_the_added_fields(
    make_simulated_worker: Make, sqlite_database: ScratchDatabase, prefix: str
) -> None:
    settings = {"delete_handling_mode": "rewrite", "add_fields": "op,source.ts_ms"}
    config = {**unwrapping(sqlite_database, prefix, **settings), **JSON_SCHEMAS}
    worker = changes(make_simulated_worker, sqlite_database, config)
    values = worker.values(f"{prefix}.orders")
    schema = values[0]["schema"]
    assert all(value["schema"] == schema for value in values)
    assert schema["name"] == f"{prefix.replace('-', '_')}.orders.Value"
    assert [(f["field"], f["type"], f["optional"]) for f in schema["fields"]] == [
        ("id", "int64", False),
        ("item", "string", True),
        ("qty", "int64", True),
        ("__op", "string", True),
        ("__source_ts_ms", "int64", True),
        ("__deleted", "string", True),
    ]
    assert values[-1]["payload"] == row(
        2, "pear", 1, __op="d", __source_ts_ms=values[-1]["payload"]["__source_ts_ms"], __deleted="true"
    )
    keys = [json.loads(m.key) for m in worker.messages(f"{prefix}.orders")]
    assert {key["schema"]["name"] for key in keys} == {f"{prefix.replace('-', '_')}.orders.Key"}


def test_with_record_schemas_a_tombstone_keeps_its_key_schema(
    make_simulated_worker: Make, sqlite_database: ScratchDatabase, prefix: str
) -> None:
    config = {**unwrapping(sqlite_database, prefix, delete_handling_mode="none"), **JSON_SCHEMAS}
    worker = changes(make_simulated_worker, sqlite_database, config)
    last = worker.messages(f"{prefix}.orders")[-1]
    assert last.value is None
    assert last.key is not None and json.loads(last.key) == {
        "schema": {
            "type": "struct",
            "optional": False,
            "name": f"{prefix.replace('-', '_')}.orders.Key",
            "fields": [{"type": "int64", "optional": False, "field": "id"}],
        },
        "payload": {"id": 2},
    }
