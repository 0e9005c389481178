"""A standalone worker in a Docker container, started through testcontainers where a Docker engine answers.

:class:`ContainerWorker` is a :class:`~support.process.WorkerProcess` whose process runs in a container
of a stock Python image: the Headwater source tree is mounted read-only and installed at start, the worker's
directory is mounted at the same path (so the files and the offsets file are shared with the test), and the
container uses the host's network (so a broker on 127.0.0.1 is reachable). Signals go to the container, exit codes
read like a subprocess's (``-9`` after SIGKILL), and the container's output is appended to ``worker.log``.
"""

from __future__ import annotations

import shlex
import signal
import threading
from pathlib import Path
from typing import Any

from headwater.harness.cluster import docker_answers
from support.connectors import CONNECTOR_PATH, python_path
from support.process import WorkerProcess

DEFAULT_IMAGE = "python:3.11-slim"
SOURCE_MOUNT = "/opt/headwater-src"
SOURCE_ROOT = Path(__file__).resolve().parents[2]
"""The checkout Headwater runs from (editable install): mounted into the container and installed there."""


def container_worker_skip_reason() -> str | None:
    """Why a worker cannot run in a container here (``pytest.skip`` it), or None when it can."""
    if not (SOURCE_ROOT / "pyproject.toml").exists():
        return f"Headwater is not installed from a source checkout ({SOURCE_ROOT}): nothing to mount"
    if not docker_answers():
        return "no Docker engine answers (DOCKER_HOST or /var/run/docker.sock): a worker cannot run in a container"
    return None


class ContainerWorker(WorkerProcess):
    """``headwater standalone`` in a container of ``image``; otherwise used exactly like :class:`WorkerProcess`."""

    def __init__(self, *args: Any, image: str = DEFAULT_IMAGE, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.image = image
        self._container: Any = None
        self._follower: threading.Thread | None = None

    def command(self) -> list[str]:
        paths = [str(self.worker_path), *map(str, self.connector_paths)]
        run = ["headwater", "--log-level", self.log_level, "standalone", *paths]
        # the source is read-only: install from a copy, then let the worker be the container's main process
        script = f"cp -r {SOURCE_MOUNT} /tmp/src && pip install -q /tmp/src && exec {shlex.join(run)}"
        return ["sh", "-c", script]

    def _launch(self) -> None:
        from testcontainers.core.container import DockerContainer

        self._remove()
        directory = str(self.directory.resolve())
        container = (
            DockerContainer(self.image)
            .with_command(self.command())
            .with_volume_mapping(str(SOURCE_ROOT), SOURCE_MOUNT, "ro")
            .with_volume_mapping(directory, directory, "rw")
            .with_kwargs(network_mode="host", working_dir=directory)
            .with_env("PYTHONUNBUFFERED", "1")
        )
        if self.test_connectors:
            directories = tuple(f"{SOURCE_MOUNT}/{path.name}" for path in CONNECTOR_PATH)
            container = container.with_env("PYTHONPATH", python_path(directories, existing=""))
        for key, value in self.env.items():
            container = container.with_env(key, value)
        self._container = container.start()
        self._follower = threading.Thread(target=self._follow, daemon=True, name="container-log")
        self._follower.start()

    def _follow(self) -> None:
        wrapped = self._container.get_wrapped_container()
        with self.log_path.open("ab") as log:
            for chunk in wrapped.logs(stream=True, follow=True):
                log.write(chunk)
                log.flush()

    def _poll(self) -> int | None:
        if self._container is None:
            return None
        wrapped = self._container.get_wrapped_container()
        wrapped.reload()
        if wrapped.status in ("created", "running", "restarting"):
            return None
        return _exit_code(int(wrapped.attrs["State"]["ExitCode"]))

    def _send(self, signum: signal.Signals) -> None:
        if self._container is not None:
            self._container.get_wrapped_container().kill(signal=signum.name)

    def _wait(self, timeout: float | None) -> int | None:
        if self._container is None:
            return None
        try:
            result = self._container.get_wrapped_container().wait(timeout=timeout)
        except Exception:  # the Docker client raises its HTTP library's timeout
            return None
        if self._follower is not None:
            self._follower.join(5)
        return _exit_code(int(result["StatusCode"]))

    @property
    def pid(self) -> int | None:
        if self._container is None:
            return None
        return int(self._container.get_wrapped_container().attrs["State"]["Pid"]) or None

    def close(self) -> None:
        super().close()
        self._remove()

    def _remove(self) -> None:
        if self._container is not None:
            self._container.get_wrapped_container().remove(force=True)
            self._container = None


def _exit_code(status: int) -> int:
    """A container's exit status as a subprocess's return code: ``128 + n`` (killed by signal n) reads ``-n``."""
    return -(status - 128) if 128 < status < 160 else status
