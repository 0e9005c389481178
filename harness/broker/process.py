"""A real single-node Kafka broker (KRaft, combined broker and controller) assembled from Maven Central jars.

No Docker and no archive.apache.org: the jars come from :mod:`headwater.harness.maven` (about 40, once per
machine). ``LocalKafkaBroker`` picks two free loopback ports, writes ``server.properties`` with a static voter
(``controller.quorum.voters``, which both 3.9 and 4.x accept and which must not be combined with
``format --standalone``), formats the storage and runs ``java -cp '<jars>/*' kafka.Kafka server.properties`` in its
own session until ``stop()``.

Needs Java 17 and Maven. Kafka 4.3.1 is pinned; 3.9.x works too (``kafka_version="3.9.2"``: reload4j instead of
log4j2).

Environment:
    ``HEADWATER_CACHE``: the cache root (:func:`~headwater.harness.maven.cache_root`); the command line's broker
        keeps its data under ``<root>/broker``.
    ``HEADWATER_KAFKA_JVM_OPTS``: replaces the broker's JVM options (default: 512 MB heap, serial GC, C1 only,
        which start fastest on a small machine; pass G1 and no tiering limit for throughput measurements).

Command line (:mod:`headwater.harness.broker.__main__`): ``python -m headwater.harness.broker fetch|start|stop``.
"""

from __future__ import annotations

import atexit
import base64
import contextlib
import importlib
import json
import logging
import os
import shlex
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import IO

from headwater.harness.broker_security import SaslSslListener, listener_lines
from headwater.harness.maven import KAFKA_VERSION, BrokerUnavailable, fetch_jars, jars_version, require_tools, tail

DEFAULT_JVM_OPTS = ("-Xms128m", "-Xmx512m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Djava.awt.headless=true")
_STATE = "broker.json"

log = logging.getLogger(__name__)


def server_properties(port: int, controller_port: int, log_dir: Path, secure_port: int | None = None) -> str:
    """A combined broker and controller on 127.0.0.1, one replica and one partition for every internal topic
    (and a ``SASL_SSL`` listener on ``secure_port`` when given: see :mod:`headwater.harness.broker_security`).

    Records are kept forever (``log.retention.ms=-1``): time retention goes by the records' own timestamps, so a
    test that writes fixed timestamps years old would see the broker delete them at its next five-minute
    retention check, midway through a test run."""
    return f"""\
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:{controller_port}
{listener_lines(port, controller_port, secure_port)}\
inter.broker.listener.name=PLAINTEXT
controller.listener.names=CONTROLLER
log.dirs={log_dir}
num.partitions=1
num.network.threads=2
num.io.threads=4
auto.create.topics.enable=true
log.cleaner.backoff.ms=500
log.retention.ms=-1
offsets.topic.replication.factor=1
offsets.topic.num.partitions=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
transaction.state.log.num.partitions=1
group.initial.rebalance.delay.ms=0
group.min.session.timeout.ms=1000
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
"""


def logging_config(kafka_version: str) -> tuple[str, str, str]:
    """File name, contents and JVM flag of a console logging config (INFO) for that Kafka version."""
    if kafka_version.startswith("3."):
        text = "log4j.rootLogger=INFO, stdout\nlog4j.appender.stdout=org.apache.log4j.ConsoleAppender\n"
        text += "log4j.appender.stdout.layout=org.apache.log4j.PatternLayout\n"
        text += "log4j.appender.stdout.layout.ConversionPattern=[%d] %p %m (%c)%n\n"
        return "log4j.properties", text, "-Dlog4j.configuration=file:{path}"
    text = "appender.console.type=Console\nappender.console.name=STDOUT\nappender.console.layout.type=PatternLayout\n"
    text += "appender.console.layout.pattern=[%d] %p %m (%c)%n\nrootLogger=INFO,STDOUT\n"
    return "log4j2.properties", text, "-Dlog4j2.configurationFile={path}"


def cluster_id() -> str:
    """A random cluster id in the form ``kafka-storage random-uuid`` prints (22 base64url characters), never one
    starting with ``-``, which the storage tool's argument parser would take for an option (Kafka's own
    ``Uuid.randomUuid`` skips those too)."""
    while True:
        found = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()
        if not found.startswith("-"):
            return found


