"""A real single-node Kafka broker for tests and the command line: the process (:mod:`.process`), its command line
(``python -m headwater.harness.broker``), and the jars it runs from (:mod:`headwater.harness.maven`)."""

from headwater.harness.broker.process import LocalKafkaBroker, free_ports, stop_detached
from headwater.harness.maven import FALLBACK_KAFKA_VERSION, KAFKA_VERSION, BrokerUnavailable, fetch_jars

__all__ = [
    "FALLBACK_KAFKA_VERSION",
    "KAFKA_VERSION",
    "BrokerUnavailable",
    "LocalKafkaBroker",
    "fetch_jars",
    "free_ports",
    "stop_detached",
]
