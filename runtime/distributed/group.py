"""A consumer group whose partitions are slots: the group coordinator decides which worker owns which slot.

Each worker's :class:`SlotGroup` joins the group through its transport's
:class:`~headwater.runtime.transport.base.GroupMember` (a Kafka consumer with cooperative-sticky assignment that
never fetches, or the in-memory broker's group), subscribed to the slot topics the configs call for. The coordinator
spreads the partitions evenly, moves as few as it can, and takes a partition from its owner, which must give it up,
before it hands it to another worker. A worker that stops heartbeating for ``session.timeout.ms`` loses its
partitions to the others; a worker that closes its group gives them up at once. Membership, failure detection and
rebalancing are all the coordinator's; the group only reports what it decided, from inside :meth:`poll` and
:meth:`close`, to ``on_assigned`` and ``on_revoked`` (``lost=True`` when the partitions were taken without a
revocation, after this worker missed its session timeout).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Mapping
from typing import Any

from headwater.runtime.distributed.slots import Slot
from headwater.runtime.transport.base import MissingTopicError, NewTopic, Transport
from headwater.sdk.records import TopicPartition

log = logging.getLogger(__name__)

Assigned = Callable[[list[Slot]], None]
Revoked = Callable[[list[Slot], bool], None]


class SlotGroup:
    """The slots ``group_id`` gives this worker on ``transport``'s cluster. ``config`` holds the membership's client
    settings (``session.timeout.ms``, ...). Not thread-safe: one thread subscribes, polls and closes, and the
    callbacks run on it."""

    def __init__(
        self,
        transport: Transport,
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
        self._admin = transport.admin()
        self.member = transport.group_member(group_id, config, self)
        """This worker's membership of the group."""

    def subscribe(self, topics: Mapping[str, int]) -> None:
        """Own slots of ``topics`` (topic -> partition count) from now on, creating the topics that are missing;
        slots of topics left out are revoked at the next :meth:`poll`. No-op when nothing changed."""
        wanted = dict(topics)
        if wanted == self.topics:
            return
        self.ensure_topics({t: n for t, n in wanted.items() if t not in self.topics})
        self.topics = wanted  # before the revocations it may cause
        self.member.subscribe(sorted(wanted))

    def ensure_topics(self, topics: Mapping[str, int]) -> None:
        """Create those of ``topics`` that do not exist (another worker may be creating them too)."""
        if topics:
            self._admin.create_topics([NewTopic(t, n, self.replication_factor) for t, n in topics.items()])

    def delete_topics(self, topics: list[str]) -> None:
        """Delete slot topics no config calls for any more, without waiting; failures are only logged."""
        if topics:
            self._admin.delete_topics(topics, wait=False)

    def poll(self, timeout_s: float) -> None:
        """Serve the group: rebalance callbacks run here."""
        try:
            self.member.poll(int(timeout_s * 1000))
        except MissingTopicError as error:
            # a slot topic was deleted while still wanted (a connector deleted and re-created with the same
            # task configs): create it again, or its slots would never be handed out
            log.warning("%s; creating the slot topics again", error)
            self.ensure_topics(self.topics)

    def close(self) -> None:
        """Give up every slot (``on_revoked`` runs first) and leave the group. Idempotent."""
        self.member.close()

    # ---- the member's rebalance listener (inside poll and close) ---------------------------------------------

    def on_partitions_assigned(self, partitions: Collection[TopicPartition]) -> None:
        slots = _slots(partitions)
        self.owned.update(slots)
        if slots:
            log.info("group %s: assigned %s", self.group_id, ", ".join(map(str, slots)))
            self._on_assigned(slots)

    def on_partitions_revoked(self, partitions: Collection[TopicPartition]) -> None:
        self._give_up(_slots(partitions), lost=False)

    def on_partitions_lost(self, partitions: Collection[TopicPartition]) -> None:
        self._give_up(_slots(partitions), lost=True)

    def _give_up(self, slots: list[Slot], lost: bool) -> None:
        try:
            if slots:
                log.info("group %s: %s %s", self.group_id, "lost" if lost else "revoked", ", ".join(map(str, slots)))
                self._on_revoked(slots, lost)
        finally:
            self.owned.difference_update(slots)

    def __repr__(self) -> str:
        owned = ", ".join(map(str, sorted(self.owned)))
        return f"SlotGroup({self.group_id!r}, {len(self.topics)} topics, owns [{owned}])"


def _slots(partitions: Collection[TopicPartition]) -> list[Slot]:
    return sorted(Slot(tp.topic, tp.partition) for tp in partitions)
