"""Consumer groups of the in-memory broker: a coordinator per group and the consumer that joins it.

The group follows Kafka's cooperative (incremental) protocol. It keeps a sticky, balanced *target* assignment and,
per member, the partitions that member *owns*. A member's ``poll`` first revokes what it owns beyond its target, and
only then claims the target partitions nobody owns any more, so a partition that moves is revoked from its old owner
before its new owner gets it. Nothing happens between polls; every change is applied by the member it concerns.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from headwater.runtime.transport.base import (
    ISOLATION_LEVEL,
    READ_COMMITTED,
    READ_UNCOMMITTED,
    CommitCallback,
    Message,
    RebalanceListener,
    matching,
)
from headwater.sdk.errors import ConfigError, ConnectError
from headwater.sdk.records import TopicPartition

if TYPE_CHECKING:
    from headwater.runtime.transport.memory import MemoryBroker


@dataclass(slots=True, eq=False)
class Member:
    """One member of a group, as the coordinator sees it."""

    member_id: str
    seq: int
    topics: frozenset[str]
    owned: set[TopicPartition] = field(default_factory=set)
    expelled: bool = False


class ConsumerGroup:
    """A group's members, target assignment and committed offsets. Lives on the broker; used under its lock."""

    def __init__(self, group_id: str, broker: MemoryBroker) -> None:
        self.group_id = group_id
        self.broker = broker
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
        if self._target_version != self.broker.metadata_version:
            self._target = self._compute_target()
            self._target_version = self.broker.metadata_version
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
        counts = self.broker.topics()
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


_Completion = tuple[CommitCallback, Exception | None, dict[TopicPartition, int]]


