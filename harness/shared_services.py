"""Services that the pytest-xdist workers of one run share (a Kafka broker, a database server, an object store):
started once, lazily, by the first worker whose test needs one, reused by the others, stopped once by the controller
when the run ends.

The controller makes a directory for the run and hands it to every worker it starts (``workerinput``). There each
service has a record, ``<name>.json``: how to reach it and how to stop it, or why it could not be started (then
every worker skips or fails with that reason instead of trying again). ``<name>.lock`` makes the workers take turns:
one starts the service while the others wait, then read its record. The worker that starts a service leaves it
running when it exits (its own session, no ``atexit``); the controller stops every recorded service in its
``pytest_sessionfinish``, after pytest-xdist has ended the workers (after failures and Ctrl-C too), and again in
``pytest_unconfigure`` if that was cut short.

Without pytest-xdist, or with ``-n 0``, there is no run directory: :meth:`SharedServices.of` is None and each session
fixture starts and stops its service itself. Nothing here imports pytest-xdist, which the ``harness`` extra does not
install."""

from __future__ import annotations

import contextlib
import fcntl
import importlib
import json
import logging
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

WORKERINPUT_KEY = "headwater_shared_services"
"""The key of ``workerinput`` under which a worker finds the run's directory."""
CONTROLLER_LOCK_TIMEOUT_S = 60.0
"""How long the controller waits for a lock at the end of the run (the workers have ended by then: no one holds it)."""

State = dict[str, Any]
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Started:
    """A service one worker started for the run: ``state`` (JSON) says how to reach it, and ``stop``, a module-level
    function, stops it from any process given that state. ``holds`` (the object that started it, with its
    ``Popen``) stays referenced until the worker exits: collected earlier, a ``Popen`` of a process still running
    would warn."""

    state: State
    stop: Callable[[State], None]
    holds: object = None


_HELD: list[object] = []


class SharedServices:
    """The records of one run's shared services, in ``directory``."""

    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)

    def __repr__(self) -> str:
        names = sorted(path.stem for path in self.directory.glob("*.json")) if self.directory.exists() else []
        return f"SharedServices({str(self.directory)!r}, recorded={names})"

    @classmethod
    def of(cls, config: pytest.Config) -> SharedServices | None:
        """The run's services on a pytest-xdist worker; None in a process of its own (no xdist, ``-n 0``)."""
        workerinput = getattr(config, "workerinput", None)
        if not workerinput or WORKERINPUT_KEY not in workerinput:
            return None
        return cls(Path(workerinput[WORKERINPUT_KEY]))

    def get(self, name: str, start: Callable[[], Started], unavailable: type[Exception]) -> State:
        """The state of service ``name``, started with ``start`` when no worker has started it yet. ``start``'s
        ``unavailable`` errors are recorded, and raised again (as ``unavailable``, with the same message) to every
        worker that asks; any other error is raised to this worker alone, and the next one to ask tries again."""
        record = self.directory / f"{name}.json"
        with self._turn(name):
            if not record.exists():
                try:
                    started = start()
                except unavailable as error:
                    _write(record, {"unavailable": str(error)})
                else:
                    _HELD.append(started.holds)
                    stop = f"{started.stop.__module__}:{started.stop.__qualname__}"
                    _write(record, {"state": started.state, "stop": stop, "pid": os.getpid()})
            found: dict[str, Any] = json.loads(record.read_text())
        if "unavailable" in found:
            raise unavailable(found["unavailable"])
        state: State = found["state"]
        return state

    def stop_all(self) -> list[str]:
        """Stops every recorded service, each once (its record goes first); what failed to stop."""
        errors: list[str] = []
        for record in sorted(self.directory.glob("*.json")):
            with self._turn(record.stem, timeout_s=CONTROLLER_LOCK_TIMEOUT_S):
                try:
                    found = json.loads(record.read_text())
                except (OSError, ValueError):
                    continue
                record.unlink()
            if "stop" not in found:
                continue
            try:
                _resolve(found["stop"])(found["state"])
            except Exception as error:
                errors.append(f"{record.stem} ({found['stop']}): {error!r}")
        return errors

    @contextlib.contextmanager
    def _turn(self, name: str, timeout_s: float | None = None) -> Iterator[None]:
        """Holds ``<name>.lock``: waits as long as another process holds it (at most ``timeout_s``, then goes on)."""
        with open(self.directory / f"{name}.lock", "w") as lock:
            if timeout_s is None:
                fcntl.flock(lock, fcntl.LOCK_EX)
            else:
                deadline = time.monotonic() + timeout_s
                while True:
                    try:
                        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                        break
                    except BlockingIOError:
                        if time.monotonic() > deadline:
                            log.warning("%s: still locked after %.0f s; going on", lock.name, timeout_s)
                            break
                        time.sleep(0.1)  # a lock held by another process: nothing to wait on but the file
            yield


def _write(path: Path, found: dict[str, Any]) -> None:
    """Writes ``path`` whole or not at all (a reader never sees half a record)."""
    partial = path.with_suffix(".partial")
    partial.write_text(json.dumps(found))
    partial.rename(path)


def _resolve(reference: str) -> Callable[[State], None]:
    module_name, _, qualname = reference.partition(":")
    found: Any = importlib.import_module(module_name)
    for part in qualname.split("."):
        found = getattr(found, part)
    stop: Callable[[State], None] = found
    return stop


_RUN = pytest.StashKey[SharedServices]()


def run_services(config: pytest.Config) -> SharedServices:
    """On the controller: the run's services, their directory made on first use."""
    found = config.stash.get(_RUN, None)
    if found is None:
        found = SharedServices(Path(tempfile.mkdtemp(prefix="headwater-services-")))
        config.stash[_RUN] = found
    return found


def end_run(config: pytest.Config) -> None:
    """On the controller, once the workers have ended: stops every service they recorded, then removes the directory
    (a later call finds nothing left to do)."""
    found = config.stash.get(_RUN, None)
    if found is None or not found.directory.exists():
        return
    errors = found.stop_all()
    shutil.rmtree(found.directory, ignore_errors=True)
    for error in errors:
        log.error("a shared service did not stop: %s", error)
        reporter = config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.write_line(f"headwater: a shared service did not stop: {error}", red=True)
