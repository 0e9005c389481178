"""Kafka Connect's own Single Message Transforms and predicates, run on records from a test: the Java side of the
transform parity tests.

:class:`JavaTransforms` runs ``tests/support/java/TransformDriver.java`` in one long-lived JVM over the
``connect-transforms`` and ``connect-json`` jars of Maven Central (of the broker's Kafka version) and answers
:meth:`JavaTransforms.apply` requests, one JSON line each way::

    with JavaTransforms.start() as java:
        out = java.apply(
            {"transforms": "ins", "transforms.ins.type": "org.apache.kafka.connect.transforms.InsertField$Value",
             "transforms.ins.static.field": "src", "transforms.ins.static.value": "hw"},
            [{"topic": "t", "key": None, "value": {"a": 1}, "timestamp": 5, "headers": [("h", b"v")]}],
        )
    # out == [{"kind": "sink", "topic": "t", "partition": 0, "offset": 0, "key": None,
    #          "value": {"a": 1, "src": "hw"}, "timestamp": 5, "headers": [("h", b"v")]}]

The config is the connector config's ``transforms``/``predicates`` keys (strings, as a connector config holds them);
the driver builds the chain as Kafka Connect's ``ConnectorConfig.transformationStages`` does and applies it as
``TransformationChain`` does (see the Java source's comment).

A record is a dict: ``topic`` (required), ``partition`` (default 0), ``offset`` (default 0), ``key``, ``value``,
``timestamp`` (epoch ms or None), ``headers`` (``(name, value)`` pairs), ``kind`` (``"sink"``, the default, makes a
``SinkRecord``; ``"source"`` a ``SourceRecord``, whose partition may be None and which has no offset), and for
records with schemas ``key_schema``/``value_schema``. An output record has the same keys (``offset`` for sink
records only, ``key_schema``/``value_schema`` when the output has one); a dropped record is None; a record a
transform raised on is ``{"error": "<Java exception class>: <message>"}``.

Schemaless values map between Python and Kafka Connect's Java values like this, both ways:

==================================  =====================================================================
Python                              Java
==================================  =====================================================================
None, bool, str                     null, Boolean, String
int (64-bit range only)             Long; Byte, Short and Integer come back as int too
float (NaN and infinities too)      Double; a Float comes back widened exactly (``float32`` 0.1 is
                                    0.10000000149011612)
bytes (bytearray, memoryview in)    byte[] (a ByteBuffer comes back as bytes too)
datetime (timezone-aware)           java.util.Date, millisecond precision; comes back in UTC
Decimal                             BigDecimal
dict (str keys), list (tuple in)    LinkedHashMap, ArrayList
==================================  =====================================================================

On the wire bytes, datetimes and decimals are the one-key JSON objects ``{"$bytes": "<base64>"}``,
``{"$timestamp": <epoch ms>}`` and ``{"$decimal": "<digits>"}``; a dict that looks like one of them cannot be sent.
Python compares ``1 == 1.0 == True``: a parity assertion that must tell int from float uses :func:`typed`.

Values with a schema: ``key_schema``/``value_schema`` is Kafka Connect's JsonConverter schema JSON and the value
is that converter's payload as it is (bytes as base64 strings and so on), exactly what JsonConverter with
``schemas.enable=true`` reads and writes; the output carries the schema whenever the record has one. A header is
``(name, value)`` without a schema or ``(name, payload, schema)`` with one; ``apply(..., header_schemas=True)``
returns the second form for each output header that has a schema (InsertHeader and HeaderFrom give them), else
the first.

Config errors: the driver checks the config as the worker checks a connector config (duplicate aliases, a type
that is no concrete Transformation or Predicate, a listed predicate's invalid settings, ``negate`` without
``predicate``) before it builds the chain, and :class:`TransformConfigError` carries Kafka's exception.

Needs a Java 17 JDK (``javac``) and Maven: :func:`fetch_transform_jars` copies the jars with Maven into the cache
root of :mod:`headwater.harness.broker` (``HEADWATER_CACHE``) beside the broker's; :func:`compile_driver` compiles
the driver there once per source text. Missing programs raise
:class:`~headwater.harness.broker.BrokerUnavailable` with ``missing_tools`` set.
"""

from __future__ import annotations

import atexit
import base64
import contextlib
import datetime as dt
import decimal
import fcntl
import hashlib
import json
import os
import select
import shlex
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, Any