class MemoryConsumer:
    """A consumer of a :class:`MemoryBroker`, in a group (:meth:`subscribe`) or manually assigned (:meth:`assign`)."""

    def __init__(self, broker: MemoryBroker, group_id: str | None, config: Mapping[str, Any]) -> None:
        reset = config.get("auto.offset.reset", "earliest")
        if reset not in ("earliest", "latest"):
            raise ConfigError("auto.offset.reset", reset, "must be 'earliest' or 'latest'")
        self.broker = broker
        self.group_id = group_id
        self._reset: str = reset
        isolation = config.get(ISOLATION_LEVEL, READ_COMMITTED)
        if isolation not in (READ_COMMITTED, READ_UNCOMMITTED):
            raise ConfigError(ISOLATION_LEVEL, isolation, f"must be {READ_COMMITTED!r} or {READ_UNCOMMITTED!r}")
        self._committed_only = isolation == READ_COMMITTED
        self._group = broker.consumer_group(group_id) if group_id is not None else None
        self._member: Member | None = None
        self._topics: frozenset[str] = frozenset()
        self._listener: RebalanceListener | None = None
        self._manual = False
        self._closed = False
        self._pattern: re.Pattern[str] | None = None
        self._pattern_version = -1
        """The broker's metadata version the pattern was last matched against."""
        self._positions: dict[TopicPartition, int] = {}
        self._paused: set[TopicPartition] = set()
        self._fetch_order: list[TopicPartition] | None = None
        self._cursor = 0
        self._completions: list[_Completion] = []

    @property
    def member_id(self) -> str | None:
        """This consumer's id in its group; ``None`` when not subscribed. Changes when it rejoins after expulsion."""
        return self._member.member_id if self._member is not None else None

    def subscribe(self, topics: Sequence[str], listener: RebalanceListener) -> None:
        """Join the group for ``topics`` (or change the subscription); partitions arrive inside :meth:`poll`."""
        self._pattern = None
        self._subscribe(topics, listener)

    def subscribe_pattern(self, pattern: re.Pattern[str], listener: RebalanceListener) -> None:
        """See :meth:`Consumer.subscribe_pattern`: the topics matching ``pattern`` now, and at each :meth:`poll`
        after a topic was created or deleted (the in-memory cluster's metadata is never stale)."""
        with self.broker.lock:
            self._pattern = pattern
            self._pattern_version = self.broker.metadata_version
            topics = matching(pattern, self.broker.topics())
        self._subscribe(topics, listener)

    def _follow_pattern(self) -> None:
        """Subscribe again when the broker's topics changed since the pattern was last matched."""
        with self.broker.lock:
            pattern, listener = self._pattern, self._listener
            if pattern is None or listener is None or self._pattern_version == self.broker.metadata_version:
                return
            self._pattern_version = self.broker.metadata_version
            topics = matching(pattern, self.broker.topics())
            if frozenset(topics) == self._topics:
                return
        self._subscribe(topics, listener)

    def _subscribe(self, topics: Sequence[str], listener: RebalanceListener) -> None:
        with self.broker.lock:
            self._check_open()
            if self._group is None:
                raise ConnectError("subscribe needs a group id")
            if self._manual:
                raise ConnectError("Consumer is manually assigned; it cannot also subscribe")
            self._topics = frozenset(topics)
            self._listener = listener
            if self._member is None:
                self._member = self._group.join(self._topics)
            else:
                self._group.resubscribe(self._member, self._topics)

    def assign(self, partitions: Collection[TopicPartition]) -> None:
        """Read exactly ``partitions``, without group membership; partitions kept from before keep their position."""
        with self.broker.lock:
            self._check_open()
            if self._member is not None:
                raise ConnectError("Consumer is subscribed to a group; it cannot also be assigned partitions")
            self._manual = True
            wanted = set(partitions)
            self._drop([tp for tp in self._positions if tp not in wanted])
            for tp in sorted(wanted - self._positions.keys()):
                self._positions[tp] = self._initial_position(tp)
            self._fetch_order = None

    def poll(self, max_records: int, timeout_ms: int) -> Sequence[Message]:
        """Serve finished async commits, run rebalance callbacks, then fetch up to ``max_records`` without waiting.

        Partitions take turns, starting after the last one served by the previous poll; each partition's records
        come in offset order.
        """
        with self.broker.lock:
            self._check_open()
            if self._member is None and not self._manual:
                raise ConnectError("Consumer is neither subscribed nor assigned")
        self._serve_completions()
        self._follow_pattern()
        self._rebalance()
        return self._fetch(max_records)

    def _serve_completions(self) -> None:
        with self.broker.lock:
            ready, self._completions = self._completions, []
        for served, (callback, error, offsets) in enumerate(ready, 1):
            try:
                callback(error, offsets)
            except BaseException:
                with self.broker.lock:
                    self._completions[:0] = ready[served:]
                raise

    def _rebalance(self) -> None:
        lock, group, member, listener = self.broker.lock, self._group, self._member, self._listener
        if group is None or member is None or listener is None:
            return
        with lock:
            if member.expelled:
                lost = frozenset(self._positions)
                revoked = None
            else:
                revoked = frozenset(member.owned - group.target().get(member.member_id, frozenset()))
        if revoked is None:
            self._rejoin(group, member, listener, lost)
            return
        if revoked:
            try:
                listener.on_partitions_revoked(revoked)
            finally:
                with lock:
                    self._drop(revoked)
                    group.release(member, revoked)
        with lock:
            if self._member is not member or self._closed:
                return
            added = group.claim(member)
            for tp in sorted(added):
                self._positions[tp] = self._initial_position(tp)
            self._fetch_order = None
        if added:
            listener.on_partitions_assigned(added)

    def _rejoin(
        self, group: ConsumerGroup, member: Member, listener: RebalanceListener, lost: frozenset[TopicPartition]
    ) -> None:
        """After expulsion: report ``lost``, then join again as a fresh member (assigned at a later poll)."""
        try:
            if lost:
                listener.on_partitions_lost(lost)
        finally:
            with self.broker.lock:
                self._drop(lost)
                if self._member is member and not self._closed:
                    self._member = group.join(self._topics)

    def _fetch(self, max_records: int) -> list[Message]:
        with self.broker.lock:
            if self._fetch_order is None:
                self._fetch_order = sorted(self._positions.keys() - self._paused)
            order, positions = self._fetch_order, self._positions
            if not order or max_records <= 0:
                return []
            out: list[Message] = []
            remaining = max_records
            start = self._cursor % len(order)
            rotated = order[start:] + order[:start]
            last = -1
            transactions = self.broker.transactions
            while remaining > 0:
                ready = []
                for index, tp in enumerate(rotated):
                    log = self.broker.log(tp)
                    if log is None:
                        continue
                    end = len(log)
                    if transactions.open and self._committed_only:
                        end = transactions.stable_end(tp, end)
                    if positions[tp] < end:
                        ready.append((index, tp, log, end))
                if not ready:
                    break
                share = max(1, remaining // len(ready))
                for index, tp, log, end in ready:
                    position = positions[tp]
                    hidden = transactions.hidden(tp, self._committed_only)
                    if hidden is None:
                        taken = log[position : min(end, position + min(share, remaining))]
                        position += len(taken)
                    else:  # skip markers (and aborted records), whose offsets stay gaps
                        taken = []
                        while position < end and len(taken) < min(share, remaining):
                            if position not in hidden:
                                taken.append(log[position])
                            position += 1
                    out.extend(taken)
                    positions[tp] = position
                    remaining -= len(taken)
                    last = index
                    if remaining == 0:
                        break
            if last >= 0:
                self._cursor = start + last + 1
            return out

    def assignment(self) -> frozenset[TopicPartition]:
        with self.broker.lock:
            return frozenset(self._positions)

    def position(self, partition: TopicPartition) -> int:
        """The offset of the next record this consumer will fetch from ``partition``."""
        with self.broker.lock:
            self._check_assigned([partition])
            return self._positions[partition]

    def positions(self) -> dict[TopicPartition, int]:
        with self.broker.lock:
            return dict(self._positions)

    def high_watermarks(self, partitions: Collection[TopicPartition]) -> dict[TopicPartition, int]:
        """The end of each assigned partition's log (the in-memory broker has no fetch to wait for)."""
        with self.broker.lock:
            if self._closed:
                return {}
            found: dict[TopicPartition, int] = {}
            for tp in partitions:
                log = self.broker.log(tp) if tp in self._positions else None
                if log is not None:
                    found[tp] = len(log)
            return found

    def seek(self, partition: TopicPartition, offset: int) -> None:
        """Fetch ``partition`` from ``offset`` next."""
        if offset < 0:
            raise ConnectError(f"Cannot seek {partition} to negative offset {offset}")
        with self.broker.lock:
            self._check_assigned([partition])
            self._positions[partition] = offset

    def pause(self, partitions: Collection[TopicPartition]) -> None:
        """Stop fetching ``partitions`` until :meth:`resume`; they stay assigned."""
        with self.broker.lock:
            self._check_assigned(partitions)
            self._paused.update(partitions)
            self._fetch_order = None

    def resume(self, partitions: Collection[TopicPartition]) -> None:
        with self.broker.lock:
            self._check_assigned(partitions)
            self._paused.difference_update(partitions)
            self._fetch_order = None

    def paused(self) -> frozenset[TopicPartition]:
        with self.broker.lock:
            return frozenset(self._paused)

    def commit(
        self,
        offsets: Mapping[TopicPartition, int],
        asynchronous: bool,
        on_complete: CommitCallback | None = None,
    ) -> None:
        """Store next-offsets-to-consume for the group now.

        A synchronous commit raises on failure and calls ``on_complete`` before returning; an asynchronous one
        stores nothing on failure and reports either way through ``on_complete`` at the next :meth:`poll`.
        """
        with self.broker.lock:
            self._check_open()
            if self._group is None:
                raise ConnectError("commit needs a group id")
            offsets = dict(offsets)
            error = self._group.commit(offsets)
            if asynchronous:
                if on_complete is not None:
                    self._completions.append((on_complete, error, offsets))
                return
        if error is not None:
            raise error
        if on_complete is not None:
            on_complete(None, offsets)

    def committed(self, partitions: Collection[TopicPartition]) -> dict[TopicPartition, int | None]:
        with self.broker.lock:
            stored = self._group.committed if self._group is not None else {}
            return {tp: stored.get(tp) for tp in partitions}

    def close(self) -> None:
        """Leave the group without calling the listener; pending commit callbacks are dropped."""
        with self.broker.lock:
            if self._closed:
                return
            self._closed = True
            if self._group is not None and self._member is not None:
                self._group.leave(self._member)
            self._member = None
            self._positions.clear()
            self._paused.clear()
            self._completions.clear()
            self._fetch_order = None

    def _initial_position(self, tp: TopicPartition) -> int:
        committed = self._group.committed.get(tp) if self._group is not None else None
        if committed is not None:
            return committed
        if self._reset == "latest":
            log = self.broker.log(tp)
            return len(log) if log is not None else 0
        return 0

    def _drop(self, partitions: Collection[TopicPartition]) -> None:
        for tp in partitions:
            self._positions.pop(tp, None)
            self._paused.discard(tp)
        self._fetch_order = None

    def _check_assigned(self, partitions: Collection[TopicPartition]) -> None:
        missing = sorted(tp for tp in partitions if tp not in self._positions)
        if missing:
            raise ConnectError(f"Partitions {', '.join(map(str, missing))} are not assigned to this consumer")

    def _check_open(self) -> None:
        if self._closed:
            raise ConnectError("Consumer is closed")

    def __repr__(self) -> str:
        return (
            f"MemoryConsumer(group={self.group_id!r}, member={self.member_id!r}, "
            f"positions={ {str(tp): p for tp, p in sorted(self._positions.items())} }, "
            f"paused={sorted(map(str, self._paused))})"
        )
