"""Key, value and header converters, configured like Kafka Connect's: the task loops apply them at the transport
boundary, turning a connector's Python values into the bytes Kafka stores and back. The built-ins
(:mod:`.builtin`) need nothing beyond the runtime; the Schema Registry converters need their extras: :mod:`.avro` the
``avro`` extra, :mod:`.protobuf` the ``protobuf`` extra."""

from headwater.runtime.converters.avro import AvroConverter
from headwater.runtime.converters.base import Converter, HeaderConverter, SchemaConverter
from headwater.runtime.converters.builtin import (
    ByteArrayConverter,
    JsonConverter,
    SimpleHeaderConverter,
    StringConverter,
    infer_schema,
    makes_unshared_values,
    passes_bytes_through,
    sends_header_bytes_through,
)
from headwater.runtime.converters.json_schema import JsonSchemaConverter
from headwater.runtime.converters.loading import (
    BUILTIN_CONVERTERS,
    BUILTIN_HEADER_CAPABLE,
    converter_class,
    converter_config,
    converter_settings,
    load_converter,
    load_header_converter,
)
from headwater.runtime.converters.protobuf import ProtobufConverter

__all__ = [
    "BUILTIN_CONVERTERS",
    "BUILTIN_HEADER_CAPABLE",
    "AvroConverter",
    "ByteArrayConverter",
    "Converter",
    "HeaderConverter",
    "JsonConverter",
    "JsonSchemaConverter",
    "ProtobufConverter",
    "SchemaConverter",
    "SimpleHeaderConverter",
    "StringConverter",
    "converter_class",
    "converter_config",
    "converter_settings",
    "infer_schema",
    "load_converter",
    "load_header_converter",
    "makes_unshared_values",
    "passes_bytes_through",
    "sends_header_bytes_through",
]
