"""The worker process's one SparkSession: made by the first Spark sink task that needs it, shared by every later
one, stopped when the process exits.

Starting a session costs seconds (the JVM, then Spark); a worker pays that once, not per task or per flush. The
session's settings are fixed when it is made: a later task whose ``spark.`` settings differ gets a warning, and a
Delta task in a process whose session was made without Delta's jars fails with a message saying so. The JVM is a
child of the worker that exits when the worker does, however it ends (pyspark's gateway watches its stdin).

A new session is warmed up with one small write of an Arrow table into Parquet in a temporary directory, so that
the classes and generated code of the write path are loaded before the first flush rather than during it (a cold
first write of 250,000 rows took about 14 s where later ones took 2 to 4 s).
"""

from __future__ import annotations

import atexit
import logging
import shutil
import tempfile
import threading
import time
from collections.abc import Mapping

import pyarrow as pa
from pyspark.sql import SparkSession

from headwater.reference_connectors.spark_sink.jars import delta_coordinates, fetch_jars
from headwater.sdk import ConnectError

log = logging.getLogger(__name__)

DELTA_EXTENSION = "io.delta.sql.DeltaSparkSessionExtension"
DELTA_CATALOG = "org.apache.spark.sql.delta.catalog.DeltaCatalog"

_lock = threading.Lock()
_settings: dict[str, str] = {}


def delta_settings(conf: Mapping[str, str]) -> dict[str, str]:
    """What a session needs for Delta: its jars (fetched unless ``spark.jars`` is given), extension and catalog."""
    found = {
        "spark.sql.extensions": DELTA_EXTENSION,
        "spark.sql.catalog.spark_catalog": DELTA_CATALOG,
    }
    if "spark.jars" not in conf:
        found["spark.jars"] = ",".join(str(jar) for jar in fetch_jars(delta_coordinates()))
    return found


def spark_session(conf: Mapping[str, str], delta: bool) -> SparkSession:
    """The process's session, made with ``conf`` (plus Delta's settings when ``delta``) if there is none yet."""
    with _lock:
        active = SparkSession.getActiveSession()
        if active is None:
            settings = {**conf, **(delta_settings(conf) if delta else {})}
            builder = SparkSession.builder
            for key, value in settings.items():
                builder = builder.config(key, value)
            log.info("starting the worker's SparkSession (%s)", settings.get("spark.master", "default master"))
            active = builder.getOrCreate()
            active.sparkContext.setLogLevel(settings.get("spark.log.level", "WARN"))
            _settings.clear()
            _settings.update(settings)
            atexit.register(_stop, active)
            warm_up(active)
            return active
        different = sorted(k for k, v in conf.items() if k in _settings and _settings[k] != v)
        if different:
            log.warning("the worker's SparkSession is already running; these settings keep their values: %s", different)
        extensions = active.conf.get("spark.sql.extensions", "") or ""
        if delta and DELTA_EXTENSION not in extensions:
            raise ConnectError(
                "this worker's SparkSession was started without Delta Lake (by a Parquet task or by the host "
                "process); start the Delta connector in a worker of its own, or give every Spark sink connector of "
                "this worker the same spark.jars, spark.sql.extensions and spark.sql.catalog.spark_catalog"
            )
        return active


def warm_up(session: SparkSession, rows: int = 1000) -> None:
    """Write a small Arrow table (the column types a sink table has) as Parquet and throw it away."""
    started = time.monotonic()
    table = pa.table(
        {
            "id": pa.array(range(rows), pa.int64()),
            "name": pa.array([f"row-{n}" for n in range(rows)]),
            "partition": pa.array([n % 3 for n in range(rows)], pa.int32()),
            "timestamp": pa.array(range(rows), pa.timestamp("ms", tz="UTC")),
            "key": pa.array([str(n).encode() for n in range(rows)], pa.binary()),
        }
    )
    directory = tempfile.mkdtemp(prefix="headwater-spark-warm-up-")
    try:
        session.createDataFrame(table).write.mode("overwrite").parquet(f"{directory}/table")
    except Exception as error:  # only a warm-up: the first real write reports what is wrong
        log.warning("the SparkSession's warm-up write failed: %s", error)
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    log.info("warmed up the SparkSession's write path in %.1f s", time.monotonic() - started)


def _stop(session: SparkSession) -> None:
    try:
        session.stop()
    except Exception:  # the JVM may already be gone at interpreter exit
        log.debug("stopping the SparkSession failed", exc_info=True)
