"""The session settings the sink adds for Delta and s3a: Maven packages through ``spark.jars.packages``, merged
with a connector's own, never replacing them; and the driver's log4j2 configuration, unless the connector gives
its own."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("pyspark", reason="the Spark sink needs the spark-sink extra")

from headwater.reference_connectors.spark_sink import delta_package, session_settings
from headwater.reference_connectors.spark_sink.packages import (
    AWS_SDK_FOR_HADOOP,
    DELTA_EXTENSION,
    DYNAMODB_PACKAGE,
    IVY_SETTINGS,
    hadoop_version,
)
from headwater.reference_connectors.spark_sink.session import LOG4J2_PROPERTIES, with_log4j2_properties


def packages(settings: dict[str, str]) -> list[str]:
    return settings["spark.jars.packages"].split(",")


def test_a_parquet_table_on_a_local_disk_needs_nothing() -> None:
    assert session_settings({"spark.master": "local[2]"}, delta=False, s3a=False) == {"spark.master": "local[2]"}


def test_delta_adds_its_package_extension_and_catalog() -> None:
    settings = session_settings({}, delta=True, s3a=False)
    assert packages(settings) == [delta_package()]
    assert delta_package().startswith("io.delta:delta-spark_4.2_2.13:")
    assert settings["spark.sql.extensions"] == DELTA_EXTENSION
    assert settings["spark.sql.catalog.spark_catalog"].endswith("DeltaCatalog")
    assert settings["spark.jars.ivySettings"] == str(IVY_SETTINGS) and Path(IVY_SETTINGS).is_file()
    assert "org.apache.hadoop:hadoop-client-runtime" in settings["spark.jars.excludes"].split(",")


def test_s3a_adds_hadoop_aws_at_pysparks_hadoop_and_the_sdk_modules_instead_of_the_bundle() -> None:
    settings = session_settings({}, delta=False, s3a=True)
    hadoop = hadoop_version()
    sdk = AWS_SDK_FOR_HADOOP[hadoop]
    assert packages(settings) == [
        f"org.apache.hadoop:hadoop-aws:{hadoop}",
        f"software.amazon.awssdk:s3:{sdk}",
        f"software.amazon.awssdk:s3-transfer-manager:{sdk}",
    ]
    assert settings["spark.jars.excludes"] == "software.amazon.awssdk:bundle"


def test_a_connectors_own_packages_extensions_excludes_and_ivy_settings_are_kept() -> None:
    given = {
        "spark.jars.packages": "org.example:udfs:1.0, io.delta:delta-spark_4.2_2.13:4.3.0",
        "spark.jars.excludes": "org.example:unwanted",
        "spark.jars": "/opt/jars/mine.jar",
        "spark.sql.extensions": "org.example.MyExtension",
        "spark.jars.ivySettings": "/etc/ivy/mine.xml",
    }
    settings = session_settings(given, delta=True, s3a=True)
    found = packages(settings)
    assert found[:2] == [
        "org.example:udfs:1.0",
        "io.delta:delta-spark_4.2_2.13:4.3.0",
    ]  # theirs first
    assert [p for p in found if p.startswith("io.delta:")] == ["io.delta:delta-spark_4.2_2.13:4.3.0"]
    assert any(p.startswith("org.apache.hadoop:hadoop-aws:") for p in found)
    assert settings["spark.jars.excludes"].split(",")[0] == "org.example:unwanted"
    assert settings["spark.jars"] == "/opt/jars/mine.jar"
    assert settings["spark.sql.extensions"] == f"org.example.MyExtension,{DELTA_EXTENSION}"
    assert settings["spark.jars.ivySettings"] == "/etc/ivy/mine.xml"


def test_the_dynamodb_commit_coordinator_adds_the_aws_sdk_v1_dynamodb_client() -> None:
    settings = session_settings({}, delta=True, s3a=False, dynamodb=True)
    assert packages(settings) == [delta_package(), DYNAMODB_PACKAGE]
    assert DYNAMODB_PACKAGE.startswith("com.amazonaws:aws-java-sdk-dynamodb:1.12.")


def test_the_driver_starts_on_the_sinks_log4j2_properties_unless_the_connector_names_its_own() -> None:
    option = f"-Dlog4j2.configurationFile={LOG4J2_PROPERTIES}"
    assert LOG4J2_PROPERTIES.is_file()
    found = with_log4j2_properties({"spark.driver.extraJavaOptions": "-XX:+UseParallelGC", "spark.master": "local"})
    assert found == {"spark.driver.extraJavaOptions": f"-XX:+UseParallelGC {option}", "spark.master": "local"}
    assert with_log4j2_properties({}) == {"spark.driver.extraJavaOptions": option}
    for own in ("-Dlog4j2.configurationFile=/etc/spark/log4j2.xml", "-Dlog4j.configuration=file:/etc/log4j.properties"):
        assert with_log4j2_properties({"spark.driver.extraJavaOptions": own}) == {"spark.driver.extraJavaOptions": own}
