"""Connector and task statuses in a Kafka topic, in the records of Kafka Connect's status topic (see
:mod:`headwater.runtime.storage.status`), so Java workers and this store read each other's statuses.

Records are partitioned by murmur2 of their key, as Java's producer does. The store's view is what it read from
the topic, at :meth:`KafkaStatusStore.start`, after each of its writes (which wait until their records are
acknowledged, then read the topic to its end) and at :meth:`KafkaStatusStore.refresh`; the reads answer from that
view without asking the broker.
"""

from __future__ import annotations

from headwater.runtime.storage.log_backed import LogBackedStore
from headwater.runtime.storage.status import StatusView, _RecordStatusStore


class KafkaStatusStore(LogBackedStore[StatusView], _RecordStatusStore):
    """Statuses in the compacted topic ``topic`` (created with ``partitions``, 5 by default, and
    ``replication_factor`` when missing). ``client_config`` holds librdkafka settings for every client;
    ``timeout_ms`` bounds :meth:`start`, each write and :meth:`refresh`."""

    PARTITIONS = 5
