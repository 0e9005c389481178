"""Apache Kafka's own Connect worker as a bench side: ``org.apache.kafka.connect.cli.ConnectStandalone`` from the
``connect-mirror`` jars of Maven Central (``fetch_jars(artifact="connect-mirror")``: the runtime, its JSON and
byte-array converters and MirrorMaker 2's connectors), cached like the broker's, in a child process of its own.

Java 17 with ``-Xms256m -Xmx1g``; INFO logging to the child's stdout file; the REST listener on a free loopback
port. Connectors from outside Kafka come from ``plugin.path``: :func:`debezium_postgres` fetches Debezium's
PostgreSQL connector into a directory of its own there. Used by ``mirror.py`` (MirrorMaker 2) and ``cdc.py``
(Debezium).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the sibling bench module, run as a script or loaded

from kafka_pipeline import Child, write_properties

from headwater.harness.broker import free_ports
from headwater.harness.broker.process import logging_config
from headwater.harness.maven import KAFKA_VERSION, cache_root, fetch_jars, fetch_maven, maven_pom, require_tools

JVM_OPTS = ("-Xms256m", "-Xmx1g", "-Djava.awt.headless=true")
STANDALONE = "org.apache.kafka.connect.cli.ConnectStandalone"
BYTES_CONVERTER = "org.apache.kafka.connect.converters.ByteArrayConverter"
JSON_CONVERTER = "org.apache.kafka.connect.json.JsonConverter"
DEBEZIUM_VERSION = "3.6.0.Final"
"""Built against Kafka 4.3.0 (its parent pom's ``version.kafka``), like the pinned ``KAFKA_VERSION``; needs Java 17."""
DEBEZIUM_POSTGRES = "debezium-connector-postgres"


def connect_standalone(
    name: str,
    directory: Path,
    worker: dict[str, Any],
    connector: dict[str, Any],
    kafka_version: str = KAFKA_VERSION,
    plugin_path: Path | None = None,
) -> Child:
    """Start ``ConnectStandalone`` with ``worker`` and ``connector`` as its two properties files in ``directory``
    (``<name>-worker.properties``, ``<name>.properties``); the REST listener and ``plugin_path`` are added to the
    worker's. Raises ``BrokerUnavailable`` naming what to install when java or mvn is missing."""
    java = require_tools("java", "mvn")["java"]
    jars = fetch_jars(kafka_version=kafka_version, artifact="connect-mirror")
    log_name, log_text, log_flag = logging_config(kafka_version)
    log_file = directory / f"{name}-{log_name}"
    log_file.write_text(log_text)
    (port,) = free_ports(1)
    extra = {"plugin.path": plugin_path} if plugin_path is not None else {}
    worker_file = write_properties(
        directory / f"{name}-worker.properties", {**worker, "listeners": f"http://127.0.0.1:{port}", **extra}
    )
    connector_file = write_properties(directory / f"{name}.properties", connector)
    command = [java, *JVM_OPTS, log_flag.format(path=log_file), "-cp", str(jars / "*")]
    return Child(name, [*command, STANDALONE, str(worker_file), str(connector_file)], directory)


def debezium_postgres(version: str = DEBEZIUM_VERSION) -> Path:
    """A ``plugin.path`` directory whose one plugin (``jars/``) is Debezium's PostgreSQL connector with its
    dependencies, less the Kafka and slf4j jars the worker provides; fetched with Maven into
    ``<cache root>/debezium-postgres-<version>`` on the first call."""
    directory = cache_root() / f"debezium-postgres-{version}"
    pom = maven_pom([("io.debezium", DEBEZIUM_POSTGRES, version)], exclude_groups=("org.apache.kafka", "org.slf4j"))
    fetch_maven(directory, pom, DEBEZIUM_POSTGRES)
    return directory
