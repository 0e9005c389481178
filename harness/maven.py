"""Jars from Maven Central, the way the harness gets Kafka: the one place that runs ``mvn``.

``fetch_maven`` copies the runtime classpath of any pom ``maven_pom`` writes into a cache directory, once per machine
(``mvn dependency:copy-dependencies``); ``fetch_jars`` does it for a Kafka artifact, the broker's (``kafka_2.13``) by
default, plus the log4j2 jars the Kafka poms leave out. The benchmarks fetch Kafka Connect's and Debezium's jars with
it too, into the same cache root. Needs Java 17 and Maven (``apt-get install openjdk-17-jre-headless maven``).

``HEADWATER_CACHE`` is the cache root, default ``$XDG_CACHE_HOME/headwater`` or ``~/.cache/headwater``: a Kafka
artifact's jars go to ``<root>/<artifact or kafka>-<version>/jars``. Cache the root (and ``~/.m2``) in CI.
"""

from __future__ import annotations

import fcntl
import logging
import os
import shlex
import shutil
from collections.abc import Sequence
from pathlib import Path

from headwater.harness.long_command import maven_progress, run_logged

KAFKA_VERSION = "4.3.1"
FALLBACK_KAFKA_VERSION = "3.9.2"
LOG4J_VERSION = "2.25.5"
BROKER_ARTIFACT = "kafka_2.13"
INSTALL_HINT = "install Java 17 and Maven (apt-get install openjdk-17-jre-headless maven)"
_MARKER = ".fetched"

log = logging.getLogger(__name__)


