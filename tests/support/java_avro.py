"""The Java side of the Avro parity tests: Apicurio's Kafka Connect Avro converter
(``io.apicurio:apicurio-registry-utils-converter:2.6.13.Final``, whose ``AvroData`` is a port of Confluent's) run on
Connect records against the test session's registry, with Confluent's framing (``apicurio.registry.as-confluent``,
no headers, content ids).

:func:`java_avro` runs ``tests/support/java/AvroParity.java`` once per call over the converter's jars (fetched with
Maven into the cache root, compiled with ``javac`` once per source text): each request is a topic and a Kafka Connect
JsonConverter envelope (``{"schema": ..., "payload": ...}``, which the driver reads with Kafka's JsonConverter), each
answer the bytes the Avro converter wrote, or the Java exception as ``"ERROR <class>: <message>"``.
"""

from __future__ import annotations

import base64
import hashlib
import json
import shlex
import shutil
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from headwater.harness.maven import cache_root, fetch_maven, maven_pom, require_tools
from headwater.harness.schema_registry import CCOMPAT_PATH

DRIVER = Path(__file__).parent / "java" / "AvroParity.java"
CONVERTER = ("io.apicurio", "apicurio-registry-utils-converter", "2.6.13.Final")
CONNECT_JSON = ("org.apache.kafka", "connect-json", "3.9.0")
"""Kafka's JsonConverter of the same Kafka version as the connect-api the converter depends on."""


def converter_jars() -> Path:
    """The converter's jars, copied by Maven into ``<cache root>/apicurio-converter-2.6.13/jars`` on the first call."""
    return fetch_maven(cache_root() / "apicurio-converter-2.6.13", maven_pom([CONVERTER, CONNECT_JSON]), CONVERTER[1])


def compiled_driver(jars: Path) -> Path:
    """The compiled driver's directory, built with ``javac`` when this source has not been built yet."""
    javac = require_tools("javac")["javac"]
    digest = hashlib.sha256(DRIVER.read_bytes()).hexdigest()[:16]
    classes = cache_root() / "avro-parity" / digest
    if (classes / "AvroParity.class").exists():
        return classes
    classes.parent.mkdir(parents=True, exist_ok=True)
    building = Path(tempfile.mkdtemp(prefix=f"{digest}.", dir=classes.parent))
    command = [javac, "--release", "17", "-encoding", "UTF-8", "-d", str(building), "-cp", str(jars / "*"), str(DRIVER)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, check=False)
    if done.returncode != 0:
        shutil.rmtree(building)
        raise RuntimeError(f"{shlex.join(command)} failed ({done.returncode}):\n{done.stdout}{done.stderr}")
    try:
        building.rename(classes)
    except OSError:  # built meanwhile by another worker
        shutil.rmtree(building)
    return classes


def java_avro(ccompat_url: str, requests: Sequence[tuple[str, Mapping[str, Any]]]) -> list[bytes | str]:
    """What Apicurio's Avro converter writes for each ``(topic, envelope)`` against the registry whose Confluent API
    is at ``ccompat_url``: the bytes, or ``"ERROR ..."``."""
    java = require_tools("java")["java"]
    jars = converter_jars()
    classes = compiled_driver(jars)
    native = ccompat_url.removesuffix(CCOMPAT_PATH) + "/apis/registry/v2"
    lines = "".join(json.dumps({"topic": topic, "envelope": envelope}) + "\n" for topic, envelope in requests)
    command = [java, "-Xmx256m", "-cp", f"{classes}:{jars}/*", "AvroParity", native]
    done = subprocess.run(command, input=lines, capture_output=True, text=True, timeout=300, check=False)
    answers = done.stdout.splitlines()
    if done.returncode != 0 or len(answers) != len(requests):
        raise RuntimeError(f"{shlex.join(command)} failed ({done.returncode}):\n{done.stdout}{done.stderr[-4000:]}")
    return [answer if answer.startswith("ERROR ") else base64.b64decode(answer) for answer in answers]
