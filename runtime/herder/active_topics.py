"""The topics each connector actively uses (KIP-558), recorded in the status store.

The task loops note, on their own threads, each topic they used: a source task once the broker acknowledged a
record sent to it (the heartbeat topic included), a sink task once it consumed and put a record from it. The
herder hands its tasks to :meth:`ActiveTopics.track` at each tick and after they stop; a topic a task noted that
the status store does not list for the connector yet is written there as
``status-topic-<topic>:connector-<connector>``. :meth:`ActiveTopics.reset` tombstones a connector's topics and
clears what its tasks noted, so a topic comes back only when a record flows through it again.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from headwater.runtime.storage.status import StatusStore
from headwater.runtime.tasks.base import WorkerTask
from headwater.sdk.context import Clock
from headwater.sdk.errors import ConnectError

log = logging.getLogger(__name__)


class ActiveTopics:
    """Writes the topics ``tasks`` used to ``store``; does nothing at all when ``enabled`` is false (then no
    ``status-topic-`` record is ever written). Not thread-safe: the herder calls it holding its lock."""

    def __init__(self, store: StatusStore, clock: Clock, enabled: bool = True) -> None:
        self.store = store
        self.clock = clock
        self.enabled = enabled

    def track(self, tasks: Iterable[WorkerTask]) -> dict[str, set[str]]:
        """Record every topic one of ``tasks`` used that the store does not list for its connector yet; return the
        topics written, by connector."""
        written: dict[str, set[str]] = {}
        if not self.enabled:
            return written
        known: dict[str, set[str]] = {}
        for task in tasks:
            noted = _noted(task)
            if not noted:
                continue
            connector = task.id.connector
            if connector not in known:
                known[connector] = set(self.topics(connector))
            for topic in sorted(noted - known[connector]):
                try:
                    self.store.put_topic(connector, topic, task.id.task, self.clock.now_ms())
                except (ConnectError, ValueError) as error:
                    log.error("cannot record topic %s as active for connector %s: %s", topic, connector, error)
                    continue
                known[connector].add(topic)
                written.setdefault(connector, set()).add(topic)
        return written

    def topics(self, connector: str) -> list[str]:
        """The connector's active topics, sorted; none for a connector that does not exist."""
        return [status.topic for status in self.store.topics(connector)]

    def reset(self, connector: str, tasks: Iterable[WorkerTask] = ()) -> None:
        """Tombstone the connector's topics and forget what its running ``tasks`` noted so far."""
        if not self.enabled:
            return
        for task in tasks:
            if task.id.connector == connector:
                noted = getattr(task, "active_topics", None)
                if isinstance(noted, set):
                    noted.clear()
        self.store.delete_topics(connector)

    def __repr__(self) -> str:
        return f"ActiveTopics(enabled={self.enabled}, store={self.store!r})"


def _noted(task: WorkerTask) -> frozenset[str]:
    """A copy of the topics the task loop noted (it adds to the set on its own thread)."""
    noted = getattr(task, "active_topics", None)
    return frozenset(noted) if isinstance(noted, set) else frozenset()
