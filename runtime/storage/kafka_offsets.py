"""Source offsets in a Kafka topic, in the wire format of Kafka Connect's offsets topic (``offset.storage.topic``).

Keys are :func:`~headwater.runtime.storage.offsets.offset_key` bytes, values
:func:`~headwater.runtime.storage.offsets.offset_value` bytes, deletes are tombstones, and records are partitioned
by murmur2 of the key bytes, so Java workers and this store read each other's offsets. Keys that are not a
``["<connector>",{partition}]`` list, and values that are not an offset object, are ignored, as Connect does.

The store's view is what it read from the topic: at :meth:`KafkaOffsetStore.start`, at each :meth:`set` and
:meth:`delete_connector` (which read the topic to its end once their records are acknowledged) and at
:meth:`KafkaOffsetStore.refresh`. ``get`` and ``connector_partitions`` answer from that view without asking the
broker. A partition first stored under a key with another key order (a Java worker's, say) keeps that key: later
offsets and tombstones for it are written under the same bytes.

A failed ``set`` applies nothing to the view. Kafka cannot take back the records of the batch the broker did
accept (they went to other partitions than the failed one, or before it): like Kafka Connect, they are in the
topic and show in every view that reads past them, this one included at its next read.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

from headwater.runtime.storage.log_backed import Cluster, TopicSettings
from headwater.runtime.storage.offsets import (
    LocalOffsetStore,
    PartitionOffset,
    canonical_partition,
    encode_offsets,
    parse_offset_key,
)
from headwater.runtime.storage.wire import strict_loads
from headwater.runtime.transport.base import TransactionalProducer
from headwater.sdk.errors import ConnectError
from headwater.sdk.records import validate_offset_map


class KafkaOffsetStore(LocalOffsetStore):
    """Offsets in the compacted topic ``topic`` (created with ``partitions`` and ``replication_factor`` when
    missing). ``client_config`` holds librdkafka settings for every client; ``timeout_ms`` bounds :meth:`start`,
    :meth:`delete_connector` and :meth:`refresh`. Safe to call from several threads."""

    def __init__(
        self,
        cluster: Cluster,
        topic: str,
        partitions: int = 25,
        replication_factor: int = 1,
        client_config: Mapping[str, Any] | None = None,
        *,
        timeout_ms: int = 30_000,
    ) -> None:
        super().__init__()
        self.settings = TopicSettings(cluster, topic, partitions, replication_factor, client_config, timeout_ms)
        self.log = self.settings.log(self._apply)

    def for_topic(self, topic: str) -> KafkaOffsetStore:
        """A store of the offsets topic ``topic`` on the same cluster, with the same settings: a new topic gets this
        one's partitions and replication factor (Kafka Connect creates a connector's own offsets topic with the
        worker's ``offset.storage.partitions`` and ``offset.storage.replication.factor``). Not started."""
        found = self.settings.for_topic(topic)
        return KafkaOffsetStore(
            found.cluster,
            found.topic,
            found.partitions,
            found.replication_factor,
            found.client_config,
            timeout_ms=found.timeout_ms,
        )

    @property
    def topic(self) -> str:
        return self.log.topic

    def start(self) -> None:
        self.log.start()
        with self._lock:
            self._started = True

    def stop(self) -> None:
        with self._lock:
            self._started = False
        self.log.stop()

    def refresh(self, timeout_ms: int | None = None) -> None:
        """Read what other writers stored since the last read; raises ConnectError on timeout."""
        with self._lock:
            self._check_started()
        self.log.read_to_end(timeout_ms)

    def read_stable(self, timeout_ms: int | None = None) -> None:
        """Read what other writers stored since the last read up to the last stable offset, not waiting for open
        transactions (an exactly-once task reads to the end itself once it fenced its own older producers)."""
        with self._lock:
            self._check_started()
        self.log.read_to_stable(timeout_ms)

    def set(self, connector: str, offsets: Sequence[PartitionOffset], timeout_ms: int) -> None:
        deadline = time.monotonic() + max(timeout_ms, 0) / 1000
        records = self._records(connector, offsets)
        try:
            self.log.send_all(records, timeout_ms)
            self.log.read_to_end(max(0, int((deadline - time.monotonic()) * 1000)))
        except ConnectError as error:
            raise ConnectError(f"cannot store offsets of connector {connector!r}: {error}") from None

    def send_in(self, producer: TransactionalProducer, connector: str, offsets: Sequence[PartitionOffset]) -> None:
        """Write ``connector``'s ``offsets`` through ``producer``, inside its open transaction, so that they commit
        or abort with the records it holds (Kafka Connect's exactly-once source task writes its offsets so). Nothing
        is waited for: the view shows them once the transaction committed and the store is :meth:`refresh`-ed after
        the cluster wrote the commit markers (on Kafka, shortly after ``commit`` returns)."""
        records = self._records(connector, offsets)
        try:
            for key, value in records:
                producer.produce(self.log.topic, value, key)
        except ConnectError as error:
            raise type(error)(f"cannot store offsets of connector {connector!r}: {error}") from None

    def _records(self, connector: str, offsets: Sequence[PartitionOffset]) -> list[tuple[bytes, bytes | None]]:
        """The records of ``connector``'s ``offsets``: a partition stored before keeps the key bytes it has."""
        changes = encode_offsets(connector, offsets)
        with self._lock:
            self._check_started()
            stored = self._stored.get(connector, {})
            return [(stored[canonical][0] if canonical in stored else key, value) for canonical, key, value in changes]

    def committed(self, connector: str, offsets: Sequence[PartitionOffset]) -> None:
        """The transaction that held ``offsets`` committed: nothing more to do, they are in this topic."""

    def delete_connector(self, connector: str) -> None:
        self.refresh()
        with self._lock:
            keys = [key for key, _ in self._stored.get(connector, {}).values()]
        if keys:
            try:
                self.log.send_all([(key, None) for key in keys])
                self.log.read_to_end()
            except ConnectError as error:
                raise ConnectError(f"cannot delete the offsets of connector {connector!r}: {error}") from None

    def _apply(self, key: bytes | None, value: bytes | None) -> None:
        """Fold one record of the topic into the view; records Connect would not understand are skipped."""
        parsed = None if key is None else parse_offset_key(key)
        if key is None or parsed is None:
            return
        connector, partition = parsed
        try:
            canonical = canonical_partition(partition)  # raises for NaN and infinities, which Connect cannot read
            validate_offset_map("partition", partition)
            if value is not None:
                offset = strict_loads(value)
                if not isinstance(offset, dict):
                    return
                validate_offset_map("offset", offset)
        except (ConnectError, TypeError, ValueError):
            return
        with self._lock:
            offsets_of = self._stored.setdefault(connector, {})
            if value is not None:
                offsets_of[canonical] = (key, value)
                return
            offsets_of.pop(canonical, None)
            if not offsets_of:
                del self._stored[connector]

    def __repr__(self) -> str:
        return f"KafkaOffsetStore({self.log.topic!r} at {self.log.where}, {{{self._content()}}})"
