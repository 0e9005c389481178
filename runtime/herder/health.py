"""Whether a worker can serve requests: Kafka Connect's health check (KIP-1017, ``GET /health``).

A worker is *starting* until its command marks its herder ready: a standalone worker once the connectors of its
config files were submitted (Kafka's ``ConnectStandalone``), a distributed one once its loop has completed a first
pass after reading the config topic to its end (Kafka's ``DistributedHerder.run``). A ready worker is *healthy*
when, within the check's deadline, its herder can be taken (no request or loop pass holds it) and, for a herder
driven by a loop, that loop completes a pass after the check began (Kafka's check is a request its herder's tick
thread serves). Otherwise it is *unhealthy*, and the answer says what the herder was doing. A ready worker is also
*unhealthy* while its Kafka cluster has not answered for longer than ``health.broker.unreachable.ms`` (Headwater's
own addition: Kafka's check asks its herder only, which stays responsive through an outage), and the answer says
since when, where and the last error (:class:`~headwater.runtime.transport.reachability.BrokerReachability`).
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from typing import NamedTuple

from headwater.runtime.transport.reachability import BrokerReachability

DEFAULT_TIMEOUT_S = 10.0
"""How long a health check waits for the herder (Kafka's ``RestServer.DEFAULT_HEALTH_CHECK_TIMEOUT_MS``)."""

HEALTHY = "Worker has completed startup and is ready to handle requests."
STARTING = "Worker is still starting up."
UNHEALTHY = "Worker was unable to handle this request and may be unable to handle other requests."


class HealthStatus(NamedTuple):
    """A health check's answer: the HTTP status (200, 503 starting, 500 unhealthy) and Kafka's
    ``WorkerStatus`` body."""

    code: int
    status: str
    message: str

    def body(self) -> dict[str, str]:
        return {"status": self.status, "message": self.message}


class Health:
    """The readiness and liveness of one herder. The worker command calls :meth:`starting` and :meth:`ready`;
    the herder's loop runs each pass inside :meth:`tick`; :meth:`check` answers ``GET /health`` (any thread)."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._ready = False
        self._stage = "the worker has not started its herder"
        self._passes = 0
        self._pass_began: float | None = None
        self._looping = False

    @property
    def is_ready(self) -> bool:
        with self._changed:
            return self._ready

    def starting(self, stage: str) -> None:
        """Say what the starting worker is doing (shown while it is not ready)."""
        with self._changed:
            self._stage = stage

    def ready(self) -> None:
        """The worker has started: from now on it is healthy or unhealthy, never starting again."""
        with self._changed:
            self._ready = True
            self._changed.notify_all()

    @contextlib.contextmanager
    def tick(self) -> Iterator[None]:
        """One pass of the herder's loop (a pass that raises counts as completed: the loop goes on)."""
        with self._changed:
            self._looping = True
            self._pass_began = time.monotonic()
        try:
            yield
        finally:
            with self._changed:
                self._passes += 1
                self._pass_began = None
                self._changed.notify_all()

    def check(
        self,
        herder_lock: threading.RLock,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        broker: BrokerReachability | None = None,
    ) -> HealthStatus:
        """Starting (503) at once while not ready; else unhealthy (500) at once while ``broker`` is unreachable;
        else healthy (200) when ``herder_lock`` can be taken and a loop pass (if there is a loop) completes within
        ``timeout_s``, unhealthy (500) otherwise."""
        deadline = time.monotonic() + timeout_s
        with self._changed:
            if not self._ready:
                return HealthStatus(503, "starting", f"{STARTING} {self._stage[:1].upper()}{self._stage[1:]}.")
            seen = self._passes
        problem = broker.problem() if broker is not None else None
        if problem is not None:
            return HealthStatus(500, "unhealthy", f"{problem[:1].upper()}{problem[1:]}.")
        if not herder_lock.acquire(timeout=timeout_s):
            held = f"Its herder was held by a request or a loop pass for over {timeout_s:g} s."
            return HealthStatus(500, "unhealthy", f"{UNHEALTHY} {held}")
        herder_lock.release()
        with self._changed:
            if not self._looping:
                return HealthStatus(200, "healthy", HEALTHY)
            while self._passes == seen:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return HealthStatus(500, "unhealthy", f"{UNHEALTHY} {self._stuck(timeout_s)}")
                self._changed.wait(remaining)
        return HealthStatus(200, "healthy", HEALTHY)

    def _stuck(self, timeout_s: float) -> str:
        if self._pass_began is None:
            return f"Its herder's loop has not begun a pass for over {timeout_s:g} s."
        return f"A pass of its herder's loop has not completed for {time.monotonic() - self._pass_began:.1f} s."

    def __repr__(self) -> str:
        with self._changed:
            state = "ready" if self._ready else f"starting: {self._stage}"
            return f"Health({state}, {self._passes} passes)"
