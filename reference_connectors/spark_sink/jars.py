"""Jars a SparkSession needs beyond those in the pyspark wheel (Delta Lake's; Spark's Kafka source for the
benchmark), fetched from Maven Central with ``mvn`` once per machine and passed to Spark as local jars.

``fetch_jars`` writes a pom that depends on the given coordinates and lets ``mvn dependency:copy-dependencies``
copy their runtime classpath into ``<cache root>/spark-jars/<name>/jars``, leaving out every artifact the pyspark
wheel already ships (so Spark's own versions of Hadoop, Jackson and Parquet are the ones loaded). The cache root is
``HEADWATER_CACHE``, else ``$XDG_CACHE_HOME/headwater`` or ``~/.cache/headwater``, as for the broker's jars.
"""

from __future__ import annotations

import fcntl
import os
import re
import shlex
import shutil
import subprocess
from collections.abc import Sequence
from importlib.metadata import version
from pathlib import Path

import pyspark

from headwater.sdk import ConnectError

SCALA_VERSION = "2.13"
_MARKER = ".fetched"
_ARTIFACT = re.compile(r"(?P<artifact>.+?)-\d[^/]*\.jar")
_EXCLUDED_GROUPS = ("org.scala-lang", "org.slf4j", "org.apache.logging.log4j", "com.google.code.findbugs")


def cache_root() -> Path:
    if root := os.environ.get("HEADWATER_CACHE"):
        return Path(root).expanduser()
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "headwater"


def spark_version() -> str:
    return str(pyspark.__version__)


def delta_coordinates() -> list[str]:
    """Delta Lake's jar for this pyspark (``io.delta:delta-spark_<spark major.minor>_2.13``), at the version of the
    installed ``delta-spark`` package, so the Python and JVM sides match."""
    major_minor = ".".join(spark_version().split(".")[:2])
    return [f"io.delta:delta-spark_{major_minor}_{SCALA_VERSION}:{version('delta-spark')}"]


def kafka_coordinates() -> list[str]:
    """Spark's Structured Streaming Kafka source for this pyspark."""
    return [f"org.apache.spark:spark-sql-kafka-0-10_{SCALA_VERSION}:{spark_version()}"]


def pyspark_artifacts() -> list[str]:
    """The artifact ids of the jars inside the pyspark package."""
    jars = Path(pyspark.__file__).parent / "jars"
    found = {m["artifact"] for jar in jars.glob("*.jar") if (m := _ARTIFACT.fullmatch(jar.name))}
    return sorted(found)


def pom_xml(coordinates: Sequence[str]) -> str:
    """A pom whose runtime dependencies are ``coordinates`` (``group:artifact:version``) and what they pull,
    minus the artifacts pyspark ships and the Scala and logging groups."""
    dependencies = []
    for coordinate in coordinates:
        group, artifact, release = coordinate.split(":")
        dependencies.append(
            f"    <dependency><groupId>{group}</groupId><artifactId>{artifact}</artifactId>"
            f"<version>{release}</version></dependency>"
        )
    body = "\n".join(dependencies)
    return f"""<?xml version="1.0" encoding="UTF-8"?>
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>local.headwater</groupId>
  <artifactId>spark-jars</artifactId>
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
      <includeScope>runtime</includeScope>
      <excludeGroupIds>{",".join(_EXCLUDED_GROUPS)}</excludeGroupIds>
      <excludeArtifactIds>{",".join(pyspark_artifacts())}</excludeArtifactIds>
    </configuration>
  </plugin></plugins></build>
</project>
"""


def fetch_jars(coordinates: Sequence[str], cache_dir: Path | None = None) -> list[Path]:
    """The jars of ``coordinates`` and their dependencies, downloaded with Maven on the first call for them."""
    name = "+".join(c.replace(":", "_") for c in coordinates)
    cache_dir = cache_dir if cache_dir is not None else cache_root() / "spark-jars" / name
    jars = cache_dir / "jars"
    cache_dir.mkdir(parents=True, exist_ok=True)
    with open(cache_dir / ".lock", "w") as lock:  # one download at a time, across processes
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (cache_dir / _MARKER).exists():
            mvn = shutil.which("mvn")
            if mvn is None or shutil.which("java") is None:
                raise ConnectError(
                    "fetching Spark jars needs java and mvn (apt-get install openjdk-17-jre-headless maven)"
                )
            (cache_dir / "pom.xml").write_text(pom_xml(coordinates))
            shutil.rmtree(jars, ignore_errors=True)
            command = [mvn, "-q", "-B", "-f", str(cache_dir / "pom.xml"), "dependency:copy-dependencies"]
            done = subprocess.run(command, capture_output=True, text=True, timeout=1800, check=False)
            if done.returncode != 0:
                tail = "\n".join((done.stdout + done.stderr).splitlines()[-30:])
                raise ConnectError(f"{shlex.join(command)} failed ({done.returncode}):\n{tail}")
            (cache_dir / _MARKER).write_text("\n".join(coordinates) + "\n")
    return sorted(jars.glob("*.jar"))
