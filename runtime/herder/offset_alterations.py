"""A connector's offsets as the REST API reads, alters and resets them (Kafka Connect's KIP-875).

Each offset is ``{"partition": {...}, "offset": {...}}``. A source connector's are its source partitions and
offsets in its offset store: the worker's, or, for a connector with an ``offsets.storage.topic`` of its own, that
topic with the worker's as fallback, read and written as its tasks do
(:mod:`~headwater.runtime.storage.connector_offsets`). A sink connector's are the committed offsets of its consumer
group ``connect-<name>``: partition ``{"kafka_topic": t, "kafka_partition": p}``, offset ``{"kafka_offset": n}``; they
are read and written through the transport's admin client.

Altering is additive: only the listed partitions change, and a ``null`` offset deletes one. The herder allows
altering and resetting only while the connector is STOPPED.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from headwater.runtime.errors import BadRequestError
from headwater.runtime.storage.offsets import OffsetStore
from headwater.runtime.transport.base import Transport
from headwater.sdk.errors import ConnectError
from headwater.sdk.records import TopicPartition, validate_offset_map

Offset = dict[str, Any]
"""``{"partition": {...}, "offset": {...} or None}``."""

ALTERED = (
    "The Connect framework-managed offsets for this connector have been altered successfully. However, if this "
    "connector manages offsets externally, they will need to be manually altered in the system that the connector "
    "uses."
)
RESET = (
    "The Connect framework-managed offsets for this connector have been reset successfully. However, if this "
    "connector manages offsets externally, they will need to be manually reset in the system that the connector "
    "uses."
)
NO_OFFSETS = "Partitions / offsets need to be provided for an alter offsets request"
SINK_TOPIC, SINK_PARTITION, SINK_OFFSET = "kafka_topic", "kafka_partition", "kafka_offset"


class ConnectorOffsets:
    """Offsets of the connectors of one worker: source offsets in the store ``store_of`` gives for the connector's
    name, sink offsets in the consumer groups of the cluster ``transport`` talks to."""

    def __init__(self, store_of: Callable[[str], OffsetStore], transport: Transport, timeout_ms: int = 5_000) -> None:
        self.store_of = store_of
        self.transport = transport
        self.timeout_ms = timeout_ms

    def get(self, connector: str, kind: str) -> list[Offset]:
        if kind == "sink":
            committed = self._sink_offsets(connector)
            return [_sink_offset(topic, partition, offset) for (topic, partition), offset in sorted(committed.items())]
        store = self.store_of(connector)
        partitions = store.connector_partitions(connector)
        found = store.get(connector, partitions)
        return [{"partition": p, "offset": o} for p, o in found if o is not None]

    def alter(self, connector: str, kind: str, offsets: Sequence[Mapping[str, Any]]) -> str:
        """Apply ``offsets`` (a ``null`` offset deletes the partition's) and return Connect's success message."""
        if not offsets:
            raise BadRequestError(NO_OFFSETS)
        if kind == "sink":
            self._alter_sink(connector, [_parse_sink(entry) for entry in offsets])
        else:
            changes = [_parse_source(entry) for entry in offsets]
            self.store_of(connector).set(connector, changes, self.timeout_ms)
        return ALTERED

    def reset(self, connector: str, kind: str) -> str:
        """Delete every offset of the connector and return Connect's success message."""
        if kind == "sink":
            self._delete_group(connector)
        else:
            self.store_of(connector).delete_connector(connector)
        return RESET

    # ---- sink connectors: the consumer group ---------------------------------------------------------------

    def _sink_offsets(self, connector: str) -> dict[tuple[str, int], int]:
        group = f"connect-{connector}"
        try:
            found = self.transport.admin().list_group_offsets(group)
        except ConnectError as error:
            raise ConnectError(f"cannot read the offsets of consumer group {group}: {error}") from None
        return {(tp.topic, tp.partition): offset for tp, offset in found.items()}

    def _alter_sink(self, connector: str, changes: list[tuple[str, int, int | None]]) -> None:
        group = f"connect-{connector}"
        if any(offset is None for _, _, offset in changes):
            # Kafka's admin client here cannot delete one partition's offset: drop the (empty) group and commit
            # the offsets that stay
            kept = self._sink_offsets(connector)
            for topic, partition, offset in changes:
                if offset is None:
                    kept.pop((topic, partition), None)
                else:
                    kept[(topic, partition)] = offset
            self._delete_group(connector)
            changes = [(topic, partition, offset) for (topic, partition), offset in kept.items()]
        offsets = {TopicPartition(t, p): offset for t, p, offset in changes if offset is not None}
        if not offsets:
            return
        try:
            self.transport.admin().alter_group_offsets(group, offsets)
        except ConnectError as error:
            raise ConnectError(_group_failure(group, "alter", str(error))) from None

    def _delete_group(self, connector: str) -> None:
        group = f"connect-{connector}"
        try:
            self.transport.admin().delete_group(group)
        except ConnectError as error:
            raise ConnectError(_group_failure(group, "reset", str(error))) from None


def _group_failure(group: str, action: str, reason: str) -> str:
    return (
        f"Failed to {action} the offsets of consumer group {group}: {reason}. If the group still has members "
        f"(zombie sink tasks), the request can be safely retried once they have left."
    )


def _sink_offset(topic: str, partition: int, offset: int) -> Offset:
    return {"partition": {SINK_TOPIC: topic, SINK_PARTITION: partition}, "offset": {SINK_OFFSET: offset}}


def _parse_sink(entry: Mapping[str, Any]) -> tuple[str, int, int | None]:
    partition, offset = _entry(entry)
    if not isinstance(partition, Mapping):
        raise BadRequestError("Partitions of a sink connector must be objects with kafka_topic and kafka_partition")
    topic = partition.get(SINK_TOPIC)
    if not isinstance(topic, str) or not topic:
        raise BadRequestError(f"Sink connector partitions must name a topic in key {SINK_TOPIC!r}")
    number = _integer(partition.get(SINK_PARTITION), SINK_PARTITION)
    if offset is None:
        return topic, number, None
    if not isinstance(offset, Mapping):
        raise BadRequestError(f"Sink connector offsets must be objects with key {SINK_OFFSET!r} or null")
    return topic, number, _integer(offset.get(SINK_OFFSET), SINK_OFFSET)


def _integer(value: Any, key: str) -> int:
    """A non-negative integer, given as a JSON number or a string of digits (Connect accepts both)."""
    if isinstance(value, str) and value.strip().isdecimal():
        value = int(value.strip())
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise BadRequestError(f"Sink connector {key} must be a non-negative integer, got {value!r}")
    return value


def _parse_source(entry: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any] | None]:
    partition, offset = _entry(entry)
    if not isinstance(partition, Mapping):
        raise BadRequestError("Source partitions must be JSON objects")
    if offset is not None and not isinstance(offset, Mapping):
        raise BadRequestError("Source offsets must be JSON objects or null")
    try:
        validate_offset_map("partition", partition)
        validate_offset_map("offset", offset)
    except (TypeError, ValueError) as error:
        raise BadRequestError(str(error)) from None
    return dict(partition), None if offset is None else dict(offset)


def _entry(entry: Mapping[str, Any]) -> tuple[Any, Any]:
    if not isinstance(entry, Mapping) or "partition" not in entry:
        raise BadRequestError("Each offset must be an object with a partition and an offset")
    return entry["partition"], entry.get("offset")
