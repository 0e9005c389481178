"""The worker's loggers and their levels, changed at run time: Kafka Connect's ``Loggers`` (KIP-495) on Python's
:mod:`logging`, behind ``/admin/loggers``.

Levels are named as Kafka Connect names them: TRACE (below DEBUG, registered as Python level 5), DEBUG, INFO, WARN
(Python's WARNING), ERROR, FATAL (Python's CRITICAL) and OFF (above every level a record can have). Setting a
namespace's level sets it on the namespace's logger and on every existing logger below it (``a.b`` covers ``a.b``
and ``a.b.c``, not ``a.bc``); ``root`` is the root logger and covers every logger. Each logger whose level changed
is stamped with the time (``last_modified``, epoch milliseconds); one set to the level it had is not.
"""

from __future__ import annotations

import logging
import sys
import threading
from typing import Any

from headwater.runtime.errors import BadRequestError
from headwater.sdk.context import Clock

log = logging.getLogger(__name__)

TRACE = 5
OFF = sys.maxsize
ROOT = "root"
"""The root logger's name in requests and answers (log4j's, matched case-insensitively)."""

LEVELS: dict[str, int] = {
    "TRACE": TRACE,
    "DEBUG": logging.DEBUG,
    "INFO": logging.INFO,
    "WARN": logging.WARNING,
    "ERROR": logging.ERROR,
    "FATAL": logging.CRITICAL,
    "OFF": OFF,
}
"""Kafka Connect's level names -> Python levels."""

_NAMES = {level: name for name, level in LEVELS.items()}

logging.addLevelName(TRACE, "TRACE")


def parse_level(text: str) -> int:
    """The Python level of a Kafka Connect level name (any case); BadRequestError naming it otherwise."""
    found = LEVELS.get(text.strip().upper())
    if found is None:
        raise BadRequestError(f"Invalid log level {text!r}: expected one of {', '.join(LEVELS)}")
    return found


def level_name(level: int) -> str:
    """A Python level's Kafka Connect name; one between them keeps Python's (``Level 15``)."""
    return _NAMES.get(level) or logging.getLevelName(level)


def _existing() -> list[logging.Logger]:
    """Every logger created so far (not the placeholders of namespaces no logger was asked for)."""
    found = list(logging.Logger.manager.loggerDict.values())
    return [logger for logger in found if isinstance(logger, logging.Logger)]


class Loggers:
    """The levels of this process's loggers, and when this worker last changed each (on ``clock``). Thread-safe."""

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self._lock = threading.Lock()
        self._modified: dict[str, int] = {}

    def level(self, name: str) -> dict[str, Any] | None:
        """``{"level", "last_modified"}`` of an existing logger (its effective level when it has none of its own),
        ``None`` when no logger of that name exists."""
        with self._lock:
            if name.lower() == ROOT:
                return self._info(ROOT, logging.getLogger())
            found = logging.Logger.manager.loggerDict.get(name)
            return self._info(name, found) if isinstance(found, logging.Logger) else None

    def all_levels(self) -> dict[str, dict[str, Any]]:
        """Every logger that has a level of its own, and ``root``, by name."""
        with self._lock:
            found = {logger.name: self._info(logger.name, logger) for logger in _existing() if logger.level}
            found[ROOT] = self._info(ROOT, logging.getLogger())
            return dict(sorted(found.items()))

    def set_level(self, namespace: str, level: str) -> list[str]:
        """Set ``namespace`` and every existing logger below it to ``level`` (a Kafka Connect level name); return
        the names of the loggers it covers, sorted. BadRequestError for an unknown level."""
        value = parse_level(level)
        with self._lock:
            log.info("Setting level of namespace %s and children to %s", namespace, level_name(value))
            if namespace.lower() == ROOT:
                covered = {logger.name: logger for logger in _existing()} | {ROOT: logging.getLogger()}
            else:
                covered = {
                    logger.name: logger
                    for logger in _existing()
                    if logger.name == namespace or logger.name.startswith(namespace + ".")
                }
                covered.setdefault(namespace, logging.getLogger(namespace))
            for name, logger in covered.items():
                if (logger.level or logger.getEffectiveLevel()) != value:
                    logger.setLevel(value)
                    self._modified[name] = self.clock.now_ms()
            return sorted(covered)

    def _info(self, name: str, logger: logging.Logger) -> dict[str, Any]:
        level = logger.level or logger.getEffectiveLevel()
        return {"level": level_name(level), "last_modified": self._modified.get(name)}

    def __repr__(self) -> str:
        with self._lock:
            return f"Loggers({len(self._modified)} changed)"
