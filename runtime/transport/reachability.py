"""Whether a worker reaches its Kafka cluster: the one home of the answer that ``GET /health`` and the
``headwater_connect_worker_broker_*`` metrics give.

A running worker watches its cluster (:meth:`BrokerReachability.watch`): a thread of its own asks the cluster again
and again through a probe (for Kafka, one admin client's metadata request for one internal topic:
:class:`~headwater.runtime.transport.kafka.check.ClusterProbe`), every quarter of the bound and at most every
:data:`PROBE_INTERVAL_MAX_S`, each probe waiting as long. The cluster is *unreachable* once a probe has failed and
none has answered for longer than the bound (``health.broker.unreachable.ms``), and reachable again at the next
answer; the worker logs both changes. A cluster that is not watched (the in-memory transport, a simulated worker)
is always reachable; a test may call :meth:`~BrokerReachability.failed` and :meth:`~BrokerReachability.answered`
itself, as a probe does.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime

log = logging.getLogger(__name__)

BOUND_KEY = "health.broker.unreachable.ms"
DEFAULT_BOUND_MS = 20_000
PROBE_INTERVAL_MAX_S = 5.0

Probe = Callable[[float], str | None]
"""Asks the cluster once, waiting up to the given seconds: None when it answered, else why not."""


class BrokerReachability:
    """When the cluster at ``bootstrap_servers`` last answered, and whether it has been unreachable for longer than
    ``bound_ms``. ``monotonic`` and ``wall`` are the clocks (seconds), replaceable in tests. Thread-safe."""

    def __init__(
        self,
        bootstrap_servers: str = "",
        bound_ms: int = DEFAULT_BOUND_MS,
        monotonic: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
    ) -> None:
        self.bootstrap_servers = bootstrap_servers
        self.bound_ms = bound_ms
        self._monotonic = monotonic
        self._wall = wall
        self._lock = threading.Lock()
        self._answered_at = monotonic()
        self._answered_wall = wall()
        self._failing = False
        self._last_error: str | None = None
        self._warned = False
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # ---- what a probe reports ----------------------------------------------------------------------------------

    def answered(self) -> None:
        """The cluster answered a request just now."""
        with self._lock:
            was_warned, silent_s = self._warned, self._monotonic() - self._answered_at
            self._answered_at, self._answered_wall = self._monotonic(), self._wall()
            self._failing, self._last_error, self._warned = False, None, False
        if was_warned:
            log.info("the Kafka cluster at %s answers again, after %.1f s without an answer", self._where, silent_s)

    def failed(self, reason: str) -> None:
        """A request to the cluster got no answer, for ``reason``; logged as a warning (once an outage) when the
        cluster has now been unreachable past the bound."""
        with self._lock:
            self._failing, self._last_error = True, reason
            problem = self._problem()
            warn = problem is not None and not self._warned
            self._warned |= warn
        if warn:
            log.warning("%s; GET /health answers 500 until it answers again", problem)

    # ---- what the health check and the metrics read ------------------------------------------------------------

    def unreachable_s(self) -> float:
        """Seconds since the cluster last answered, while requests to it fail; 0 while it answers."""
        with self._lock:
            return self._silent_s()

    @property
    def reachable(self) -> bool:
        """False once the cluster has been unreachable for longer than the bound."""
        return self.problem() is None

    def problem(self) -> str | None:
        """None while the cluster is reachable, else since when it is not, where, and the last error."""
        with self._lock:
            return self._problem()

    def _silent_s(self) -> float:
        return self._monotonic() - self._answered_at if self._failing else 0.0

    def _problem(self) -> str | None:
        silent_s = self._silent_s()
        if silent_s * 1000 <= self.bound_ms:
            return None
        since = datetime.fromtimestamp(self._answered_wall, UTC).isoformat(timespec="seconds")
        return (
            f"the worker cannot reach the Kafka cluster at {self._where}: no answer since {since} ({silent_s:.1f} s, "
            f"more than {BOUND_KEY}={self.bound_ms}); last error: {self._last_error}"
        )

    @property
    def _where(self) -> str:
        return f"{self.bootstrap_servers or '(unknown)'} (bootstrap.servers)"

    # ---- watching ----------------------------------------------------------------------------------------------

    @property
    def probe_interval_s(self) -> float:
        """How often the watch asks the cluster, and how long each probe may wait."""
        return min(self.bound_ms / 4000, PROBE_INTERVAL_MAX_S)

    def watch(self, probe: Probe, close: Callable[[], object] | None = None) -> None:
        """Ask the cluster with ``probe`` on a thread of its own until :meth:`stop`, which then calls ``close``."""
        if self._thread is not None:
            raise RuntimeError(f"{self!r} is already watched")
        with self._lock:
            self._answered_at, self._answered_wall = self._monotonic(), self._wall()
        self._stop.clear()
        self._thread = threading.Thread(
            target=self._watch, args=(probe, close), name="broker-reachability", daemon=True
        )
        self._thread.start()

    def _watch(self, probe: Probe, close: Callable[[], object] | None) -> None:
        interval = self.probe_interval_s
        try:
            while not self._stop.is_set():
                began = time.monotonic()
                try:
                    reason = probe(interval)
                except Exception as error:  # a probe that breaks must not end the watch: the cluster is unknown
                    reason = f"{type(error).__name__}: {error}"
                if self._stop.is_set():
                    break
                if reason is None:
                    self.answered()
                else:
                    self.failed(reason)
                self._stop.wait(max(interval - (time.monotonic() - began), 0.0))
        finally:
            if close is not None:
                close()

    def stop(self, timeout_s: float = 10.0) -> None:
        """End the watch (idempotent); the cluster counts as reachable from then on."""
        thread, self._thread = self._thread, None
        self._stop.set()
        if thread is not None:
            thread.join(timeout_s)
        with self._lock:
            self._failing, self._warned = False, False

    def __repr__(self) -> str:
        state = "watched" if self._thread is not None else "not watched"
        with self._lock:
            silent = f", no answer for {self._silent_s():.1f} s" if self._failing else ""
        return f"BrokerReachability({self._where}, bound {self.bound_ms} ms, {state}{silent})"
