"""The worker process's one SparkSession: made by the first Spark sink task that needs it, shared by every later
one, stopped when the process exits.

Starting a session costs seconds (the JVM, then Spark); a worker pays that once, not per task or per flush. The
session's settings are fixed when it is made: a later task whose ``spark.`` settings differ gets a warning, and a
task whose table needs classes the session was made without (Delta's, or S3A's for an s3a table) fails with a
message saying so. Spark Connect sessions are refused (see :data:`CONNECT_REFUSAL`). The JVM is a
child of the worker that exits when the worker does, however it ends (pyspark's gateway watches its stdin).

A new session is warmed up with one small write of an Arrow table into Parquet in a temporary directory, so that
the classes and generated code of the write path are loaded before the first flush rather than during it (a cold
first write of 250,000 rows took about 14 s where later ones took 2 to 4 s). On a cluster master the warm-up runs
the same conversion into Spark's ``noop`` sink, leaving no file on the executors' hosts.
"""

from __future__ import annotations

import atexit
import contextlib
import contextvars
import logging
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping
from pathlib import Path

import pyarrow as pa
from pyspark.sql import SparkSession

from headwater.reference_connectors.spark_sink.config import is_local_master
from headwater.reference_connectors.spark_sink.packages import (
    DELTA_CLASS,
    DYNAMODB_CLASS,
    S3A_FILESYSTEM,
    session_settings,
)
from headwater.sdk import ConnectError

log = logging.getLogger(__name__)

CONNECT_REFUSAL = (
    "Spark Connect is not supported by the Spark sink: it commits each write through the driver's JVM (Delta's "
    "transaction log, Hadoop's FileSystem API), which a Spark Connect client cannot reach; run the worker as the "
    "Spark driver instead, with spark.master set to local[*], spark://host:port, yarn or k8s://..."
)

LOG4J2_PROPERTIES = Path(__file__).with_name("log4j2.properties")
"""The log4j2 configuration the driver's JVM starts with unless the connector gives one: Spark's own lines at WARN
and above until the session's ``spark.log.level`` applies (ERROR by default), without the start-up notices."""
PROGRESS_EVERY_S = 10.0
"""How often a session that is still starting says so."""

_lock = threading.Lock()
_settings: dict[str, str] = {}


def spark_session(conf: Mapping[str, str], delta: bool, s3a: bool = False, dynamodb: bool = False) -> SparkSession:
    """The process's session, made with ``conf`` (plus what Delta, s3a and Delta's DynamoDB commit coordinator
    need, see :mod:`.packages`) if there is none yet; an existing one must have the classes the table needs."""
    with _lock:
        if os.environ.get("SPARK_REMOTE") or os.environ.get("SPARK_CONNECT_MODE_ENABLED"):
            raise ConnectError(f"{CONNECT_REFUSAL} (this process has SPARK_REMOTE or SPARK_CONNECT_MODE_ENABLED set)")
        active = SparkSession.getActiveSession()
        if active is not None and type(active).__module__.startswith("pyspark.sql.connect"):
            raise ConnectError(f"{CONNECT_REFUSAL} (this process's active session is a Spark Connect session)")
        if active is None:
            settings = with_log4j2_properties(session_settings(conf, delta, s3a, dynamodb))
            builder = SparkSession.builder
            for key, value in settings.items():
                builder = builder.config(key, value)
            what = f"starting the worker's SparkSession ({settings.get('spark.master', 'default master')})"
            if packages := settings.get("spark.jars.packages"):
                what += f" with {packages}, which Ivy fetches into its cache on the first start"
            with _reporting(what):
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
        needs = ((DELTA_CLASS, delta), (S3A_FILESYSTEM, s3a), (DYNAMODB_CLASS, dynamodb))
        missing = [name for name, needed in needs if needed]
        missing = [name for name in missing if not has_class(active, name)]
        if missing:
            raise ConnectError(
                f"this worker's SparkSession was started without {' and '.join(missing)} (by another Spark sink "
                "connector whose table needed fewer packages, or by the host process); run this connector in a "
                "worker of its own, or give every Spark sink connector of this worker the same table.format, "
                "table.path scheme and table.commit.coordinator"
            )
        return active


def with_log4j2_properties(settings: Mapping[str, str]) -> dict[str, str]:
    """``settings`` with the driver's JVM started on :data:`LOG4J2_PROPERTIES` (``-Dlog4j2.configurationFile`` added
    to ``spark.driver.extraJavaOptions``), unless those options name a log4j configuration already."""
    found = dict(settings)
    options = found.get("spark.driver.extraJavaOptions", "")
    if "log4j2.configurationFile" not in options and "log4j.configuration" not in options:
        found["spark.driver.extraJavaOptions"] = f"{options} -Dlog4j2.configurationFile={LOG4J2_PROPERTIES}".strip()
    return found


@contextlib.contextmanager
def _reporting(what: str) -> Iterator[None]:
    """Log ``what`` is being done, then every :data:`PROGRESS_EVERY_S` while the block runs, then how long it took."""
    started = time.monotonic()
    log.info("%s ...", what)
    done = threading.Event()

    def report() -> None:
        while not done.wait(PROGRESS_EVERY_S):
            log.info("%s: still starting after %.0f s", what, time.monotonic() - started)

    # in the caller's logging context: the lines say which task is waiting for the session
    reporter = threading.Thread(target=contextvars.copy_context().run, args=(report,), name="spark-start", daemon=True)
    reporter.start()
    try:
        yield
    finally:
        done.set()
        reporter.join()
    log.info("%s: started in %.1f s", what, time.monotonic() - started)


def has_class(session: SparkSession, name: str) -> bool:
    """Whether the session's driver can load the JVM class ``name`` (with the jars of ``spark.jars.packages``)."""
    jvm = session._jvm
    assert jvm is not None
    try:
        jvm.org.apache.spark.util.Utils.classForName(name, True, False)
    except Exception:  # py4j's error for a ClassNotFoundException
        return False
    return True


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
    local = is_local_master(str(session.conf.get("spark.master", "local")))
    directory = tempfile.mkdtemp(prefix="headwater-spark-warm-up-")
    try:
        frame = session.createDataFrame(table)
        if local:
            frame.write.mode("overwrite").parquet(f"{directory}/table")
        else:
            frame.write.format("noop").mode("overwrite").save()
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
