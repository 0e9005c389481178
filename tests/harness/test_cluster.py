"""Which cluster the real-broker tests get: given servers first, then a container, then the local jars."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import headwater.harness.cluster as cluster_module
from headwater.harness.cluster import BOOTSTRAP_ENV, SECOND_BOOTSTRAP_ENV, find_cluster
from headwater.harness.maven import BrokerUnavailable


def test_given_servers_win_and_nothing_is_started(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cluster_module, "docker_answers", lambda: pytest.fail("docker must not be asked"))
    assert find_cluster("10.0.0.1:9092").bootstrap_servers == "10.0.0.1:9092"
    monkeypatch.setenv(BOOTSTRAP_ENV, "10.0.0.2:9092")
    found = find_cluster()
    assert (found.bootstrap_servers, found.source) == ("10.0.0.2:9092", "external")


def test_without_docker_the_local_jars_are_used(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(BOOTSTRAP_ENV, raising=False)
    monkeypatch.setattr(cluster_module, "docker_answers", lambda: False)
    started = cluster_module.Cluster("127.0.0.1:1", "local jars")
    monkeypatch.setattr(cluster_module, "_local_jars", lambda: started)
    assert find_cluster() is started


def test_when_nothing_works_the_error_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(BOOTSTRAP_ENV, raising=False)
    monkeypatch.setattr(cluster_module, "docker_answers", lambda: False)

    def no_java() -> cluster_module.Cluster:
        raise BrokerUnavailable("java not found")

    monkeypatch.setattr(cluster_module, "_local_jars", no_java)
    with pytest.raises(BrokerUnavailable) as raised:
        find_cluster()
    message = str(raised.value)
    assert "no Docker engine answers" in message and "java not found" in message
    assert BOOTSTRAP_ENV in message and "maven" in message


def test_without_a_docker_socket_docker_is_not_asked(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("DOCKER_HOST", raising=False)
    monkeypatch.setattr(cluster_module, "DEFAULT_DOCKER_SOCKET", str(tmp_path / "no-docker.sock"))
    monkeypatch.setitem(sys.modules, "docker", None)  # importing it would raise: it must not be imported
    assert cluster_module.docker_answers() is False


def test_a_docker_host_that_does_not_answer_is_no_docker(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCKER_HOST", "tcp://127.0.0.1:1")
    assert cluster_module.docker_answers() is False


def test_a_second_cluster_reads_its_own_variable_and_names_it_when_none_can_be_had(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(BOOTSTRAP_ENV, "10.0.0.1:9092")
    monkeypatch.setenv(SECOND_BOOTSTRAP_ENV, "10.0.0.2:9092")
    assert find_cluster(env=SECOND_BOOTSTRAP_ENV).bootstrap_servers == "10.0.0.2:9092"
    monkeypatch.delenv(SECOND_BOOTSTRAP_ENV)
    monkeypatch.setattr(cluster_module, "docker_answers", lambda: False)

    def no_java() -> cluster_module.Cluster:
        raise BrokerUnavailable("java not found")

    monkeypatch.setattr(cluster_module, "_local_jars", no_java)
    with pytest.raises(BrokerUnavailable, match=f"--second-kafka-bootstrap or {SECOND_BOOTSTRAP_ENV}"):
        find_cluster(env=SECOND_BOOTSTRAP_ENV, option="--second-kafka-bootstrap")  # the first's servers are not used
