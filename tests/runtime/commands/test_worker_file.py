"""The worker file of ``headwater standalone`` and ``headwater distributed``, checked like a connector file: lines
Java would misread refused with their line, unknown keys warned with the nearest known key (refused under
``connector.unknown.keys=error``), ``plugin.path`` answered, converters and providers loaded at start, and every
problem of the file reported at once; all before the worker touches Kafka or starts a task."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from headwater.runtime.commands.distributed import DistributedWorker
from headwater.runtime.commands.standalone import StandaloneWorker
from headwater.runtime.config.properties import PropertiesError
from support.unknown_keys import UnknownKeyWarnings

STANDALONE = "bootstrap.servers=127.0.0.1:1\n"
DISTRIBUTED = STANDALONE + "group.id=g\nconfig.storage.topic=g-c\noffset.storage.topic=g-o\nstatus.storage.topic=g-s\n"
BASES = {"standalone": STANDALONE, "distributed": DISTRIBUTED}
KINDS = sorted(BASES)

# Kafka's own config/connect-standalone.properties and config/connect-distributed.properties (comments dropped)
KAFKA_STANDALONE = """\
bootstrap.servers=localhost:9092
key.converter=org.apache.kafka.connect.json.JsonConverter
value.converter=org.apache.kafka.connect.json.JsonConverter
key.converter.schemas.enable=true
value.converter.schemas.enable=true
offset.storage.file.filename=/tmp/connect.offsets
offset.flush.interval.ms=10000
"""
KAFKA_DISTRIBUTED = """\
bootstrap.servers=localhost:9092
group.id=connect-cluster
key.converter=org.apache.kafka.connect.json.JsonConverter
value.converter=org.apache.kafka.connect.json.JsonConverter
key.converter.schemas.enable=true
value.converter.schemas.enable=true
offset.storage.topic=connect-offsets
offset.storage.replication.factor=1
config.storage.topic=connect-configs
config.storage.replication.factor=1
status.storage.topic=connect-status
status.storage.replication.factor=1
offset.flush.interval.ms=10000
listeners=HTTP://:8083
"""
# keys of the families the worker passes on or reads under a prefix
FAMILIES = """\
security.protocol=PLAINTEXT
ssl.endpoint.identification.algorithm=https
sasl.mechanism=PLAIN
producer.linger.ms=5
consumer.fetch.min.bytes=1
admin.request.timeout.ms=30000
config.providers=env
config.providers.env.class=org.apache.kafka.common.config.provider.EnvVarConfigProvider
config.providers.env.param.allowlist.pattern=HW_.*
header.converter=org.apache.kafka.connect.storage.SimpleHeaderConverter
rest.request.body.max.bytes=100000
metrics.host=127.0.0.1
connector.client.config.override.policy=All
"""


def build(kind: str, tmp_path: Path, text: str) -> StandaloneWorker | DistributedWorker:
    path = tmp_path / "worker.properties"
    path.write_text(text, encoding="utf-8")
    return StandaloneWorker.from_paths(path, []) if kind == "standalone" else DistributedWorker.from_path(path)


def warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [record.getMessage() for record in caplog.records if record.levelno == logging.WARNING]


Expected = UnknownKeyWarnings


@pytest.mark.parametrize("kind", KINDS)
def test_a_typo_is_warned_with_the_nearest_key(
    kind: str, tmp_path: Path, caplog: pytest.LogCaptureFixture, unknown_key_warnings: Expected
) -> None:
    base = BASES[kind]
    at = len(base.splitlines()) + 1
    text = base + "offset.flush.intervall.ms=100\nvalue.converter.schemas.enabel=false\n"
    with caplog.at_level(logging.WARNING):
        build(kind, tmp_path, text)
    assert warnings(caplog) == [
        f"{tmp_path}/worker.properties:{at}: offset.flush.intervall.ms: not a worker configuration, and ignored; "
        "did you mean offset.flush.interval.ms?",
        f"{tmp_path}/worker.properties:{at + 1}: value.converter.schemas.enabel: JsonConverter (value.converter) has "
        "no setting schemas.enabel (its settings: schemas.enable); did you mean value.converter.schemas.enable?",
    ]
    assert unknown_key_warnings.take() == ["offset.flush.intervall.ms", "value.converter.schemas.enabel"]


@pytest.mark.parametrize(("kind", "text"), [("standalone", KAFKA_STANDALONE), ("distributed", KAFKA_DISTRIBUTED)])
def test_kafkas_sample_files_and_the_passed_on_families_are_not_warned(
    kind: str, text: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING):
        build(kind, tmp_path, text + FAMILIES)
    assert warnings(caplog) == []


def test_a_key_of_another_kind_of_config_is_named_for_what_it_is(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, unknown_key_warnings: Expected
) -> None:
    with caplog.at_level(logging.WARNING):
        build("standalone", tmp_path, STANDALONE + "group.id=g\ntasks.max=2\n")
    assert warnings(caplog) == [
        f"{tmp_path}/worker.properties:2: group.id: a distributed worker's configuration: a standalone worker does "
        "not read it",
        f"{tmp_path}/worker.properties:3: tasks.max: a connector's configuration: a worker does not read it (set it "
        "in a connector's config)",
    ]
    assert unknown_key_warnings.take() == ["group.id", "tasks.max"]


@pytest.mark.parametrize("kind", KINDS)
def test_unknown_keys_are_refused_under_connector_unknown_keys_error(kind: str, tmp_path: Path) -> None:
    base = BASES[kind] + "connector.unknown.keys=error\n"
    at = len(base.splitlines()) + 1
    with pytest.raises(PropertiesError) as raised:
        build(kind, tmp_path, base + "offset.flush.intervall.ms=100\nrest.advertised.host.name=h\n")
    assert [(error.line, error.key) for error in raised.value.errors] == [
        (at, "offset.flush.intervall.ms"),
        (at + 1, "rest.advertised.host.name"),
    ]
    assert "did you mean offset.flush.interval.ms?" in str(raised.value)


@pytest.mark.parametrize("kind", KINDS)
def test_plugin_path_is_answered_with_how_plugins_are_found(
    kind: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    base = BASES[kind] + "connector.unknown.keys=error\n"  # a key Kafka Connect reads: answered, not refused
    at = len(base.splitlines()) + 1
    with caplog.at_level(logging.WARNING):
        build(kind, tmp_path, base + "plugin.path=/usr/share/java,/opt/connectors\n")
    (said,) = warnings(caplog)
    assert said.startswith(f"{tmp_path}/worker.properties:{at}: plugin.path: Headwater loads no Java plugins")
    assert "installed Python packages, by their entry points (groups headwater.connectors, " in said
    assert said.endswith("this key does nothing (remove it)")


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ('"group.id": "g",', "not a config key"),
        ("[worker]", "not a config key"),
        ("-----END CERTIFICATE-----", "not a config key"),
        ("stray", "the line holds a key and no value; write stray= for an empty value"),
        ("=value", "empty key (the line starts with '=')"),
    ],
)
@pytest.mark.parametrize("kind", KINDS)
def test_a_line_java_would_misread_is_refused_with_its_line(kind: str, line: str, problem: str, tmp_path: Path) -> None:
    base = BASES[kind] + "# a comment\n\n"
    at = len(base.splitlines()) + 1
    with pytest.raises(PropertiesError) as raised:
        build(kind, tmp_path, base + line + "\nheartbeat.interval.ms=0\n")
    (error,) = raised.value.errors
    assert error.line == at and problem in str(error)


@pytest.mark.parametrize(
    ("lines", "key", "problem"),
    [
        ("value.converter=avro\n", "value.converter.schema.registry.url", "Missing required configuration"),
        ("value.converter=io.confluent.connect.avro.AvroConverter\n", "value.converter.schema.registry.url", "Missing"),
        ("key.converter=no_such_package.NoSuchConverter\n", "key.converter", "Cannot load converter class"),
        ("key.converter=com.example.NoSuchConverter\n", "key.converter", "is a Java class name"),
        ("header.converter=protobuf\n", "header.converter", "convert keys and values, not headers"),
        ("value.converter.schemas.enable=maybe\n", "value.converter.schemas.enable", "either true or false"),
    ],
)
@pytest.mark.parametrize("kind", KINDS)
def test_a_bad_converter_stops_the_worker_before_anything_starts(
    kind: str, lines: str, key: str, problem: str, tmp_path: Path
) -> None:
    """The worker is not built: it neither waits for Kafka nor starts a task (``headwater standalone`` exits 2 with
    the message: test_standalone.py runs the command)."""
    offsets = tmp_path / "connect.offsets"
    base = BASES[kind] + f"offset.storage.file.filename={offsets}\n"
    at = len(base.splitlines()) + 1
    with pytest.raises(PropertiesError) as raised:
        build(kind, tmp_path, base + lines)
    (error,) = raised.value.errors
    assert str(error).startswith(f"{tmp_path}/worker.properties:{at}: {key}: ") and problem in str(error)
    assert not offsets.exists()


def test_every_problem_of_the_file_is_reported_at_once(tmp_path: Path) -> None:
    text = (
        STANDALONE
        + "connector.unknown.keys=error\n"  # 2
        + "offset.flush.intervall.ms=100\n"  # 3: unknown
        + "config.providers=vault\n"  # 4: no class for it
        + "heartbeat.interval.ms=often\n"  # 5: bad value
        + "stray\n"  # 6: a key and no value
        + "ssl.truststore.location=/etc/kafka/truststore.jks\n"  # 7: a Java client setting
        + "value.converter=avro\n"  # 8: no registry URL
    )
    with pytest.raises(PropertiesError) as raised:
        build("standalone", tmp_path, text)
    found = [(error.line, error.key) for error in raised.value.errors]
    assert found == [
        (3, "offset.flush.intervall.ms"),
        (4, "config.providers.vault.class"),
        (5, "heartbeat.interval.ms"),
        (6, "stray"),
        (7, "ssl.truststore.location"),
        (8, "value.converter.schema.registry.url"),
    ]
    message = str(raised.value)
    assert message.count(f"{tmp_path}/worker.properties:") == 6
    assert "Config provider vault is listed in config.providers but has no class" in message
