"""The in-memory broker's consumer: a member of a consumer group (whose coordinator is
:mod:`~headwater.runtime.transport.memory.coordinator`) or manually assigned partitions, fetching without waiting.

In a group, each ``poll`` applies what the group changed since the last one, cooperatively: it first revokes what
the member owns beyond its target, and only then claims the target partitions nobody owns any more.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from headwater.runtime.transport.base import (
    ISOLATION_LEVEL,
    READ_COMMITTED,
    READ_UNCOMMITTED,
    CommitCallback,
    Message,
    RebalanceListener,
    matching,
)
from headwater.runtime.transport.memory.coordinator import ConsumerGroup, Member
from headwater.runtime.transport.memory.state import BrokerState
from headwater.sdk.errors import ConfigError, ConnectError
from headwater.sdk.records import TopicPartition

_Completion = tuple[CommitCallback, Exception | None, dict[TopicPartition, int]]


class MemoryConsumer:
    """A consumer of the in-memory broker whose ``state`` it takes, in a group (:meth:`subscribe`) or manually
    assigned (:meth:`assign`)."""

    def __init__(self, state: BrokerState, group_id: str | None, config: Mapping[str, Any]) -> None:
        reset = config.get("auto.offset.reset", "earliest")
        if reset not in ("earliest", "latest"):
            raise ConfigError("auto.offset.reset", reset, "must be 'earliest' or 'latest'")
        self.state = state
        self.group_id = group_id
        self._reset: str = reset
        isolation = config.get(ISOLATION_LEVEL, READ_COMMITTED)
        if isolation not in (READ_COMMITTED, READ_UNCOMMITTED):
            raise ConfigError(ISOLATION_LEVEL, isolation, f"must be {READ_COMMITTED!r} or {READ_UNCOMMITTED!r}")
        self._committed_only = isolation == READ_COMMITTED
        self._group = state.consumer_group(group_id) if group_id is not None else None
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
        with self.state.lock:
            self._pattern = pattern
            self._pattern_version = self.state.metadata_version
            topics = matching(pattern, self.state.topics())
        self._subscribe(topics, listener)

    def _follow_pattern(self) -> None:
        """Subscribe again when the broker's topics changed since the pattern was last matched."""
        with self.state.lock:
            pattern, listener = self._pattern, self._listener
            if pattern is None or listener is None or self._pattern_version == self.state.metadata_version:
                return
            self._pattern_version = self.state.metadata_version
            topics = matching(pattern, self.state.topics())
            if frozenset(topics) == self._topics:
                return
        self._subscribe(topics, listener)

    def _subscribe(self, topics: Sequence[str], listener: RebalanceListener) -> None:
        with self.state.lock:
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
        with self.state.lock:
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
        with self.state.lock:
            self._check_open()
            if self._member is None and not self._manual:
                raise ConnectError("Consumer is neither subscribed nor assigned")
        self._serve_completions()
        self._follow_pattern()
        self._rebalance()
        return self._fetch(max_records)

    def _serve_completions(self) -> None:
        with self.state.lock:
            ready, self._completions = self._completions, []
        for served, (callback, error, offsets) in enumerate(ready, 1):
            try:
                callback(error, offsets)
            except BaseException:
                with self.state.lock:
                    self._completions[:0] = ready[served:]
                raise

    def _rebalance(self) -> None:
        lock, group, member, listener = self.state.lock, self._group, self._member, self._listener
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
            with self.state.lock:
                self._drop(lost)
                if self._member is member and not self._closed:
                    self._member = group.join(self._topics)

    def _fetch(self, max_records: int) -> list[Message]:
        with self.state.lock:
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
            transactions = self.state.transactions
            while remaining > 0:
                ready = []
                for index, tp in enumerate(rotated):
                    log = self.state.log(tp)
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
        with self.state.lock:
            return frozenset(self._positions)

    def position(self, partition: TopicPartition) -> int:
        """The offset of the next record this consumer will fetch from ``partition``."""
        with self.state.lock:
            self._check_assigned([partition])
            return self._positions[partition]

    def positions(self) -> dict[TopicPartition, int]:
        with self.state.lock:
            return dict(self._positions)

    def high_watermarks(self, partitions: Collection[TopicPartition]) -> dict[TopicPartition, int]:
        """The end of each assigned partition's log (the in-memory broker has no fetch to wait for)."""
        with self.state.lock:
            if self._closed:
                return {}
            found: dict[TopicPartition, int] = {}
            for tp in partitions:
                log = self.state.log(tp) if tp in self._positions else None
                if log is not None:
                    found[tp] = len(log)
            return found

    def seek(self, partition: TopicPartition, offset: int) -> None:
        """Fetch ``partition`` from ``offset`` next."""
        if offset < 0:
            raise ConnectError(f"Cannot seek {partition} to negative offset {offset}")
        with self.state.lock:
            self._check_assigned([partition])
            self._positions[partition] = offset

    def pause(self, partitions: Collection[TopicPartition]) -> None:
        """Stop fetching ``partitions`` until :meth:`resume`; they stay assigned."""
        with self.state.lock:
            self._check_assigned(partitions)
            self._paused.update(partitions)
            self._fetch_order = None

    def resume(self, partitions: Collection[TopicPartition]) -> None:
        with self.state.lock:
            self._check_assigned(partitions)
            self._paused.difference_update(partitions)
            self._fetch_order = None

    def paused(self) -> frozenset[TopicPartition]:
        with self.state.lock:
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
        with self.state.lock:
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
        with self.state.lock:
            stored = self._group.committed if self._group is not None else {}
            return {tp: stored.get(tp) for tp in partitions}

    def close(self) -> None:
        """Leave the group without calling the listener; pending commit callbacks are dropped."""
        with self.state.lock:
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
            log = self.state.log(tp)
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
