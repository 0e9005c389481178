"""What a Kafka broker and librdkafka's producer refuse where a connector can get it wrong, and the errors they
refuse with, in one place so that both transports say the same thing.

The Kafka transport adds these explanations to librdkafka's own error (its code name and text first); the in-memory
broker refuses the same records with the same words:

- a record without a key (a tombstone too) on a compacted topic: the broker answers ``INVALID_RECORD``, on Kafka
  for every record of the batch that holds it (the in-memory broker refuses that record only);
- a record batch over its topic's ``max.message.bytes`` (the broker's ``message.max.bytes``, 1048588 by default,
  when the topic sets none): ``MSG_SIZE_TOO_LARGE`` from the broker. The size is Kafka's: a 61-byte batch header,
  then each record as ``DefaultRecord.sizeInBytes`` counts it. The in-memory broker measures each record as a batch
  of its own; librdkafka batches records sent close together (``linger.ms``) and the broker refuses such a batch
  whole, so on Kafka records just under the limit may be refused together;
- a record over the producer's own ``message.max.bytes`` (1000000 by default), counted as librdkafka's
  ``rd_kafka_msg_max_wire_size`` does: librdkafka raises ``MSG_SIZE_TOO_LARGE`` from ``produce``;
- a record to a topic that does not exist where topics are not created on first use (the broker's
  ``auto.create.topics.enable``, or the producer's ``allow.auto.create.topics``, is false): its delivery fails with
  ``UNKNOWN_TOPIC_OR_PART`` (on Kafka after ``topic.metadata.propagation.max.ms``), and from then on, until the
  topic exists, ``produce`` raises ``_UNKNOWN_TOPIC`` for that topic.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

Headers = Sequence[tuple[str, bytes | None]]

BROKER_MAX_MESSAGE_BYTES = 1_048_588
"""The broker's ``message.max.bytes`` default: a topic's ``max.message.bytes`` when it sets none."""
PRODUCER_MAX_MESSAGE_BYTES = 1_000_000
"""librdkafka's ``message.max.bytes`` default."""

RECORD_BATCH_OVERHEAD = 61
"""Bytes of a v2 record batch before its first record (Kafka's ``DefaultRecordBatch.RECORD_BATCH_OVERHEAD``)."""
PRODUCER_RECORD_OVERHEAD = 36
"""The most bytes librdkafka counts for a record besides its key, value and headers
(``RD_KAFKAP_MESSAGE_V2_MAX_OVERHEAD``: the length, attributes, deltas, lengths and header count at their widest)."""

# librdkafka's words for these refusals (its error's name, then its text): the Kafka transport gets them from
# librdkafka, the in-memory broker says them itself.
INVALID_RECORD = "INVALID_RECORD: Broker: Broker failed to validate record"
TOO_LARGE_FOR_BROKER = "MSG_SIZE_TOO_LARGE: Broker: Message size too large"
TOO_LARGE_FOR_PRODUCER = "MSG_SIZE_TOO_LARGE: Unable to produce message: Broker: Message size too large"
UNKNOWN_TOPIC = "UNKNOWN_TOPIC_OR_PART: Broker: Unknown topic or partition"
KNOWN_MISSING_TOPIC = "_UNKNOWN_TOPIC: Unable to produce message: Local: Unknown topic"
NON_EMPTY_GROUP = "Broker: The group is not empty"
"""Kafka's answer to deleting a consumer group that has members (it accepts an admin offset commit to one)."""
"""What librdkafka raises at ``produce`` once a record to the topic has failed with :data:`UNKNOWN_TOPIC`."""


TOPIC_CONFIGS = frozenset(
    [
        "segment.bytes",
        "segment.ms",
        "segment.jitter.ms",
        "segment.index.bytes",
        "flush.messages",
        "flush.ms",
        "retention.bytes",
        "retention.ms",
        "remote.storage.enable",
        "local.retention.ms",
        "local.retention.bytes",
        "remote.log.copy.disable",
        "remote.log.delete.on.disable",
        "max.message.bytes",
        "index.interval.bytes",
        "file.delete.delay.ms",
        "delete.retention.ms",
        "min.compaction.lag.ms",
        "max.compaction.lag.ms",
        "min.cleanable.dirty.ratio",
        "cleanup.policy",
        "unclean.leader.election.enable",
        "min.insync.replicas",
        "compression.type",
        "compression.gzip.level",
        "compression.lz4.level",
        "compression.zstd.level",
        "preallocate",
        "message.timestamp.type",
        "message.timestamp.before.max.ms",
        "message.timestamp.after.max.ms",
        "leader.replication.throttled.replicas",
        "follower.replication.throttled.replicas",
    ]
)
"""The topic configs a Kafka 4 broker knows (Kafka's ``TopicConfig`` and ``LogConfig``): a topic created with
another is refused (``INVALID_CONFIG``)."""


