"""MirrorMaker 2's ``MirrorSourceConnector`` keys the mirror does not read, each answered with what to write instead
(docs/migration.md has the whole table). Keys and defaults are Kafka's ``MirrorSourceConfig`` and
``MirrorConnectorConfig``; the heartbeat keys are ``MirrorHeartbeatConfig``'s."""

from __future__ import annotations

from headwater.sdk.config import ConfigDef

_MM2 = "MirrorMaker 2's key (see docs/migration.md)"

MIRRORMAKER_KEYS = (
    ConfigDef()
    .define_replaced("source.cluster.bootstrap.servers", f"{_MM2}; the mirror reads source.bootstrap.servers")
    .define_replaced(
        "target.cluster.bootstrap.servers",
        f"{_MM2}; the mirror writes to the worker's own cluster, the worker file's bootstrap.servers",
    )
    .define_replaced(
        ("source.cluster.alias", "replication.policy.class", "replication.policy.separator"),
        f"{_MM2}; name the copies with destination.topics.prefix: '<alias>.' as DefaultReplicationPolicy does, "
        "empty as IdentityReplicationPolicy does",
    )
    .define_replaced("target.cluster.alias", f"{_MM2}; not needed: the mirror writes to the worker's cluster")
    .define_replaced("topics", f"{_MM2}; the mirror reads source.topic.whitelist (comma-separated expressions too)")
    .define_replaced(
        "topics.exclude",
        f"{_MM2}; fold the exclusions into source.topic.whitelist (internal topics are always left out)",
    )
    .define_replaced(
        ("refresh.topics.enabled", "refresh.topics.interval.seconds"),
        f"{_MM2}; the mirror checks the source's topics every topic.list.poll.interval.ms (milliseconds)",
    )
    .define_replaced("consumer.poll.timeout.ms", f"{_MM2}; the mirror reads poll.loop.timeout.ms")
    .define_replaced("admin.timeout.ms", f"{_MM2}; the mirror reads topic.list.timeout.ms")
    .define_replaced(
        (
            "sync.topic.configs.enabled",
            "sync.topic.configs.interval.seconds",
            "config.properties.exclude",
            "config.property.filter.class",
        ),
        f"{_MM2}; the mirror copies no topic configs: create the destination topics with the configs you need, or "
        "let the worker create them (topic.creation.*)",
    )
    .define_replaced(
        ("sync.topic.acls.enabled", "sync.topic.acls.interval.seconds"), f"{_MM2}; the mirror copies no ACLs"
    )
    .define_replaced(
        ("emit.offset-syncs.enabled", "offset-syncs.topic.location", "offset-syncs.topic.replication.factor"),
        f"{_MM2}; the mirror writes no offset-syncs topic, so consumer groups cannot be translated to the copy",
    )
    .define_replaced("offset.lag.max", f"{_MM2}; the mirror writes no offset-syncs topic")
    .define_replaced(
        "replication.factor",
        f"{_MM2}; the destination topics come from the worker's topic.creation.* settings, or are created beforehand",
    )
    .define_replaced(("topic.filter.class", "forwarding.admin.class"), f"{_MM2}; the mirror has no equivalent")
    .define_replaced(
        ("emit.heartbeats.enabled", "emit.heartbeats.interval.seconds", "heartbeats.topic.replication.factor"),
        f"{_MM2} (MirrorHeartbeatConnector's); the mirror has no equivalent: its heartbeat.interval.ms moves its "
        "offsets past partitions without records (KIP-910)",
    )
)
"""The keys, as a definition the mirror's own merges."""
