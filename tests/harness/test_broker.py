"""The local Kafka broker: its pom and config text, and a real broker started from Maven Central jars."""

from __future__ import annotations

import os
import re
import socket
import struct
import time
import uuid
from pathlib import Path

import pytest

import headwater.harness.broker.process as broker_module
from headwater.harness.broker import LocalKafkaBroker, free_ports
from headwater.harness.broker.process import cluster_id, server_properties
from headwater.harness.broker_security import SaslSslListener
from headwater.harness.maven import KAFKA_VERSION, BrokerUnavailable, fetch_jars

try:
    import confluent_kafka
except ImportError:  # the raw ApiVersions request below still proves a Kafka broker answers
    confluent_kafka = None


def test_server_properties_use_a_static_voter_on_loopback(tmp_path: Path) -> None:
    lines = server_properties(19092, 19093, tmp_path).splitlines()
    props = dict(line.split("=", 1) for line in lines)
    assert len(props) == len(lines)
    assert props["controller.quorum.voters"] == "1@127.0.0.1:19093"
    assert props["listeners"] == "PLAINTEXT://127.0.0.1:19092,CONTROLLER://127.0.0.1:19093"
    assert props["advertised.listeners"] == "PLAINTEXT://127.0.0.1:19092"
    assert props["log.dirs"] == str(tmp_path)
    assert props["auto.create.topics.enable"] == "true"
    assert props["log.cleaner.backoff.ms"] == "500"
    assert props["log.retention.ms"] == "-1"
    assert props["offsets.topic.replication.factor"] == "1"
    assert "controller.quorum.bootstrap.servers" not in props  # would need format --standalone


def test_cluster_id_has_the_random_uuid_shape() -> None:
    ids = {cluster_id() for _ in range(1000)}  # one in 64 random ids would start with "-"
    assert len(ids) == 1000
    assert all(len(value) == 22 and "=" not in value and not value.startswith("-") for value in ids)


@pytest.fixture(scope="module")
def jars_dir() -> Path:
    """The broker's jars, fetched once; skips when Java or Maven is missing."""
    try:
        return fetch_jars(kafka_version=KAFKA_VERSION)
    except BrokerUnavailable as exc:
        if exc.missing_tools:
            pytest.skip(str(exc))
        raise


def _api_versions(bootstrap_servers: str) -> int:
    """Send a raw ApiVersions v0 request; the error code of the response (0 from a healthy broker)."""
    host, port = bootstrap_servers.rsplit(":", 1)
    client_id = b"headwater-test"
    body = struct.pack(">hhih", 18, 0, 7, len(client_id)) + client_id
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(struct.pack(">i", len(body)) + body)
        size = struct.unpack(">i", _read(sock, 4))[0]
        correlation_id, error_code = struct.unpack(">ih", _read(sock, size)[:6])
    assert correlation_id == 7
    return int(error_code)


