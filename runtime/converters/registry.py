"""What the Schema Registry converters share: their registry keys (Confluent's names, so migrated configs run as they
are), the registry client made from them, subject names, Confluent's wire framing, and registry failures turned
into errors that say what went wrong.

Confluent's framing: a magic byte 0, the schema's id as 4 big-endian bytes, then the payload. The client is
confluent-kafka's ``SchemaRegistryClient`` (in each format's extra: ``avro``, ``protobuf``, ``jsonschema``), which
caches ids and schemas; any server speaking Confluent's REST API serves it. :class:`RegistryConverter` is the base
of the three converters.
"""

from __future__ import annotations

import importlib
import json
import struct
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Generic, TypeVar

from headwater.runtime.converters.base import own_settings
from headwater.sdk.config import ConfigDef, Importance, Type, one_of
from headwater.sdk.errors import ConfigError, ConnectError, RetriableError
from headwater.sdk.schemas import AvroSchema, Schema

T = TypeVar("T")
W = TypeVar("W")

MAGIC_BYTE = 0
_HEADER = struct.Struct(">bI")

URL = "schema.registry.url"
REQUEST_TIMEOUT_S = 30
"""How long one request to the registry may take."""
STRATEGIES = {
    "io.confluent.kafka.serializers.subject.TopicNameStrategy": "topic",
    "io.confluent.kafka.serializers.subject.RecordNameStrategy": "record",
    "io.confluent.kafka.serializers.subject.TopicRecordNameStrategy": "topic-record",
    "topic": "topic",
    "record": "record",
    "topic-record": "topic-record",
}
"""Confluent's subject name strategies by class name, and their short names here."""
_TOPIC_STRATEGY = "io.confluent.kafka.serializers.subject.TopicNameStrategy"


def _strategy(key: str, value: Any) -> None:
    if str(value) not in STRATEGIES:
        known = ", ".join(STRATEGIES)
        raise ConfigError(key, value, f"Unknown subject name strategy; use one of {known}")


def _truststore_type(key: str, value: Any) -> None:
    if str(value).upper() != "PEM":
        raise ConfigError(
            key,
            value,
            "Headwater reads certificates in PEM only: a Java keystore (JKS, PKCS12) cannot be read here; convert "
            "it to PEM and set schema.registry.ssl.ca.location",
        )


def registry_config_def() -> ConfigDef:
    """The keys every Schema Registry converter reads (``value.converter.`` or ``key.converter.`` stripped)."""
    return (
        ConfigDef()
        .define(
            URL, Type.LIST, importance=Importance.HIGH, documentation="The Schema Registry's URLs, comma-separated."
        )
        .define(
            "basic.auth.credentials.source",
            Type.STRING,
            "URL",
            Importance.MEDIUM,
            "Where the registry's basic-auth credentials come from: URL (user:password@ in the URL) or USER_INFO "
            "(basic.auth.user.info). Java's SASL_INHERIT is refused.",
            one_of("URL", "USER_INFO"),
        )
        .define("basic.auth.user.info", Type.PASSWORD, None, Importance.MEDIUM, "user:password, for USER_INFO.")
        .define(
            "schema.registry.basic.auth.user.info",
            Type.PASSWORD,
            None,
            Importance.LOW,
            "The same as basic.auth.user.info (Confluent's other name for it).",
        )
        .define(
            "schema.registry.ssl.ca.location",
            Type.STRING,
            None,
            Importance.MEDIUM,
            "PEM file (or directory) of the certificate authorities that sign the registry's certificate.",
        )
        .define(
            "schema.registry.ssl.truststore.location",
            Type.STRING,
            None,
            Importance.LOW,
            "Java's name for the CA file; accepted only as PEM (schema.registry.ssl.truststore.type=PEM).",
        )
        .define(
            "schema.registry.ssl.truststore.type",
            Type.STRING,
            "JKS",
            Importance.LOW,
            "The truststore's format: PEM only.",
        )
        .define(
            "schema.registry.ssl.certificate.location",
            Type.STRING,
            None,
            Importance.LOW,
            "PEM client certificate, for a registry that asks for one.",
        )
        .define("schema.registry.ssl.key.location", Type.STRING, None, Importance.LOW, "PEM client key.")
        .define("schema.registry.ssl.key.password", Type.PASSWORD, None, Importance.LOW, "The client key's password.")
        .define(
            "auto.register.schemas",
            Type.BOOLEAN,
            True,
            Importance.MEDIUM,
            "Register a record's schema under its subject when writing (the registry refuses an incompatible one).",
        )
        .define(
            "use.latest.version",
            Type.BOOLEAN,
            False,
            Importance.MEDIUM,
            "With auto.register.schemas=false: write with the subject's latest schema.",
        )
        .define("normalize.schemas", Type.BOOLEAN, False, Importance.LOW, "Ask the registry to normalize schemas.")
        .define(
            "key.subject.name.strategy",
            Type.STRING,
            _TOPIC_STRATEGY,
            Importance.MEDIUM,
            "The subject of a key's schema: TopicNameStrategy (<topic>-key), RecordNameStrategy (the record's full "
            "name) or TopicRecordNameStrategy (<topic>-<record name>), by Confluent's class name or topic, record, "
            "topic-record.",
            _strategy,
        )
        .define(
            "value.subject.name.strategy",
            Type.STRING,
            _TOPIC_STRATEGY,
            Importance.MEDIUM,
            "The subject of a value's schema, as key.subject.name.strategy is a key's.",
            _strategy,
        )
    )


