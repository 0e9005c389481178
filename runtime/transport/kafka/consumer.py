"""The consumer on a real Kafka cluster: confluent-kafka's, with the sink loop's view of positions and rebalances.

Consumers use cooperative-sticky assignment with auto-commit off (the transport's defaults); the sink loop commits.
Rebalance callbacks reach the loop's listener from inside ``poll``; ``seek`` calls made while partitions are being
assigned become the offsets they are assigned at (librdkafka cannot seek a partition it is not fetching yet). A
consumer without partitions waiting for its group to rebalance says so in the log (:mod:`.group_wait`).
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections import deque
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from confluent_kafka import OFFSET_INVALID, KafkaError, KafkaException
from confluent_kafka import Consumer as RdConsumer
from confluent_kafka import TopicPartition as RdTopicPartition

from headwater.runtime.transport.base import (
    DEFAULT_METADATA_MAX_AGE_MS,
    METADATA_MAX_AGE,
    CommitCallback,
    Message,
    RebalanceListener,
    matching,
)
from headwater.runtime.transport.kafka.admin import ADMIN_TIMEOUT_S
from headwater.runtime.transport.kafka.errors import TOPIC_MISSING, connect_error
from headwater.runtime.transport.kafka.group_wait import GroupWait
from headwater.runtime.transport.kafka.records import KafkaRecords
from headwater.sdk.errors import ConnectError
from headwater.sdk.records import TopicPartition

log = logging.getLogger(__name__)

WATERMARK_RETRY_S = 30.0
"""How long a newly assigned partition's watermarks are asked for again while the broker answers a retriable error."""

LEADER_MOVING = frozenset(
    {KafkaError.NOT_LEADER_FOR_PARTITION, KafkaError.LEADER_NOT_AVAILABLE, KafkaError.UNKNOWN_TOPIC_OR_PART}
)
"""Errors a partition answers while its leader is being elected (librdkafka does not flag them retriable here)."""


def _rd(partitions: Collection[TopicPartition]) -> list[RdTopicPartition]:
    return [RdTopicPartition(tp.topic, tp.partition) for tp in partitions]


def _ours(partitions: Sequence[RdTopicPartition]) -> list[TopicPartition]:
    return [TopicPartition(p.topic, p.partition) for p in partitions]