from headwater.harness.maven import KAFKA_VERSION, BrokerUnavailable, cache_root, fetch_maven, maven_pom

DRIVER_SOURCE = Path(__file__).parent / "java" / "TransformDriver.java"
DRIVER_CLASS = "TransformDriver"
TRANSFORMS_ARTIFACT = "connect-transforms"
JDK_HINT = "install a Java 17 JDK and Maven (apt-get install openjdk-17-jdk-headless maven)"
JVM_OPTS = ("-Xms32m", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xshare:auto")
DEFAULT_TIMEOUT_S = 60.0
_MARKERS = ("$bytes", "$timestamp", "$decimal")
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_LONG_MIN, _LONG_MAX = -(2**63), 2**63 - 1


class JavaTransformsError(RuntimeError):
    """The driver failed: it exited, timed out or refused a request; the message ends with its stderr."""


class TransformConfigError(ValueError):
    """Kafka Connect could not build the chain from the config: ``error`` is ``"<Java exception class>: <message>"``
    (``java_class`` the class alone), the exception the transform, predicate or config parser raised."""

    def __init__(self, error: str) -> None:
        super().__init__(error)
        self.error = error
        self.java_class = error.split(":", 1)[0]


def _require(*names: str) -> dict[str, str]:
    found = {name: shutil.which(name) for name in names}
    missing = [name for name, path in found.items() if path is None]
    if missing:
        raise BrokerUnavailable(f"{' and '.join(missing)} not found on PATH: {JDK_HINT}", missing)
    return {name: path for name, path in found.items() if path is not None}


def transforms_pom(kafka_version: str = KAFKA_VERSION) -> str:
    """The pom whose runtime classpath is Kafka's transforms and predicates (``connect-transforms``: connect-api,
    kafka-clients) and the JSON converter (``connect-json``: Jackson)."""
    artifacts = (TRANSFORMS_ARTIFACT, "connect-json")
    return maven_pom([("org.apache.kafka", artifact, kafka_version) for artifact in artifacts])


def fetch_transform_jars(kafka_version: str = KAFKA_VERSION, cache_dir: Path | None = None) -> Path:
    """The directory of the transforms' jars, ``<cache root>/connect-transforms-<version>/jars``, copied by Maven on
    the first call (from ``~/.m2`` when the broker's or Connect's jars were fetched before)."""
    _require("java", "javac", "mvn")
    directory = cache_dir if cache_dir is not None else cache_root() / f"{TRANSFORMS_ARTIFACT}-{kafka_version}"
    return fetch_maven(directory, transforms_pom(kafka_version), TRANSFORMS_ARTIFACT)


def compile_driver(jars: Path, source: Path = DRIVER_SOURCE, cache_dir: Path | None = None) -> Path:
    """The directory of the compiled driver, ``<cache root>/transform-driver/<digest>``, compiled with ``javac`` when
    no build of this source against these jars is there yet."""
    javac = _require("javac")["javac"]
    text = source.read_bytes()
    jar_names = "\n".join(sorted(jar.name for jar in jars.glob("*.jar")))
    digest = hashlib.sha256(text + b"\0" + jar_names.encode()).hexdigest()[:16]
    root = cache_dir if cache_dir is not None else cache_root() / "transform-driver"
    classes = root / digest
    root.mkdir(parents=True, exist_ok=True)
    with open(root / ".lock", "w") as lock:  # one compilation at a time, e.g. across pytest-xdist workers
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (classes / f"{DRIVER_CLASS}.class").exists():
            return classes
        building = Path(tempfile.mkdtemp(prefix=f"{digest}.", dir=root))
        command = [javac, "--release", "17", "-encoding", "UTF-8", "-d", str(building)]
        command += ["-cp", str(jars / "*"), str(source)]
        done = subprocess.run(command, capture_output=True, text=True, timeout=600, check=False)
        if done.returncode != 0:
            shutil.rmtree(building)
            raise JavaTransformsError(f"{shlex.join(command)} failed ({done.returncode}):\n{done.stdout}{done.stderr}")
        building.rename(classes)
    return classes


class JavaTransforms:
    """One JVM running the driver; :meth:`apply` sends it a request and waits for the answer. Started by the first
    request when not running; a JVM that failed is reported once (:class:`JavaTransformsError`) and the request
    after that starts another; :meth:`close` ends it."""

    def __init__(self, classes: Path, jars: Path, *, timeout_s: float = DEFAULT_TIMEOUT_S) -> None:
        self.classes = classes
        self.jars = jars
        self.timeout_s = timeout_s
        self.requests = 0
        self.starts = 0
        self._proc: subprocess.Popen[bytes] | None = None
        self._stderr: IO[bytes] | None = None
        self._last_stderr = ""
        self._buffer = b""
        self._lock = threading.Lock()

    @classmethod
    def start(cls, kafka_version: str = KAFKA_VERSION, *, timeout_s: float = DEFAULT_TIMEOUT_S) -> JavaTransforms:
        """Fetch the jars and compile the driver if needed, then start the JVM."""
        jars = fetch_transform_jars(kafka_version)
        driver = cls(compile_driver(jars), jars, timeout_s=timeout_s)
        driver._spawn()
        return driver

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    def __repr__(self) -> str:
        state = "running" if self.running else "stopped"
        return f"<JavaTransforms {state} pid={self.pid} requests={self.requests} starts={self.starts} jars={self.jars}>"

    def __enter__(self) -> JavaTransforms:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def command(self) -> list[str]:
        """The JVM's command line."""
        java = _require("java")["java"]
        return [java, *JVM_OPTS, "-cp", f"{self.classes}{os.pathsep}{self.jars / '*'}", DRIVER_CLASS]

    def _spawn(self) -> None:
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 - open while the JVM runs, closed in close()
        self._last_stderr = ""
        self._buffer = b""
        self._proc = subprocess.Popen(
            self.command(), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr, start_new_session=True
        )
        self.starts += 1
        atexit.register(self.close)

    def apply(
        self,
        config: Mapping[str, str],
        records: Sequence[Mapping[str, Any]],
        *,
        header_schemas: bool = False,
        converter: Mapping[str, str] | None = None,
    ) -> list[dict[str, Any] | None]:
        """Each record run through the chain ``config`` describes: the output record, None when dropped, or
        ``{"error": ...}`` (also when the JsonConverter refuses the output). ``converter`` holds JsonConverter
        settings for this request, such as ``{"replace.null.with.default": "false"}``. Raises
        :class:`TransformConfigError` when the chain cannot be built and :class:`JavaTransformsError` when the
        driver fails."""
        request = {
            "transforms": dict(config),
            "records": [encode_record(record) for record in records],
            "header_schemas": header_schemas,
            "converter": dict(converter or {}),
        }
        response = self.request(request)
        if "config_error" in response:
            raise TransformConfigError(response["config_error"])
        return [None if out is None else decode_record(out) for out in response["records"]]

    def request(self, request: Mapping[str, Any]) -> dict[str, Any]:
        """One raw request (the driver's JSON shape) and its raw response; raises :class:`JavaTransformsError`
        when the driver answers ``request_error`` or fails."""
        line = json.dumps(request, allow_nan=True, separators=(",", ":")).encode() + b"\n"
        with self._lock:
            if self._proc is not None and self._proc.poll() is not None:
                code = self._proc.returncode
                self.close(timeout_s=0)
                raise JavaTransformsError(f"the driver exited ({code}) after its last answer\n{self.stderr_text()}")
            if self._proc is None:
                self._spawn()
            assert self._proc is not None and self._proc.stdin is not None
            deadline = time.monotonic() + self.timeout_s
            try:
                self._proc.stdin.write(line)
                self._proc.stdin.flush()
                answer = self._read_line(deadline)
            except (OSError, JavaTransformsError) as error:
                message = str(error) if isinstance(error, JavaTransformsError) else f"writing to the driver: {error}"
                self.close(timeout_s=0)  # a JVM in an unknown state: killed, the next request starts another
                raise JavaTransformsError(f"{message}\n{self.stderr_text()}") from error
            self.requests += 1
        response: dict[str, Any] = json.loads(answer)
        if "request_error" in response:
            raise JavaTransformsError(f"the driver refused the request: {response['request_error']}")
        return response

    def _read_line(self, deadline: float) -> bytes:
        assert self._proc is not None and self._proc.stdout is not None
        fd = self._proc.stdout.fileno()
        while b"\n" not in self._buffer:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise JavaTransformsError(f"no answer from the driver in {self.timeout_s} s")
            ready, _, _ = select.select([fd], [], [], remaining)
            if not ready:
                continue
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                try:
                    raise JavaTransformsError(f"the driver exited ({self._proc.wait(timeout=10)})")
                except subprocess.TimeoutExpired:
                    raise JavaTransformsError("the driver closed its stdout") from None
            self._buffer += chunk
        answer, _, self._buffer = self._buffer.partition(b"\n")
        return answer

    def stderr_text(self, limit: int = 8000) -> str:
        """What the JVM wrote to stderr (its last ``limit`` characters), kept after it exits until the next start."""
        text = self._read_stderr()
        return "driver stderr:\n" + (text[-limit:] if text.strip() else "(empty)")

    def _read_stderr(self) -> str:
        if self._stderr is None:
            return self._last_stderr
        self._stderr.seek(0)
        return self._stderr.read().decode(errors="replace")

    def close(self, timeout_s: float = 10) -> None:
        """End the JVM: close its stdin (it exits at end of input), then kill it if it has not exited within
        ``timeout_s`` (at once with 0)."""
        atexit.unregister(self.close)
        proc, self._proc = self._proc, None
        if proc is None:
            return
        with contextlib.suppress(OSError):
            if proc.stdin is not None:
                proc.stdin.close()
        try:
            proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
        if proc.stdout is not None:
            proc.stdout.close()
        if self._stderr is not None:  # its text stays readable by stderr_text() until the next start
            self._last_stderr = self._read_stderr()
            self._stderr.close()
            self._stderr = None


def encode_record(record: Mapping[str, Any]) -> dict[str, Any]:
    """A record in the driver's JSON shape: schemaless keys, values and header values encoded by :func:`encode`."""
    out = dict(record)
    for field in ("key", "value"):
        if out.get(f"{field}_schema") is None:
            out[field] = encode(out.get(field))
    out["headers"] = [
        [header[0], encode(header[1])] if len(header) == 2 else list(header) for header in record.get("headers", ())
    ]
    return out


def decode_record(record: Mapping[str, Any]) -> dict[str, Any]:
    """A driver output record (or ``{"error": ...}``) with schemaless values decoded by :func:`decode` and headers
    as tuples."""
    if "error" in record:
        return dict(record)
    out = dict(record)
    for field in ("key", "value"):
        if out.get(f"{field}_schema") is None:
            out[field] = decode(out.get(field))
    out["headers"] = [
        (header[0], decode(header[1])) if len(header) == 2 else tuple(header) for header in record["headers"]
    ]
    return out


def encode(value: Any) -> Any:
    """A Python value as the driver's JSON for a schemaless Connect value (see the module's table)."""
    if value is None or isinstance(value, bool | str | float):
        return value
    if isinstance(value, int):
        if not _LONG_MIN <= value <= _LONG_MAX:
            raise ValueError(f"{value} is outside Kafka Connect's 64-bit integers")
        return value
    if isinstance(value, bytes | bytearray | memoryview):
        return {"$bytes": base64.b64encode(bytes(value)).decode()}
    if isinstance(value, dt.datetime):
        if value.tzinfo is None:
            raise ValueError(f"{value!r} has no timezone; Kafka Connect's timestamps are instants")
        return {"$timestamp": (value - _EPOCH) // dt.timedelta(milliseconds=1)}
    if isinstance(value, decimal.Decimal):
        return {"$decimal": str(value)}
    if isinstance(value, Mapping):
        if len(value) == 1 and next(iter(value)) in _MARKERS:
            raise ValueError(f"{value!r} would be read as a {next(iter(value))} marker")
        for key in value:
            if not isinstance(key, str):
                raise ValueError(f"a schemaless map key must be a str here, got {key!r}")
        return {key: encode(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [encode(item) for item in value]
    raise ValueError(f"no Kafka Connect value for {type(value).__name__} {value!r}")


def decode(value: Any) -> Any:
    """The Python value of the driver's JSON for a schemaless Connect value (see the module's table)."""
    if isinstance(value, dict):
        if len(value) == 1:
            ((name, item),) = value.items()
            if name == "$bytes":
                return base64.b64decode(item)
            if name == "$timestamp":
                return _EPOCH + dt.timedelta(milliseconds=item)
            if name == "$decimal":
                return decimal.Decimal(item)
        return {key: decode(item) for key, item in value.items()}
    if isinstance(value, list):
        return [decode(item) for item in value]
    return value


def typed(value: Any) -> Any:
    """``value`` with every scalar paired with its type, so that ``typed(a) == typed(b)`` tells 1 from 1.0 and
    True, and NaN equals NaN."""
    if isinstance(value, Mapping):
        return {key: typed(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [typed(item) for item in value]
    if isinstance(value, float) and value != value:
        return (float, "nan")
    return (type(value), value)