class BrokerUnavailable(RuntimeError):
    """No broker could be provided; ``missing_tools`` names the programs to install when that is the reason."""

    def __init__(self, message: str, missing_tools: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.missing_tools = tuple(missing_tools)


def cache_root() -> Path:
    """Where fetched jars and the command line's broker live: ``HEADWATER_CACHE`` or the user's cache dir."""
    if root := os.environ.get("HEADWATER_CACHE"):
        return Path(root).expanduser()
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "headwater"


def require_tools(*names: str) -> dict[str, str]:
    """The full path of each program, or ``BrokerUnavailable`` saying what to install."""
    found = {name: shutil.which(name) for name in names}
    missing = [name for name, path in found.items() if path is None]
    if missing:
        raise BrokerUnavailable(f"{' and '.join(missing)} not found on PATH: {INSTALL_HINT}", missing)
    return {name: path for name, path in found.items() if path is not None}


def pom_xml(kafka_version: str = KAFKA_VERSION, artifact: str = BROKER_ARTIFACT) -> str:
    """The pom whose runtime dependencies are the classpath of ``org.apache.kafka:<artifact>`` (the broker by default;
    ``connect-mirror`` gives a Connect worker with MirrorMaker 2's connectors), plus the logging backend the Kafka
    poms omit."""
    deps = [("org.apache.kafka", artifact, kafka_version)]
    if kafka_version.startswith("3."):
        deps += [("org.slf4j", "slf4j-reload4j", "1.7.36"), ("ch.qos.reload4j", "reload4j", "1.2.25")]
    else:  # slf4j 1.7 binding for log4j2; explicit api/core win over kafka-server's, keeping all three equal
        deps += [("org.apache.logging.log4j", name, LOG4J_VERSION) for name in ("log4j-api", "log4j-core")]
        deps += [("org.apache.logging.log4j", "log4j-slf4j-impl", LOG4J_VERSION)]
    return maven_pom(deps)


def maven_pom(dependencies: Sequence[tuple[str, str, str]], exclude_groups: Sequence[str] = ()) -> str:
    """A pom that copies the runtime classpath of ``dependencies`` (``(group, artifact, version)``) into
    ``jars/`` beside it, leaving out the artifacts of ``exclude_groups``."""
    body = "\n".join(
        f"    <dependency><groupId>{g}</groupId><artifactId>{a}</artifactId><version>{v}</version></dependency>"
        for g, a, v in dependencies
    )
    excludes = f"\n      <excludeGroupIds>{','.join(exclude_groups)}</excludeGroupIds>" if exclude_groups else ""
    return f"""<?xml version="1.0" encoding="UTF-8"?>
<project xmlns="http://maven.apache.org/POM/4.0.0" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"
         xsi:schemaLocation="http://maven.apache.org/POM/4.0.0 https://maven.apache.org/xsd/maven-4.0.0.xsd">
  <modelVersion>4.0.0</modelVersion>
  <groupId>local.headwater</groupId>
  <artifactId>headwater-jars</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <properties><project.build.sourceEncoding>UTF-8</project.build.sourceEncoding></properties>
  <dependencies>
{body}
  </dependencies>
  <build><plugins><plugin>
    <groupId>org.apache.maven.plugins</groupId><artifactId>maven-dependency-plugin</artifactId><version>3.8.1</version>
    <configuration>
      <outputDirectory>${{project.basedir}}/jars</outputDirectory>
      <includeScope>runtime</includeScope>{excludes}
      <overWriteReleases>false</overWriteReleases>
    </configuration>
  </plugin></plugins></build>
</project>
"""


def fetch_jars(
    cache_dir: Path | None = None, kafka_version: str = KAFKA_VERSION, artifact: str = BROKER_ARTIFACT
) -> Path:
    """The directory of the broker's jars (or another Kafka ``artifact``'s, in ``<cache root>/<artifact>-<version>``),
    downloaded with Maven on the first call (later calls return at once)."""
    default_dir = f"kafka-{kafka_version}" if artifact == BROKER_ARTIFACT else f"{artifact}-{kafka_version}"
    cache_dir = Path(cache_dir) if cache_dir is not None else cache_root() / default_dir
    return fetch_maven(cache_dir, pom_xml(kafka_version, artifact), artifact)


def fetch_maven(cache_dir: Path, pom: str, artifact: str) -> Path:
    """``<cache_dir>/jars``, filled by ``mvn dependency:copy-dependencies`` from ``pom`` (see :func:`maven_pom`) on
    the first call; later calls, once a jar of ``artifact`` is there, return at once. Needs java and mvn."""
    tools = require_tools("java", "mvn")
    jars = cache_dir / "jars"
    marker = cache_dir / _MARKER
    cache_dir.mkdir(parents=True, exist_ok=True)
    with open(cache_dir / ".lock", "w") as lock:  # one download at a time, e.g. across pytest-xdist workers
        fcntl.flock(lock, fcntl.LOCK_EX)
        if marker.exists() and any(jars.glob(f"{artifact}-*.jar")):
            return jars
        (cache_dir / "pom.xml").write_text(pom)
        command = [tools["mvn"], "-B", "-f", str(cache_dir / "pom.xml"), "dependency:copy-dependencies"]
        what = f"fetching {artifact}'s jars from Maven Central into {jars}"
        cache_root().mkdir(parents=True, exist_ok=True)
        with open(cache_root() / ".maven.lock", "w") as maven:  # one mvn at a time: jar sets share ~/.m2's files
            fcntl.flock(maven, fcntl.LOCK_EX)
            done = run_logged(command, what, maven_progress, log, timeout_s=1800)
        if done.returncode != 0:
            raise BrokerUnavailable(
                f"{shlex.join(command)} failed ({done.returncode}):\n{tail(done.stdout + done.stderr)}"
            )
        marker.write_text(artifact + "\n")
    return jars


def jars_version(jars_dir: Path) -> str:
    """The Kafka version of a jars directory, read from its ``kafka_2.13-<version>.jar``."""
    for jar in jars_dir.glob("kafka_2.13-*.jar"):
        version = jar.name.removeprefix("kafka_2.13-").removesuffix(".jar")
        if version[:1].isdigit() and "-" not in version:
            return version
    raise BrokerUnavailable(f"no kafka_2.13-<version>.jar in {jars_dir}")


def tail(text: str, lines: int = 40) -> str:
    """The last ``lines`` lines of ``text``."""
    return "\n".join(text.splitlines()[-lines:])


def fetch_artifact(cache_dir: Path, coordinate: str) -> Path:
    """``<cache_dir>/<the artifact's file>``: one artifact (``group:artifact:version[:packaging[:classifier]]``, an
    application's ``tar.gz`` say) copied from Maven Central by ``mvn dependency:copy`` on the first call; later calls
    return at once. Needs java and mvn."""
    _group, artifact, version, *rest = coordinate.split(":")
    packaging = rest[0] if rest else "jar"
    classifier = f"-{rest[1]}" if len(rest) > 1 else ""
    found = cache_dir / f"{artifact}-{version}{classifier}.{packaging}"
    tools = require_tools("java", "mvn")
    cache_dir.mkdir(parents=True, exist_ok=True)
    with open(cache_dir / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if found.is_file():
            return found
        command = [tools["mvn"], "-B", "dependency:copy", f"-Dartifact={coordinate}", f"-DoutputDirectory={cache_dir}"]
        cache_root().mkdir(parents=True, exist_ok=True)
        with open(cache_root() / ".maven.lock", "w") as maven:  # one mvn at a time: they share ~/.m2's files
            fcntl.flock(maven, fcntl.LOCK_EX)
            done = run_logged(command, f"fetching {coordinate} from Maven Central", maven_progress, log, timeout_s=1800)
        if done.returncode != 0 or not found.is_file():
            raise BrokerUnavailable(
                f"{shlex.join(command)} failed ({done.returncode}):\n{tail(done.stdout + done.stderr)}"
            )
    return found
