"""The standalone worker, Kafka Connect's ``connect-standalone``: one process, connectors from files, source offsets
in a local file.

``headwater standalone worker.properties [connector.properties ...]`` validates every file first (a bad one exits
with code 2 before anything connects), loads the offsets file (read only), waits until the Kafka cluster at
``bootstrap.servers`` answers a metadata request, retrying with a doubling backoff, starts serving Kafka Connect's
REST API at ``listeners`` (by default ``http://127.0.0.1:8083``), then starts each connector and runs until
SIGTERM or SIGINT. Stopping is graceful: tasks finish their pass, flush their producers and commit
(source offsets to the file, sink offsets to the group ``connect-<name>``), connectors stop, and the process
exits 0.

Clients get ``bootstrap.servers`` plus, as in Kafka Connect, the worker keys prefixed ``producer.`` (source tasks),
``consumer.`` (sink tasks) and ``admin.`` (the broker check), prefix removed; the broker check also gets the
worker's top-level ``security.protocol``, ``ssl.*`` and ``sasl.*`` keys.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, Protocol

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient

from headwater.runtime.config import CONNECTOR_CONFIG, WORKER_CONFIG, non_empty_list, parse_listener
from headwater.runtime.herder import StandaloneHerder
from headwater.runtime.plugins import resolve_connector_class
from headwater.runtime.properties import ConfigFile, read_connector_properties, read_properties
from headwater.runtime.rest import RestServer, create_app
from headwater.runtime.storage.offsets import FileOffsetStore
from headwater.runtime.storage.status import StatusStore
from headwater.runtime.tasks.base import State
from headwater.runtime.transport.kafka import KafkaTransport
from headwater.runtime.worker import Worker, connector_config_def
from headwater.sdk.config import ConfigDef, Importance, Type, at_least
from headwater.sdk.errors import ConfigError, ConnectError

log = logging.getLogger(__name__)

STANDALONE_CONFIG = WORKER_CONFIG.merge(
    ConfigDef()
    .define(
        "bootstrap.servers",
        Type.LIST,
        "localhost:9092",
        Importance.HIGH,
        "host:port pairs of the Kafka cluster to connect to, comma-separated.",
        non_empty_list,
    )
    .define(
        "broker.check.timeout.ms",
        Type.LONG,
        5_000,
        Importance.LOW,
        "How long one check that the Kafka cluster answers (a metadata request) may take at startup.",
        at_least(1),
    )
    .define(
        "broker.check.backoff.ms",
        Type.LONG,
        1_000,
        Importance.LOW,
        "Wait after the first failed broker check at startup; it doubles after each further failure.",
        at_least(1),
    )
    .define(
        "broker.check.backoff.max.ms",
        Type.LONG,
        30_000,
        Importance.LOW,
        "Longest wait between two broker checks at startup.",
        at_least(1),
    )
)
"""The worker keys a standalone worker reads: the worker's own plus where Kafka is and how to wait for it."""

SHARED_CLIENT_PREFIXES = ("security.protocol", "ssl.", "sasl.")
"""Top-level worker keys the broker check's admin client gets (Kafka Connect gives them to its admin clients)."""

_STATE_WORDS = {State.RUNNING: "started", State.PAUSED: "paused", State.STOPPED: "stopped", State.FAILED: "failed"}


def log_state(connector: str, task: int | None, state: State, trace: str | None) -> None:
    """Worker listener: one log line per connector and task state change."""
    what = f"connector {connector}" if task is None else f"task {connector}-{task}"
    word = _STATE_WORDS.get(state, state.value)
    log.log(logging.ERROR if state is State.FAILED else logging.INFO, "%s %s", what, word)


