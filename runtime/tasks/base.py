"""What source and sink task loops share: lifecycle, state, the stop hook, converters and failure handling."""

from __future__ import annotations

import enum
import logging
import threading
import time
import traceback
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

import pluggy

from headwater.runtime.config.connector import TaskSettings
from headwater.runtime.converters import (
    Converter,
    HeaderConverter,
    converter_config,
    load_converter,
    load_header_converter,
)
from headwater.runtime.error_handling.all_skipped import AllSkipped
from headwater.runtime.error_handling.tolerance import ErrorHandler
from headwater.runtime.logs.context import CONNECTOR_CONTEXT, LoggingContext, for_task
from headwater.runtime.plugins import plugin_manager
from headwater.runtime.transforms.chain import TransformationChain
from headwater.sdk.config import ConfigDef
from headwater.sdk.context import Clock
from headwater.sdk.errors import ConnectError, RetriableError
from headwater.sdk.metrics import PluginMetrics
from headwater.sdk.task import Task

log = logging.getLogger(__name__)


class TaskId(NamedTuple):
    connector: str
    task: int

    def __str__(self) -> str:
        return f"{self.connector}-{self.task}"


class State(enum.Enum):
    UNASSIGNED = "UNASSIGNED"
    RUNNING = "RUNNING"
    PAUSED = "PAUSED"
    FAILED = "FAILED"
    STOPPED = "STOPPED"


_FAILED = State.FAILED
"""Read once per pass: an enum member read through its class costs ten times a global on Python 3.11."""


START_WAIT_MS = 60_000
"""How long, on the task's clock, a task that is :class:`NotReadyToStart` keeps trying before it fails."""


class NotReadyToStart(RetriableError):
    """Raised by :meth:`WorkerTask.initialize` when the task cannot start yet but will be able to (an exactly-once
    task whose committed offsets a sibling's open transaction holds back): the loop tries again at each pass, for
    up to :data:`START_WAIT_MS` on the task's clock, then fails the task with it. Meanwhile the connector's task is
    not started, so it neither polls nor gets ``stop``."""


StateListener = Callable[[TaskId, State, "str | None"], None]
"""Told of every state change of a task, with the failure trace when it failed."""