def topic_refusal(partitions: int, replication_factor: int, config: Mapping[str, str], brokers: int) -> str | None:
    """Why a Kafka broker (KRaft: ``ReplicationControlManager.createTopic``) refuses to create a topic with these
    settings on a cluster of ``brokers`` brokers, in its words; ``None`` when it creates it. -1 takes the broker's
    default."""
    if replication_factor < -1 or replication_factor == 0:
        return "Replication factor must be larger than 0, or -1 to use the default value."
    if partitions < -1 or partitions == 0:
        return "Number of partitions was set to an invalid non-positive value."
    for name in config:
        if name not in TOPIC_CONFIGS:
            return f"Unknown topic config name: {name}"
    policy = config.get("cleanup.policy")
    if policy is not None and not {part.strip() for part in policy.split(",")} <= {"compact", "delete"}:
        return f"Invalid value {policy} for configuration cleanup.policy: String must be one of: compact, delete"
    if replication_factor > brokers:
        return (
            f"Unable to replicate the partition {replication_factor} time(s): The target replication factor of "
            f"{replication_factor} cannot be reached because only {brokers} broker(s) are registered."
        )
    return None


def compacted(config: Mapping[str, str]) -> bool:
    """Whether a topic with ``config`` is compacted (``cleanup.policy`` ``compact`` or ``compact,delete``)."""
    return "compact" in (part.strip() for part in config.get("cleanup.policy", "delete").split(","))


def _varint(value: int) -> int:
    """Bytes of ``value`` as a zig-zag varint (Kafka's ``ByteUtils.sizeOfVarint``)."""
    encoded = (value << 1) ^ (value >> 63)
    size = 1
    while encoded >= 0x80:
        encoded >>= 7
        size += 1
    return size


def _field(data: bytes | None) -> int:
    return 1 if data is None else _varint(len(data)) + len(data)


def _headers(headers: Headers | None) -> int:
    return sum(_field(key.encode()) + _field(value) for key, value in headers or ())


def batch_size(key: bytes | None, value: bytes | None, headers: Headers | None = None) -> int:
    """The bytes of a record batch holding this record alone, as the broker measures it against
    ``max.message.bytes`` (timestamp and offset deltas of 0)."""
    body = 1 + 1 + 1 + _field(key) + _field(value) + _varint(len(headers or ())) + _headers(headers)
    return RECORD_BATCH_OVERHEAD + _varint(body) + body


def producer_size(key: bytes | None, value: bytes | None, headers: Headers | None) -> int:
    """The bytes librdkafka counts for a record against the producer's ``message.max.bytes``."""
    return PRODUCER_RECORD_OVERHEAD + len(key or b"") + len(value or b"") + _headers(headers)


def needs_key(refusal: str, topic: str) -> str:
    """A broker refused a record without a key: ``topic`` is compacted."""
    return (
        f"{refusal}: the record to topic {topic!r} needs a key: the topic is compacted (cleanup.policy=compact), "
        "and Kafka refuses a record without a key there (Compacted topic cannot accept message without key)"
    )


def invalid_batch(refusal: str, topic: str) -> str:
    """A broker refused a keyed record: another record of its batch was invalid."""
    return (
        f"{refusal}: topic {topic!r} refused the record batch holding this record because a record of the batch is "
        "invalid (on a compacted topic, cleanup.policy=compact: a record without a key)"
    )


def too_large_for_topic(refusal: str, topic: str, size: int) -> str:
    """A broker refused a record batch over ``topic``'s ``max.message.bytes``; the record's key and value alone
    make a batch of ``size`` bytes (its headers are not counted: librdkafka's delivery reports do not carry them)."""
    return (
        f"{refusal}: topic {topic!r} refused a record batch over its max.message.bytes (the broker's "
        f"message.max.bytes when the topic sets none); the record's key and value alone make a batch of {size} bytes"
    )


def too_large_for_producer(refusal: str, topic: str, size: int, limit: int) -> str:
    """librdkafka refused to queue a record to ``topic`` counted at ``size`` bytes, over ``limit``."""
    return (
        f"{refusal}: a record to topic {topic!r} counts {size} bytes, over the producer's message.max.bytes ({limit})"
    )


def unknown_topic(refusal: str, topic: str) -> str:
    """A record went to a topic that does not exist, where topics are not created on first use."""
    return (
        f"{refusal}: topic {topic!r} does not exist, and it is not created on first use here (the broker's "
        "auto.create.topics.enable, or the producer's allow.auto.create.topics, is false): create it first"
    )
