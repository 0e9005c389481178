"""A consumer group whose partitions are slots: Kafka's group coordinator decides which worker owns which slot.

Each worker's :class:`SlotGroup` subscribes a confluent-kafka consumer to the slot topics the configs call for,
with cooperative-sticky assignment, so the coordinator (through the group's elected member, as for any consumer
group) spreads the partitions evenly, moves as few as it can, and takes a partition from its owner, which must give
it up, before it hands it to another worker. A worker that stops heartbeating for ``session.timeout.ms`` loses
its partitions to the others; a worker that closes its group gives them up at once. Membership, failure detection
and rebalancing are all the coordinator's; the group only reports what it decided, from inside :meth:`poll` and
:meth:`close`, to ``on_assigned`` and ``on_revoked`` (``lost=True`` when the partitions were taken without a
revocation, after this worker missed its session timeout). The consumer never fetches: slot topics hold no records.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Mapping
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from headwater.runtime.distributed.slots import Slot
from headwater.sdk.errors import ConnectError

log = logging.getLogger(__name__)

Assigned = Callable[[list[Slot]], None]
Revoked = Callable[[list[Slot], bool], None]

_MISSING_TOPIC = frozenset({KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError._UNKNOWN_TOPIC})
_TIMEOUT_S = 30


class SlotGroup:
    """The slots ``group_id`` gives this worker. ``config`` holds librdkafka settings (``bootstrap.servers``,
    security, ``session.timeout.ms``, ...). Not thread-safe: one thread subscribes, polls and closes, and the
    callbacks run on it."""

    def __init__(
        self,
        group_id: str,
        config: Mapping[str, Any],
        on_assigned: Assigned,
        on_revoked: Revoked,
        replication_factor: int = -1,
    ) -> None:
        self.group_id = group_id
        self.replication_factor = replication_factor
        self.owned: set[Slot] = set()
        self.topics: dict[str, int] = {}
        """The subscription: topic -> partition count."""
        self._on_assigned = on_assigned
        self._on_revoked = on_revoked
        admin: dict[str, Any] = {**config, "logger": log}
        consumer: dict[str, Any] = {
            **config,
            "group.id": group_id,
            "partition.assignment.strategy": "cooperative-sticky",
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "logger": log,
        }
        self._admin = AdminClient(admin)
        self._consumer = Consumer(consumer)
        self._closed = False

    def subscribe(self, topics: Mapping[str, int]) -> None:
        """Own slots of ``topics`` (topic -> partition count) from now on, creating the topics that are missing;
        slots of topics left out are revoked at the next :meth:`poll`. No-op when nothing changed."""
        wanted = dict(topics)
        if wanted == self.topics:
            return
        self.ensure_topics({t: n for t, n in wanted.items() if t not in self.topics})
        self.topics = wanted  # before the revocations it may cause
        if wanted:
            self._consumer.subscribe(sorted(wanted), on_assign=self._assign, on_revoke=self._revoke, on_lost=self._lose)
        else:
            self._consumer.unsubscribe()

    def ensure_topics(self, topics: Mapping[str, int]) -> None:
        """Create those of ``topics`` that do not exist (another worker may be creating them too)."""
        if not topics:
            return
        new = [NewTopic(t, n, self.replication_factor) for t, n in topics.items()]
        for topic, future in self._admin.create_topics(new, operation_timeout=_TIMEOUT_S).items():
            try:
                future.result(timeout=_TIMEOUT_S * 2)
            except KafkaException as error:
                if error.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
                    raise ConnectError(f"cannot create slot topic {topic}: {error.args[0].str()}") from None

    def delete_topics(self, topics: list[str]) -> None:
        """Delete slot topics no config calls for any more, without waiting; failures are only logged."""
        if topics:
            for topic, future in self._admin.delete_topics(topics, operation_timeout=_TIMEOUT_S).items():
                future.add_done_callback(functools.partial(_log_deletion, topic))

    def poll(self, timeout_s: float) -> None:
        """Serve the group: heartbeats run in the background, rebalance callbacks run here."""
        message = self._consumer.poll(timeout_s)
        error = None if message is None else message.error()
        if error is None:
            return
        if error.code() in _MISSING_TOPIC:
            # a slot topic was deleted while still wanted (a connector deleted and re-created with the same
            # task configs): create it again, or its slots would never be handed out
            log.warning("group %s: %s; creating the slot topics again", self.group_id, error.str())
            self.ensure_topics(self.topics)
        elif error.fatal():
            raise ConnectError(f"group {self.group_id}: {error.str()}")
        else:
            log.warning("group %s: %s", self.group_id, error.str())

    def close(self) -> None:
        """Give up every slot (``on_revoked`` runs first) and leave the group. Idempotent."""
        if not self._closed:
            self._closed = True
            self._consumer.close()

    # ---- rebalance callbacks (inside poll and close) ---------------------------------------------------------

    def _assign(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        slots = [Slot(p.topic, p.partition) for p in partitions]
        consumer.incremental_assign(partitions)
        if partitions:
            consumer.pause(partitions)  # nothing to fetch
        self.owned.update(slots)
        if slots:
            log.info("group %s: assigned %s", self.group_id, ", ".join(map(str, sorted(slots))))
            self._call(self._on_assigned, slots)

    def _revoke(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        self._give_up(consumer, partitions, lost=False)

    def _lose(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        self._give_up(consumer, partitions, lost=True)

    def _give_up(self, consumer: Consumer, partitions: list[TopicPartition], lost: bool) -> None:
        slots = [Slot(p.topic, p.partition) for p in partitions]
        try:
            if slots:
                what = "lost" if lost else "revoked"
                log.info("group %s: %s %s", self.group_id, what, ", ".join(map(str, sorted(slots))))
                self._call(self._on_revoked, slots, lost)
        finally:
            self.owned.difference_update(slots)
            consumer.incremental_unassign(partitions)

    def _call(self, callback: Callable[..., None], *args: Any) -> None:
        """Run a callback; what it raises is logged (an exception would surface from an unrelated poll)."""
        try:
            callback(*args)
        except Exception:
            log.exception("group %s: handling a rebalance failed", self.group_id)

    def __repr__(self) -> str:
        owned = ", ".join(map(str, sorted(self.owned)))
        return f"SlotGroup({self.group_id!r}, {len(self.topics)} topics, owns [{owned}])"


def _log_deletion(topic: str, future: Any) -> None:
    error = future.exception()
    if error is not None:
        log.info("slot topic %s was not deleted: %s", topic, error)
    else:
        log.info("deleted slot topic %s", topic)