def _read(sock: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        assert chunk, "the broker closed the connection"
        data += chunk
    return data


def _produce_and_consume_one_record(bootstrap_servers: str) -> None:
    assert confluent_kafka is not None
    topic = f"test-broker-{uuid.uuid4().hex[:8]}"
    producer = confluent_kafka.Producer({"bootstrap.servers": bootstrap_servers})
    producer.produce(topic, key=b"k", value=b"hello")
    assert producer.flush(30) == 0
    consumer = confluent_kafka.Consumer(
        {
            "bootstrap.servers": bootstrap_servers,
            "group.id": topic,
            "auto.offset.reset": "earliest",
            "session.timeout.ms": 6000,
        }
    )
    try:
        consumer.subscribe([topic])
        deadline = time.monotonic() + 60
        message = None
        while message is None and time.monotonic() < deadline:
            message = consumer.poll(1.0)
            if message is not None and message.error():
                pytest.fail(f"consume error: {message.error()}")
    finally:
        consumer.close()
    assert message is not None, "no record within 60 s"
    assert (message.key(), message.value()) == (b"k", b"hello")


def _new_topic_retention_ms(bootstrap_servers: str) -> str:
    assert confluent_kafka is not None
    from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic

    topic = f"test-broker-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap_servers})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
    resource = ConfigResource(ConfigResource.Type.TOPIC, topic)
    described = admin.describe_configs([resource])[resource].result(30)
    return str(described["retention.ms"].value)


@pytest.mark.kafka
def test_a_started_broker_answers_keeps_old_records_and_stop_ends_it_and_removes_its_data(jars_dir: Path) -> None:
    """One broker started, used and stopped (a broker takes seconds to start). A new topic keeps records with old
    timestamps: time retention goes by record timestamps, and the default seven days would delete test records
    stamped years ago at the broker's next retention check (a mirror test lost its first 4,000 records that way).
    Without confluent-kafka, the raw ApiVersions request alone proves a Kafka broker answers."""
    with LocalKafkaBroker(jars_dir) as broker:
        pid, data_dir = broker.pid, broker.data_dir
        assert pid is not None and broker.running and (data_dir / "server.properties").exists()
        assert broker.bootstrap_servers == f"127.0.0.1:{broker.port}"
        assert _api_versions(broker.bootstrap_servers) == 0
        assert "running" in repr(broker)
        if confluent_kafka is not None:
            _produce_and_consume_one_record(broker.bootstrap_servers)
            assert _new_topic_retention_ms(broker.bootstrap_servers) == "-1"
    assert not broker.running
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    assert not data_dir.exists()
    assert "stopped" in repr(broker)


@pytest.mark.kafka
def test_a_failed_start_reports_the_broker_log(jars_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.create_server(("127.0.0.1", 0)) as taken:  # the controller port, so the broker cannot bind it
        ports = [*free_ports(1), taken.getsockname()[1]]
        monkeypatch.setattr(broker_module, "free_ports", lambda count: ports)
        failing = LocalKafkaBroker(jars_dir)
        with pytest.raises(BrokerUnavailable, match="Address already in use") as raised:
            failing.start(timeout_s=60)
    assert raised.value.missing_tools == ()
    assert failing.pid is not None and not failing.running
    assert not failing.data_dir.exists()


def test_a_log_excerpt_keeps_the_first_errors_when_the_tail_has_moved_past_them() -> None:
    log = "\n".join(
        ["starting", "ERROR [ControllerServer] bind failed: Address already in use"]
        + [f"shutdown {i}" for i in range(50)]
    )
    excerpt = broker_module._excerpt(log, lines=5)
    assert "Address already in use" in excerpt
    assert excerpt.endswith("shutdown 49") and "shutdown 44" not in excerpt
    assert broker_module._excerpt("a\nb", lines=5) == "a\nb", "no errors: just the tail"


KEY = "-----BEGIN PRIVATE KEY-----\nMIG...\n-----END PRIVATE KEY-----\n"
CHAIN = "-----BEGIN CERTIFICATE-----\nMII...\n-----END CERTIFICATE-----\n"


def test_a_sasl_ssl_listener_sits_beside_the_plaintext_one_which_brokers_and_controllers_keep(tmp_path: Path) -> None:
    listener = SaslSslListener(CHAIN, KEY, {"alice": "alice-secret"}, mechanisms=("SCRAM-SHA-512",))
    text = server_properties(19092, 19093, tmp_path, secure_port=19094) + listener.server_properties(tmp_path)
    props = dict(line.split("=", 1) for line in text.splitlines())
    assert props["listeners"] == "PLAINTEXT://127.0.0.1:19092,SASL_SSL://127.0.0.1:19094,CONTROLLER://127.0.0.1:19093"
    assert props["advertised.listeners"] == "PLAINTEXT://127.0.0.1:19092,SASL_SSL://127.0.0.1:19094"
    assert props["listener.security.protocol.map"] == "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SASL_SSL:SASL_SSL"
    assert props["inter.broker.listener.name"] == "PLAINTEXT"
    assert props["listener.name.sasl_ssl.sasl.enabled.mechanisms"] == "SCRAM-SHA-512"
    assert props["listener.name.sasl_ssl.ssl.keystore.type"] == "PEM"
    assert Path(props["listener.name.sasl_ssl.ssl.keystore.location"]).read_text() == KEY + CHAIN
    assert listener.format_arguments() == ["--add-scram", "SCRAM-SHA-512=[name=alice,password=alice-secret]"]


@pytest.mark.parametrize(
    ("key", "users", "problem"),
    [
        ("-----BEGIN EC PRIVATE KEY-----\n", {"a": "b"}, "PKCS#8"),
        (KEY, {}, "at least one SCRAM user"),
        (KEY, {"a": "p,w"}, "without , = [ or ]"),
    ],
)
def test_a_sasl_ssl_listener_kafka_could_not_use_is_refused_saying_why(
    key: str, users: dict[str, str], problem: str
) -> None:
    with pytest.raises(ValueError, match=re.escape(problem)):
        SaslSslListener(CHAIN, key, users)
