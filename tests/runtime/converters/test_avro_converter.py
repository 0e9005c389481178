"""The Avro converter against a real Schema Registry (Apicurio, Confluent's API): bytes confluent-kafka's own Avro
deserializer reads field for field, bytes its serializer writes read back with their schema, the subject name
strategies, and each refusal with what went wrong."""

from __future__ import annotations

import datetime
import decimal
import json
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
import trustme
from confluent_kafka.schema_registry import (
    SchemaRegistryClient,
    record_subject_name_strategy,
    topic_record_subject_name_strategy,
)
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer

from headwater.runtime.converters import AvroConverter, load_converter, load_header_converter
from headwater.runtime.plugin_catalog import plugin_descs
from headwater.sdk import AvroSchema
from headwater.sdk.errors import ConfigError, ConnectError, RetriableError
from headwater.sdk.schemas import (
    BOOLEAN,
    BYTES,
    DATE,
    FLOAT32,
    FLOAT64,
    INT8,
    INT16,
    INT32,
    INT64,
    STRING,
    TIME,
    TIMESTAMP,
    array,
    map_of,
    optional,
    struct,
)
from headwater.sdk.schemas import (
    decimal as decimal_schema,
)
from support.databases import free_port
from support.registry_converters import context, made

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

EVERY_TYPE = struct(
    "shop.Order",
    id=INT64,
    small=INT8,
    medium=INT16,
    count=INT32,
    ratio=FLOAT32,
    price=FLOAT64,
    paid=BOOLEAN,
    note=optional(STRING),
    blob=BYTES,
    amount=decimal_schema(2, 10),
    day=DATE,
    at_time=TIME,
    placed=TIMESTAMP,
    tags=array(STRING),
    props=map_of(STRING, INT32),
    codes=map_of(INT32, STRING),
    shipping=optional(struct("shop.Address", street=STRING, zip=optional(STRING))),
)
VALUE = {
    "id": 2**40,
    "small": -8,
    "medium": 300,
    "count": -70_000,
    "ratio": 0.5,
    "price": 12.25,
    "paid": True,
    "note": None,
    "blob": b"\x00\xff",
    "amount": decimal.Decimal("-12.34"),
    "day": datetime.date(2026, 11, 29),
    "at_time": datetime.time(4, 5, 6, 789000),
    "placed": datetime.datetime(2026, 11, 29, 4, 5, 6, 789000, tzinfo=datetime.UTC),
    "tags": ["a", "b"],
    "props": {"x": 1},
    "codes": {1: "one", 2: "two"},
    "shipping": {"street": "Main 1", "zip": None},
}


def converter(url: str, is_key: bool = False, **settings: str) -> AvroConverter:
    return made(AvroConverter, "io.confluent.connect.avro.AvroConverter", url, is_key, settings)


def subjects(url: str) -> list[str]:
    found: list[str] = httpx.get(f"{url}/subjects", timeout=30).json()
    return found


def test_confluent_kafkas_deserializer_reads_what_the_converter_writes(
    schema_registry_url: str, unique_name: str
) -> None:
    data = converter(schema_registry_url).from_connect(unique_name, EVERY_TYPE, VALUE)
    assert data is not None and data[0] == 0
    with SchemaRegistryClient({"url": schema_registry_url}) as client:
        read = AvroDeserializer(client)(data, context(unique_name))
    assert read == {**VALUE, "codes": [{"key": 1, "value": "one"}, {"key": 2, "value": "two"}]}
    assert f"{unique_name}-value" in subjects(schema_registry_url)