@dataclass(frozen=True)
class RegistrySettings:
    """A converter's parsed registry keys."""

    urls: list[str]
    client_config: dict[str, Any]
    """What confluent-kafka's ``SchemaRegistryClient`` is made with."""
    auto_register: bool
    use_latest_version: bool
    normalize: bool
    strategy: str
    """``topic``, ``record`` or ``topic-record``, for this converter's part (key or value)."""

    @classmethod
    def of(cls, definition: ConfigDef, config: Mapping[str, Any], is_key: bool) -> RegistrySettings:
        """Parse ``config`` with ``definition``; a key that cannot be honoured raises :class:`ConfigError`."""
        if config.get(URL) is None:
            raise ConfigError(URL, None, "Missing required configuration: the Schema Registry's URL")
        parsed = own_settings(definition, config)
        urls = list(parsed[URL])
        if not urls:
            raise ConfigError(URL, config.get(URL), "Give at least one Schema Registry URL")
        # the task's errors.retry.timeout retries a registry that does not answer; the client itself does not
        client: dict[str, Any] = {"url": ",".join(urls), "max.retries": 0, "timeout": REQUEST_TIMEOUT_S}
        user_info = parsed["basic.auth.user.info"] or parsed["schema.registry.basic.auth.user.info"]
        if parsed["basic.auth.credentials.source"].upper() == "USER_INFO":
            if not user_info:
                raise ConfigError(
                    "basic.auth.user.info", None, "basic.auth.credentials.source=USER_INFO needs user:password here"
                )
            client["basic.auth.user.info"] = user_info
        elif user_info:
            raise ConfigError(
                "basic.auth.credentials.source",
                parsed["basic.auth.credentials.source"],
                "basic.auth.user.info is set but would be ignored: set basic.auth.credentials.source=USER_INFO",
            )
        truststore = parsed["schema.registry.ssl.truststore.location"]
        if truststore is not None:
            _truststore_type("schema.registry.ssl.truststore.type", parsed["schema.registry.ssl.truststore.type"])
        ca = parsed["schema.registry.ssl.ca.location"] or truststore
        for ours, theirs in (
            ("ssl.ca.location", ca),
            ("ssl.certificate.location", parsed["schema.registry.ssl.certificate.location"]),
            ("ssl.key.location", parsed["schema.registry.ssl.key.location"]),
            ("ssl.key.password", parsed["schema.registry.ssl.key.password"]),
        ):
            if theirs is not None:
                client[ours] = theirs
        return cls(
            urls,
            client,
            parsed["auto.register.schemas"],
            parsed["use.latest.version"],
            parsed["normalize.schemas"],
            STRATEGIES[parsed["key.subject.name.strategy" if is_key else "value.subject.name.strategy"]],
        )

    def subject(self, topic: str, is_key: bool, record_name: str | None) -> str:
        """The subject a schema is registered and looked up under (Confluent's subject name strategies)."""
        if self.strategy == "topic":
            return f"{topic}-{'key' if is_key else 'value'}"
        if record_name is None:
            raise ConnectError(
                f"the {'key' if is_key else 'value'} subject name strategy {self.strategy} needs a named record "
                f"schema (a struct with a name), and the record for topic {topic!r} has none"
            )
        return record_name if self.strategy == "record" else f"{topic}-{record_name}"


