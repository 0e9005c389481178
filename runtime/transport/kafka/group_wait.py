"""A group consumer waiting for its group to rebalance says so in the log.

A consumer that subscribes (or loses or gives up its partitions) has none until the group's coordinator completes a
rebalance, and the coordinator waits for every member it knows to join again: a member of a worker killed without
leaving the group (SIGKILL, a lost host) is only dropped once its session expires, ``session.timeout.ms`` after its
last heartbeat (Kafka's ``GroupCoordinator``), and one that still heartbeats gets up to its ``max.poll.interval.ms``
(the rebalance timeout). Meanwhile the sink task is RUNNING and reads nothing; :class:`GroupWait` logs what it waits
for and until when once the wait passes :data:`FIRST_SAY_S`, again every :data:`REPEAT_S` (a warning once past
``session.timeout.ms``), and a line when the partitions come. A join that completes, even with no partitions (a group
with more members than partitions), ends the wait.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from typing import Any

log = logging.getLogger(__name__)

FIRST_SAY_S = 5.0
"""How long a wait lasts before it is logged: a rebalance among live members takes about a heartbeat interval."""
REPEAT_S = 30.0
"""How often a wait that goes on is logged again."""
SESSION_TIMEOUT_MS = 45_000
MAX_POLL_INTERVAL_MS = 300_000
"""librdkafka's defaults (Kafka's since 3.0 and ever) for a consumer config that does not set them."""


def _clock_time(wall: float) -> str:
    return time.strftime("%H:%M:%S", time.localtime(wall))


class GroupWait:
    """The wait of one consumer of ``group_id`` (its ``config`` gives the session and rebalance timeouts) for a
    rebalance: :meth:`joining` when it begins, :meth:`joined` when the coordinator assigns (even nothing),
    :meth:`check` at each poll, which logs when due. ``monotonic`` and ``wall`` are the clocks (seconds)."""

    def __init__(
        self,
        group_id: str,
        config: Mapping[str, Any],
        monotonic: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
    ) -> None:
        self.group_id = group_id
        self.session_timeout_ms = int(config.get("session.timeout.ms") or SESSION_TIMEOUT_MS)
        self.max_poll_interval_ms = int(config.get("max.poll.interval.ms") or MAX_POLL_INTERVAL_MS)
        self._monotonic = monotonic
        self._wall = wall
        self._since: float | None = None
        self._since_wall = 0.0
        self._next_say = 0.0
        self._said = False

    @property
    def waiting(self) -> bool:
        return self._since is not None

    def joining(self) -> None:
        """The consumer has no partitions and asks the group for some (a wait already begun goes on)."""
        if self._since is None:
            self._since, self._since_wall = self._monotonic(), self._wall()
            self._next_say, self._said = self._since + FIRST_SAY_S, False

    def joined(self, partitions: int) -> None:
        """The coordinator completed a rebalance, assigning ``partitions`` partitions to this consumer."""
        if self._since is not None and self._said:
            log.info(
                "the group %s rebalanced after %.1f s: %d partition(s) assigned",
                self.group_id,
                self._monotonic() - self._since,
                partitions,
            )
        self._since = None

    def left(self) -> None:
        """The consumer unsubscribed or closes: nothing to wait for."""
        self._since = None

    def check(self) -> None:
        """Log the wait when it is due (the first time after :data:`FIRST_SAY_S`, then every :data:`REPEAT_S`)."""
        if self._since is None:
            return
        now = self._monotonic()
        if now < self._next_say:
            return
        self._next_say = now + REPEAT_S
        self._said = True
        waited_s = now - self._since
        since = _clock_time(self._since_wall)
        if waited_s * 1000 <= self.session_timeout_ms:
            log.info(
                "waiting for the group %s to rebalance: no partitions assigned since %s (%.0f s); the group "
                "coordinator may wait up to session.timeout.ms=%d ms, until about %s, for members of a worker "
                "that stopped without leaving the group (killed, say) to expire",
                self.group_id,
                since,
                waited_s,
                self.session_timeout_ms,
                _clock_time(self._since_wall + self.session_timeout_ms / 1000),
            )
        else:
            log.warning(
                "still waiting for the group %s to rebalance: no partitions assigned since %s (%.0f s), longer than "
                "session.timeout.ms=%d ms; the group coordinator waits for each live member to rejoin for up to "
                "max.poll.interval.ms=%d ms (until about %s), or it is not reachable",
                self.group_id,
                since,
                waited_s,
                self.session_timeout_ms,
                self.max_poll_interval_ms,
                _clock_time(self._since_wall + self.max_poll_interval_ms / 1000),
            )

    def __repr__(self) -> str:
        state = f"waiting since {_clock_time(self._since_wall)}" if self._since is not None else "not waiting"
        return f"GroupWait({self.group_id}, {state})"
