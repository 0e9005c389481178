"""The Kafka mirror source connector (KIP-310): copies the topics of a source cluster that match a whitelist
into the worker's cluster, optionally under a prefix.

Records are copied as bytes by default, so run it with the worker's pass-through converters::

    key.converter=bytes
    value.converter=bytes

(``ByteArrayConverter``; the Kafka class names work too). Any other converter would re-encode the bytes: JSON, for
example, writes them base64-encoded. The default header converter writes header bytes as they are, and the strings a
header transform adds as UTF-8, which ``header.converter=bytes`` refuses. Destination topics are created by the
destination cluster's auto-creation or ahead of time; records keep their key, value, headers and timestamp, and the
destination's partitioner chooses the partition. Set ``heartbeat.interval.ms`` on the connector so that idle
partitions still commit their offsets up to the source's end (see
:meth:`KafkaMirrorSourceTask.produce_heartbeat_records`).

Exactly once (KIP-618): on distributed workers with ``exactly.once.source.support=enabled``, each task writes the
records it mirrors and their source offsets (the source partitions' offsets) in one transaction, and a task resumes
from the offsets of its last committed transaction, never from the source group (only written after a commit, for
lag monitoring). With the source consumer reading ``read_committed`` (the default) no record of an open or aborted
source transaction is mirrored either, so a ``read_committed`` reader of the destination sees each committed source
record exactly once. :meth:`~KafkaMirrorSourceConnector.exactly_once_support` answers as Kafka's
``MirrorSourceConnector.exactlyOnceSupport`` does.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from headwater.reference_connectors import headwater_version
from headwater.reference_connectors.kafka_mirror.clients import check_client_settings, make_admin
from headwater.reference_connectors.kafka_mirror.config import (
    CONFIG_DEF,
    ISOLATION_LEVEL,
    READ_COMMITTED,
    MirrorConfig,
    isolation_level,
)
from headwater.reference_connectors.kafka_mirror.monitor import PartitionMonitor
from headwater.reference_connectors.kafka_mirror.partitions import fetch_partitions, task_configs
from headwater.reference_connectors.kafka_mirror.task import KafkaMirrorSourceTask
from headwater.sdk import (
    ConfigDef,
    ConfigError,
    ConnectorTransactionBoundaries,
    ExactlyOnceSupport,
    SourceConnector,
    SourceTask,
)

EXACTLY_ONCE_SUPPORT = "exactly.once.support"
NOT_READ_COMMITTED = (
    f"exactly-once delivery needs the source consumer to read {READ_COMMITTED} (the default, unless "
    f"source.{ISOLATION_LEVEL} or connector.consumer.{ISOLATION_LEVEL} says otherwise): reading uncommitted, the "
    "mirror also copies the records of open transactions on the source cluster, and of transactions later aborted"
)
"""Why ``exactly.once.support=required`` is refused without ``read_committed`` (Kafka's ``MirrorSourceConnector``
says why too)."""


class KafkaMirrorSourceConnector(SourceConnector):
    """Watches the source cluster with a :class:`PartitionMonitor` and splits the matching partitions into tasks."""

    monitor: PartitionMonitor | None = None

    def version(self) -> str:
        return headwater_version()

    def config_def(self) -> ConfigDef:
        return CONFIG_DEF

    def validate(self, config: Mapping[str, Any]) -> dict[str, Any]:
        """Parse ``config``, then let librdkafka check the client settings; errors name the key."""
        parsed = super().validate(config)
        check_client_settings(MirrorConfig.parse(config))
        required = str(config.get(EXACTLY_ONCE_SUPPORT, "")).strip().lower() == "required"
        if required and isolation_level(config) != READ_COMMITTED:
            # the runtime refuses it too, when this connector answers UNSUPPORTED, with a generic message: as Kafka's
            # MirrorSourceConnector.validate does, say why
            raise ConfigError(EXACTLY_ONCE_SUPPORT, config.get(EXACTLY_ONCE_SUPPORT), NOT_READ_COMMITTED)
        return parsed

    def exactly_once_support(self, config: Mapping[str, str]) -> ExactlyOnceSupport:
        """``SUPPORTED`` when the source consumer reads ``read_committed`` (the default), ``UNSUPPORTED`` otherwise:
        Kafka's ``MirrorSourceConnector.exactlyOnceSupport``. A task resumes each partition right after the offset
        its last committed transaction stored, so it mirrors exactly the records after them; read uncommitted, it
        would also mirror records of source transactions that are later aborted."""
        if isolation_level(config) == READ_COMMITTED:
            return ExactlyOnceSupport.SUPPORTED
        return ExactlyOnceSupport.UNSUPPORTED

    def can_define_transaction_boundaries(self, config: Mapping[str, str]) -> ConnectorTransactionBoundaries:
        """``UNSUPPORTED``: a mirrored batch has no boundary of its own to keep (Kafka's ``MirrorSourceConnector``
        does not define them either); use ``transaction.boundary=poll`` or ``interval``."""
        return ConnectorTransactionBoundaries.UNSUPPORTED

    def start(self, config: Mapping[str, str]) -> None:
        """List the matching partitions (blocking, at most ``topic.list.timeout.ms``), then watch them."""
        self.config = dict(config)
        self.mirror = MirrorConfig.parse(config)
        fetch = functools.partial(
            fetch_partitions, make_admin(self.mirror), self.mirror.whitelist, self.mirror.topic_list_timeout_ms
        )
        self.monitor = PartitionMonitor(
            fetch,
            self.mirror.topic_list_poll_interval_ms,
            self.context.request_task_reconfiguration,
            self.mirror.reconfigure_on_leader_change,
            name=f"kafka-mirror {config.get('name', '')}".strip(),
        )
        self.monitor.start()

    def task_class(self) -> type[SourceTask]:
        return KafkaMirrorSourceTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        partitions = self.monitor.partitions if self.monitor is not None else frozenset()
        return task_configs(self.config, partitions, max_tasks)

    def stop(self) -> None:
        if self.monitor is not None:
            self.monitor.stop(self.mirror.max_shutdown_wait_ms)
            self.monitor = None