class WorkerTask(ABC):
    """Runs one connector task. The same methods drive a task on its own thread (:meth:`execute`) and step by step
    in a simulated worker (:meth:`start`, :meth:`step`, :meth:`shutdown`), so the semantics live here only."""

    def __init__(
        self,
        id: TaskId,
        task: Task,
        config: Mapping[str, str],
        settings: TaskSettings,
        clock: Clock,
        listener: StateListener | None = None,
        plugins: list[object] | None = None,
    ) -> None:
        self.id = id
        self.task = task
        self.config = config
        self.settings = settings
        self.clock = clock
        self._log_prefix = for_task(id.connector, id.task).prefix
        """Formatted once: a pass of the loop must not pay for it."""
        self.state = State.UNASSIGNED
        self.state_seconds: dict[State, float] = {}
        """Seconds spent in each state before the current one (:meth:`seconds_in_states` adds the current one)."""
        self._state_since = time.monotonic()
        self.failure: BaseException | None = None
        self.connector_deleted = False
        self.stop_delivered: bool | None = None
        """``None`` until the stop hook ran; then the ``connector_deleted`` flag it was given."""
        self._listener = listener
        self._plugins = plugins
        self._stopping = False
        self._cancelled = False
        self._target_paused = False
        self._start_deadline: int | None = None
        """While the task is :class:`NotReadyToStart`: the clock time it fails at if still not ready."""
        self._wake = threading.Event()
        self.transforms: TransformationChain[Any] = TransformationChain()
        """The connector's transforms and predicates, applied to each record (set before the task starts)."""
        self.hooks: Any = None
        self.errors = ErrorHandler(str(id), settings.errors, clock)
        """The task's ``errors.*`` handling and its counters."""
        self.all_skipped = AllSkipped(str(id))
        """The alarm of a task that skips every record it sees, checked once per pass of its loop."""
        self.tolerating = settings.errors.tolerate
        """Whether failed records may be skipped (``errors.tolerance=all``): else :attr:`all_skipped` has nothing
        to count, and the loops leave it alone."""
        self.key_converter: Converter
        self.value_converter: Converter
        self.header_converter: HeaderConverter
        self.config_def = ConfigDef()
        """The connector's ``config_def``, which the task's config is parsed by before ``start`` (set by the
        :class:`~headwater.runtime.task_builder.TaskBuilder`; empty, every key a string, for a loop made alone)."""
        self.parsed_config: Mapping[str, Any] = {}
        """The task's config parsed by :attr:`config_def` (its context's ``parsed_config``), once started."""
        self.plugin_metrics = PluginMetrics()
        """The metrics the task registers through its context (KIP-877), closed when the task shuts down."""

    # ---- lifecycle -------------------------------------------------------------------------------------------

    def logging_context(self) -> LoggingContext:
        """``[name|task-N]`` for the lines logged while this task runs (Kafka Connect's ``LoggingContext.forTask``)."""
        return LoggingContext(self._log_prefix)

    def start(self) -> None:
        """Load converters, register hooks, initialize and start the connector's task."""
        with self.logging_context():
            self._start()

    def _start(self) -> None:
        try:
            props = self.settings.converter_props
            s = self.settings
            self.key_converter = load_converter(
                s.key_converter, converter_config(props, "key.converter"), True, "key.converter"
            )
            self.value_converter = load_converter(
                s.value_converter, converter_config(props, "value.converter"), False, "value.converter"
            )
            self.header_converter = load_header_converter(
                s.header_converter, converter_config(props, "header.converter")
            )
            manager: pluggy.PluginManager = plugin_manager(self.task, self._plugins)
            self.hooks = manager.hook
            self.parsed_config = self.config_def.parse_task_config(self.config)
            self._start_task()
        except Exception as error:
            self._fail(error)

    def _start_task(self) -> None:
        """:meth:`initialize`, then the connector's ``start``; a task :class:`NotReadyToStart` tries again at its
        next pass (:meth:`step`) until its wait is over."""
        try:
            self.initialize()
        except NotReadyToStart as error:
            now = self.clock.now_ms()
            if self._start_deadline is None:
                self._start_deadline = now + START_WAIT_MS
                log.warning("task %s cannot start yet; trying again at each pass: %s", self.id, error)
            elif now >= self._start_deadline:
                raise ConnectError(f"task {self.id} could not start within {START_WAIT_MS} ms: {error}") from None
            return
        self._start_deadline = None
        self.task.start(self.config)
        self._set_state(State.PAUSED if self._target_paused else State.RUNNING)
        self.on_started()

    def step(self) -> bool:
        """One pass of the task loop; return whether records moved. A failure marks the task FAILED and shuts
        it down."""
        if self.state is _FAILED or self._stopping:
            return False
        if CONNECTOR_CONTEXT.get() != self._log_prefix:  # the task's own thread runs every pass in it already
            with self.logging_context():
                return self.step()
        try:
            if self._start_deadline is not None:
                self._start_task()
                return False
            return self.iteration()
        except Exception as error:
            self._fail(error)
            return False

    def execute(self, idle_wait_ms: int = 5) -> None:
        """Run the task on the calling thread until :meth:`stop` is called, then shut it down. After a pass that
        moved nothing the thread waits ``idle_wait_ms``, or until :meth:`next_pass_due` when that is later; a stop,
        pause or resume ends the wait at once."""
        with self.logging_context():
            self.start()
            while not self._stopping and self.state is not _FAILED:
                if not self.step():
                    wait_ms = max(self.next_pass_due() - self.clock.now_ms(), idle_wait_ms)
                    self._wake.wait(wait_ms / 1000)
                    self._wake.clear()
            self.shutdown()

    def next_pass_due(self) -> int:
        """The clock time of the next pass of the loop that can do more than serve delivery reports: now, but for
        a source task idling (:meth:`~headwater.sdk.SourceTaskContext.idle`) with nothing in flight. The task thread
        waits until then; a simulated worker moves its clock there without the passes in between."""
        return self.clock.now_ms()

    def stop(self, connector_deleted: bool = False) -> None:
        """Ask the task to stop (from any thread). The loop finishes its pass, then :meth:`shutdown` runs."""
        self.connector_deleted = connector_deleted
        self._stopping = True
        self._wake.set()

    def cancel(self) -> None:
        """The graceful timeout ran out: skip the final offset commit, and report no state any more (its slot may
        already run a new task of the same id, whose status this one must not overwrite; Kafka Connect's cancelled
        tasks stay silent too)."""
        self._cancelled = True

    def shutdown(self) -> None:
        """Final commit, closing, then the ``stop`` hook with ``connector_deleted``; idempotent."""
        if self.stop_delivered is not None:
            return
        with self.logging_context():
            self._shutdown()

    def _shutdown(self) -> None:
        if self.hooks is not None and self._start_deadline is None:  # else the connector's task never started
            try:
                self.before_stop()
            except Exception:
                log.exception("task %s failed while closing", self.id)
            try:
                self.hooks.stop(instance=self.task, connector_deleted=self.connector_deleted)
            except Exception:
                log.exception("task %s failed in stop", self.id)
        self.stop_delivered = self.connector_deleted
        try:
            self.close_clients()
        except Exception:
            log.exception("task %s failed closing its clients", self.id)
        try:
            self.transforms.close()
        except Exception:
            log.exception("task %s failed closing its transforms", self.id)
        close_converters(self)
        self.plugin_metrics.close()  # no stale series: KIP-877's PluginMetrics are removed when the task closes
        if self.state is not State.FAILED:
            self._set_state(State.STOPPED)

    def pause(self) -> None:
        """Pause (from any thread); the loop applies it at its next pass."""
        self._target_paused = True
        if self.state is State.RUNNING:
            self._set_state(State.PAUSED)
        self._wake.set()

    def resume(self) -> None:
        """Resume (from any thread); the loop applies it at its next pass."""
        self._target_paused = False
        if self.state is State.PAUSED:
            self._set_state(State.RUNNING)
        self._wake.set()

    @property
    def paused(self) -> bool:
        return self._target_paused

    @property
    def stopping(self) -> bool:
        return self._stopping

    # ---- for the subclasses ----------------------------------------------------------------------------------

    @abstractmethod
    def initialize(self) -> None:
        """Give the task its context."""

    @abstractmethod
    def iteration(self) -> bool: ...

    def on_started(self) -> None:  # noqa: B027
        """After the task started; clients subscribe here."""

    @abstractmethod
    def before_stop(self) -> None:
        """Final commit (source) or pre_commit -> close -> commit (sink)."""

    def close_clients(self) -> None:  # noqa: B027
        """Close producer or consumer."""

    def _fail(self, error: BaseException) -> None:
        """Mark the task FAILED and shut it down at once, like Kafka Connect: final commit, close, ``stop``."""
        log.error("task %s failed: %s", self.id, error, exc_info=error)
        self.failure = error
        self._set_state(State.FAILED, "".join(traceback.format_exception(error)))
        self.shutdown()

    def _set_state(self, state: State, trace: str | None = None) -> None:
        now = time.monotonic()
        previous = self.state
        self.state_seconds[previous] = self.state_seconds.get(previous, 0.0) + now - self._state_since
        self._state_since = now
        self.state = state
        if self._cancelled:
            log.info("task %s is %s after it was cancelled; not reported", self.id, state.value)
            return
        if self._listener is not None:
            try:
                self._listener(self.id, state, trace)
            except Exception as error:  # a status store whose client is closing: the task thread must not die of it
                log.error("task %s is %s, but its status could not be recorded: %r", self.id, state.value, error)

    def seconds_in_states(self) -> dict[State, float]:
        """Seconds spent in each state since the task was created, the current one up to now (Kafka Connect's
        ``running-ratio`` and ``pause-ratio`` are their shares). Read from another thread, a state change under way
        may be missed by one call."""
        found = dict(self.state_seconds)
        state, since = self.state, self._state_since
        found[state] = found.get(state, 0.0) + max(time.monotonic() - since, 0.0)
        return found

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.id}, state={self.state.value})"


def close_converters(task: WorkerTask) -> None:
    """Close the task's converters that hold something (a Schema Registry client's connections), as Kafka Connect's
    tasks close theirs; failures are logged."""
    for name in ("key_converter", "value_converter", "header_converter"):
        close = getattr(getattr(task, name, None), "close", None)
        if close is None:
            continue
        try:
            close()
        except Exception:
            log.exception("task %s failed closing its %s", task.id, name.replace("_", " "))