def test_the_converter_reads_what_confluent_kafkas_serializer_writes(
    schema_registry_url: str, unique_name: str
) -> None:
    ours = converter(schema_registry_url)
    avro_schema = json.dumps(
        {
            "type": "record",
            "name": "Reading",
            "namespace": "plant",
            "fields": [
                {"name": "sensor", "type": "string"},
                {"name": "value", "type": {"type": "bytes", "logicalType": "decimal", "precision": 9, "scale": 3}},
                {"name": "day", "type": {"type": "int", "logicalType": "date"}},
                {"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
                {"name": "at_time", "type": {"type": "int", "logicalType": "time-millis"}},
                {"name": "unit", "type": ["null", "string"], "default": None},
            ],
        }
    )
    value = {
        "sensor": "t1",
        "value": decimal.Decimal("21.125"),
        "day": datetime.date(2026, 1, 2),
        "at": datetime.datetime(2026, 1, 2, 3, 4, 5, 6000, tzinfo=datetime.UTC),
        "at_time": datetime.time(23, 59, 59, 999000),
        "unit": None,
    }
    with SchemaRegistryClient({"url": schema_registry_url}) as client:
        data = AvroSerializer(client, avro_schema)(value, context(unique_name))
    schema, read = ours.to_connect_data(unique_name, data)
    assert read == value
    assert schema is not None and schema["name"] == "plant.Reading"
    assert [(f["field"], f["type"], f.get("name"), f["optional"]) for f in schema["fields"]] == [
        ("sensor", "string", None, False),
        ("value", "bytes", "org.apache.kafka.connect.data.Decimal", False),
        ("day", "int32", "org.apache.kafka.connect.data.Date", False),
        ("at", "int64", "org.apache.kafka.connect.data.Timestamp", False),
        ("at_time", "int32", "org.apache.kafka.connect.data.Time", False),
        ("unit", "string", None, True),
    ]
    # and what the converter writes with that schema, it reads back the same
    assert ours.to_connect_data(unique_name, ours.from_connect(unique_name, schema, read)) == (schema, read)


def test_an_avro_schema_the_author_has_is_written_as_it_is(schema_registry_url: str, unique_name: str) -> None:
    avro = {"type": "record", "name": "Ping", "namespace": "app", "fields": [{"name": "n", "type": "long"}]}
    data = converter(schema_registry_url).from_connect(unique_name, AvroSchema(avro), {"n": 5})
    assert data is not None
    schema_id = int.from_bytes(data[1:5], "big")
    registered = httpx.get(f"{schema_registry_url}/schemas/ids/{schema_id}", timeout=30).json()["schema"]
    assert json.loads(registered) == avro


@pytest.mark.parametrize(
    ("strategy", "subject", "theirs"),
    [
        ("io.confluent.kafka.serializers.subject.RecordNameStrategy", "{record}", record_subject_name_strategy),
        ("topic-record", "{topic}-{record}", topic_record_subject_name_strategy),
    ],
)
def test_the_record_subject_name_strategies_name_subjects_as_confluents_do(
    schema_registry_url: str, unique_name: str, strategy: str, subject: str, theirs: Callable[..., str]
) -> None:
    record = f"ns{unique_name.replace('-', '_')}.Event"
    schema = struct(record, id=INT64)
    converter(schema_registry_url, **{"value.subject.name.strategy": strategy}).from_connect(
        unique_name, schema, {"id": 1}
    )
    expected = subject.format(topic=unique_name, record=record)
    assert expected == theirs(context(unique_name), record)
    assert expected in subjects(schema_registry_url)


def test_a_key_is_registered_under_the_key_subject(schema_registry_url: str, unique_name: str) -> None:
    converter(schema_registry_url, is_key=True).from_connect(unique_name, STRING, "k1")
    assert f"{unique_name}-key" in subjects(schema_registry_url)


def test_without_auto_register_an_unregistered_schema_is_refused_naming_the_subject(
    schema_registry_url: str, unique_name: str
) -> None:
    ours = converter(schema_registry_url, **{"auto.register.schemas": "false"})
    with pytest.raises(ConnectError, match=f"find the schema of subject {unique_name}-value"):
        ours.from_connect(unique_name, struct("a.B", id=INT64), {"id": 1})


def test_use_latest_version_writes_with_the_subjects_latest_schema(schema_registry_url: str, unique_name: str) -> None:
    latest = struct("a.Latest", id=INT64, extra=optional(STRING))
    converter(schema_registry_url).from_connect(unique_name, latest, {"id": 1, "extra": "x"})
    ours = converter(schema_registry_url, **{"auto.register.schemas": "false", "use.latest.version": "true"})
    data = ours.from_connect(unique_name, latest, {"id": 2, "extra": None})
    assert ours.to_connect(unique_name, data) == {"id": 2, "extra": None}


def test_an_incompatible_schema_is_refused_with_the_registrys_message(
    schema_registry_url: str, unique_name: str
) -> None:
    ours = converter(schema_registry_url)
    ours.from_connect(unique_name, struct("a.Item", id=INT64), {"id": 1})
    response = httpx.put(
        f"{schema_registry_url}/config/{unique_name}-value",
        json={"compatibility": "BACKWARD"},
        headers={"Content-Type": "application/vnd.schemaregistry.v1+json"},
        timeout=30,
    )
    assert response.status_code == 200, response.text
    with pytest.raises(ConnectError, match=f"refused to register the schema of subject {unique_name}-value: .*"):
        ours.from_connect(unique_name, struct("a.Item", id=STRING), {"id": "one"})


def test_an_unknown_schema_id_is_refused_naming_it(schema_registry_url: str, unique_name: str) -> None:
    with pytest.raises(ConnectError, match="could not find the schema of id 987654"):
        converter(schema_registry_url).to_connect(unique_name, b"\x00" + (987654).to_bytes(4, "big") + b"\x02")


def test_bytes_in_another_framing_are_refused(schema_registry_url: str, unique_name: str) -> None:
    with pytest.raises(ConnectError, match="unknown magic byte 7b"):
        converter(schema_registry_url).to_connect(unique_name, b'{"id": 1}')


def test_a_value_that_does_not_match_its_schema_is_refused(schema_registry_url: str, unique_name: str) -> None:
    with pytest.raises(ConnectError, match=f"the value for topic '{unique_name}' does not match its Avro schema"):
        converter(schema_registry_url).from_connect(unique_name, struct("a.C", id=INT64), {"id": "not a number"})


def test_a_record_without_a_schema_is_refused_saying_what_to_do(schema_registry_url: str, unique_name: str) -> None:
    with pytest.raises(ConnectError, match=r"needs the record's value schema .* give the record a value_schema"):
        converter(schema_registry_url).from_connect(unique_name, None, {"id": 1})
    assert converter(schema_registry_url).from_connect(unique_name, None, None) is None  # a tombstone


def test_an_unreachable_registry_is_a_retriable_error_naming_it() -> None:
    url = f"http://127.0.0.1:{free_port()}"
    ours = converter(url, **{"auto.register.schemas": "true"})
    with pytest.raises(RetriableError, match=f"cannot reach the Schema Registry at {url}"):
        ours.from_connect("t", struct("a.D", id=INT64), {"id": 1})


def test_settings_it_cannot_honour_are_refused() -> None:
    with pytest.raises(ConfigError, match=r"value\.converter\.schema\.registry\.url"):
        load_converter("avro", {}, is_key=False)
    with pytest.raises(ConfigError, match="Java keystore"):
        load_converter(
            "avro",
            {"schema.registry.url": "https://r:8081", "schema.registry.ssl.truststore.location": "/etc/ts.jks"},
            is_key=False,
        )
    with pytest.raises(ConfigError, match=r"set basic\.auth\.credentials\.source=USER_INFO"):
        load_converter("avro", {"schema.registry.url": "http://r", "basic.auth.user.info": "u:p"}, is_key=False)
    with pytest.raises(ConfigError, match=r"basic\.auth\.credentials\.source"):
        load_converter(
            "avro", {"schema.registry.url": "http://r", "basic.auth.credentials.source": "SASL_INHERIT"}, is_key=False
        )
    with pytest.raises(ConfigError, match="Unknown subject name strategy"):
        load_converter("avro", {"schema.registry.url": "http://r", "value.subject.name.strategy": "x.Y"}, False)


def test_the_avro_converter_is_a_key_and_value_converter_only() -> None:
    with pytest.raises(ConfigError, match="convert keys and values, not headers"):
        load_header_converter("io.confluent.connect.avro.AvroConverter", {"schema.registry.url": "http://r"})
    listed = {(desc.class_name, desc.plugin_type) for desc in plugin_descs()}
    name = "io.confluent.connect.avro.AvroConverter"
    assert (name, "converter") in listed
    assert (name, "header_converter") not in listed


def test_basic_auth_and_tls_settings_reach_the_client(tmp_path: Path) -> None:
    ca = tmp_path / "ca.pem"
    trustme.CA().cert_pem.write_to_path(str(ca))
    made = converter(
        "https://registry:8081",
        **{
            "basic.auth.credentials.source": "USER_INFO",
            "basic.auth.user.info": "alice:secret",
            "schema.registry.ssl.truststore.location": str(ca),
            "schema.registry.ssl.truststore.type": "PEM",
        },
    )
    assert made.settings is not None
    assert made.settings.client_config == {
        "url": "https://registry:8081",
        "max.retries": 0,
        "timeout": 30,
        "basic.auth.user.info": "alice:secret",
        "ssl.ca.location": str(ca),
    }


def test_the_subject_strategy_needs_a_named_record(schema_registry_url: str) -> None:
    ours = converter(schema_registry_url, **{"value.subject.name.strategy": "record"})
    with pytest.raises(ConnectError, match="needs a named record schema"):
        ours.from_connect("t", INT64, 1)