def make_client(settings: RegistrySettings, converter: str, extra: str, *modules: str) -> Any:
    """confluent-kafka's registry client for ``settings``, once the ``modules`` the ``converter`` needs beside it
    import; :class:`ConfigError` naming the ``extra`` that installs them when one does not."""
    try:
        for module in ("confluent_kafka.schema_registry", *modules):
            importlib.import_module(module)
    except ImportError as error:
        raise ConfigError(
            URL,
            ",".join(settings.urls),
            f"The {converter} converter needs the {extra} extra: pip install 'headwater[{extra}]' ({error})",
        ) from None
    from confluent_kafka.schema_registry import SchemaRegistryClient

    try:
        return SchemaRegistryClient(settings.client_config)
    except (ValueError, TypeError, OSError) as error:
        raise ConfigError(URL, ",".join(settings.urls), f"Cannot make a Schema Registry client: {error}") from None


def frame(schema_id: int, payload: bytes) -> bytes:
    """Confluent's framing of ``payload`` written with schema ``schema_id``."""
    return _HEADER.pack(MAGIC_BYTE, schema_id) + payload


def unframe(topic: str, data: bytes) -> int:
    """The schema id of a framed message (its payload starts at byte 5); :class:`ConnectError` for bytes that are
    not in Confluent's framing."""
    if len(data) < 5 or data[0] != MAGIC_BYTE:
        raise ConnectError(
            f"a message from topic {topic!r} is not in the Schema Registry's framing: unknown magic byte "
            f"{data[:1].hex() or 'none'} (expected 00 followed by a 4-byte schema id)"
        )
    schema_id: int = _HEADER.unpack_from(data)[1]
    return schema_id


def asking(urls: list[str], what: str, call: Callable[[], T]) -> T:
    """``call()`` to the registry; a registry that does not answer, or answers 5xx, raises :class:`RetriableError`
    (the task's ``errors.retry.timeout`` retries it), any other refusal :class:`ConnectError` with the registry's
    message."""
    from confluent_kafka.schema_registry.error import SchemaRegistryError

    where = ",".join(urls)
    try:
        return call()
    except SchemaRegistryError as error:
        if error.http_status_code >= 500 or error.http_status_code in (408, 429):
            raise RetriableError(f"the Schema Registry at {where} failed to {what}: {error}") from None
        if error.http_status_code in (401, 403):
            raise ConnectError(
                f"the Schema Registry at {where} refused to let this converter {what} (HTTP "
                f"{error.http_status_code}: {error.error_message}): check basic.auth.credentials.source and "
                "basic.auth.user.info (or user:password@ in schema.registry.url)"
            ) from None
        if error.http_status_code == 409:
            raise ConnectError(f"the Schema Registry at {where} refused to {what}: {error.error_message}") from None
        raise ConnectError(f"the Schema Registry at {where} could not {what}: {error}") from None
    except (OSError, ConnectionError) as error:
        raise RetriableError(f"cannot reach the Schema Registry at {where} to {what}: {error}") from None
    except Exception as error:  # httpx's transport errors, which are no OSError
        if type(error).__module__.startswith("httpx"):
            raise RetriableError(f"cannot reach the Schema Registry at {where} to {what}: {error!r}") from None
        raise


@dataclass(frozen=True)
class WriterSchema:
    """The schema id a converter writes a subject's values with, and, where that is not the record's own schema,
    the schema it names."""

    schema_id: int
    latest: str | None
    """With ``use.latest.version``: the text of the subject's latest schema, which the values are written in; else
    ``None`` (the record's own schema, registered under that id)."""