def free_ports(count: int) -> list[int]:
    """``count`` distinct loopback ports that were free a moment ago."""
    sockets = [socket.socket() for _ in range(count)]
    try:
        for sock in sockets:
            sock.bind(("127.0.0.1", 0))
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


PROBLEM_MARKERS = ("ERROR", "FATAL", "Exception", "Error:")


def _excerpt(text: str, lines: int = 40, problems: int = 10) -> str:
    """The log's first few error lines (a JVM logs a failure's cause before pages of shutdown), then its tail."""
    found = [line for line in text.splitlines() if any(marker in line for marker in PROBLEM_MARKERS)][:problems]
    last = tail(text, lines)
    if not found:
        return last
    return "first errors:\n" + "\n".join(found) + f"\nlast {lines} lines:\n" + last


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    cmdline = Path(f"/proc/{pid}/cmdline")
    with contextlib.suppress(OSError):  # a reused pid is not our broker
        return b"kafka.Kafka" in cmdline.read_bytes()
    return True


class LocalKafkaBroker:
    """One broker process with its data under ``data_dir`` (a new temporary directory unless given). With
    ``sasl_ssl``, clients may also connect to a SASL_SSL listener (``secure_bootstrap_servers``)."""

    def __init__(
        self,
        jars_dir: Path | None = None,
        data_dir: Path | None = None,
        *,
        kafka_version: str = KAFKA_VERSION,
        keep: bool = False,
        jvm_opts: Sequence[str] | None = None,
        sasl_ssl: SaslSslListener | None = None,
    ) -> None:
        self.jars_dir = jars_dir
        self.sasl_ssl = sasl_ssl
        self.kafka_version = kafka_version
        default_dir = Path(tempfile.gettempdir()) / f"headwater-kafka-{uuid.uuid4().hex[:12]}"
        self.data_dir = Path(data_dir) if data_dir is not None else default_dir  # created by start()
        self.keep = keep
        self.log_path = self.data_dir / "broker.log"
        env_opts = os.environ.get("HEADWATER_KAFKA_JVM_OPTS")
        self.jvm_opts = list(jvm_opts if jvm_opts is not None else shlex.split(env_opts or "") or DEFAULT_JVM_OPTS)
        self.port: int | None = None
        self.secure_port: int | None = None
        self.pid: int | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None

    @property
    def bootstrap_servers(self) -> str:
        """``127.0.0.1:<port>``; only once started."""
        if self.port is None:
            raise RuntimeError(f"{self!r} has not been started")
        return f"127.0.0.1:{self.port}"

    @property
    def secure_bootstrap_servers(self) -> str:
        """``127.0.0.1:<port>`` of the SASL_SSL listener; only once started with ``sasl_ssl``."""
        if self.secure_port is None:
            raise RuntimeError(f"{self!r} has no SASL_SSL listener")
        return f"127.0.0.1:{self.secure_port}"

    @property
    def running(self) -> bool:
        if self._proc is not None:
            return self._proc.poll() is None
        return self.pid is not None and _alive(self.pid)

    def __repr__(self) -> str:
        state = "running" if self.running else "stopped"
        where = f"127.0.0.1:{self.port}" if self.port is not None else "no port"
        return f"<LocalKafkaBroker {self.kafka_version} {state} {where} pid={self.pid} data_dir={str(self.data_dir)!r}>"

    def __enter__(self) -> LocalKafkaBroker:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def start(self, timeout_s: float = 90) -> LocalKafkaBroker:
        """Format the storage, start the broker and return once it answers a metadata request."""
        if self.running:
            raise RuntimeError(f"{self!r} is already running")
        java = require_tools("java")["java"]
        jars = self.jars_dir if self.jars_dir is not None else fetch_jars(kafka_version=self.kafka_version)
        self.kafka_version = jars_version(jars)
        deadline = time.monotonic() + timeout_s
        self.port, controller_port, *secure = free_ports(2 if self.sasl_ssl is None else 3)
        self.secure_port = secure[0] if secure else None
        self.data_dir.mkdir(parents=True, exist_ok=True)
        props = str(self.data_dir / "server.properties")
        text = server_properties(self.port, controller_port, self.data_dir / "kraft", self.secure_port)
        if self.sasl_ssl is not None:
            text += self.sasl_ssl.server_properties(self.data_dir)
        Path(props).write_text(text)
        log_name, log_text, log_flag = logging_config(self.kafka_version)
        (self.data_dir / log_name).write_text(log_text)
        command = [java, *self.jvm_opts, log_flag.format(path=self.data_dir / log_name), "-cp", str(jars / "*")]
        try:
            self._format_storage(command, props, deadline)
            self._log = open(self.log_path, "ab")  # noqa: SIM115 - open while the broker runs, closed in stop()
            self._proc = subprocess.Popen(
                [*command, "kafka.Kafka", props],
                stdin=subprocess.DEVNULL,
                stdout=self._log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
            self.pid = self._proc.pid
            atexit.register(self.stop)
            self._wait_ready(deadline)
        except BaseException:
            self.stop()
            raise
        (self.data_dir / _STATE).write_text(json.dumps({"pid": self.pid, "port": self.port}))
        return self

    def _format_storage(self, java: list[str], props: str, deadline: float) -> None:
        command = [*java, "kafka.tools.StorageTool", "format", "-t", cluster_id(), "-c", props]
        command += self.sasl_ssl.format_arguments() if self.sasl_ssl is not None else []
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=max(deadline - time.monotonic(), 1))
        except subprocess.TimeoutExpired as exc:
            raise BrokerUnavailable("formatting the storage took longer than the start timeout") from exc
        if done.returncode != 0:
            raise BrokerUnavailable(f"StorageTool format failed:\n{tail(done.stdout + done.stderr)}")

    def _wait_ready(self, deadline: float) -> None:
        assert self._proc is not None and self.port is not None
        admin = None
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                raise BrokerUnavailable(f"the broker exited ({self._proc.returncode}):\n{self.logtail()}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    pass
            except OSError:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    self._proc.wait(timeout=0.2)  # a pause that ends early if the broker dies
                continue
            try:
                admin_module = importlib.import_module("confluent_kafka.admin")
            except ImportError:
                return
            if admin is None:
                admin = admin_module.AdminClient({"bootstrap.servers": self.bootstrap_servers})
            with contextlib.suppress(Exception):
                if admin.list_topics(timeout=min(2.0, max(deadline - time.monotonic(), 0.1))).brokers:
                    return
        raise BrokerUnavailable(f"the broker did not answer on {self.bootstrap_servers} in time:\n{self.logtail()}")

    def logtail(self, lines: int = 40) -> str:
        """The broker log's first error lines and its last lines."""
        try:
            return _excerpt(self.log_path.read_text(errors="replace"), lines)
        except OSError:
            return "(no broker log)"

    def stop(self, timeout_s: float = 30) -> None:
        """SIGTERM, then SIGKILL after ``timeout_s``; then remove the data directory unless ``keep``."""
        atexit.unregister(self.stop)
        if self.pid is not None and self.running:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGTERM)
            if not self._wait_exit(timeout_s):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(self.pid, signal.SIGKILL)
                self._wait_exit(10)
        if self._log is not None:
            self._log.close()
            self._log = None
        if not self.keep:
            shutil.rmtree(self.data_dir, ignore_errors=True)

    def _wait_exit(self, timeout_s: float) -> bool:
        if self._proc is not None:
            try:
                self._proc.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                return False
            return True
        deadline = time.monotonic() + timeout_s
        while self.running and time.monotonic() < deadline:
            time.sleep(0.1)  # not our child: nothing to wait on but the pid
        return not self.running

    def detach(self) -> None:
        """Leave the broker running after this process exits (the command line's ``start``)."""
        atexit.unregister(self.stop)
        self.keep = True
        if self._log is not None:
            self._log.close()
            self._log = None

    @classmethod
    def attach(cls, data_dir: Path) -> LocalKafkaBroker:
        """The broker that ``start`` left running with its data in ``data_dir``."""
        try:
            state = json.loads((data_dir / _STATE).read_text())
        except (OSError, ValueError) as exc:
            raise BrokerUnavailable(f"no broker was started in {data_dir}") from exc
        broker = cls(data_dir=data_dir, keep=True)
        broker.pid, broker.port = int(state["pid"]), int(state["port"])
        return broker


def stop_detached(state: dict[str, str]) -> None:
    """Stops, from any process, the broker that :meth:`LocalKafkaBroker.detach` left running with its data in
    ``state["data_dir"]``, and removes its data."""
    broker = LocalKafkaBroker.attach(Path(state["data_dir"]))
    broker.keep = False
    broker.stop()
