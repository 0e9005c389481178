"""Connect schemas to Protobuf and back without a registry: the ``.proto`` text printed for a Connect schema compiles
(protoc) to the descriptor it was printed from, names and numbers follow Confluent's ProtobufData, and schemas with
what only Protobuf has (oneofs, enums, ``optional``) read as ProtobufData reads them and write back the same bytes."""

from __future__ import annotations

from typing import Any

import pytest
from google.protobuf import descriptor_pool, message_factory

from headwater.runtime.converters.protobuf_data import SchemaError, Types, to_connect, to_file
from headwater.runtime.converters.protobuf_text import compile_proto, known_files, proto_text
from headwater.runtime.converters.protobuf_values import fill, read
from headwater.sdk.errors import ConnectError
from headwater.sdk.schemas import (
    DATE,
    INT8,
    INT16,
    INT32,
    INT64,
    STRING,
    TIMESTAMP,
    array,
    map_of,
    optional,
    struct,
)
from headwater.sdk.schemas import (
    decimal as decimal_schema,
)

TAG = "io.confluent.connect.protobuf.Tag"


def compiled(text: str) -> list[Any]:
    return compile_proto({"app/schema.proto": text})


def message_class(files: list[Any], name: str) -> Any:
    pool = descriptor_pool.DescriptorPool()
    for file in [*known_files(), *files]:
        pool.Add(file)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName(name))


def without_json_names(file: Any) -> Any:
    copy = type(file)()
    copy.CopyFrom(file)
    copy.name = "x"

    def strip(message: Any) -> None:
        for field in message.field:
            field.ClearField("json_name")
        for nested in message.nested_type:
            strip(nested)

    for message in copy.message_type:
        strip(message)
    return copy


def test_the_printed_text_compiles_to_the_descriptor_it_was_printed_from() -> None:
    schema = struct(
        "shop.Order",
        id=INT64,
        small=INT8,
        medium=INT16,
        amount=decimal_schema(2, 10),
        day=DATE,
        placed=TIMESTAMP,
        tags=array(STRING),
        props=map_of(STRING, INT32),
        shipping=optional(struct("shop.Address", street=STRING)),
        address=struct("other.address", line=STRING),
        lines=array(struct(qty=INT32)),
    )
    file = to_file(schema)
    assert without_json_names(compiled(proto_text(file))[0]) == without_json_names(file)
    root = file.message_type[0]
    assert (file.package, root.name) == ("shop", "Order")
    assert [(f.name, f.number) for f in root.field][:3] == [("id", 1), ("small", 2), ("medium", 3)]
    # ProtobufData's names: unnamed types numbered, a type named as its field suffixed
    assert [nested.name for nested in root.nested_type] == [
        "ConnectDefault1Entry",
        "Address",
        "addressMessage",
        "ConnectDefault2",
    ]


def test_an_unnamed_root_is_connect_default_1_without_a_package() -> None:
    file = to_file(struct(id=INT64, attrs=map_of(STRING, INT32)))
    assert (file.package, file.message_type[0].name) == ("", "ConnectDefault1")
    assert file.message_type[0].nested_type[0].name == "ConnectDefault2Entry"


def test_tags_given_as_parameters_number_the_fields() -> None:
    file = to_file(struct(a={**INT64, "parameters": {TAG: "7"}}, b=INT64))
    assert [(f.name, f.number) for f in file.message_type[0].field] == [("a", 7), ("b", 1)]


ONEOF = """
syntax = "proto3";
package app;

message Event {
  int64 id = 1;
  oneof payload {
    string text = 2;
    Ping ping = 3;
  }
  optional int32 retries = 4;
  Level level = 5;

  message Ping {
    int32 n = 1;
  }
  enum Level {
    LOW = 0;
    HIGH = 1;
  }
}
"""


def test_oneofs_enums_and_optional_fields_read_as_protobuf_data_reads_them() -> None:
    files = compiled(ONEOF)
    schema = to_connect(Types([*known_files(), *files]), "app.Event")
    names = [field["field"] for field in schema["fields"]]
    assert names == ["payload_0", "id", "retries", "level"]
    union = schema["fields"][0]
    assert union["name"] == "io.confluent.connect.protobuf.Union.payload" and union["optional"]
    assert [member["field"] for member in union["fields"]] == ["text", "ping"]
    level = schema["fields"][3]
    assert level["parameters"]["io.confluent.connect.protobuf.Enum.HIGH"] == "1"

    cls = message_class(files, "app.Event")
    message = cls(id=1, level=1)
    message.ping.n = 5
    value = read(schema, cls.FromString(message.SerializeToString()))
    assert value == {"payload_0": {"text": None, "ping": {"n": 5}}, "id": 1, "retries": None, "level": "HIGH"}

    # the schema read writes back, through its own text, to the same bytes
    again = to_file(schema)
    again_files = compiled(proto_text(again))
    written = message_class(again_files, "Event")()
    fill(written, schema, value)
    assert written.SerializeToString() == message.SerializeToString()
    assert to_connect(Types([*known_files(), *again_files]), "Event") == schema


def test_what_protobuf_cannot_hold_is_refused() -> None:
    with pytest.raises(SchemaError, match=r"would both be the Protobuf message shop\.Order\.Address"):
        to_file(struct("shop.Order", a=struct("shop.Address", x=INT32), b=struct("other.Address", y=INT32)))
    with pytest.raises(SchemaError, match="root must be a struct"):
        to_file(array(INT32))
    with pytest.raises(SchemaError, match="array of maps"):
        to_file(struct(m=array(map_of(STRING, INT32))))
    recursive = 'syntax = "proto3";\nmessage Node { repeated Node children = 1; }\n'
    with pytest.raises(SchemaError, match="contains itself"):
        to_connect(Types([*known_files(), *compiled(recursive)]), "Node")
    with pytest.raises(ConnectError, match="is no symbol of the enum"):
        files = compiled(ONEOF)
        fill(message_class(files, "app.Event")(), to_connect(Types(files), "app.Event"), {"level": "MEDIUM"})


def test_text_that_does_not_compile_is_refused_with_protocs_message() -> None:
    with pytest.raises(ConnectError, match=r"does not compile: app/schema\.proto:1:9: Expected message name\.$"):
        compiled("message {")