def writer_schema(client: Any, settings: RegistrySettings, subject: str, text: str, schema_type: str) -> WriterSchema:
    """Which schema values of ``text`` (a ``schema_type`` schema: AVRO, PROTOBUF or JSON) are written with under
    ``subject``, by Confluent's serializers' rules: with ``auto.register.schemas`` (the default) ``text`` is
    registered (the registry refuses an incompatible one); else with ``use.latest.version`` the subject's latest
    schema is used; else ``text`` must already be registered under the subject."""
    from confluent_kafka.schema_registry import Schema as RegistrySchema

    if settings.auto_register:
        registered = asking(
            settings.urls,
            f"register the schema of subject {subject}",
            lambda: client.register_schema(subject, RegistrySchema(text, schema_type), settings.normalize),
        )
        return WriterSchema(int(registered), None)
    if settings.use_latest_version:
        latest = asking(
            settings.urls, f"find the latest schema of subject {subject}", lambda: client.get_latest_version(subject)
        )
        found_type = latest.schema.schema_type or "AVRO"  # the registry leaves Avro's type out
        if found_type != schema_type:
            raise ConnectError(f"the latest schema of subject {subject} is a {found_type} schema, not {schema_type}")
        return WriterSchema(int(latest.schema_id), latest.schema.schema_str)
    found = asking(
        settings.urls,
        f"find the schema of subject {subject} (auto.register.schemas=false)",
        lambda: client.lookup_schema(subject, RegistrySchema(text, schema_type), settings.normalize),
    )
    return WriterSchema(int(found.schema_id), None)


WRITERS_CACHED = 1000
"""How many schemas' writers a converter keeps (the least recently made go first)."""


class RegistryConverter(Generic[W]):
    """What the Schema Registry converters share: the registry keys and client, the writers of the schemas records
    come with (``W``, made by :meth:`_make_writer`), cached by the schema object and then by its content, and the
    refusal of a record without a schema. Each format's converter writes and reads its own encoding."""

    CONFIG: ClassVar[ConfigDef] = registry_config_def()
    FORMAT: ClassVar[str]
    """The format's name in messages: Avro, Protobuf, JSON Schema."""
    EXTRA: ClassVar[str]
    """The extra that installs what the format needs."""
    MODULES: ClassVar[tuple[str, ...]] = ()
    """The modules of that extra the converter imports."""

    def __init__(self) -> None:
        self.is_key = False
        self.settings: RegistrySettings | None = None
        self._client: Any = None
        self._writers: OrderedDict[Any, tuple[Any, W]] = OrderedDict()

    def configure(self, config: Mapping[str, Any], is_key: bool) -> None:
        self.is_key = is_key
        self.settings = RegistrySettings.of(self.CONFIG, config, is_key)
        self._client = make_client(self.settings, self.FORMAT, self.EXTRA, *self.MODULES)

    def close(self) -> None:
        """Close the registry client's connections."""
        if self._client is not None:
            self._client.close()

    @property
    def _part(self) -> str:
        return "key" if self.is_key else "value"

    def _settings(self) -> RegistrySettings:
        if self.settings is None:
            raise ConnectError(f"the {self.FORMAT} converter was used before it was configured")
        return self.settings

    def to_connect(self, topic: str, data: bytes | None) -> Any:
        return self.to_connect_data(topic, data)[1]

    def to_connect_data(self, topic: str, data: bytes | None) -> tuple[Schema | None, Any]:
        """The Connect schema and value of a message's key or value (``None, None`` for a tombstone)."""
        raise NotImplementedError

    def _writer(self, topic: str, schema: Schema | AvroSchema | None) -> W:
        """The writer of ``schema`` for ``topic``, cached by the schema object and then by its content; a record
        without a schema is refused, as the format has none to infer it from."""
        if schema is None:
            raise ConnectError(
                f"the {self.FORMAT} converter needs the record's {self._part} schema for topic {topic!r}: give the "
                f"record a {self._part}_schema (headwater.sdk.schemas), or use the JSON converter for schemaless data"
            )
        by_object = (topic, id(schema))
        found = self._writers.get(by_object)
        if found is not None and found[0] is schema:
            return found[1]
        text = schema.text if isinstance(schema, AvroSchema) else json.dumps(schema, sort_keys=True, default=str)
        by_content = (topic, isinstance(schema, AvroSchema), text)
        cached = self._writers.get(by_content)
        writer = cached[1] if cached is not None else self._make_writer(topic, schema)
        self._writers[by_content] = (text, writer)
        self._writers[by_object] = (schema, writer)
        while len(self._writers) > WRITERS_CACHED:
            self._writers.popitem(last=False)
        return writer

    def _make_writer(self, topic: str, schema: Schema | AvroSchema) -> W:
        """How to write values of ``schema`` to ``topic``: mapped to the format and its id found in the registry."""
        raise NotImplementedError
