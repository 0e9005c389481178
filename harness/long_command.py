"""A command that may take minutes (``mvn`` fetching the broker's jars, ``apt-get`` installing a database server),
run so that the log says what it does and how far it has got: a line when it starts, one every few seconds while it
runs, saying how far its output shows it is, and one when it ends."""

from __future__ import annotations

import logging
import re
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence

PROGRESS_EVERY_S = 5.0
"""How often a running command's progress is logged."""

Progress = Callable[[Sequence[str]], str]
"""How far a command has got, from its output lines so far (``"12 files downloaded (3.1 MB)"``)."""


def run_logged(
    command: Sequence[str],
    what: str,
    progress: Progress,
    log: logging.Logger,
    *,
    timeout_s: float,
    env: Mapping[str, str] | None = None,
    every_s: float = PROGRESS_EVERY_S,
) -> subprocess.CompletedProcess[str]:
    """Run ``command`` (stdout and stderr together, as text), logging ``what`` it does when it starts, its
    ``progress`` every ``every_s`` while it runs, and how it ended. Raises ``subprocess.TimeoutExpired`` (after
    killing it) when it outlives ``timeout_s``; a non-zero exit is the caller's to judge."""
    started = time.monotonic()
    log.info("%s (%s) ...", what, " ".join(command[:3]))
    lines: list[str] = []
    with subprocess.Popen(
        list(command),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=None if env is None else dict(env),
    ) as process:
        reader = threading.Thread(target=_read_into, args=(process.stdout, lines), name="command-output", daemon=True)
        reader.start()
        deadline = started + timeout_s
        while True:
            try:
                process.wait(max(min(every_s, deadline - time.monotonic()), 0.0))
                break
            except subprocess.TimeoutExpired:
                if time.monotonic() >= deadline:
                    process.kill()
                    process.wait()
                    reader.join()
                    log.error("%s: no end after %.0f s; killed (%s)", what, timeout_s, progress(list(lines)))
                    raise
                log.info("%s: %s after %.0f s", what, progress(list(lines)), time.monotonic() - started)
        reader.join()
    elapsed = time.monotonic() - started
    if process.returncode == 0:
        log.info("%s: done, %s in %.1f s", what, progress(lines), elapsed)
    else:
        log.error("%s: exited with %d after %.1f s (%s)", what, process.returncode, elapsed, progress(lines))
    return subprocess.CompletedProcess(list(command), process.returncode, "".join(lines), "")


def _read_into(stream: object, lines: list[str]) -> None:
    for line in stream:  # type: ignore[attr-defined]
        lines.append(line)


_MAVEN_DOWNLOADED = re.compile(r"^Downloaded from \S+: \S+ \((?P<size>[\d.]+) (?P<unit>[kMG]?B)")
_UNITS = {"B": 1, "kB": 1_000, "MB": 1_000_000, "GB": 1_000_000_000}


def maven_progress(lines: Sequence[str]) -> str:
    """How far ``mvn -B`` (without ``-q``) has got: files downloaded from the repositories, and their size."""
    sizes = [m for line in lines if (m := _MAVEN_DOWNLOADED.match(line))]
    total = sum(float(m["size"]) * _UNITS[m["unit"]] for m in sizes)
    return f"{len(sizes)} files downloaded ({total / 1_000_000:.1f} MB)"


_APT_GET = re.compile(r"^Get:\d+ ")
_APT_NEW = re.compile(r"^(?P<upgraded>\d+) upgraded, (?P<new>\d+) newly installed")
_APT_SET_UP = re.compile(r"^Setting up ")


def apt_progress(lines: Sequence[str]) -> str:
    """How far ``apt-get install`` has got: packages downloaded and set up, out of how many when it has said so."""
    fetched = sum(1 for line in lines if _APT_GET.match(line))
    set_up = sum(1 for line in lines if _APT_SET_UP.match(line))
    counts = [m for line in lines if (m := _APT_NEW.match(line))]
    of = f" of {int(counts[0]['new']) + int(counts[0]['upgraded'])}" if counts else ""
    return f"{fetched}{of} packages downloaded, {set_up}{of} set up"
