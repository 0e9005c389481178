"""The standalone worker, Kafka Connect's ``connect-standalone``: one process, connectors from files, source offsets
in a local file.

``headwater standalone worker.properties [connector.properties ...]`` validates every file first (a bad one exits
with code 2 before anything connects), loads the offsets file (read only; by default ``connect.offsets`` in the
per-user state directory ``state.dir``, created private when missing: :mod:`.state_dir`), waits
until the Kafka cluster at ``bootstrap.servers`` answers a metadata request, retrying with a doubling backoff,
starts serving Kafka Connect's REST API at ``listeners`` (by default ``http://127.0.0.1:8083``), then starts each
connector and runs until SIGTERM or SIGINT. Stopping is graceful: tasks finish their pass, flush their producers
and commit (source offsets to the file, sink offsets to the group ``connect-<name>``), connectors stop, and the
process exits 0; a task that does not stop within ``task.shutdown.graceful.timeout.ms`` is cancelled, and the process
exits within that timeout again even if threads or exit hooks it left would keep the interpreter waiting.

Clients get ``bootstrap.servers`` and the settings :func:`~headwater.runtime.config.clients.worker_transport`
derives from the worker's keys, as in distributed mode.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Sequence
from typing import Any

from confluent_kafka import KafkaException

from headwater.runtime.commands.startup import (
    broker_reachability,
    initial_worker_id,
    log_state,
    run_worker_command,
    serve_metrics,
    serve_rest,
    wait_for_broker,
    watch_broker,
)
from headwater.runtime.commands.state_dir import OFFSETS_FILE, offsets_file, prepare_state_dir, state_dir
from headwater.runtime.commands.worker_file import check_worker_file
from headwater.runtime.config import exactly_once_support
from headwater.runtime.config.clients import admin_settings, worker_transport
from headwater.runtime.config.connector import CONNECTOR_CONFIG, connector_config_def
from headwater.runtime.config.listeners import parse_listener
from headwater.runtime.config.names import check_connector_name
from headwater.runtime.config.properties import ConfigFile, PropertiesError, read_connector_properties, read_properties
from headwater.runtime.config.references import hide_values, references
from headwater.runtime.config.worker import STANDALONE_CONFIG
from headwater.runtime.errors import BadRequestError, InvalidConfigError
from headwater.runtime.herder import StandaloneHerder
from headwater.runtime.herder.validation import check_connector_config
from headwater.runtime.metrics import MetricsServer
from headwater.runtime.plugins import resolve_connector_class
from headwater.runtime.rest import RestServer
from headwater.runtime.storage.offsets import FileOffsetStore
from headwater.runtime.storage.status import StatusStore
from headwater.runtime.transport.base import Transport
from headwater.runtime.transport.kafka import check_broker
from headwater.runtime.worker import Worker
from headwater.sdk.errors import ConfigError, ConnectError
from headwater.sdk.providers import has_reference

log = logging.getLogger(__name__)


class StandaloneWorker:
    """A worker, its herder and its offsets file, built from a worker config file and connector config files.

    Building it validates every file and touches neither the broker nor the offsets file; :meth:`run` does both.
    Statuses and active topics go to ``status_store`` (in memory by default, as in Kafka Connect's standalone
    mode); :meth:`run` starts and stops it. ``transport`` replaces the Kafka transport the worker file describes (an
    in-memory one, in tests).
    """

    def __init__(
        self,
        worker_file: ConfigFile,
        connector_files: Sequence[ConfigFile],
        status_store: StatusStore | None = None,
        transport: Transport | None = None,
    ) -> None:
        checked = check_worker_file(
            worker_file, STANDALONE_CONFIG, lambda config: exactly_once_support.check_distributed(config, False)
        )
        worker_file = self.worker_file = checked.file
        self.config = checked.config
        self.bootstrap_servers = ",".join(str(server).strip() for server in self.config["bootstrap.servers"])
        self.offset_store = FileOffsetStore(offsets_file(self.config))
        self.transport = transport or worker_transport(worker_file.values, self.bootstrap_servers)  # checked above
        self.worker = Worker(
            worker_file.values,
            self.transport,
            self.offset_store,
            listener=log_state,
            worker_id=initial_worker_id(),
            reachability=broker_reachability(self.bootstrap_servers, self.config),
        )
        self.herder = StandaloneHerder(self.worker, status_store)
        self.listener = parse_listener("listeners", self.config["listeners"][0])
        self.rest_security = checked.rest_security
        self.rest: RestServer | None = None
        self.metrics: MetricsServer | None = None
        self.connector_files: list[ConfigFile] = []
        for file in connector_files:
            self._add(file)

    @classmethod
    def from_paths(
        cls, worker_path: str | os.PathLike[str], connector_paths: Sequence[str | os.PathLike[str]]
    ) -> StandaloneWorker:
        """Read and validate the files; raises :class:`~headwater.runtime.config.properties.PropertiesError`."""
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
        offsets file cannot be read, and PropertiesError when the offsets file is the state directory's
        (``state.dir``) and that cannot be created or is not private (:func:`prepare_state_dir`)."""
        names = ", ".join(file.values["name"] for file in self.connector_files)
        log.info(
            "standalone worker starting: bootstrap.servers=%s, offsets file %s, connectors: %s",
            self.bootstrap_servers,
            self.offset_store.path,
            names,
        )
        if not self.config[OFFSETS_FILE]:
            try:
                prepare_state_dir(state_dir(self.config))
            except ConfigError as error:
                raise self.worker_file.config_error(error) from None
        self.offset_store.start()
        try:
            if not self.wait_for_broker(stop):
                log.info("standalone worker stopped before Kafka answered; nothing was started")
                return 0
            self.herder.status_store.start()
            try:
                watch_broker(self.worker.reachability, self.admin_config())
                self._serve_rest()
                self.metrics = serve_metrics(self.herder, self.config)
                self.start_connectors()
                self.herder.health.ready()
                log.info("standalone worker started")
                while not stop.wait(0.1):
                    self.herder.tick()
            finally:
                log.info("standalone worker stopping")
                if self.rest is not None:
                    self.rest.stop()
                if self.metrics is not None:
                    self.metrics.stop()
                self.herder.stop()
                self.herder.status_store.stop()
                self.worker.reachability.stop()
            log.info("standalone worker stopped")
            return 0
        finally:
            self.offset_store.stop()

    def _serve_rest(self) -> None:
        """Start the REST server at ``listeners``; raises ConnectError when its address cannot be bound. From then
        on the worker's id in statuses is its REST address, ``host:port``, as in Kafka Connect."""
        rest = serve_rest(self.herder, self.listener, self.admin_config(), self.rest_security)
        self.rest, self.worker.worker_id = rest

    def start_connectors(self) -> None:
        """Give the herder each connector file's config, as written (its references resolved when the connector
        starts); one that cannot be started is logged and the others are started."""
        for file in self.connector_files:
            self.herder.health.starting(f"starting connector {file.values['name']} from {file.path}")
            self._start(file)

    def _start(self, file: ConfigFile) -> None:
        name = file.values["name"]
        log.info("starting connector %s from %s", name, file.path)
        try:
            self.herder.put_connector_config(name, file.values, initial_state=file.initial_state)
        except (ConnectError, KafkaException) as error:
            log.error("connector %s could not be started: %s", name, error)