class StandaloneWorker:
    """A worker, its herder and its offsets file, built from a worker config file and connector config files.

    Building it validates every file and touches neither the broker nor the offsets file; :meth:`run` does both.
    Statuses and active topics go to ``status_store`` (in memory by default, as in Kafka Connect's standalone
    mode); :meth:`run` starts and stops it.
    """

    def __init__(
        self,
        worker_file: ConfigFile,
        connector_files: Sequence[ConfigFile],
        status_store: StatusStore | None = None,
    ) -> None:
        self.worker_file = worker_file
        self.config = worker_file.parse(STANDALONE_CONFIG)
        self.bootstrap_servers = ",".join(str(server).strip() for server in self.config["bootstrap.servers"])
        self.offset_store = FileOffsetStore(self.config["offset.storage.file.filename"])
        self.transport = KafkaTransport(self.bootstrap_servers)
        self.worker = Worker(
            worker_file.values, self.transport, self.offset_store, listener=log_state, worker_id=initial_worker_id()
        )
        self.herder = StandaloneHerder(self.worker, status_store)
        self.listener = parse_listener("listeners", self.config["listeners"][0])
        self.rest: RestServer | None = None
        self.connector_files: list[ConfigFile] = []
        for file in connector_files:
            self._add(file)

    @classmethod
    def from_paths(
        cls, worker_path: str | os.PathLike[str], connector_paths: Sequence[str | os.PathLike[str]]
    ) -> StandaloneWorker:
        """Read and validate the files; raises :class:`~headwater.runtime.properties.PropertiesError`."""
        return cls(read_properties(worker_path), [read_connector_properties(path) for path in connector_paths])

    def _add(self, file: ConfigFile) -> None:
        validate_connector(self.worker, file)
        name = file.values["name"]
        for other in self.connector_files:
            if other.values["name"] == name:
                raise file.error("name", f"connector {name!r} is also defined in {other.path}")
        self.connector_files.append(file)

    # ---- the broker ------------------------------------------------------------------------------------------

    def admin_config(self) -> dict[str, Any]:
        """Settings of the broker check's admin client."""
        return admin_settings(self.worker_file.values, self.bootstrap_servers)

    def check_broker(self, stop: threading.Event) -> str | None:
        """None when the cluster answers a metadata request within ``broker.check.timeout.ms``, else why not."""
        try:
            return check_broker(self.admin_config(), int(self.config["broker.check.timeout.ms"]), stop)
        except ConfigError as error:
            raise self.worker_file.error(None, error.reason) from None

    def wait_for_broker(self, stop: threading.Event) -> bool:
        """Check the broker until it answers (True) or ``stop`` is set (False)."""
        return wait_for_broker(
            lambda: self.check_broker(stop),
            f"{self.bootstrap_servers} (bootstrap.servers in {self.worker_file.path})",
            int(self.config["broker.check.backoff.ms"]),
            int(self.config["broker.check.backoff.max.ms"]),
            stop,
        )

    # ---- running ---------------------------------------------------------------------------------------------

    def run(self, stop: threading.Event) -> int:
        """Start, run until ``stop`` is set, stop gracefully; return the exit code. Raises ConnectError when the
        offsets file cannot be read."""
        names = ", ".join(file.values["name"] for file in self.connector_files)
        log.info(
            "standalone worker starting: bootstrap.servers=%s, offsets file %s, connectors: %s",
            self.bootstrap_servers,
            self.offset_store.path,
            names,
        )
        self.offset_store.start()
        try:
            if not self.wait_for_broker(stop):
                log.info("standalone worker stopped before Kafka answered; nothing was started")
                return 0
            self.herder.status_store.start()
            try:
                self._serve_rest()
                for file in self.connector_files:
                    self._start(file)
                log.info("standalone worker started")
                while not stop.wait(0.1):
                    self.herder.tick()
            finally:
                log.info("standalone worker stopping")
                if self.rest is not None:
                    self.rest.stop()
                self.herder.stop()
                self.herder.status_store.stop()
            log.info("standalone worker stopped")
            return 0
        finally:
            self.offset_store.stop()

    def _serve_rest(self) -> None:
        """Start the REST server at ``listeners``; raises ConnectError when its address cannot be bound. From then
        on the worker's id in statuses is its REST address, ``host:port``, as in Kafka Connect."""
        host, port = self.listener
        app = create_app(self.herder, kafka_cluster_id(self.admin_config()))
        rest = RestServer(app, host, port)
        rest.start()
        self.rest = rest
        self.worker.worker_id = advertised_id(host, rest.port)

    def _start(self, file: ConfigFile) -> None:
        name = file.values["name"]
        log.info("starting connector %s from %s", name, file.path)
        try:
            self.herder.put_connector_config(name, file.values, initial_state=file.initial_state)
        except (ConnectError, KafkaException) as error:
            log.error("connector %s could not be started: %s", name, error)


def validate_connector(worker: Worker, file: ConfigFile) -> None:
    """Validate a connector file the way the worker will, re-raising every problem naming the file and key."""
    file.parse(CONNECTOR_CONFIG)
    try:
        cls = resolve_connector_class(file.values["connector.class"])
    except ConfigError as error:
        raise file.config_error(error) from None
    file.parse(connector_config_def(cls()))
    try:
        worker.validate(file.values)
    except ConfigError as error:
        raise file.config_error(error) from None


def kafka_cluster_id(config: Mapping[str, Any], timeout_s: float = 5.0) -> str | None:
    """The id of the Kafka cluster (``GET /`` shows it), ``None`` when the cluster does not say."""
    settings: dict[str, Any] = {**config, "logger": _CollectedLog()}
    try:
        found = AdminClient(settings).list_topics(timeout=timeout_s).cluster_id
    except KafkaException:
        return None
    return str(found) if found else None


def shared_client_settings(values: Mapping[str, Any]) -> dict[str, Any]:
    """The worker keys every Kafka client of the worker gets: ``security.protocol``, ``ssl.*``, ``sasl.*``."""
    return {k: v for k, v in values.items() if k.startswith(SHARED_CLIENT_PREFIXES)}


def admin_settings(values: Mapping[str, Any], bootstrap_servers: str) -> dict[str, Any]:
    """Settings of a worker's admin client: the shared keys, then the ``admin.``-prefixed ones, prefix removed."""
    admin = {k[len("admin.") :]: v for k, v in values.items() if k.startswith("admin.")}
    return {**shared_client_settings(values), **admin, "bootstrap.servers": bootstrap_servers}


