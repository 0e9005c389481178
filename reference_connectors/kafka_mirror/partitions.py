"""Source topic partitions with their leaders: how the partition monitor finds them and how they are split into
task configs (KIP-310: grouped by leader, ``min(tasks.max, partitions)`` tasks)."""

from __future__ import annotations

import re
import time
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from confluent_kafka import KafkaError, KafkaException, TopicCollection
from confluent_kafka.admin import AdminClient

from headwater.sdk import TopicPartition

TASK_PARTITIONS = "task.leader.topic.partitions"
"""The task config key listing a task's partitions as ``leader:topic:partition``, comma-separated."""

T = TypeVar("T")

_NOT_READY = (KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError.LEADER_NOT_AVAILABLE)
"""Errors of a topic being deleted or created while it is described: left out until the next check."""


@dataclass(frozen=True, order=True)
class LeaderTopicPartition:
    """A source topic partition and the id of the broker leading it (-1 while it has no leader)."""

    leader: int
    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.leader}:{self.topic}:{self.partition}"

    @classmethod
    def parse(cls, text: str) -> LeaderTopicPartition:
        """The inverse of ``str``; raises ``ValueError`` for anything else (topic names never hold ``:``)."""
        parts = text.strip().split(":")
        if len(parts) != 3 or not parts[1]:
            raise ValueError(f"{text!r} is not leader:topic:partition")
        try:
            return cls(int(parts[0]), parts[1], int(parts[2]))
        except ValueError:
            raise ValueError(f"{text!r} is not leader:topic:partition (leader and partition are integers)") from None

    @property
    def topic_partition(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition)


def group_partitions(items: Sequence[T], groups: int) -> list[list[T]]:
    """Split ``items`` into ``groups`` contiguous groups whose sizes differ by at most one, larger ones first
    (Kafka Connect's ``ConnectorUtils.groupPartitions``)."""
    if groups <= 0:
        raise ValueError(f"cannot split into {groups} groups")
    size, extra = divmod(len(items), groups)
    found: list[list[T]] = []
    start = 0
    for group in range(groups):
        end = start + size + (1 if group < extra else 0)
        found.append(list(items[start:end]))
        start = end
    return found


def task_configs(
    config: Mapping[str, str], partitions: Collection[LeaderTopicPartition], max_tasks: int
) -> list[dict[str, str]]:
    """One config per task, ``min(max_tasks, partitions)`` of them: the connector's config plus the task's share of
    the partitions, sorted by leader so that each task reads from as few brokers as it can."""
    ordered = sorted(partitions)
    count = min(max_tasks, len(ordered))
    if count == 0:
        return []
    return [{**config, TASK_PARTITIONS: ",".join(map(str, group))} for group in group_partitions(ordered, count)]


def assigned_partitions(config: Mapping[str, str]) -> list[TopicPartition]:
    """The partitions a task config assigns; raises ``ValueError`` for a malformed list."""
    listed = config.get(TASK_PARTITIONS, "")
    return [LeaderTopicPartition.parse(item).topic_partition for item in listed.split(",") if item.strip()]


def fetch_partitions(
    admin: AdminClient, whitelist: re.Pattern[str], timeout_ms: int
) -> frozenset[LeaderTopicPartition]:
    """The partitions of every non-internal topic whose whole name ``whitelist`` matches, with their leaders: the
    topic list, then a description of the matching topics, both within ``timeout_ms``.

    Raises ``KafkaException`` or ``TimeoutError`` when the cluster does not answer in time. A topic deleted between
    the two requests, or still being created, is left out (the next check finds it).
    """
    deadline = time.monotonic() + timeout_ms / 1000

    def remaining() -> float:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError(f"the source cluster did not list its topics within {timeout_ms} ms")
        return left

    metadata = admin.list_topics(timeout=remaining())
    names = sorted(n for n, t in metadata.topics.items() if t.error is None and whitelist.fullmatch(n))
    if not names:
        return frozenset()
    futures = admin.describe_topics(TopicCollection(names), request_timeout=remaining())
    found: set[LeaderTopicPartition] = set()
    for name, future in futures.items():
        try:
            description: Any = future.result(timeout=remaining())
        except KafkaException as error:
            if error.args and error.args[0].code() in _NOT_READY:
                continue
            raise
        if description.is_internal:
            continue
        for partition in description.partitions:
            leader = -1 if partition.leader is None else int(partition.leader.id)
            found.add(LeaderTopicPartition(leader, name, int(partition.id)))
    return frozenset(found)