def validate_connector(worker: Worker, file: ConfigFile) -> None:
    """Validate a connector file the way the worker will, re-raising every problem naming the file and key, and
    log a warning naming the file and line of each unknown key (the worker warns again when it creates the
    connector).

    A value holding a ``${provider:path:key}`` reference is checked as REST checks it (not against its key's type
    or validator), then resolved with the worker's config providers, as Kafka Connect's ``AbstractHerder`` resolves
    a config to validate it: a reference that cannot be resolved, or a resolved value its key does not accept, is
    an error naming the file, line, key and reference, never the value. The herder stores the file's values as
    written; the worker resolves them again when the connector starts."""
    file.parse(CONNECTOR_CONFIG)
    try:
        check_connector_name(file.values["name"])
    except BadRequestError as error:
        raise file.error("name", str(error)) from None
    try:
        cls = resolve_connector_class(file.values["connector.class"])
    except ConfigError as error:
        raise file.config_error(error) from None
    file.parse(connector_config_def(cls()))
    try:
        unknown = check_connector_config(file.values, worker.config)
    except InvalidConfigError as error:
        problems = [file.error(key, message) for key, found in error.errors.items() for message in found]
        raise PropertiesError.combine(problems) from None
    for key, message in unknown.items():
        log.warning("%s", file.error(key, message), extra={"unknown_key": key})
    try:
        worker.validate(file.values)
    except ConfigError as error:
        raise file.config_error(error) from None
    if any(has_reference(value) for value in file.values.values()):
        _validate_resolved(worker, file)


def _validate_resolved(worker: Worker, file: ConfigFile) -> None:
    """Resolve the file's references and validate the values they resolve to (see :func:`validate_connector`)."""
    try:
        resolved = worker.config_transformer.transform(file.values)
    except ConfigError as error:  # names the key and the reference
        raise file.config_error(error) from None
    try:
        worker.validate(resolved)
    except ConfigError as error:
        raise file.config_error(hide_values(error, references(file.values, resolved))) from None


def main(worker_path: str, connector_paths: Sequence[str]) -> int:
    """``headwater standalone``: see :func:`run_worker_command`."""
    return run_worker_command("standalone", lambda: StandaloneWorker.from_paths(worker_path, connector_paths))
