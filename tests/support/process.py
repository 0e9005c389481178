"""A standalone worker in a subprocess, for tests of what only a real process shows: SIGKILL mid-stream, SIGTERM's
graceful stop, exit codes, waiting for an unreachable broker.

:class:`WorkerProcess` writes ``worker.properties`` and one file per connector into a directory, runs
``python -m headwater.runtime.commands.cli standalone ...`` there with stdout and stderr appended to ``worker.log``, and
lets a test wait on a condition, signal the process and read its log and its offsets file.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from headwater.runtime.config.properties import format_properties
from headwater.runtime.storage.offsets import parse_offset_key
from support.connectors import worker_env

DEFAULT_TIMEOUT_S = 30.0


class WorkerProcess:
    """``headwater standalone`` in a subprocess of this interpreter, files and log under ``directory``.

    ``connectors`` maps each connector name to its config (``name`` is added); ``connector_format`` is
    ``properties`` or ``json`` (Kafka Connect's REST shape). ``offset.storage.file.filename`` defaults to
    ``<directory>/connect.offsets``, ``listeners`` to a free loopback port (so workers never compete for one).
    With ``test_connectors`` (the default) the process finds the test connectors by their short names
    (:mod:`support.connectors`); without, it sees only what is installed.
    """

    def __init__(
        self,
        directory: str | os.PathLike[str],
        worker_props: Mapping[str, Any],
        connectors: Mapping[str, Mapping[str, Any]],
        connector_format: str = "properties",
        log_level: str = "INFO",
        env: Mapping[str, str] | None = None,
        test_connectors: bool = True,
    ) -> None:
        if connector_format not in ("properties", "json"):
            raise ValueError(f"connector_format must be 'properties' or 'json', not {connector_format!r}")
        self.directory = Path(directory)
        self.worker_props = {
            "offset.storage.file.filename": str(self.directory / "connect.offsets"),
            "listeners": "http://127.0.0.1:0",
            **worker_props,
        }
        self.connectors = {name: dict(config) for name, config in connectors.items()}
        self.connector_format = connector_format
        self.log_level = log_level
        self.env = dict(env or {})
        self.test_connectors = test_connectors
        self.log_path = self.directory / "worker.log"
        self.process: subprocess.Popen[bytes] | None = None
        self.starts = 0
        self._written = False
        self._run_log_start = 0

    # ---- files -----------------------------------------------------------------------------------------------

    @property
    def worker_path(self) -> Path:
        return self.directory / "worker.properties"

    @property
    def connector_paths(self) -> list[Path]:
        suffix = ".json" if self.connector_format == "json" else ".properties"
        return [self.directory / f"{name}{suffix}" for name in self.connectors]

    @property
    def offset_path(self) -> Path:
        return Path(str(self.worker_props["offset.storage.file.filename"]))

    def write_files(self) -> None:
        """Write the worker file and the connector files (overwriting them); edit them after this to start a worker
        on hand-written files."""
        self._written = True
        self.directory.mkdir(parents=True, exist_ok=True)
        self.worker_path.write_text(format_properties(self.worker_props), encoding="utf-8")
        for path, (name, config) in zip(self.connector_paths, self.connectors.items(), strict=True):
            if self.connector_format == "json":
                body = {"name": name, "config": {k: str(v) for k, v in config.items()}}
                path.write_text(json.dumps(body, indent=2), encoding="utf-8")
            else:
                path.write_text(format_properties({"name": name, **config}), encoding="utf-8")

    def command(self) -> list[str]:
        paths = [str(self.worker_path), *map(str, self.connector_paths)]
        return [
            sys.executable,
            "-m",
            "headwater.runtime.commands.cli",
            "--log-level",
            self.log_level,
            "standalone",
            *paths,
        ]

    # ---- lifecycle -------------------------------------------------------------------------------------------

    def start(self) -> WorkerProcess:
        """Write the files unless :meth:`write_files` did already, and start the process; its output is appended
        to the log."""
        if self.running:
            raise RuntimeError(f"{self!r} is already running")
        if not self._written:
            self.write_files()
        self._run_log_start = self.log_path.stat().st_size if self.log_path.exists() else 0
        self._launch()
        self.starts += 1
        return self

    def terminate(self, timeout: float = DEFAULT_TIMEOUT_S) -> int:
        """SIGTERM, then wait for the exit; return the exit code. Kills and raises when it outlives ``timeout``."""
        return self._signal(signal.SIGTERM, timeout)

    def kill(self, timeout: float = DEFAULT_TIMEOUT_S) -> int:
        """SIGKILL, then wait for the exit; return the exit code (``-9``)."""
        return self._signal(signal.SIGKILL, timeout)

    def restart(self, timeout: float = DEFAULT_TIMEOUT_S) -> WorkerProcess:
        """Terminate when running, then start again with the same files and offsets file."""
        if self.running:
            self.terminate(timeout)
        return self.start()

    def wait(self, timeout: float = DEFAULT_TIMEOUT_S) -> int:
        """Wait for the process to exit by itself; return the exit code."""
        self._require()
        code = self._wait(timeout)
        if code is None:
            raise AssertionError(f"{self!r} did not exit within {timeout} s\n{self.log_tail()}")
        return code

    def _signal(self, signum: signal.Signals, timeout: float) -> int:
        self._require()
        if self._poll() is None:
            self._send(signum)
        code = self._wait(timeout)
        if code is None:
            self._send(signal.SIGKILL)
            self._wait(None)
            raise AssertionError(
                f"{self!r} did not exit within {timeout} s of {signum.name}; killed\n{self.log_tail()}"
            )
        return code

    def _require(self) -> None:
        if not self.starts:
            raise RuntimeError(f"{self!r} was never started")

    # ---- the process itself (a container worker overrides these) ---------------------------------------------

    def _launch(self) -> None:
        with self.log_path.open("ab") as log:
            env = {**os.environ, "PYTHONUNBUFFERED": "1", **self.env}
            if self.test_connectors:
                env = worker_env(env)
            self.process = subprocess.Popen(
                self.command(),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=self.directory,
                env=env,
                start_new_session=True,
            )

    def _poll(self) -> int | None:
        """The exit code of the last run; None while it runs or before the first start."""
        return None if self.process is None else self.process.poll()

    def _send(self, signum: signal.Signals) -> None:
        if self.process is not None:
            self.process.send_signal(signum)

    def _wait(self, timeout: float | None) -> int | None:
        """Wait up to ``timeout`` seconds (None: for ever) for the exit; its code, or None if it still runs."""
        if self.process is None:
            return None
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            return None

    def close(self) -> None:
        """Kill the process if it still runs (for fixtures' teardown)."""
        if self.running:
            self.kill()

    def __enter__(self) -> WorkerProcess:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @property
    def running(self) -> bool:
        return self.starts > 0 and self._poll() is None

    @property
    def returncode(self) -> int | None:
        """The exit code of the last run, None while it runs or before the first start."""
        return self._poll()

    @property
    def pid(self) -> int | None:
        return None if self.process is None else self.process.pid

    # ---- waiting and reading ---------------------------------------------------------------------------------

    def wait_until(
        self,
        predicate: Callable[[], object],
        timeout: float = DEFAULT_TIMEOUT_S,
        message: str = "",
        interval: float = 0.02,
        allow_exit: bool = False,
    ) -> Any:
        """Call ``predicate`` until it returns something truthy, and return that. Raises AssertionError with the
        log's tail on timeout, or as soon as the process has exited, unless ``allow_exit``."""
        deadline = time.monotonic() + timeout
        while True:
            result = predicate()
            if result:
                return result
            if not allow_exit and self.starts and self._poll() is not None:
                raise AssertionError(
                    f"{self!r} exited while waiting for {message or predicate!r}\n{self.log_tail()}"
                ) from None
            if time.monotonic() >= deadline:
                raise AssertionError(f"{message or predicate!r} not reached within {timeout} s\n{self.log_tail()}")
            time.sleep(interval)

    def wait_for_log(self, text: str, timeout: float = DEFAULT_TIMEOUT_S, count: int = 1) -> str:
        """Wait until ``text`` appears ``count`` times in this run's log; return the log."""
        return str(
            self.wait_until(
                lambda: (log := self.log_text(current_run=True)).count(text) >= count and log,
                timeout,
                message=f"{count} x {text!r} in the log",
            )
        )

    def log_text(self, current_run: bool = False) -> str:
        """The log of every run, or of the current (last) run only."""
        if not self.log_path.exists():
            return ""
        with self.log_path.open("rb") as log:
            log.seek(self._run_log_start if current_run else 0)
            return log.read().decode("utf-8", "replace")

    def log_tail(self, lines: int = 40) -> str:
        tail = self.log_text().splitlines()[-lines:]
        return f"--- last {len(tail)} lines of {self.log_path} ---\n" + "\n".join(tail)

    def offsets(self) -> dict[str, dict[str, Any]]:
        """The offsets file's content as ``{connector: {canonical partition JSON: offset}}`` ({} when missing)."""
        try:
            content = json.loads(self.offset_path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        found: dict[str, dict[str, Any]] = {}
        for key, offset in content.items():
            parsed = parse_offset_key(key.encode("utf-8"))
            if parsed is not None:
                connector, partition = parsed
                found.setdefault(connector, {})[json.dumps(partition, sort_keys=True)] = offset
        return found

    def offset(self, connector: str, partition: Mapping[str, Any]) -> dict[str, Any] | None:
        """The committed offset of one source partition, or None."""
        return self.offsets().get(connector, {}).get(json.dumps(dict(partition), sort_keys=True))

    # ---- assertions --------------------------------------------------------------------------------------------

    def assert_log_contains(self, *texts: str) -> None:
        log = self.log_text()
        missing = [text for text in texts if text not in log]
        assert not missing, f"{missing} not in the log of {self!r}\n{self.log_tail()}"

    def assert_exited(self, code: int, timeout: float = DEFAULT_TIMEOUT_S) -> None:
        """The process exits (by itself) with ``code`` within ``timeout``."""
        found = self.wait(timeout)
        assert found == code, f"{self!r} exited with {found}, expected {code}\n{self.log_tail()}"

    def __repr__(self) -> str:
        code = self._poll()
        if not self.starts:
            state = "not started"
        elif code is None:
            state = f"running pid={self.pid}"
        else:
            state = f"exited {code}"
        names = ", ".join(self.connectors)
        return (
            f"{type(self).__name__}({state}, starts={self.starts}, connectors=[{names}], dir={str(self.directory)!r})"
        )
