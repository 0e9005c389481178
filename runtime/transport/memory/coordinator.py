"""The in-memory broker's group coordinator: a group's members, its assignment and its committed offsets.

The group follows Kafka's cooperative (incremental) protocol. It keeps a sticky, balanced *target* assignment and,
per member, the partitions that member *owns*. A member's ``poll`` first revokes what it owns beyond its target, and
only then claims the target partitions nobody owns any more, so a partition that moves is revoked from its old owner
before its new owner gets it. Nothing happens between polls; every change is applied by the member it concerns
(:class:`~headwater.runtime.transport.memory.consumer.MemoryConsumer`).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from headwater.sdk.errors import ConnectError
from headwater.sdk.records import TopicPartition


class Cluster(Protocol):
    """What a group's coordinator reads of its cluster (the broker's state)."""

    @property
    def metadata_version(self) -> int:
        """Bumped whenever a topic or partition is created or deleted."""
        ...

    def topics(self) -> dict[str, int]:
        """Topic name -> partition count."""
        ...


@dataclass(slots=True, eq=False)
class Member:
    """One member of a group, as the coordinator sees it."""

    member_id: str
    seq: int
    topics: frozenset[str]
    owned: set[TopicPartition] = field(default_factory=set)
    expelled: bool = False


class ConsumerGroup:
    """A group's members, target assignment and committed offsets. Lives in the broker's state; used under its
    lock. ``cluster`` tells the topics the group's members may be assigned partitions of."""

    def __init__(self, group_id: str, cluster: Cluster) -> None:
        self.group_id = group_id
        self.cluster = cluster
        self.members: dict[str, Member] = {}
        self.committed: dict[TopicPartition, int] = {}
        self.commit_count = 0
        self._commit_failures = 0
        self._commit_error: Exception | None = None
        self._joins = 0
        self._owners: dict[TopicPartition, str] = {}
        self._target: dict[str, frozenset[TopicPartition]] = {}
        self._target_version = -1

    # -- membership ----------------------------------------------------------------------------------------------

    def join(self, topics: Collection[str]) -> Member:
        """Add a fresh member subscribed to ``topics``."""
        self._joins += 1
        member = Member(f"member-{self._joins}", self._joins, frozenset(topics))
        self.members[member.member_id] = member
        self._target_version = -1
        return member

    def resubscribe(self, member: Member, topics: Collection[str]) -> None:
        member.topics = frozenset(topics)
        self._target_version = -1

    def leave(self, member: Member) -> None:
        """Drop ``member``; the partitions it owned are free for the others to claim."""
        if self.members.get(member.member_id) is not member:
            return
        del self.members[member.member_id]
        for tp in member.owned:
            if self._owners.get(tp) == member.member_id:
                del self._owners[tp]
        member.owned.clear()
        self._target_version = -1

    def expel(self, member_id: str) -> None:
        member = self.members.get(member_id)
        if member is None:
            raise ConnectError(f"Group {self.group_id} has no member {member_id}")
        self.leave(member)
        member.expelled = True

    def member_ids(self) -> list[str]:
        return [member.member_id for member in sorted(self.members.values(), key=lambda m: m.seq)]

    def assignment(self) -> dict[str, frozenset[TopicPartition]]:
        return {mid: frozenset(self.members[mid].owned) for mid in self.member_ids()}

    # -- assignment ----------------------------------------------------------------------------------------------

    def target(self) -> dict[str, frozenset[TopicPartition]]:
        """Member id -> target partitions, recomputed when membership or the broker's topics changed."""
        if self._target_version != self.cluster.metadata_version:
            self._target = self._compute_target()
            self._target_version = self.cluster.metadata_version
        return self._target

    def release(self, member: Member, partitions: Collection[TopicPartition]) -> None:
        """``member`` has revoked ``partitions``; others may claim them."""
        for tp in partitions:
            member.owned.discard(tp)
            if self._owners.get(tp) == member.member_id:
                del self._owners[tp]

    def claim(self, member: Member) -> frozenset[TopicPartition]:
        """Give ``member`` the target partitions nobody owns; return them."""
        if self.members.get(member.member_id) is not member:
            return frozenset()
        wanted = self.target().get(member.member_id, frozenset())
        added = frozenset(tp for tp in wanted if tp not in member.owned and tp not in self._owners)
        for tp in added:
            self._owners[tp] = member.member_id
        member.owned |= added
        return added

    def _compute_target(self) -> dict[str, frozenset[TopicPartition]]:
        members = sorted(self.members.values(), key=lambda m: m.seq)
        counts = self.cluster.topics()
        topics = sorted({topic for member in members for topic in member.topics if topic in counts})
        partitions = [TopicPartition(topic, p) for topic in topics for p in range(counts[topic])]
        previous = {tp: mid for mid, tps in self._target.items() for tp in tps}
        plan: dict[str, set[TopicPartition]] = {member.member_id: set() for member in members}
        free: list[TopicPartition] = []
        for tp in partitions:
            keeper = self.members.get(previous.get(tp, ""))
            if keeper is not None and tp.topic in keeper.topics:
                plan[keeper.member_id].add(tp)
            else:
                free.append(tp)

        def load(member: Member) -> tuple[int, int]:
            return len(plan[member.member_id]), member.seq

        for tp in free:
            candidates = [member for member in members if tp.topic in member.topics]
            if candidates:
                plan[min(candidates, key=load).member_id].add(tp)
        while self._move_one(members, plan):
            pass
        return {mid: frozenset(tps) for mid, tps in plan.items()}

    @staticmethod
    def _move_one(members: Sequence[Member], plan: dict[str, set[TopicPartition]]) -> bool:
        """Move one partition from a member to one holding at least two fewer; False when balanced."""
        for giver in sorted(members, key=lambda m: (-len(plan[m.member_id]), m.seq)):
            given = plan[giver.member_id]
            for tp in sorted(given, reverse=True):
                takers = [
                    m
                    for m in members
                    if m is not giver and tp.topic in m.topics and len(plan[m.member_id]) <= len(given) - 2
                ]
                if takers:
                    taker = min(takers, key=lambda m: (len(plan[m.member_id]), m.seq))
                    given.discard(tp)
                    plan[taker.member_id].add(tp)
                    return True
        return False

    # -- commits -------------------------------------------------------------------------------------------------

    def fail_next_commits(self, n: int, error: Exception | None) -> None:
        self._commit_failures = n
        self._commit_error = error

    def commit(self, offsets: Mapping[TopicPartition, int]) -> Exception | None:
        """Store ``offsets``, or return the injected failure and store nothing."""
        if self._commit_failures > 0:
            self._commit_failures -= 1
            return self._commit_error or ConnectError(f"Commit of group {self.group_id} failed")
        self.committed.update(offsets)
        self.commit_count += 1
        return None
