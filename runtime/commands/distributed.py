"""The distributed worker, Kafka Connect's ``connect-distributed``: ``headwater distributed worker.properties``.

Workers started with the same ``group.id`` and internal topics form one cluster. Each one validates its file (a bad
one exits with code 2), waits until the Kafka cluster at ``bootstrap.servers`` answers, reads the config, offsets
and status topics (creating those that are missing), serves Kafka Connect's REST API at ``listeners`` and joins the
cluster's groups; connectors and tasks come from the config topic, written through any worker's REST API. It runs
until SIGTERM or SIGINT, then leaves gracefully: its tasks stop and commit, and the other workers take them over
without waiting for a session timeout. Exit codes are the standalone worker's.
"""

from __future__ import annotations

import logging
import os
import threading
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
from headwater.runtime.commands.worker_file import check_worker_file
from headwater.runtime.config.clients import admin_settings, worker_transport
from headwater.runtime.config.distributed_worker import DISTRIBUTED_CONFIG, slots_prefix
from headwater.runtime.config.exactly_once_support import check_distributed
from headwater.runtime.config.listeners import parse_listener
from headwater.runtime.config.properties import ConfigFile, read_properties
from headwater.runtime.distributed.cluster_configs import ClusterConfigStore
from headwater.runtime.distributed.herder import DistributedHerder
from headwater.runtime.metrics import MetricsServer
from headwater.runtime.rest import RestServer
from headwater.runtime.storage.kafka_offsets import KafkaOffsetStore
from headwater.runtime.storage.kafka_status import KafkaStatusStore
from headwater.runtime.transport.kafka import check_broker
from headwater.runtime.worker import Worker
from headwater.sdk.errors import ConnectError

log = logging.getLogger(__name__)

RETRY_S = 1.0
"""Wait after a pass of the worker's loop failed (the broker did not answer, say) before the next pass."""


class DistributedWorker:
    """A worker of a cluster, built from its config file; building it validates the file and touches no broker,
    :meth:`run` does the rest."""

    def __init__(self, worker_file: ConfigFile) -> None:
        checked = check_worker_file(
            worker_file, DISTRIBUTED_CONFIG, slots_prefix, lambda config: check_distributed(config, True)
        )
        worker_file = self.worker_file = checked.file
        self.config = checked.config
        self.prefix = slots_prefix(self.config)
        self.rest_security = checked.rest_security
        self.bootstrap_servers = ",".join(str(server).strip() for server in self.config["bootstrap.servers"])
        self.group_id = str(self.config["group.id"])
        self.transport = worker_transport(worker_file.values, self.bootstrap_servers)  # its keys checked above
        c = self.config
        self.config_store = ClusterConfigStore(
            self.transport, c["config.storage.topic"], c["config.storage.replication.factor"]
        )
        self.offset_store = KafkaOffsetStore(
            self.transport,
            c["offset.storage.topic"],
            c["offset.storage.partitions"],
            c["offset.storage.replication.factor"],
        )
        self.status_store = KafkaStatusStore(
            self.transport,
            c["status.storage.topic"],
            c["status.storage.partitions"],
            c["status.storage.replication.factor"],
        )
        self.worker = Worker(
            worker_file.values,
            self.transport,
            self.offset_store,
            listener=log_state,
            worker_id=initial_worker_id(),
            reachability=broker_reachability(self.bootstrap_servers, self.config),
            group_id=self.group_id,
        )
        group_config = {
            "session.timeout.ms": c["session.timeout.ms"],
            "heartbeat.interval.ms": c["group.heartbeat.interval.ms"],
            "max.poll.interval.ms": c["rebalance.timeout.ms"],
        }
        self.herder = DistributedHerder(
            self.worker,
            self.config_store,
            self.status_store,
            self.offset_store,
            self.group_id,
            group_config,
            self.prefix,
            c["slots.topic.replication.factor"],
        )
        self.rest: RestServer | None = None
        self.metrics: MetricsServer | None = None

    @classmethod
    def from_path(cls, path: str | os.PathLike[str]) -> DistributedWorker:
        return cls(read_properties(path))

    def admin_config(self) -> dict[str, Any]:
        """Settings of the broker check's admin client."""
        return admin_settings(self.worker_file.values, self.bootstrap_servers)

    def run(self, stop: threading.Event) -> int:
        """Join the cluster, run until ``stop`` is set, leave gracefully; return the exit code. Raises ConnectError
        when an internal topic cannot be read or the REST address cannot be bound."""
        log.info(
            "distributed worker starting: group.id=%s, bootstrap.servers=%s", self.group_id, self.bootstrap_servers
        )
        servers = f"{self.bootstrap_servers} (bootstrap.servers in {self.worker_file.path})"
        timeout_ms = int(self.config["broker.check.timeout.ms"])
        backoff_ms, max_backoff_ms = (
            int(self.config["broker.check.backoff.ms"]),
            int(self.config["broker.check.backoff.max.ms"]),
        )
        if not wait_for_broker(
            lambda: check_broker(self.admin_config(), timeout_ms, stop), servers, backoff_ms, max_backoff_ms, stop
        ):
            log.info("distributed worker stopped before Kafka answered; nothing was started")
            return 0
        stores: list[KafkaOffsetStore | ClusterConfigStore | KafkaStatusStore] = [
            self.offset_store,
            self.config_store,
            self.status_store,
        ]
        started: list[KafkaOffsetStore | ClusterConfigStore | KafkaStatusStore] = []
        watch_broker(self.worker.reachability, self.admin_config())
        try:
            for store in stores:
                store.start()
                started.append(store)
            health = self.herder.health
            health.starting(f"joining group {self.group_id}")
            self._serve_rest()
            log.info("distributed worker %s joining group %s", self.worker.worker_id, self.group_id)
            try:
                self.metrics = serve_metrics(self.herder, self.config)
                while not stop.is_set():
                    try:
                        self.herder.tick()
                    except (ConnectError, KafkaException) as error:  # Kafka unreachable for a while, say
                        log.error("distributed worker: %s; trying again in %.1f s", error, RETRY_S)
                        health.starting(f"joining group {self.group_id} failed ({error}); trying again")
                        stop.wait(RETRY_S)
                    else:
                        if not health.is_ready:
                            health.ready()
                            log.info("distributed worker %s ready", self.worker.worker_id)
            finally:
                log.info("distributed worker stopping: handing its connectors and tasks over")
                if self.rest is not None:
                    self.rest.stop()
                if self.metrics is not None:
                    self.metrics.stop()
                self.herder.stop()
        finally:
            for store in reversed(started):
                store.stop()
            self.worker.reachability.stop()
        log.info("distributed worker stopped")
        return 0

    def _serve_rest(self) -> None:
        """Serve the REST API at ``listeners``; from then on the worker's id is its REST address."""
        listener = parse_listener("listeners", self.config["listeners"][0])
        self.rest, self.worker.worker_id = serve_rest(self.herder, listener, self.admin_config(), self.rest_security)


def main(worker_path: str) -> int:
    """``headwater distributed``: 0 after a graceful stop, 2 for a bad config file, 1 for other failures."""
    return run_worker_command("distributed", lambda: DistributedWorker.from_path(worker_path))