def advertised_id(host: str, port: int) -> str:
    """A worker's id in statuses once its REST server listens: its REST address, as in Kafka Connect."""
    advertised = socket.gethostname() if host in ("0.0.0.0", "::") else host
    return f"{advertised}:{port}"


def initial_worker_id() -> str:
    """A worker's id in statuses until its REST server listens: host and process id."""
    return f"{socket.gethostname()}:{os.getpid()}"


# ---- waiting for Kafka -------------------------------------------------------------------------------------------


class _CollectedLog(logging.Logger):
    """librdkafka's log lines of one client, kept to explain a failed check rather than printed."""

    def __init__(self) -> None:
        super().__init__("headwater.runtime.standalone.librdkafka")
        self.lines: list[str] = []

    def log(self, level: int, msg: object, *args: object, **kwargs: Any) -> None:
        if level >= logging.WARNING and len(args) == 3:
            text = str(args[2])
            self.lines.append(text.split("]: ", 1)[-1])


def check_broker(config: Mapping[str, Any], timeout_ms: int, stop: threading.Event | None = None) -> str | None:
    """None when the cluster answers an admin metadata request within ``timeout_ms``, else the reason. Returns
    early (with a reason) when ``stop`` is set. Raises ConfigError when librdkafka rejects ``config``."""
    collected = _CollectedLog()
    settings: dict[str, Any] = {**config, "logger": collected}
    try:
        admin = AdminClient(settings)
    except KafkaException as error:
        raise ConfigError("bootstrap.servers", None, f"invalid Kafka client settings: {_describe(error)}") from None
    deadline = time.monotonic() + timeout_ms / 1000
    reason = f"no answer within {timeout_ms} ms"
    while stop is None or not stop.is_set():
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            break
        try:
            admin.list_topics(timeout=min(remaining, 0.25))
            return None
        except KafkaException as error:
            reason = _describe(error)
    admin.poll(0)
    return collected.lines[-1] if collected.lines else reason


def _describe(error: KafkaException) -> str:
    found = error.args[0] if error.args else error
    return found.str() if isinstance(found, KafkaError) else str(found)


def wait_for_broker(
    check: Callable[[], str | None], servers: str, backoff_ms: int, max_backoff_ms: int, stop: threading.Event
) -> bool:
    """Call ``check`` until it returns None (True) or ``stop`` is set (False), waiting ``backoff_ms`` after the
    first failure and doubling the wait after each further one, up to ``max_backoff_ms``. Each failure is logged
    as an error naming ``servers``."""
    delay = backoff_ms
    attempt = 0
    while not stop.is_set():
        attempt += 1
        reason = check()
        if reason is None:
            if attempt > 1:
                log.info("Kafka at %s answered at check %d", servers, attempt)
            return True
        if stop.is_set():
            break
        log.error(
            "cannot reach Kafka at %s: %s; check %d failed, retrying in %.1f s", servers, reason, attempt, delay / 1000
        )
        if stop.wait(delay / 1000):
            break
        delay = min(delay * 2, max_backoff_ms)
    return False


# ---- the command ---------------------------------------------------------------------------------------------------


@contextlib.contextmanager
def stop_on_signals(stop: threading.Event) -> Iterator[None]:
    """Set ``stop`` on SIGTERM and SIGINT while in the block (main thread only)."""

    def handle(signum: int, frame: object) -> None:
        log.info("received %s: stopping", signal.Signals(signum).name)
        stop.set()

    previous = {sig: signal.signal(sig, handle) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


GC_THRESHOLDS = (100_000, 50, 100)
"""The garbage collector's thresholds in a worker process. CPython's default first threshold (2,000 container
allocations in 3.13, 700 before) makes the collector run every few batches when a task moves a few hundred
thousand records a second, although records hold no reference cycles and reference counting frees them."""


def tune_garbage_collector() -> None:
    """Collect less often, and move what start-up allocated out of the collector's way (``gc.freeze``)."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)


class RunnableWorker(Protocol):
    def run(self, stop: threading.Event) -> int: ...


def run_worker_command(command: str, build: Callable[[], RunnableWorker]) -> int:
    """A worker command: build the worker from its files, run it until SIGTERM or SIGINT. 0 after a graceful stop,
    2 for a bad config file, 1 for other failures; errors are one line on stderr naming ``headwater <command>``."""
    try:
        worker = build()
    except ConfigError as error:
        print(f"headwater {command}: error: {error}", file=sys.stderr)
        return 2
    tune_garbage_collector()
    stop = threading.Event()
    with stop_on_signals(stop):
        try:
            return worker.run(stop)
        except ConfigError as error:
            print(f"headwater {command}: error: {error}", file=sys.stderr)
            return 2
        except ConnectError as error:
            print(f"headwater {command}: error: {error}", file=sys.stderr)
            return 1


def main(worker_path: str, connector_paths: Sequence[str]) -> int:
    """``headwater standalone``: see :func:`run_worker_command`."""
    return run_worker_command("standalone", lambda: StandaloneWorker.from_paths(worker_path, connector_paths))
