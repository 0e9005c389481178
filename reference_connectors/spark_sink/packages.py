"""The Maven packages a SparkSession needs beyond the pyspark wheel, the way Spark users get them: through
``spark.jars.packages``, which Spark resolves with Ivy when the session starts and ships to every executor.

- Delta Lake: ``io.delta:delta-spark_<spark major.minor>_2.13`` at the installed ``delta-spark`` package's version,
  as delta-spark's own ``configure_spark_with_delta_pip`` picks it.
- s3a tables: ``org.apache.hadoop:hadoop-aws`` at the Hadoop version inside pyspark. hadoop-aws depends on the AWS
  SDK's ``bundle`` (about 690 MB, copied to every executor of every application); for the Hadoop versions whose SDK
  release is known here the bundle is excluded and only the SDK modules S3A loads (``s3``, ``s3-transfer-manager``
  and what they pull, about 25 MB) are added at that release. Any other Hadoop keeps the bundle.
- Delta's DynamoDB commit coordinator (``table.commit.coordinator=dynamodb``): the AWS SDK v1 DynamoDB client
  (``com.amazonaws:aws-java-sdk-dynamodb``, about 8 MB with what it pulls) at the release delta-spark is built
  against; the coordinator's classes are in delta-spark itself.

What a connector gives is merged, never replaced: its own ``spark.jars.packages`` and ``spark.jars.excludes`` are
added to these (a coordinate it names wins over ours), its ``spark.jars`` is left as it is, and its
``spark.sql.extensions`` keeps its extensions beside Delta's.

Ivy resolves against Maven Central with the settings in ``ivysettings.xml`` next to this module (Spark also adds any
``spark.jars.repositories``); Spark's default chain starts with ``~/.m2``, where a POM that Maven fetched without
its jar makes the whole resolution fail. A connector that gives ``spark.jars.ivySettings`` uses its own.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from importlib.metadata import version
from pathlib import Path

import pyspark

SCALA_VERSION = "2.13"
IVY_SETTINGS = Path(__file__).with_name("ivysettings.xml")
DELTA_EXTENSION = "io.delta.sql.DeltaSparkSessionExtension"
DELTA_CATALOG = "org.apache.spark.sql.delta.catalog.DeltaCatalog"
S3A_FILESYSTEM = "org.apache.hadoop.fs.s3a.S3AFileSystem"
DELTA_CLASS = "io.delta.tables.DeltaTable"

AWS_SDK_FOR_HADOOP = {"3.4.1": "2.24.6", "3.4.2": "2.29.52", "3.5.0": "2.35.4"}
"""The AWS SDK v2 release each Hadoop release's hadoop-aws is built against (``aws-java-sdk-v2.version`` in that
release's ``hadoop-project`` POM)."""
AWS_SDK_MODULES = ("s3", "s3-transfer-manager")
DYNAMODB_PACKAGE = "com.amazonaws:aws-java-sdk-dynamodb:1.12.262"
"""The DynamoDB client Delta's ``DynamoDBCommitCoordinatorClient`` calls: AWS SDK v1 at the release delta-spark's POM
declares (``com.amazonaws:aws-java-sdk``, scope provided)."""
DYNAMODB_CLASS = "com.amazonaws.services.dynamodbv2.AmazonDynamoDBClient"

PYSPARK_SHIPS = (
    "org.apache.hadoop:hadoop-client-api",
    "org.apache.hadoop:hadoop-client-runtime",
    *(
        f"org.apache.parquet:parquet-{name}"
        for name in ("column", "common", "encoding", "format-structures", "hadoop", "jackson")
    ),
)
"""Artifacts Delta's dependency tree pulls at other versions than the ones pyspark ships (Spark's own win on the
classpath, so the copies would only be shipped to every executor for nothing)."""

_HADOOP_JAR = re.compile(r"hadoop-client-api-(?P<version>\d[^/]*)\.jar")


def spark_version() -> str:
    return str(pyspark.__version__)


def hadoop_version() -> str:
    """The Hadoop release whose client jars the pyspark package ships."""
    for jar in (Path(pyspark.__file__).parent / "jars").glob("hadoop-client-api-*.jar"):
        if match := _HADOOP_JAR.fullmatch(jar.name):
            return match["version"]
    raise RuntimeError(f"no hadoop-client-api jar in {Path(pyspark.__file__).parent / 'jars'}")


def delta_package() -> str:
    """Delta Lake's Spark package for this pyspark, at the installed ``delta-spark``'s version."""
    major_minor = ".".join(spark_version().split(".")[:2])
    return f"io.delta:delta-spark_{major_minor}_{SCALA_VERSION}:{version('delta-spark')}"


def s3a_packages() -> tuple[list[str], list[str]]:
    """hadoop-aws for pyspark's Hadoop and the AWS SDK modules it loads: ``(packages, excludes)``."""
    hadoop = hadoop_version()
    packages = [f"org.apache.hadoop:hadoop-aws:{hadoop}"]
    sdk = AWS_SDK_FOR_HADOOP.get(hadoop)
    if sdk is None:
        return packages, []
    return packages + [f"software.amazon.awssdk:{module}:{sdk}" for module in AWS_SDK_MODULES], [
        "software.amazon.awssdk:bundle"
    ]


def kafka_package() -> str:
    """Spark's Structured Streaming Kafka source for this pyspark (the benchmark's baseline)."""
    return f"org.apache.spark:spark-sql-kafka-0-10_{SCALA_VERSION}:{spark_version()}"


def _split(value: str | None) -> list[str]:
    return [item.strip() for item in (value or "").split(",") if item.strip()]


def _module(coordinate: str) -> str:
    return ":".join(coordinate.split(":")[:2])


def merge_packages(ours: list[str], theirs: str | None) -> str:
    """``theirs`` then each of ``ours`` whose group and artifact ``theirs`` does not name."""
    given = _split(theirs)
    named = {_module(coordinate) for coordinate in given}
    return ",".join(given + [coordinate for coordinate in ours if _module(coordinate) not in named])


def merge_list(ours: list[str], theirs: str | None) -> str:
    given = _split(theirs)
    return ",".join(given + [item for item in ours if item not in given])


def session_settings(conf: Mapping[str, str], delta: bool, s3a: bool, dynamodb: bool = False) -> dict[str, str]:
    """``conf`` with the packages, excludes, Ivy settings, extension and catalog that Delta, s3a and Delta's
    DynamoDB commit coordinator need."""
    packages: list[str] = []
    excludes: list[str] = []
    found = dict(conf)
    if delta:
        packages.append(delta_package())
        excludes += PYSPARK_SHIPS
        found["spark.sql.extensions"] = merge_list([DELTA_EXTENSION], conf.get("spark.sql.extensions"))
        found.setdefault("spark.sql.catalog.spark_catalog", DELTA_CATALOG)
    if s3a:
        more, fewer = s3a_packages()
        packages += more
        excludes += fewer
    if dynamodb:
        packages.append(DYNAMODB_PACKAGE)
    if packages:
        found["spark.jars.packages"] = merge_packages(packages, conf.get("spark.jars.packages"))
        found["spark.jars.excludes"] = merge_list(excludes, conf.get("spark.jars.excludes"))
        found.setdefault("spark.jars.ivySettings", str(IVY_SETTINGS))
    return found
