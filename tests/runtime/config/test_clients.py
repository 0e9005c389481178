"""One rule turns a worker's settings into its Kafka clients' settings, in standalone and distributed mode alike."""

from __future__ import annotations

from pathlib import Path

import pytest

from headwater.runtime.commands.distributed import DistributedWorker
from headwater.runtime.commands.standalone import StandaloneWorker
from headwater.runtime.config.clients import admin_settings, client_settings
from headwater.runtime.config.properties import PropertiesError, format_properties

SECURE = {
    "bootstrap.servers": "kafka:9093",
    "security.protocol": "SASL_SSL",
    "sasl.mechanism": "PLAIN",
    "sasl.username": "u",
    "sasl.password": "p",
    "ssl.endpoint.identification.algorithm": "none",
    "producer.linger.ms": "20",
    "producer.sasl.mechanism": "SCRAM-SHA-512",
    "consumer.fetch.max.bytes": "1000",
    "admin.request.timeout.ms": "9000",
    "offset.flush.interval.ms": "100",
}
SHARED = {
    "security.protocol": "SASL_SSL",
    "sasl.mechanism": "PLAIN",
    "sasl.username": "u",
    "sasl.password": "p",
    "ssl.endpoint.identification.algorithm": "none",
}


def test_every_client_shares_the_security_keys_and_its_prefixed_keys_win() -> None:
    assert client_settings(SECURE) == SHARED
    assert client_settings(SECURE, "producer") == {**SHARED, "linger.ms": "20", "sasl.mechanism": "SCRAM-SHA-512"}
    assert client_settings(SECURE, "consumer") == {**SHARED, "fetch.max.bytes": "1000"}
    assert admin_settings(SECURE, "kafka:9093") == {
        **SHARED,
        "request.timeout.ms": "9000",
        "bootstrap.servers": "kafka:9093",
    }


def test_standalone_and_distributed_workers_give_their_clients_the_same_settings(tmp_path: Path) -> None:
    standalone_file = tmp_path / "standalone.properties"
    standalone_file.write_text(format_properties({**SECURE, "offset.storage.file.filename": str(tmp_path / "o")}))
    distributed_file = tmp_path / "distributed.properties"
    topics = {"group.id": "g", "config.storage.topic": "c", "offset.storage.topic": "o", "status.storage.topic": "s"}
    distributed_file.write_text(format_properties({**SECURE, **topics}))
    standalone = StandaloneWorker.from_paths(standalone_file, [])
    distributed = DistributedWorker.from_path(distributed_file)
    expected = {**SHARED, "bootstrap.servers": "kafka:9093"}
    assert standalone.transport.config == distributed.transport.config == expected
    assert standalone.admin_config() == distributed.admin_config()


def test_every_admin_client_of_either_worker_gets_the_admin_keys(tmp_path: Path) -> None:
    """Not only the broker check: the dead-letter topic's, the offsets API's and the slots' admin clients too."""
    standalone_file = tmp_path / "standalone.properties"
    standalone_file.write_text(format_properties({**SECURE, "offset.storage.file.filename": str(tmp_path / "o")}))
    distributed_file = tmp_path / "distributed.properties"
    topics = {"group.id": "g", "config.storage.topic": "c", "offset.storage.topic": "o", "status.storage.topic": "s"}
    distributed_file.write_text(format_properties({**SECURE, **topics}))
    expected = {**SHARED, "request.timeout.ms": "9000", "bootstrap.servers": "kafka:9093"}
    for worker in (StandaloneWorker.from_paths(standalone_file, []), DistributedWorker.from_path(distributed_file)):
        assert worker.transport.admin_config == expected == worker.admin_config()
        assert worker.transport.config == {**SHARED, "bootstrap.servers": "kafka:9093"}  # the stores' clients


JAAS = 'org.apache.kafka.common.security.scram.ScramLoginModule required username="u" password="hunter2";'


@pytest.mark.parametrize(
    ("key", "value", "spelling"),
    [
        ("sasl.jaas.config", JAAS, "give sasl.username and sasl.password"),
        ("consumer.ssl.truststore.location", "/etc/kafka/truststore.jks", "as a PEM file in ssl.ca.location"),
        ("admin.ssl.keystore.type", "JKS", "PKCS#12 key store"),
    ],
)
@pytest.mark.parametrize("mode", ["standalone", "distributed"])
def test_a_java_only_security_key_is_refused_naming_it_and_librdkafkas_spelling(
    tmp_path: Path, mode: str, key: str, value: str, spelling: str
) -> None:
    path = tmp_path / "worker.properties"
    topics = {"group.id": "g", "config.storage.topic": "c", "offset.storage.topic": "o", "status.storage.topic": "s"}
    extra = {"offset.storage.file.filename": str(tmp_path / "o")} if mode == "standalone" else topics
    path.write_text(format_properties({**SHARED, "bootstrap.servers": "kafka:9093", **extra, key: value}))
    with pytest.raises(PropertiesError) as raised:
        StandaloneWorker.from_paths(path, []) if mode == "standalone" else DistributedWorker.from_path(path)
    message = str(raised.value)
    assert f"worker.properties:{len(SHARED) + len(extra) + 2}: {key}: a Java client setting" in message
    assert spelling in message
    assert "hunter2" not in message
