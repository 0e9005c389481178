"""The offsets of a source connector with an offsets topic of its own (``offsets.storage.topic``, KIP-618), as Kafka
Connect's ``ConnectorOffsetBackingStore.withConnectorAndWorkerStores`` keeps them: the connector's topic is the
primary store, the worker's offsets topic (``offset.storage.topic``) the secondary.

- Reads: the connector's topic first; a partition it has no offset for falls back to the worker's topic (offsets
  written before the connector had a topic of its own, say). A connector's partitions are those of both.
- Writes (tasks committing, ``PATCH /connectors/{c}/offsets``): the connector's topic first; once that succeeded,
  the offsets that are not deletes go to the worker's topic too, and a failure there is only logged as a warning.
  Deletes (tombstones, and ``DELETE /connectors/{c}/offsets``) go to the worker's topic first and fail the write
  when they cannot be stored there, so that an offset deleted from the connector's topic never shows again through
  the fallback (KAFKA-15018).
- Exactly-once source tasks write their offsets into the connector's topic inside each transaction
  (:meth:`ConnectorOffsetStore.send_in`). Kafka Connect sends their copy to the worker's topic as soon as the offsets
  are sent in the transaction; Headwater sends it once the transaction committed (:meth:`ConnectorOffsetStore.
  committed`), so the offsets of an aborted transaction never reach either topic.

Both stores are the worker's: one per offsets topic (:class:`OffsetTopics`), started once and stopped with the
worker (:meth:`~headwater.runtime.worker.Worker.connector_offset_store`). This store neither starts nor stops them.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence

from headwater.runtime.storage.kafka_offsets import KafkaOffsetStore
from headwater.runtime.storage.offsets import PartitionOffset, canonical_partition
from headwater.runtime.transport.base import TransactionalProducer
from headwater.sdk.errors import ConnectError
from headwater.sdk.records import SourcePartition

log = logging.getLogger(__name__)

SECONDARY_TIMEOUT_MS = 30_000
"""How long a copy to the worker's offsets topic after a committed transaction may take."""


class ConnectorOffsetStore:
    """The offsets of connectors whose own offsets topic ``connector_store`` reads and writes, falling back to
    ``worker_store``, the worker's offsets topic. An :class:`~headwater.runtime.storage.offsets.OffsetStore`."""

    def __init__(self, worker_store: KafkaOffsetStore, connector_store: KafkaOffsetStore) -> None:
        self.worker_store = worker_store
        self.connector_store = connector_store

    def start(self) -> None:
        """Nothing: both stores are the worker's, started when it first needs them."""

    def stop(self) -> None:
        """Nothing: both stores are the worker's, stopped with it."""

    def refresh(self, timeout_ms: int | None = None) -> None:
        """Read what other writers stored in either topic since the last read; raises ConnectError on timeout."""
        self.worker_store.refresh(timeout_ms)
        self.connector_store.refresh(timeout_ms)

    def get(self, connector: str, partitions: Sequence[SourcePartition | None]) -> list[PartitionOffset]:
        own = self.connector_store.get(connector, partitions)
        missing = [partition for partition, offset in own if offset is None]
        fallback = dict(
            (canonical_partition(partition), offset) for partition, offset in self.worker_store.get(connector, missing)
        )
        return [
            (partition, offset if offset is not None else fallback.get(canonical_partition(partition)))
            for partition, offset in own
        ]

    def connector_partitions(self, connector: str) -> list[SourcePartition | None]:
        found: dict[str, SourcePartition | None] = {}
        for store in (self.worker_store, self.connector_store):
            for partition in store.connector_partitions(connector):
                found.setdefault(canonical_partition(partition), partition)
        return list(found.values())

    def set(self, connector: str, offsets: Sequence[PartitionOffset], timeout_ms: int) -> None:
        deletes = [(partition, offset) for partition, offset in offsets if offset is None]
        if deletes:
            try:
                self.worker_store.set(connector, deletes, timeout_ms)
            except ConnectError as error:
                raise ConnectError(
                    f"cannot delete offsets of connector {connector!r} from the worker's offsets topic "
                    f"{self.worker_store.topic!r}, so none were written to its own topic "
                    f"{self.connector_store.topic!r}: {error}"
                ) from None
        self.connector_store.set(connector, offsets, timeout_ms)
        self._copy_to_worker(connector, offsets, timeout_ms)

    def delete_connector(self, connector: str) -> None:
        """Delete every offset of the connector from both topics (tombstones for every partition either has)."""
        self.refresh()
        partitions = self.connector_partitions(connector)
        if partitions:
            self.set(connector, [(partition, None) for partition in partitions], SECONDARY_TIMEOUT_MS)

    def send_in(self, producer: TransactionalProducer, connector: str, offsets: Sequence[PartitionOffset]) -> None:
        """Write the offsets into the connector's topic inside ``producer``'s open transaction."""
        self.connector_store.send_in(producer, connector, offsets)

    def committed(self, connector: str, offsets: Sequence[PartitionOffset]) -> None:
        """The transaction holding ``offsets`` committed: copy them to the worker's topic."""
        self._copy_to_worker(connector, offsets, SECONDARY_TIMEOUT_MS)

    def _copy_to_worker(self, connector: str, offsets: Sequence[PartitionOffset], timeout_ms: int) -> None:
        """Kafka Connect's secondary write: the offsets that are not deletes, to the worker's topic; a failure is
        logged, as the offsets are stored in the connector's topic."""
        kept = [(partition, offset) for partition, offset in offsets if offset is not None]
        if not kept:
            return
        try:
            self.worker_store.set(connector, kept, timeout_ms)
        except ConnectError as error:
            log.warning(
                "offsets of connector %s are stored in its offsets topic %s but could not be copied to the worker's "
                "offsets topic %s: %s",
                connector,
                self.connector_store.topic,
                self.worker_store.topic,
                error,
            )

    def __repr__(self) -> str:
        return f"ConnectorOffsetStore({self.connector_store!r}, falling back to {self.worker_store!r})"


class OffsetTopics:
    """A worker's stores of connectors' own offsets topics, on the cluster of ``worker_store``: one per topic,
    started at its first use, read again at each later one (Kafka Connect reads it afresh for each task it starts,
    which may resume offsets another worker wrote): to its last stable offset, as the task's own transaction from a
    worker that died may still be open there; an exactly-once task reads it to its end once it fenced that
    transaction. Safe to call from several threads."""

    def __init__(self, worker_store: KafkaOffsetStore) -> None:
        self.worker_store = worker_store
        self._stores: dict[str, KafkaOffsetStore] = {}
        self._lock = threading.Lock()

    def store(self, topic: str) -> ConnectorOffsetStore:
        """The combined store of the connector whose own offsets topic is ``topic``."""
        with self._lock:
            found = self._stores.get(topic)
            fresh = found is None
            if found is None:
                found = self.worker_store.for_topic(topic)
                found.start()
                self._stores[topic] = found
        if not fresh:
            found.read_stable()  # not to the end: a transaction of the task being made may be open there
        return ConnectorOffsetStore(self.worker_store, found)

    def stop(self) -> None:
        """Stop every store started."""
        with self._lock:
            stores, self._stores = list(self._stores.values()), {}
        for store in stores:
            store.stop()
