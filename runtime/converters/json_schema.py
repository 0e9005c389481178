"""The JSON Schema converter, as Confluent's ``io.confluent.connect.json.JsonSchemaConverter``: a record's Connect
schema mapped to a JSON Schema (:mod:`.json_schema_data`) and registered in a Schema Registry (``schemaType``
``JSON``), the value written as UTF-8 JSON text in Confluent's framing, and read back with the schema its id names.
Needs the ``jsonschema`` extra (confluent-kafka's registry client, and the jsonschema library that validates values).

Writing: as the Avro converter, with ``auto.register.schemas`` (the default) the schema is registered under its
subject (the registry refuses an incompatible one), else with ``use.latest.version`` the subject's latest schema is
used, else the schema must already be registered under the subject. The JSON value is always validated against the
schema it is framed with before it is written (Java's converter refuses a value of the wrong type while converting
it; here the validator is that check, and it also holds a value to the subject's latest schema). A record without a
schema is refused; an :class:`~headwater.sdk.schemas.AvroSchema` is written as the Connect schema Confluent's
``AvroData`` maps it to. Reading: the framed id's schema is fetched once and cached, and the value is validated
against it when ``json.fail.invalid.schema`` is true (Confluent's key; false by default, as Confluent's).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from headwater.runtime.converters import avro_data
from headwater.runtime.converters.base import own_settings
from headwater.runtime.converters.json_schema_data import (
    SchemaError,
    record_name,
    schema_text,
    to_connect,
    to_json_schema,
)
from headwater.runtime.converters.json_schema_values import dumps, loads, to_connect_value, to_json_value
from headwater.runtime.converters.registry import (
    RegistryConverter,
    asking,
    frame,
    registry_config_def,
    unframe,
    writer_schema,
)
from headwater.sdk.config import ConfigDef, Importance, Type, one_of
from headwater.sdk.errors import ConfigError, ConnectError
from headwater.sdk.schemas import AvroSchema, Schema

DECIMAL_FORMAT = "decimal.format"
ADDITIONAL_PROPERTIES = "object.additional.properties"
OPTIONAL_FOR_NONREQUIRED = "use.optional.for.nonrequired"
FAIL_INVALID_SCHEMA = "json.fail.invalid.schema"
PRESERVE_ADDITIONAL = "preserve.additional.properties"


def _only_false(key: str, value: Any) -> None:
    if value is True or str(value).lower() == "true":
        raise ConfigError(
            key,
            value,
            "Headwater drops undeclared JSON properties on read (Confluent's default): true is not supported",
        )


def _config_def() -> ConfigDef:
    """The registry keys and Confluent's ``JsonSchemaDataConfig`` and serializer keys the converter honours."""
    return (
        registry_config_def()
        .define(
            DECIMAL_FORMAT,
            Type.STRING,
            "BASE64",
            Importance.LOW,
            "How a Decimal is written: BASE64 (its unscaled bytes, a string) or NUMERIC (a JSON number), as "
            "Confluent's decimal.format; either is read.",
            one_of("BASE64", "NUMERIC"),
        )
        .define(
            ADDITIONAL_PROPERTIES,
            Type.BOOLEAN,
            True,
            Importance.MEDIUM,
            "Whether a struct's JSON Schema allows properties it does not declare; false writes "
            '"additionalProperties": false.',
        )
        .define(
            OPTIONAL_FOR_NONREQUIRED,
            Type.BOOLEAN,
            False,
            Importance.MEDIUM,
            "Read a property that is not in its object's required list as an optional field.",
        )
        .define(
            FAIL_INVALID_SCHEMA,
            Type.BOOLEAN,
            False,
            Importance.MEDIUM,
            "Validate a value read against its writer's JSON Schema (a value written is always validated).",
        )
        .define(
            PRESERVE_ADDITIONAL,
            Type.BOOLEAN,
            False,
            Importance.LOW,
            "Confluent's key to keep undeclared properties; only false (drop them, Confluent's default) is supported.",
            _only_false,
        )
    )


@dataclass(frozen=True)
class _Writer:
    """How to write values of one schema to one topic."""

    schema_id: int
    connect: Schema
    validator: Any
    """jsonschema's validator of the schema the value is framed with."""


@dataclass(frozen=True)
class _Reader:
    connect: Schema
    validator: Any
    """jsonschema's validator of the writer's schema, with ``json.fail.invalid.schema``; else ``None``."""


