"""The partition monitor (KIP-310): watches the source cluster's matching topic partitions on a thread of its
own and asks for a task reconfiguration when they change, or when their leaders do if that is enabled."""

from __future__ import annotations

import contextvars
import logging
import threading
from collections.abc import Callable

from headwater.reference_connectors.kafka_mirror.partitions import LeaderTopicPartition
from headwater.sdk import ConnectError

log = logging.getLogger(__name__)

Fetch = Callable[[], frozenset[LeaderTopicPartition]]
"""Returns the matching partitions with their leaders; raises when the source cluster does not answer in time."""


class PartitionMonitor:
    """Calls ``fetch`` once in :meth:`start` (a failure fails the connector), then every ``interval_ms`` on its
    thread; ``on_change`` is called from that thread after a check that found a change. Failed checks are logged
    and the next one runs at the next interval."""

    def __init__(
        self,
        fetch: Fetch,
        interval_ms: int,
        on_change: Callable[[], None],
        leaders_matter: bool = False,
        name: str = "kafka-mirror",
    ) -> None:
        self._fetch = fetch
        self._interval_s = interval_ms / 1000
        self._on_change = on_change
        self._leaders_matter = leaders_matter
        self._name = name
        self._lock = threading.Lock()
        self._current: frozenset[LeaderTopicPartition] = frozenset()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self.checks = 0
        self.changes = 0
        self.failures = 0

    def start(self) -> None:
        """Fetch the partitions (blocking), then start the thread. Raises :class:`ConnectError` when the first
        fetch fails."""
        try:
            found = self._fetch()
        except Exception as error:
            raise ConnectError(f"{self._name}: cannot list the source cluster's topics: {error}") from error
        with self._lock:
            self._current = found
        log.info("%s: %d matching partitions on the source cluster", self._name, len(found))
        self._thread = threading.Thread(  # in the connector's logging context: its lines say which connector
            target=contextvars.copy_context().run,
            args=(self._run,),
            name=f"{self._name}-partition-monitor",
            daemon=True,
        )
        self._thread.start()

    @property
    def partitions(self) -> frozenset[LeaderTopicPartition]:
        """The partitions found by the latest successful check."""
        with self._lock:
            return self._current

    def check(self) -> bool:
        """Fetch once; call ``on_change`` and return True when what matters changed."""
        self.checks += 1
        try:
            found = self._fetch()
        except Exception as error:
            self.failures += 1
            log.error("%s: checking the source cluster's partitions failed: %s", self._name, error)
            return False
        with self._lock:
            previous, self._current = self._current, found
        if self._identity(found) == self._identity(previous):
            return False
        self.changes += 1
        log.info("%s: matching partitions changed (%d -> %d); reconfiguring", self._name, len(previous), len(found))
        self._on_change()
        return True

    def _identity(self, partitions: frozenset[LeaderTopicPartition]) -> frozenset[object]:
        if self._leaders_matter:
            return frozenset(partitions)
        return frozenset(p.topic_partition for p in partitions)

    def _run(self) -> None:
        while not self._stopping.wait(self._interval_s):
            try:
                self.check()
            except Exception:
                log.exception("%s: partition monitor check failed", self._name)

    def stop(self, timeout_ms: int) -> bool:
        """Stop the thread, waiting at most ``timeout_ms`` for a running check; return whether it ended."""
        self._stopping.set()
        if self._thread is None:
            return True
        self._thread.join(timeout_ms / 1000)
        if self._thread.is_alive():
            log.warning("%s: partition monitor still busy after %d ms; left to finish alone", self._name, timeout_ms)
            return False
        return True

    def __repr__(self) -> str:
        alive = self._thread is not None and self._thread.is_alive()
        return (
            f"PartitionMonitor({self._name}, partitions={len(self.partitions)}, checks={self.checks}, "
            f"changes={self.changes}, failures={self.failures}, running={alive})"
        )
