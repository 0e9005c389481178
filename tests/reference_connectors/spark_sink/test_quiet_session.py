"""A normal start of the Spark sink's SparkSession is quiet: none of Spark's start-up notices on stderr (the driver's
JVM starts on the sink's log4j2.properties), and the sink itself logs what it starts and how long it took."""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("pyspark", reason="the Spark sink needs the spark-sink extra")

START_A_SESSION = textwrap.dedent(
    """
    import logging, sys
    from headwater.reference_connectors.spark_sink import SPARK_DEFAULTS, spark_session
    logging.basicConfig(level=logging.INFO, stream=sys.stdout, format="%(levelname)s %(name)s: %(message)s")
    spark_session(dict(SPARK_DEFAULTS), delta=False).stop()
    """
)

JVM_NOTICE = "WARNING: Using incubator modules: jdk.incubator.vector"


@pytest.mark.spark
def test_a_session_starts_without_sparks_notices_and_says_how_long_it_took() -> None:
    if shutil.which("java") is None:
        pytest.skip("the Spark sink needs Java 17")
    done = subprocess.run(
        [sys.executable, "-c", START_A_SESSION], capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr[-4000:]
    # the JVM's own notice of the module Spark adds (no log4j line) is all there is
    assert [line for line in done.stderr.splitlines() if line.strip() and line != JVM_NOTICE] == [], done.stderr
    started = [line for line in done.stdout.splitlines() if "starting the worker's SparkSession" in line]
    assert started[0].startswith("INFO headwater.reference_connectors.spark_sink.session: starting"), done.stdout
    assert ": started in " in started[-1], done.stdout
