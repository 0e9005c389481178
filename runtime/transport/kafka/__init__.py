"""The transport on a real Kafka cluster, through confluent-kafka (librdkafka).

:class:`KafkaTransport` makes the clients: producers (idempotent, with the ``murmur2_random`` partitioner, so keyed
records land on the partition Java clients choose), consumers (cooperative-sticky assignment, auto-commit off: the
sink loop commits), admin clients, compacted topics read as logs, and group members that never fetch. Each client
hands librdkafka's log lines to Python logging (:mod:`~headwater.runtime.transport.kafka.logger`).
:func:`check_broker` and :func:`kafka_cluster_id` ask a cluster whether it answers and what its id is;
:class:`ClusterProbe` asks a running worker's cluster whether it still answers.
"""

from headwater.runtime.transport.kafka.admin import KafkaAdmin
from headwater.runtime.transport.kafka.check import BrokerRefused, ClusterProbe, check_broker, kafka_cluster_id
from headwater.runtime.transport.kafka.consumer import KafkaConsumer
from headwater.runtime.transport.kafka.log import KafkaBasedLog
from headwater.runtime.transport.kafka.logger import LibrdkafkaLogger
from headwater.runtime.transport.kafka.membership import KafkaGroupMember
from headwater.runtime.transport.kafka.producer import KafkaProducer
from headwater.runtime.transport.kafka.transactions import KafkaTransactionalProducer
from headwater.runtime.transport.kafka.transport import CONSUMER_DEFAULTS, JAVA_ONLY, PRODUCER_DEFAULTS, KafkaTransport

__all__ = [
    "CONSUMER_DEFAULTS",
    "JAVA_ONLY",
    "PRODUCER_DEFAULTS",
    "BrokerRefused",
    "ClusterProbe",
    "KafkaAdmin",
    "KafkaBasedLog",
    "KafkaConsumer",
    "KafkaGroupMember",
    "KafkaProducer",
    "KafkaTransactionalProducer",
    "KafkaTransport",
    "LibrdkafkaLogger",
    "check_broker",
    "kafka_cluster_id",
]
