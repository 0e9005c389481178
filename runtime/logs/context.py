"""Which connector and task a log line is about: Kafka Connect's ``LoggingContext`` (its MDC key
``connector.context``), as a context variable the runtime sets where it runs a connector's or a task's code.

Every line logged while it is set, by the runtime or by the connector's own code, through any logger, carries the
same prefix as in Kafka Connect (``LoggingContext.prefixFor``): ``[name|worker]`` while a connector's ``start``,
``stop`` or ``task_configs`` runs, ``[name|task-0]`` while task 0 runs (its methods, its converters, transforms and
Kafka clients), ``[name|task-0|offsets]`` while the worker commits that task's source offsets. A thread starts
without it (Python threads start with an empty context), so lines of other threads never carry a stale one; a
connector that hands work to a thread of its own passes it on with ``contextvars.copy_context().run``.

:class:`ConnectorContextFilter` puts the prefix on each record as ``connector_context`` (``""`` outside any
context); :data:`LOG_FORMAT`, the ``headwater`` command's format, shows it where Kafka's ``connect-log4j.properties``
puts ``%X{connector.context}``."""

from __future__ import annotations

import contextvars
import enum
import logging
from types import TracebackType

CONNECTOR_CONTEXT: contextvars.ContextVar[str] = contextvars.ContextVar("connector_context", default="")
"""The prefix of the connector and task whose code runs now (``"[name|task-0] "``), ``""`` outside any."""

LOG_FORMAT = "%(asctime)s %(levelname)s %(connector_context)s%(name)s: %(message)s"
"""The worker's log format: the context prefix, when there is one, comes before the logger's name."""


class Scope(enum.Enum):
    """Kafka Connect's ``LoggingContext.Scope``: what a connector's code is doing."""

    WORKER = "worker"
    """The worker runs the connector instance's methods."""
    TASK = "task"
    """The worker runs a task: its methods, its records' conversion and transforms, its Kafka clients."""
    OFFSETS = "offsets"
    """The worker commits a source task's offsets."""


def prefix_for(connector: str, scope: Scope, task: int | None = None) -> str:
    """``[connector|task-N|scope] `` as ``LoggingContext.prefixFor`` writes it: the task part when there is a task,
    the scope unless it is TASK, and a trailing space."""
    parts = [connector]
    if task is not None:
        parts.append(f"{Scope.TASK.value}-{task}")
    if scope is not Scope.TASK:
        parts.append(scope.value)
    return "[" + "|".join(parts) + "] "


class LoggingContext:
    """Sets the context prefix for the ``with`` block on this thread, and restores the one before it on the way
    out. Make one per ``with``: a block entered on two threads at once must not share one."""

    __slots__ = ("_token", "prefix")

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self._token: contextvars.Token[str] | None = None

    def __enter__(self) -> LoggingContext:
        self._token = CONNECTOR_CONTEXT.set(self.prefix)
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        if self._token is not None:
            CONNECTOR_CONTEXT.reset(self._token)
            self._token = None

    def __repr__(self) -> str:
        return f"LoggingContext({self.prefix.strip()!r})"


def for_connector(connector: str) -> LoggingContext:
    """``[name|worker]``: the worker runs the connector instance's methods."""
    return LoggingContext(prefix_for(connector, Scope.WORKER))


def for_task(connector: str, task: int) -> LoggingContext:
    """``[name|task-N]``: the worker runs task ``N``."""
    return LoggingContext(prefix_for(connector, Scope.TASK, task))


def for_offsets(connector: str, task: int) -> LoggingContext:
    """``[name|task-N|offsets]``: the worker commits task ``N``'s source offsets."""
    return LoggingContext(prefix_for(connector, Scope.OFFSETS, task))


class ConnectorContextFilter(logging.Filter):
    """Puts the current context prefix on every record it sees as ``connector_context`` (a record that has one
    keeps it). Add it to a handler, which runs it on the thread that logged: then a format may use
    ``%(connector_context)s``."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not hasattr(record, "connector_context"):
            record.connector_context = CONNECTOR_CONTEXT.get()
        return True


def configure_logging(level: str | int = "INFO") -> None:
    """Log to stderr in :data:`LOG_FORMAT` at ``level`` (the ``headwater`` command's set-up): every handler of the
    root logger gets a :class:`ConnectorContextFilter`."""
    logging.basicConfig(level=level.upper() if isinstance(level, str) else level, format=LOG_FORMAT)
    for handler in logging.getLogger().handlers:
        if not any(isinstance(f, ConnectorContextFilter) for f in handler.filters):
            handler.addFilter(ConnectorContextFilter())
