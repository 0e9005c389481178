"""Java class names in a connector config (issue 37): a Kafka Connect, Confluent or Debezium class in
``connector.class``, a converter key or a transform's ``type`` is refused for what it is, naming Headwater's
counterpart, before anything is imported and never with the ``connector.class.allowed.modules`` hint, which cannot
help; over REST, from the validate endpoint and in a standalone connector file alike. Python import paths, Kafka's
built-ins and the Schema Registry converters by their Java names work as before."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from headwater.runtime.commands.standalone import StandaloneWorker
from headwater.runtime.config.properties import PropertiesError
from headwater.runtime.converters import BUILTIN_CONVERTERS, converter_class, load_converter
from headwater.runtime.converters.avro import AvroConverter
from headwater.runtime.converters.json_schema import JsonSchemaConverter
from headwater.runtime.converters.protobuf import ProtobufConverter
from headwater.runtime.java_plugins import CONNECTORS, CONVERTERS, TRANSFORMATIONS, JavaPlugin, is_java_class
from headwater.runtime.plugins import ALLOWED_MODULES, resolve_connector_class
from headwater.runtime.transforms.builtins import RegexRouter
from headwater.runtime.transforms.stages import resolve
from headwater.sdk import ConfigError
from support.leaky_source import SecretSource
from support.rest_worker import MemoryRestWorker

MIRROR = "org.apache.kafka.connect.mirror.MirrorSourceConnector"


def spelled(name: str) -> str:
    """A class name for a table entry: the entry itself, or a class in the package an entry ending in ``.`` names."""
    return f"{name}example.ExampleClass" if name.endswith(".") else name


def entries(table: Mapping[str, JavaPlugin]) -> list[Any]:
    return [pytest.param(spelled(name), plugin, id=spelled(name)) for name, plugin in table.items()]


@pytest.fixture
def no_imports(monkeypatch: pytest.MonkeyPatch) -> None:
    """Importing any module fails the test: a Java name is answered before anything is imported."""

    def refuse(name: str, package: str | None = None) -> Any:
        raise AssertionError(f"imported {name}")

    monkeypatch.setattr(importlib, "import_module", refuse)


def assert_java_answer(error: ConfigError, key: str, name: str, plugin: JavaPlugin | None) -> None:
    message = str(error)
    assert error.key == key and "Java" in message and "Headwater runs Python connectors" in message, message
    assert "allowed.modules" not in message and "ModuleNotFoundError" not in message, message
    if plugin is not None and plugin.equivalent is not None:
        assert f"use {key}={plugin.equivalent} instead" in message, message
    else:
        assert "Headwater has no equivalent" in message, message
    if plugin is not None:
        assert plugin.note in message, message


@pytest.mark.usefixtures("no_imports")
@pytest.mark.parametrize(("name", "plugin"), entries(CONNECTORS))
@pytest.mark.parametrize("allowed", [None, [], ["*"]], ids=["trusted", "none-allowed", "all-allowed"])
def test_each_java_connector_is_answered_with_its_counterpart(
    name: str, plugin: JavaPlugin, allowed: list[str] | None
) -> None:
    with pytest.raises(ConfigError) as raised:
        resolve_connector_class(name, allowed_modules=allowed)
    assert_java_answer(raised.value, "connector.class", name, plugin)
    if plugin.equivalent is None:
        assert "installed connectors: " in str(raised.value) and "kafka-mirror" in str(raised.value)


@pytest.mark.usefixtures("no_imports")
@pytest.mark.parametrize(("name", "plugin"), entries(CONVERTERS))
def test_each_java_converter_is_answered_with_the_nearest_built_in(name: str, plugin: JavaPlugin) -> None:
    with pytest.raises(ConfigError) as raised:
        converter_class(name, "key.converter", ["*"])
    assert_java_answer(raised.value, "key.converter", name, plugin)
    with pytest.raises(ConfigError) as trusted:  # the worker file's own converters, loaded without a module list
        load_converter(name, {}, is_key=False)
    assert_java_answer(trusted.value, "value.converter", name, plugin)
    if plugin.equivalent is None:
        assert "built-in converters (bytes, string, json, avro" in str(raised.value)


@pytest.mark.usefixtures("no_imports")
@pytest.mark.parametrize(("name", "plugin"), entries(TRANSFORMATIONS))
def test_each_java_transformation_is_answered_with_its_counterpart(name: str, plugin: JavaPlugin) -> None:
    with pytest.raises(ConfigError) as raised:
        resolve(name, "transforms.x.type", allowed_modules=["*"])
    assert_java_answer(raised.value, "transforms.x.type", name, plugin)
    if plugin.equivalent is None:
        assert "built-in transformations: InsertField$Key/$Value" in str(raised.value)
        assert "installed: " in str(raised.value) and "jdbc-cdc-unwrap" in str(raised.value)


def test_the_unwrap_counterpart_is_the_installed_transformation() -> None:
    named = TRANSFORMATIONS["io.debezium.transforms.ExtractNewRecordState"].equivalent
    assert resolve(named, "transforms.x.type").__name__ == "JdbcCdcUnwrap"


@pytest.mark.usefixtures("no_imports")
@pytest.mark.parametrize(
    ("key", "name", "kind"),
    [
        ("connector.class", "com.example.kafka.connect.ExampleSourceConnector", "connector"),
        ("connector.class", "com.snowflake.kafka.connector.SnowflakeSinkConnector", "connector"),
        ("value.converter", "io.apicurio.registry.utils.converter.ExtJsonConverter", "converter"),
        ("transforms.x.type", "com.github.jcustenborder.kafka.connect.transform.common.ChangeCase$Value", "transform"),
        ("predicates.p.type", "net.example.kafka.HasField", "predicate"),
    ],
)
def test_an_unknown_java_class_gets_the_java_answer_and_what_can_be_used(key: str, name: str, kind: str) -> None:
    with pytest.raises(ConfigError) as raised:
        if kind == "connector":
            resolve_connector_class(name, key, allowed_modules=["*"])
        elif kind == "converter":
            converter_class(name, key, ["*"])
        else:
            resolve(name, key, predicate=kind == "predicate", allowed_modules=["*"])
    assert_java_answer(raised.value, key, name, None)
    shown = {"connector": "installed connectors", "converter": "built-in converters", "transform": "RegexRouter"}
    assert shown.get(kind, "built-in predicates: TopicNameMatches") in str(raised.value)


def test_kafkas_abstract_transformation_names_its_key_and_value_variants() -> None:
    name = "org.apache.kafka.connect.transforms.InsertField"
    with pytest.raises(ConfigError, match=r"did you mean .*InsertField\$Key or .*InsertField\$Value\?"):
        resolve(name, "transforms.x.type", allowed_modules=[])


@pytest.mark.parametrize(
    ("spec", "java"),
    [
        (MIRROR, True),
        ("io.confluent.connect.s3.S3SinkConnector", True),
        ("com.example.Connector", True),
        ("com.example.Outer$Inner", True),
        ("io.example.Thing", True),  # Python's io is a module, not a package: io.example cannot be a Python path
        ("support.leaky_source.SecretSource", False),
        ("support.leaky_source:SecretSource", False),
        ("com.example:Connector", False),
        ("mycompany.connectors.Source", False),
        ("io.StringIO", False),
        ("com.example.lowercase", False),
        ("kafka-mirror", False),
    ],
)
def test_a_java_class_name_is_told_from_a_python_import_path(spec: str, java: bool) -> None:
    assert is_java_class(spec) is java


@pytest.fixture
def python_com_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A Python package ``com.example`` on the path holding a connector: a reverse-domain name Python can import."""
    package = tmp_path / "com" / "example"
    package.mkdir(parents=True)
    (tmp_path / "com" / "__init__.py").write_text("")
    (package / "__init__.py").write_text("")
    (package / "connectors.py").write_text("from support.leaky_source import SecretSource as ExampleSource\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.invalidate_caches()
    yield "com.example.connectors.ExampleSource"
    for name in [name for name in sys.modules if name == "com" or name.startswith("com.")]:
        del sys.modules[name]


def test_a_python_import_path_under_allowed_modules_still_imports(python_com_package: str) -> None:
    assert resolve_connector_class("support.leaky_source.SecretSource", allowed_modules=["support"]) is SecretSource
    assert resolve_connector_class("support.leaky_source:SecretSource", allowed_modules=["support"]) is SecretSource
    assert not is_java_class(python_com_package)
    assert resolve_connector_class(python_com_package, allowed_modules=["com.example"]) is SecretSource


def test_an_unknown_python_path_still_gets_the_allowed_modules_answer() -> None:
    with pytest.raises(ConfigError, match=r"add mycompany\.connectors .*there to allow it") as raised:
        resolve_connector_class("mycompany.connectors.Source", allowed_modules=[])
    assert ALLOWED_MODULES in str(raised.value) and "Java" not in str(raised.value)
    with pytest.raises(ConfigError, match=r"Converter classes are not imported from module mycompany\.codecs"):
        converter_class("mycompany.codecs:Codec", "value.converter", [])
    with pytest.raises(ConfigError, match=rf"mycompany\.smt: only built-ins.*{ALLOWED_MODULES}"):
        resolve("mycompany.smt.Mask", "transforms.x.type", allowed_modules=[])


@pytest.mark.parametrize("name", [name for name in BUILTIN_CONVERTERS if "." in name])
def test_built_in_and_schema_registry_converters_by_java_name_still_load(name: str) -> None:
    assert converter_class(name, "value.converter", []) is BUILTIN_CONVERTERS[name]


def test_the_schema_registry_converters_and_kafkas_transforms_keep_their_java_names() -> None:
    confluent = {
        "io.confluent.connect.avro.AvroConverter": AvroConverter,
        "io.confluent.connect.json.JsonSchemaConverter": JsonSchemaConverter,
        "io.confluent.connect.protobuf.ProtobufConverter": ProtobufConverter,
    }
    for name, cls in confluent.items():
        assert converter_class(name, "value.converter", []) is cls
        assert isinstance(load_converter(name, {"schema.registry.url": "http://127.0.0.1:1"}, is_key=False), cls)
    kafka = "org.apache.kafka.connect.transforms.RegexRouter"
    assert resolve(kafka, "transforms.x.type", allowed_modules=[]) is RegexRouter


@pytest.fixture
def memory_rest() -> Iterator[MemoryRestWorker]:
    """An in-memory worker serving REST that allows every module: even so a Java class cannot be loaded."""
    worker = MemoryRestWorker(connector_class_allowed_modules="*")
    yield worker
    worker.stop()


def test_rest_refuses_a_java_connector_naming_its_counterpart(memory_rest: MemoryRestWorker) -> None:
    put = memory_rest.http.put("/connectors/x/config", json={"connector.class": MIRROR})
    assert put.status_code == 400, put.text
    message = put.json()["message"]
    assert "connector.class=kafka-mirror" in message and "docs/kafka-mirror.md" in message, message
    assert "allowed.modules" not in message and "ModuleNotFoundError" not in message
    validated = memory_rest.http.put(f"/connector-plugins/{MIRROR}/config/validate", json={"connector.class": MIRROR})
    assert validated.status_code == 200, validated.text
    errors = {info["value"]["name"]: info["value"]["errors"] for info in validated.json()["configs"]}
    assert any("connector.class=kafka-mirror" in error for error in errors["connector.class"]), errors
    config = {
        "connector.class": "sequence-source",
        "topic": "t",
        "value.converter": "io.apicurio.registry.utils.converter.AvroConverter",
        "transforms": "unwrap",
        "transforms.unwrap.type": "io.debezium.transforms.ExtractNewRecordState",
    }
    validated = memory_rest.http.put("/connector-plugins/sequence-source/config/validate", json=config)
    errors = {info["value"]["name"]: info["value"]["errors"] for info in validated.json()["configs"]}
    assert any("value.converter=avro" in error for error in errors["value.converter"]), errors
    assert any("transforms.unwrap.type=jdbc-cdc-unwrap" in error for error in errors["transforms.unwrap.type"])
    assert memory_rest.http.get("/connectors").json() == []


def test_a_standalone_file_names_the_counterpart_not_a_missing_module(tmp_path: Path) -> None:
    worker = tmp_path / "worker.properties"
    worker.write_text("bootstrap.servers=127.0.0.1:1\n", encoding="utf-8")
    connector = tmp_path / "mirror.properties"
    connector.write_text(f"name=mirror\nconnector.class={MIRROR}\n", encoding="utf-8")
    with pytest.raises(PropertiesError) as raised:
        StandaloneWorker.from_paths(worker, [connector])
    message = str(raised.value)
    assert message.startswith(f"{connector}:2: connector.class: invalid value '{MIRROR}': "), message
    assert "use connector.class=kafka-mirror instead" in message and "ModuleNotFoundError" not in message