class JsonSchemaConverter(RegistryConverter[_Writer]):
    """JSON with a JSON Schema in Confluent's wire format, with a Schema Registry."""

    CONFIG: ClassVar[ConfigDef] = _config_def()
    FORMAT = "JSON Schema"
    EXTRA = "jsonschema"
    MODULES = ("jsonschema",)

    def __init__(self) -> None:
        super().__init__()
        self.numeric_decimals = False
        self.additional_properties = True
        self.optional_for_nonrequired = False
        self.validate_reads = False
        self._readers: dict[int, _Reader] = {}

    def configure(self, config: Mapping[str, Any], is_key: bool) -> None:
        super().configure(config, is_key)
        own = own_settings(self.CONFIG, config)
        self.numeric_decimals = str(own[DECIMAL_FORMAT]).upper() == "NUMERIC"
        self.additional_properties = bool(own[ADDITIONAL_PROPERTIES])
        self.optional_for_nonrequired = bool(own[OPTIONAL_FOR_NONREQUIRED])
        self.validate_reads = bool(own[FAIL_INVALID_SCHEMA])

    # ---- writing ------------------------------------------------------------------------------------------------

    def from_connect(self, topic: str, schema: Mapping[str, Any] | AvroSchema | None, value: Any) -> bytes | None:
        if value is None:
            return None  # a tombstone stays a tombstone
        writer = self._writer(topic, schema)
        try:
            payload = to_json_value(writer.connect, value, self.numeric_decimals)
        except ConnectError as error:
            raise ConnectError(f"the {self._part} for topic {topic!r} does not match its schema at {error}") from None
        _validate(writer.validator, payload, f"the {self._part} for topic {topic!r} (schema id {writer.schema_id})")
        return frame(writer.schema_id, dumps(payload).encode("utf-8"))

    def _make_writer(self, topic: str, schema: Mapping[str, Any] | AvroSchema) -> _Writer:

        settings = self._settings()
        try:
            connect = avro_data.to_connect(schema.parsed) if isinstance(schema, AvroSchema) else schema
            written = to_json_schema(connect, self.numeric_decimals, self.additional_properties)
        except (ConnectError, KeyError, TypeError, ValueError) as error:
            raise ConnectError(
                f"the {self._part} schema for topic {topic!r} cannot be written as a JSON Schema: {error}"
            ) from None
        subject = settings.subject(topic, self.is_key, record_name(written))
        writing = writer_schema(self._client, settings, subject, schema_text(written), "JSON")
        schema_id = writing.schema_id
        if writing.latest is not None:
            written = json.loads(writing.latest)
        return _Writer(int(schema_id), connect, _validator(written, f"schema id {schema_id}"))

    # ---- reading ------------------------------------------------------------------------------------------------

    def to_connect_data(self, topic: str, data: bytes | None) -> tuple[Schema | None, Any]:
        """The Connect schema and value of a message's key or value (``None, None`` for a tombstone)."""
        if data is None:
            return None, None
        schema_id = unframe(topic, data)
        reader = self._readers.get(schema_id) or self._make_reader(schema_id)
        what = f"a message from topic {topic!r} (schema id {schema_id})"
        try:
            parsed = loads(bytes(memoryview(data)[5:]))
        except (ValueError, UnicodeDecodeError) as error:
            raise ConnectError(f"{what} is not JSON text: {error}") from None
        if parsed is None:
            return None, None  # a JSON null reads as no value, as JsonSchemaConverter's SchemaAndValue.NULL
        if reader.validator is not None:
            _validate(reader.validator, parsed, what)
        try:
            return reader.connect, to_connect_value(reader.connect, parsed)
        except ConnectError as error:
            raise ConnectError(f"{what} does not match its schema at {error}") from None

    def _make_reader(self, schema_id: int) -> _Reader:
        settings = self._settings()
        client = self._client
        found = asking(settings.urls, f"find the schema of id {schema_id}", lambda: client.get_schema(schema_id))
        if found.schema_type != "JSON":
            raise ConnectError(f"schema id {schema_id} is a {found.schema_type or 'AVRO'} schema, not a JSON Schema")
        if found.references:
            raise ConnectError(
                f"schema id {schema_id} refers to other schemas ({', '.join(r.name for r in found.references)}): "
                "JSON Schema references are not supported"
            )
        written = json.loads(found.schema_str)
        try:
            connect = to_connect(written, self.optional_for_nonrequired)
        except SchemaError as error:
            raise ConnectError(f"schema id {schema_id} cannot be read as a Connect schema: {error}") from None
        reader = _Reader(connect, _validator(written, f"schema id {schema_id}") if self.validate_reads else None)
        self._readers[schema_id] = reader
        return reader


def _validator(json_schema: Any, what: str) -> Any:
    """jsonschema's validator of ``json_schema`` (draft 7 unless its ``$schema`` says otherwise, as Confluent's
    default spec version)."""
    from jsonschema import Draft7Validator
    from jsonschema.exceptions import SchemaError as InvalidSchema
    from jsonschema.validators import validator_for

    cls = validator_for(json_schema, default=Draft7Validator)
    try:
        cls.check_schema(json_schema)
    except InvalidSchema as error:
        raise ConnectError(f"{what} is no valid JSON Schema: {error.message}") from None
    return cls(json_schema)


def _validate(validator: Any, payload: Any, what: str) -> None:
    """:class:`ConnectError` naming the path of the first place ``payload`` does not match."""
    from jsonschema.exceptions import best_match

    error = best_match(validator.iter_errors(payload))
    if error is not None:
        branches = "; ".join(sorted({branch.message for branch in error.context or ()}))
        detail = f"{error.message} ({branches})" if branches else error.message
        raise ConnectError(f"{what} does not match its JSON Schema at {error.json_path}: {detail}")
