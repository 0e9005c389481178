"""The transport on a real Kafka cluster: :class:`KafkaTransport` makes confluent-kafka (librdkafka) clients of one
cluster, each with the transport's defaults under the caller's settings."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from headwater.runtime.transport.base import LogApply, RebalanceListener
from headwater.runtime.transport.kafka.admin import KafkaAdmin
from headwater.runtime.transport.kafka.consumer import KafkaConsumer
from headwater.runtime.transport.kafka.log import KafkaBasedLog
from headwater.runtime.transport.kafka.logger import with_logger
from headwater.runtime.transport.kafka.membership import KafkaGroupMember
from headwater.runtime.transport.kafka.producer import KafkaProducer
from headwater.runtime.transport.kafka.transactions import KafkaTransactionalProducer
from headwater.sdk.errors import ConfigError

JAVA_ONLY = frozenset(
    {"clock", "max.poll.records", "key.serializer", "value.serializer", "key.deserializer", "value.deserializer"}
)
"""Keys a Kafka Connect config may carry that librdkafka does not know; dropped before a client is made."""

PRODUCER_DEFAULTS = {"enable.idempotence": True, "partitioner": "murmur2_random", "linger.ms": 5}
CONSUMER_DEFAULTS = {
    "enable.auto.commit": False,
    "enable.auto.offset.store": False,
    "auto.offset.reset": "earliest",
    "partition.assignment.strategy": "cooperative-sticky",
    # librdkafka's default, given explicitly: a sink task never sees the records of open or aborted transactions
    # (an exactly-once source's, say). A worker's consumer.isolation.level or a sink's
    # consumer.override.isolation.level may still ask for read_uncommitted.
    "isolation.level": "read_committed",
    # librdkafka waits this long before fetching again once its local queue is over its limits (1000 ms by
    # default), which leaves a sink that drains the queue in bulk idle for most of each second.
    "fetch.queue.backoff.ms": 100,
}


class KafkaTransport:
    """Makes confluent-kafka clients for one cluster. ``config`` holds librdkafka settings shared by all clients
    (``bootstrap.servers``, security); ``admin_config`` holds settings of the admin clients only, which win (a
    worker's ``admin.`` keys); producer and consumer settings come with each call and win."""

    def __init__(
        self,
        bootstrap_servers: str,
        config: Mapping[str, Any] | None = None,
        admin_config: Mapping[str, Any] | None = None,
    ) -> None:
        if not bootstrap_servers:
            raise ConfigError("bootstrap.servers", bootstrap_servers, "Kafka bootstrap servers are required")
        self.config = {**(config or {}), "bootstrap.servers": bootstrap_servers}
        self.admin_config = {**self.config, **(admin_config or {}), "bootstrap.servers": bootstrap_servers}

    def _merged(self, defaults: Mapping[str, Any], config: Mapping[str, Any]) -> dict[str, Any]:
        merged = {**defaults, **self.config, **config}
        return with_logger({k: v for k, v in merged.items() if k not in JAVA_ONLY})

    def producer(self, config: Mapping[str, Any]) -> KafkaProducer:
        return KafkaProducer(self._merged(PRODUCER_DEFAULTS, config))

    def transactional_producer(self, transactional_id: str, config: Mapping[str, Any]) -> KafkaTransactionalProducer:
        """See :meth:`Transport.transactional_producer`."""
        return KafkaTransactionalProducer(
            self._merged(PRODUCER_DEFAULTS, {**config, "transactional.id": transactional_id, "acks": "all"})
        )

    def consumer(self, group_id: str | None, config: Mapping[str, Any]) -> KafkaConsumer:
        merged = self._merged(CONSUMER_DEFAULTS, config)
        merged["group.id"] = group_id or merged.get("group.id") or "headwater-unassigned"
        return KafkaConsumer(merged)

    def admin(self) -> KafkaAdmin:
        return KafkaAdmin(with_logger({k: v for k, v in self.admin_config.items() if k not in JAVA_ONLY}))

    def topic_log(self, topic: str, apply: LogApply, **options: Any) -> KafkaBasedLog:
        """See :meth:`Transport.topic_log`."""
        client_config = {k: v for k, v in self.config.items() if k not in JAVA_ONLY and k != "bootstrap.servers"}
        return KafkaBasedLog(self.config["bootstrap.servers"], topic, apply, client_config=client_config, **options)

    def group_member(self, group_id: str, config: Mapping[str, Any], listener: RebalanceListener) -> KafkaGroupMember:
        return KafkaGroupMember(group_id, self._merged({}, config), listener)
