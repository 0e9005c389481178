"""A connector instance on a worker, and the thread its lifecycle runs on (Kafka Connect's ``WorkerConnector``).

A connector's ``start`` and ``stop`` are its author's code: ``start`` may wait on a database or a source cluster
that does not answer. On a threaded worker they run, in the order they were asked for, on a thread of the
connector's own, so the herder and the REST API never wait on them longer than they choose to; on a stepped
(simulated) worker they run at once on the caller's thread, as the virtual clock wants.
"""

from __future__ import annotations

import logging
import queue
import sys
import threading
import time
import traceback
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

from headwater.runtime.storage.offsets import OffsetStore
from headwater.runtime.tasks.base import State
from headwater.runtime.tasks.source_context import StoreOffsetReader
from headwater.sdk.connector import Connector, SinkConnector
from headwater.sdk.context import Clock, ConnectorContext
from headwater.sdk.metrics import PluginMetrics

log = logging.getLogger(__name__)

Listener = Callable[[str, "int | None", State, "str | None"], None]
"""Told of every connector (task ``None``) and task state change: connector, task, state, failure trace."""

STACK_FRAMES_SHOWN = 8
"""How many of the innermost frames of a connector's thread a status shows while its ``start`` has not returned."""
STARTING_REPORTED_AFTER_S = 1.0
"""How long a ``start`` runs before the connector's status says it is still starting, and where it waits."""
STARTING_REPORTED_EVERY_S = 10.0
"""How often that status is written again, with where its thread is then."""


class LifecycleThread:
    """Runs the calls given to :meth:`submit` one after another, in order; on a daemon thread named ``name``, or at
    once on the caller's thread when ``inline``. A daemon thread, so that a ``start`` that never returns cannot keep
    the process from exiting."""

    def __init__(self, name: str, inline: bool) -> None:
        self._queue: queue.SimpleQueue[tuple[Callable[[], None], Future[None]] | None] = queue.SimpleQueue()
        self.thread: threading.Thread | None = None
        if not inline:
            self.thread = threading.Thread(target=self._run, name=name, daemon=True)
            self.thread.start()

    def submit(self, call: Callable[[], None]) -> Future[None]:
        """Run ``call`` after every call submitted before it; the future is done when it has run."""
        future: Future[None] = Future()
        if self.thread is None:
            _run_into(call, future)
        else:
            self._queue.put((call, future))
        return future

    def close(self) -> None:
        """End the thread once the calls submitted so far have run."""
        if self.thread is not None:
            self._queue.put(None)

    def stack(self) -> str:
        """Where the thread is now: its innermost frames, formatted as a traceback ("" when it has none)."""
        frame = None if self.thread is None else sys._current_frames().get(self.thread.ident or -1)
        if frame is None:
            return ""
        return "".join(traceback.format_stack(frame)[-STACK_FRAMES_SHOWN:])

    def _run(self) -> None:
        while (item := self._queue.get()) is not None:
            _run_into(*item)


def _run_into(call: Callable[[], None], future: Future[None]) -> None:
    try:
        call()
    except BaseException as error:  # the call reports its own failures; this only keeps the thread alive
        future.set_exception(error)
    else:
        future.set_result(None)


class WorkerConnectorContext(ConnectorContext):
    def __init__(self, owner: WorkerConnector, clock: Clock, store: OffsetStore) -> None:
        self._owner = owner
        self.clock = clock
        self.offset_storage_reader = StoreOffsetReader(store, owner.name)
        self.metrics = owner.plugin_metrics

    def request_task_reconfiguration(self) -> None:
        self._owner.reconfiguration_requested.set()

    def raise_error(self, error: Exception) -> None:
        self._owner.fail(error)


@dataclass
class WorkerConnector:
    """A connector instance on this worker, its hooks and its state. ``lifecycle`` runs its ``start`` and
    ``stop``; ``started`` is set once its ``start`` returned or raised."""

    name: str
    instance: Connector
    config: dict[str, Any]
    hooks: Any = None
    state: State = State.UNASSIGNED
    trace: str | None = None
    listener: Listener | None = None
    reconfiguration_requested: threading.Event = field(default_factory=threading.Event)
    stop_delivered: bool | None = None
    references: dict[str, str] = field(default_factory=dict)
    """Resolved values of its config's references, each mapped to the reference text it came from."""
    lifecycle: LifecycleThread = field(default_factory=lambda: LifecycleThread("", inline=True))
    started: threading.Event = field(default_factory=threading.Event)
    start_began: float | None = None
    """``time.monotonic()`` when its ``start`` was called, while it has not returned."""
    paused: bool = False
    """Whether it is to be PAUSED once started (pause and resume may come while ``start`` runs)."""
    lock: threading.RLock = field(default_factory=threading.RLock)
    """Held while its state is set and reported, so that no report of a ``start`` still running comes last."""
    plugin_metrics: PluginMetrics = field(default_factory=PluginMetrics)
    """The metrics the connector registers through its context (KIP-877), closed when it stops or fails to start."""
    _waiting_reported: float | None = None

    @property
    def kind(self) -> str:
        return "sink" if isinstance(self.instance, SinkConnector) else "source"

    def set_state(self, state: State, trace: str | None = None) -> None:
        with self.lock:
            self.state, self.trace = state, trace
            if self.listener is not None:
                self.listener(self.name, None, state, trace)

    def started_as(self, state: State | None, error: BaseException | None = None) -> None:
        """Its ``start`` returned (``state`` is RUNNING or PAUSED) or raised ``error``: say so, then set
        :attr:`started`."""
        with self.lock:
            self.start_began = None
            if error is not None:
                self.fail(error)
            elif state is not None:
                self.set_state(state)
        self.started.set()

    def fail(self, error: BaseException) -> None:
        log.error("connector %s failed: %s", self.name, error, exc_info=error)
        self.set_state(State.FAILED, "".join(traceback.format_exception(error)))

    def starting_for(self) -> float | None:
        """How long its ``start`` has been running, in seconds; ``None`` when it is not running."""
        began = self.start_began
        return None if began is None else time.monotonic() - began

    def report_starting(self) -> None:
        """While its ``start`` has been running for :data:`STARTING_REPORTED_AFTER_S` or more, report it
        UNASSIGNED with :meth:`waiting_in` as its trace, every :data:`STARTING_REPORTED_EVERY_S` (called by the
        herder's loop)."""
        with self.lock:
            running, now = self.starting_for(), time.monotonic()
            if running is None or running < STARTING_REPORTED_AFTER_S or self.listener is None:
                return
            if self._waiting_reported is not None and now - self._waiting_reported < STARTING_REPORTED_EVERY_S:
                return
            self._waiting_reported = now
            self.listener(self.name, None, State.UNASSIGNED, self.waiting_in())

    def waiting_in(self) -> str:
        """What a status says of a ``start`` that has not returned: for how long, and where its thread is."""
        running = self.starting_for() or 0.0
        where = self.lifecycle.stack()
        return (
            f"Connector {self.name} is starting: its start() has not returned after {running:.0f} s; "
            "its tasks start once it returns. Its thread is at:\n" + (where or "(unknown)\n")
        )
