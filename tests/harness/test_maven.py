"""The Maven fetcher of the harness: the poms it writes, and naming the tools it lacks."""

from __future__ import annotations

from pathlib import Path

import pytest

from headwater.harness.maven import BrokerUnavailable, fetch_jars, maven_pom, pom_xml


def test_pom_lists_the_broker_and_its_logging_backend_only() -> None:
    pom = pom_xml("4.3.1")
    assert "<artifactId>kafka_2.13</artifactId><version>4.3.1</version>" in pom
    for artifact in ("log4j-api", "log4j-core", "log4j-slf4j-impl"):
        assert f"<artifactId>{artifact}</artifactId>" in pom
    assert "kafka-tools" not in pom and "connect-" not in pom and "reload4j" not in pom
    assert "<includeScope>runtime</includeScope>" in pom


def test_pom_for_kafka_3_uses_reload4j() -> None:
    pom = pom_xml("3.9.2")
    assert "<artifactId>kafka_2.13</artifactId><version>3.9.2</version>" in pom
    assert "<artifactId>slf4j-reload4j</artifactId>" in pom and "log4j-core" not in pom


def test_missing_tools_are_named(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(BrokerUnavailable, match="apt-get install") as raised:
        fetch_jars(tmp_path / "cache")
    assert raised.value.missing_tools == ("java", "mvn")
    assert not (tmp_path / "cache").exists()


def test_pom_for_another_artifact_depends_on_it_with_the_same_logging() -> None:
    pom = pom_xml("4.3.1", "connect-mirror")
    assert "<artifactId>connect-mirror</artifactId><version>4.3.1</version>" in pom
    assert "kafka_2.13" not in pom and "<artifactId>log4j-slf4j-impl</artifactId>" in pom


def test_maven_pom_lists_any_dependencies_and_leaves_out_excluded_groups() -> None:
    pom = maven_pom([("io.debezium", "debezium-connector-postgres", "3.6.0.Final")], ["org.apache.kafka", "org.slf4j"])
    assert "<artifactId>debezium-connector-postgres</artifactId><version>3.6.0.Final</version>" in pom
    assert "<excludeGroupIds>org.apache.kafka,org.slf4j</excludeGroupIds>" in pom
    assert "excludeGroupIds" not in pom_xml("4.3.1"), "the broker's pom keeps every jar"