class KafkaConsumer:
    def __init__(self, config: Mapping[str, Any]) -> None:
        self._reset = str(config.get("auto.offset.reset", "earliest"))
        self._commits: deque[tuple[dict[TopicPartition, int], CommitCallback | None]] = deque()
        self._consumer = RdConsumer({**config, "on_commit": self._on_commit})
        self._group_wait = GroupWait(str(config.get("group.id")), config)
        self._missing_said: set[str] = set()
        self._listener: RebalanceListener | None = None
        self._assigning: dict[TopicPartition, int] | None = None
        self._overrides: dict[TopicPartition, int] = {}
        """Positions set by an assignment or a seek, until the partition returns a record (librdkafka's own
        position is not updated before then)."""
        self._paused: set[TopicPartition] = set()
        self._callback_error: BaseException | None = None
        self._closing = False
        self._pattern: re.Pattern[str] | None = None
        self._pattern_topics: list[str] | None = None
        """The topics matching :attr:`_pattern` this consumer subscribed to (``None``: not yet)."""
        self._pattern_refresh_s = int(config.get(METADATA_MAX_AGE) or DEFAULT_METADATA_MAX_AGE_MS) / 1000
        self._next_pattern_refresh = 0.0
        self._closing_lock = threading.Lock()
        """Held while :meth:`high_watermarks` reads the client from another thread, and while :meth:`close` marks
        it closing."""

    # ---- membership ------------------------------------------------------------------------------------------

    def subscribe(self, topics: Sequence[str], listener: RebalanceListener) -> None:
        self._listener = listener
        self._pattern = None
        self._consumer.subscribe(
            list(topics), on_assign=self._on_assign, on_revoke=self._on_revoke, on_lost=self._on_lost
        )
        self._group_wait.joining()

    def subscribe_pattern(self, pattern: re.Pattern[str], listener: RebalanceListener) -> None:
        """See :meth:`Consumer.subscribe_pattern`. The pattern is matched here, not by librdkafka (whose regular
        expressions are POSIX ones, not Python's): this consumer subscribes to the matching topics by name and
        subscribes again when the set changes."""
        self._listener = listener
        self._pattern = pattern
        self._pattern_topics = None
        self._follow_pattern()

    def _follow_pattern(self) -> None:
        """Subscribe to the topics matching the pattern now, when they changed; look again after
        ``metadata.max.age.ms``. A cluster that does not answer is asked again at the next poll after that."""
        assert self._pattern is not None
        self._next_pattern_refresh = time.monotonic() + self._pattern_refresh_s
        try:
            metadata = self._consumer.list_topics(timeout=ADMIN_TIMEOUT_S)
        except KafkaException as error:
            if self._pattern_topics is None:
                raise connect_error(error) from None
            log.warning("cannot list the topics matching %s, asking again later: %s", self._pattern.pattern, error)
            return
        found = matching(self._pattern, [name for name, topic in metadata.topics.items() if topic.error is None])
        if found == self._pattern_topics:
            return
        log.info("topics matching %s: %s", self._pattern.pattern, found or "none")
        self._pattern_topics = found
        if found:
            self._consumer.subscribe(found, on_assign=self._on_assign, on_revoke=self._on_revoke, on_lost=self._on_lost)
            self._group_wait.joining()
        else:
            self._consumer.unsubscribe()
            self._group_wait.left()

    def assign(self, partitions: Collection[TopicPartition]) -> None:
        starts = [RdTopicPartition(tp.topic, tp.partition, self._initial_position(tp)) for tp in partitions]
        self._consumer.assign(starts)

    def _on_assign(self, consumer: RdConsumer, partitions: list[RdTopicPartition]) -> None:
        assigned = _ours(partitions)
        self._group_wait.joined(len(assigned))  # called at every completed rebalance, with nothing new or not
        self._assigning = {}
        if self._closing:  # an assignment that lands while close() leaves the group: consumed by no one
            consumer.incremental_assign(partitions)
            return
        try:
            # Inside the try: an exception escaping a rebalance callback comes back out of confluent-kafka's
            # consume() as a bare KafkaError, which no ``except Exception`` catches (it killed a task thread).
            self._assigning = self._initial_positions(assigned)
            if self._listener is not None and assigned:
                self._listener.on_partitions_assigned(assigned)
        except BaseException as error:  # surfaced after poll returns, like Java's consumer
            self._callback_error = error
        finally:
            positions = self._assigning or {}
            self._assigning = None
            starts = [  # without a position (its lookup failed): librdkafka's committed offset or reset policy
                RdTopicPartition(tp.topic, tp.partition, positions[tp])
                if tp in positions
                else RdTopicPartition(tp.topic, tp.partition)
                for tp in assigned
            ]
            self._overrides.update(positions)
            consumer.incremental_assign(starts)

    def _on_revoke(self, consumer: RdConsumer, partitions: list[RdTopicPartition]) -> None:
        revoked = _ours(partitions)
        try:
            if self._listener is not None and revoked:
                self._listener.on_partitions_revoked(revoked)
        except BaseException as error:
            self._callback_error = error
        finally:
            for tp in revoked:
                self._overrides.pop(tp, None)
                self._paused.discard(tp)
            consumer.incremental_unassign(partitions)
            self._joining_if_empty(consumer)

    def _on_lost(self, consumer: RdConsumer, partitions: list[RdTopicPartition]) -> None:
        lost = _ours(partitions)
        try:
            if self._listener is not None and lost:
                self._listener.on_partitions_lost(lost)
        except BaseException as error:
            self._callback_error = error
        finally:
            for tp in lost:
                self._overrides.pop(tp, None)
                self._paused.discard(tp)
            consumer.incremental_unassign(partitions)
            self._joining_if_empty(consumer)

    def _joining_if_empty(self, consumer: RdConsumer) -> None:
        """Partitions given up in a rebalance: with none left, the consumer waits for the rebalance to end."""
        if not self._closing and not consumer.assignment():
            self._group_wait.joining()

    def _initial_positions(self, partitions: Collection[TopicPartition]) -> dict[TopicPartition, int]:
        """Where consumption of newly assigned partitions starts: the committed offset, else the reset policy."""
        if not partitions:
            return {}
        found: dict[TopicPartition, int] = {}
        for committed in self._consumer.committed(_rd(partitions), timeout=30):
            tp = TopicPartition(committed.topic, committed.partition)
            if committed.error is None and committed.offset >= 0:
                found[tp] = int(committed.offset)
                continue
            low, high = self._watermarks(tp)
            if self._reset not in ("earliest", "latest"):
                raise ConnectError(f"no committed offset for {tp} and auto.offset.reset={self._reset}")
            found[tp] = int(high if self._reset == "latest" else low)
        return found

    def _initial_position(self, tp: TopicPartition) -> int:
        return self._initial_positions([tp])[tp]

    def _watermarks(self, tp: TopicPartition) -> tuple[int, int]:
        """The partition's low and high watermarks, asking again while its leader is moving (a topic created a
        moment ago answers NOT_LEADER_FOR_PARTITION until its leader is elected)."""
        deadline = time.monotonic() + WATERMARK_RETRY_S
        while True:
            try:
                low, high = self._consumer.get_watermark_offsets(RdTopicPartition(tp.topic, tp.partition), timeout=30)
                return int(low), int(high)
            except KafkaException as error:
                code = error.args[0].code()
                if code not in LEADER_MOVING or time.monotonic() >= deadline:
                    raise connect_error(error) from None
                time.sleep(0.1)

    # ---- fetching --------------------------------------------------------------------------------------------

    def poll(self, max_records: int, timeout_ms: int) -> Sequence[Message]:
        if self._pattern is not None and time.monotonic() >= self._next_pattern_refresh:
            self._follow_pattern()
        raw: list[Any] = self._consumer.consume(max_records, timeout_ms / 1000)
        self._group_wait.check()
        if self._callback_error is not None:
            error, self._callback_error = self._callback_error, None
            raise error
        if not raw:
            return ()
        failed = [item for item in raw if item.error() is not None]
        if failed:
            for item in failed:
                failure = item.error()
                if failure.code() == KafkaError._PARTITION_EOF:
                    continue
                if failure.code() in TOPIC_MISSING:
                    self._warn_missing(failure)
                    continue
                if failure.fatal() or not failure.retriable():
                    raise connect_error(failure)
                log.warning("consumer error, continuing: %s", failure)
            raw = [item for item in raw if item.error() is None]
        if self._overrides:
            # librdkafka's own positions are right again for every partition that returned a record
            for tp in {TopicPartition(item.topic(), item.partition()) for item in raw}:
                self._overrides.pop(tp, None)
        return KafkaRecords(raw)

    def _warn_missing(self, failure: KafkaError) -> None:
        """A subscribed topic the broker does not know (yet): the consumer waits for it, as Java's does, rather than
        fail the task; said once per message librdkafka gives."""
        text = failure.str()
        if text not in self._missing_said:
            self._missing_said.add(text)
            log.warning("%s; waiting for it to be created", text)

    def assignment(self) -> frozenset[TopicPartition]:
        """The assigned partitions, including those being assigned while the listener runs (as with Java's
        consumer, which has them assigned before ``onPartitionsAssigned``), so a sink task may rewind them there."""
        found = frozenset(_ours(self._consumer.assignment()))
        return found | frozenset(self._assigning) if self._assigning else found

    def position(self, partition: TopicPartition) -> int:
        if self._assigning is not None and partition in self._assigning:
            return self._assigning[partition]
        return self._read_positions([partition])[partition]

    def positions(self) -> dict[TopicPartition, int]:
        """Every assigned partition's position, read from librdkafka in one call."""
        return self._read_positions(self._consumer.assignment())

    def _read_positions(self, partitions: Sequence[TopicPartition | RdTopicPartition]) -> dict[TopicPartition, int]:
        """Where an assignment or seek put each partition until it returns a record, then librdkafka's position
        (the offset after the last record it returned)."""
        if not partitions:
            return {}
        found: dict[TopicPartition, int] = {}
        overrides = self._overrides
        asked = [p if isinstance(p, RdTopicPartition) else RdTopicPartition(p.topic, p.partition) for p in partitions]
        for rd in self._consumer.position(asked):
            tp = TopicPartition(rd.topic, rd.partition)
            override = overrides.get(tp)
            if override is not None:
                found[tp] = override
            elif rd.offset == OFFSET_INVALID or rd.offset < 0:
                found[tp] = overrides[tp] = self._initial_position(tp)
            else:
                found[tp] = int(rd.offset)
        return found

    def high_watermarks(self, partitions: Collection[TopicPartition]) -> dict[TopicPartition, int]:
        """librdkafka's cached high watermarks, updated by every fetch response; taken under :attr:`_closing_lock`
        without waiting, so that no call reaches a client :meth:`close` is destroying (``{}`` meanwhile)."""
        if not self._closing_lock.acquire(blocking=False):
            return {}
        try:
            if self._closing:
                return {}
            found: dict[TopicPartition, int] = {}
            for tp in partitions:
                try:
                    _, high = self._consumer.get_watermark_offsets(
                        RdTopicPartition(tp.topic, tp.partition), cached=True
                    )
                except KafkaException as error:  # not assigned any more, say: no lag to tell for it
                    log.debug("no cached high watermark for %s: %s", tp, error)
                    continue
                if high is not None and high >= 0:
                    found[tp] = int(high)
            return found
        finally:
            self._closing_lock.release()

    def seek(self, partition: TopicPartition, offset: int) -> None:
        if self._assigning is not None and partition in self._assigning:
            self._assigning[partition] = offset
            return
        if partition not in self.assignment():
            raise ConnectError(f"cannot seek {partition}: it is not assigned")
        target = RdTopicPartition(partition.topic, partition.partition, offset)
        try:
            self._consumer.seek(target)
        except KafkaException:
            # not fetching yet: restart the partition's assignment at the offset (local, no rebalance)
            self._consumer.incremental_unassign([RdTopicPartition(partition.topic, partition.partition)])
            self._consumer.incremental_assign([target])
        self._overrides[partition] = offset

    def pause(self, partitions: Collection[TopicPartition]) -> None:
        if partitions:
            self._consumer.pause(_rd(partitions))
            self._paused.update(partitions)

    def resume(self, partitions: Collection[TopicPartition]) -> None:
        if partitions:
            self._consumer.resume(_rd(partitions))
            self._paused.difference_update(partitions)

    def paused(self) -> frozenset[TopicPartition]:
        return frozenset(self._paused)

    # ---- commits ---------------------------------------------------------------------------------------------

    def commit(
        self,
        offsets: Mapping[TopicPartition, int],
        asynchronous: bool,
        on_complete: CommitCallback | None = None,
    ) -> None:
        targets = [RdTopicPartition(tp.topic, tp.partition, offset) for tp, offset in offsets.items()]
        if not asynchronous:
            try:
                results = self._consumer.commit(offsets=targets, asynchronous=False)
            except KafkaException as error:
                raise connect_error(error) from None
            for result in results or ():
                if result.error is not None:
                    raise connect_error(result.error)
            return
        self._commits.append((dict(offsets), on_complete))
        try:
            self._consumer.commit(offsets=targets, asynchronous=True)
        except KafkaException as error:
            self._commits.pop()
            raise connect_error(error) from None

    def _on_commit(self, error: KafkaError | None, partitions: list[RdTopicPartition]) -> None:
        if not self._commits:
            return
        offsets, callback = self._commits.popleft()
        failure = error or next((p.error for p in partitions if p.error is not None), None)
        if callback is not None:
            callback(None if failure is None else connect_error(failure), offsets)

    def committed(self, partitions: Collection[TopicPartition]) -> dict[TopicPartition, int | None]:
        found = self._consumer.committed(_rd(partitions), timeout=30)
        return {TopicPartition(p.topic, p.partition): (p.offset if p.offset >= 0 else None) for p in found}

    def close(self) -> None:
        self._listener = None
        with self._closing_lock:
            self._closing = True  # looking up committed offsets from inside close() waits out its whole timeout
        self._group_wait.left()
        self._consumer.close()
