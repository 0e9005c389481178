"""Hiding secret values in every log record this process makes: the values of the watched workers' own configs and
of the connectors they run. Which values are secret is :mod:`headwater.runtime.config.secrets`' rule."""

from __future__ import annotations

import logging
import weakref
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from headwater.runtime.config.secrets import password_keys, scrub, secret_values, warn_short_secrets


class Configured(Protocol):
    @property
    def config(self) -> Mapping[str, Any]: ...


class RunningTask(Configured, Protocol):
    @property
    def id(self) -> Any: ...


class WatchedWorker(Protocol):
    """What the scrubber reads of a worker (:class:`~headwater.runtime.worker.Worker`): its own config and the
    configs of the connectors and tasks it runs."""

    @property
    def config(self) -> Mapping[str, Any]: ...
    @property
    def connectors(self) -> Mapping[str, Configured]: ...
    @property
    def tasks(self) -> Mapping[Any, RunningTask]: ...


class LogScrubber:
    """Hides, in every log record made in this process (any logger: a connector's own too), the secret values of
    the watched workers' own configs and of the connectors they run (their configs and their tasks' configs), in
    the message and in the formatted exception. It wraps the log record factory, so that handlers added later
    (pytest's ``caplog``) see the record already scrubbed."""

    def __init__(self) -> None:
        self.workers: weakref.WeakSet[WatchedWorker] = weakref.WeakSet()
        self._found: dict[int, tuple[Mapping[str, Any], set[str]]] = {}
        self._factory: Callable[..., logging.LogRecord] | None = None

    def watch(self, worker: WatchedWorker) -> None:
        self.workers.add(worker)
        if self._factory is None:
            self._factory = logging.getLogRecordFactory()
            logging.setLogRecordFactory(self._make_record)

    def _make_record(self, *args: Any, **kwargs: Any) -> logging.LogRecord:
        assert self._factory is not None
        record = self._factory(*args, **kwargs)
        self.scrub(record)
        return record

    def values(self) -> set[str]:
        found: set[str] = set()
        seen: set[int] = set()
        for worker in list(self.workers):
            found |= self._values_of(worker.config, {}, seen)  # the worker file's own (client passwords)
            connectors = dict(worker.connectors)
            for connector in connectors.values():
                found |= self._values_of(connector.config, connector.config, seen)
            for task in list(worker.tasks.values()):
                owner = connectors.get(task.id.connector)
                found |= self._values_of(task.config, owner.config if owner else {}, seen)
        self._found = {key: cached for key, cached in self._found.items() if key in seen}
        return found

    def _values_of(self, config: Mapping[str, Any], connector: Mapping[str, Any], seen: set[int]) -> set[str]:
        """The secret values of a running connector's or task's ``config`` (``connector``, its connector's, says its
        ``PASSWORD`` keys), found once per config: they do not change while it runs."""
        seen.add(id(config))
        cached = self._found.get(id(config))
        if cached is None or cached[0] is not config:
            cached = self._found[id(config)] = (config, secret_values([config], password_keys(connector)))
        return cached[1]

    def scrub(self, record: logging.LogRecord) -> None:
        values = self.values()
        if not values:
            return
        try:
            message = record.getMessage()
        except Exception:  # a bad format string: the handler reports it, as it would without this
            return
        scrubbed = scrub(message, values)
        if scrubbed != message:
            record.msg, record.args = scrubbed, ()
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = scrub(record.exc_text, values)


LOG_SCRUBBER = LogScrubber()


def watch(worker: WatchedWorker) -> None:
    """Hide ``worker``'s and its connectors' secret values in every log record made from now on; warn about the
    worker config's secrets too short to be hidden (:func:`warn_short_secrets`)."""
    LOG_SCRUBBER.watch(worker)
    warn_short_secrets("the worker config", worker.config)
