"""Every bench of ``bench/`` in one go (``make bench``): each in a child process of its own, one after another, with
settings that finish in about 15 minutes on 2 cores, and one table of their ratios against each ratio's goal.

A broker and a PostgreSQL server are started once (or given: ``--bootstrap-servers``, ``--postgres-url``) and
handed to every bench that takes them, when the first bench that needs one runs; each stops after the last bench
that needs it. A broker started here gets G1 (``HEADWATER_KAFKA_JVM_OPTS``, unless set), as ``mirror.py`` and
``spark_sink.py`` give the brokers they start. The benches that need a service of their own start it themselves:
``avro.py`` its Schema Registry, ``mirror.py`` its second (source) broker and MirrorMaker 2, ``cdc.py`` Debezium on
Java Kafka Connect, ``spark_sink.py`` its Spark sessions.

Each bench's ratios are read from the last line of its output that names all of them (``name=value``). The table
gives every ratio with its goal and whether it is met, and each bench's wall time; a bench that exits with an
error, times out or prints no such line is a row marked ``failed``, with its last stderr lines printed below the
table. The exit code is 0 when every bench ran (whatever the goals say), 1 otherwise. A goal ``hold`` is met when the
value is no worse than the one in the newest table of ``docs/performance.md`` (less ``HOLD_TOLERANCE``, the run-to-run
spread of these benches). ``--write-docs`` adds this run's table, with the date, the commit, the machine and the
commands, at the top of that page's results, the older tables staying below it.

Run it with::

    python bench/run_all.py [--only a,b] [--skip a,b] [--bootstrap-servers HOST:PORT] [--postgres-url URL]
        [--write-docs] [--list]

The settings of each bench, and why they are enough, are in docs/performance.md.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

ROOT = Path(__file__).resolve().parents[1]
BENCH_DIR = ROOT / "bench"
DOCS_PAGE = ROOT / "docs" / "performance.md"
RESULTS_MARK = "<!-- results: newest first; `python bench/run_all.py --write-docs` adds one here -->"
HOLD_TOLERANCE = 0.1
"""A ``hold`` goal is met down to this fraction below the previous value: about the spread between two runs."""
BROKER_JVM_OPTS = "-Xms512m -Xmx1g -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -Djava.awt.headless=true"
"""As ``mirror.py`` and ``spark_sink.py`` give the brokers they start: a broker under load, not the tests' quick one."""
STDERR_LINES = 15
NOT_BENCHES = ("run_all", "java_connect")
"""Modules of ``bench/`` that are not benches: this runner, and Java Connect (a side of ``mirror.py``, ``cdc.py``)."""


@dataclass(frozen=True)
class Goal:
    """What a ratio should be: ``>=`` or ``<`` a bound, ``hold`` (no worse than the previous table), or ``-``
    (none: the figure is shown for the record)."""

    op: str
    bound: float = 0.0

    def __str__(self) -> str:
        return self.op if self.op in ("hold", "-") else f"{self.op} {self.bound:g}"

    def met(self, value: float, previous: float | None) -> bool | None:
        """Whether ``value`` meets the goal; None when there is nothing to meet (no goal, no previous value)."""
        if self.op == ">=":
            return value >= self.bound
        if self.op == "<":
            return value < self.bound
        if self.op == "hold":
            return None if previous is None else value >= previous * (1 - HOLD_TOLERANCE)
        return None


def at_least(bound: float) -> Goal:
    return Goal(">=", bound)


HOLD = Goal("hold")
NONE = Goal("-")


@dataclass(frozen=True)
class Bench:
    """One bench: its script, the arguments of this run, the ratios it must print with their goals, and the options
    by which it takes each shared service (``kafka``, ``postgres``)."""

    name: str
    args: tuple[str, ...]
    ratios: Mapping[str, Goal]
    services: Mapping[str, str] = field(default_factory=dict)
    timeout_s: float = 600
    script: Path | None = None

    @property
    def path(self) -> Path:
        return self.script or BENCH_DIR / f"{self.name}.py"

    def command(self, python: str, services: Mapping[str, str]) -> list[str]:
        given = [arg for need, option in self.services.items() for arg in (option, services[need])]
        return [python, str(self.path), *self.args, *given]

    def shown(self) -> str:
        """The command as the docs give it, a service by its name."""
        given = [f"{option} <{need}>" for need, option in self.services.items()]
        return " ".join([f"python bench/{self.name}.py", *self.args, *given])


BENCHES = (
    Bench("core_loops", (), {"source_ratio": at_least(0.8), "sink_ratio": at_least(0.8)}, timeout_s=300),
    Bench("transforms", (), {"source_ratio": at_least(0.8), "sink_ratio": at_least(0.8)}, timeout_s=300),
    Bench(
        "avro",
        ("--records", "20000", "--repeat", "7"),
        {"serialize_ratio": at_least(0.9), "deserialize_ratio": at_least(0.9)},
        timeout_s=300,
    ),
    Bench(
        "kafka_pipeline",
        ("--records", "1000000", "--repeat", "2"),
        {"source_ratio": HOLD, "sink_ratio": HOLD},
        {"kafka": "--bootstrap-servers"},
    ),
    Bench(
        "exactly_once",
        (),
        {"ratio_batch1000": at_least(0.8), "ratio_batch5000": at_least(0.95)},
        {"kafka": "--bootstrap-servers"},
    ),
    Bench(
        "mirror",
        ("--records", "500000", "--repeat", "2"),
        {"vs_raw": at_least(0.9), "vs_mm2": at_least(2.5)},
        {"kafka": "--destination-bootstrap"},
    ),
    Bench(
        "spark_sink",
        ("--records", "500000", "--repeat", "2"),
        {"vs_structured_streaming": at_least(2.0), "vs_pyarrow": at_least(0.6)},
        {"kafka": "--bootstrap-servers"},
        timeout_s=900,
    ),
    Bench(
        "distributed",
        ("--workers", "1,2", "--seconds", "5", "--warm-up", "2"),
        {"workers2/workers1": NONE},
        {"kafka": "--bootstrap-servers"},
        timeout_s=300,
    ),
    Bench(
        "cdc",
        ("--rows", "100000", "--steady-s", "5"),
        {"vs_raw": HOLD, "vs_debezium": HOLD},
        {"kafka": "--kafka-bootstrap", "postgres": "--postgres-url"},
    ),
    Bench(
        "wal_retention",
        ("--wal-mb", "40", "--chunks", "4", "--settle-s", "20"),
        {"retained_mb_heartbeat": Goal("<", 16), "retained_mb_off": NONE},
        {"postgres": "--postgres-url"},
        timeout_s=300,
    ),
)


@dataclass
class Result:
    """What one bench gave: its ratios, or why it failed, and how long it took."""

    bench: Bench
    values: dict[str, float]
    wall_s: float
    error: str | None = None
    stderr_tail: list[str] = field(default_factory=list)

    @property
    def ran(self) -> bool:
        return self.error is None


VALUE = re.compile(r"(\S+?)=(-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)(?=\s|$)")


def parse_ratios(lines: Sequence[str], names: Sequence[str]) -> dict[str, float] | None:
    """The values of ``names`` from the last line that has all of them as ``name=value``; None when none has."""
    for line in reversed(lines):
        found = dict(VALUE.findall(line))
        if all(name in found for name in names):
            return {name: float(found[name]) for name in names}
    return None


def run_bench(
    bench: Bench,
    services: Mapping[str, str],
    echo: TextIO,
    python: str = sys.executable,
    timeout_s: float | None = None,
) -> Result:
    """Runs ``bench`` in a child process of its own (its own session, so a timeout stops what it started too),
    echoing its output line by line, and reads its ratios."""
    command = bench.command(python, services)
    timeout = bench.timeout_s if timeout_s is None else timeout_s
    lines: list[str] = []
    started = time.monotonic()
    with (
        tempfile.TemporaryFile(mode="w+", encoding="utf-8", errors="replace") as stderr,
        subprocess.Popen(
            command,
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
            errors="replace",
            env=dict(os.environ, PYTHONUNBUFFERED="1"),
            start_new_session=True,
            preexec_fn=_interruptible if signal.getsignal(signal.SIGINT) is signal.SIG_IGN else None,
        ) as child,
    ):
        reader = threading.Thread(target=_echo, args=(child, lines, echo, bench.name), daemon=True)
        reader.start()
        try:
            code: int | None = child.wait(timeout)
        except subprocess.TimeoutExpired:
            code = None
            _stop(child)
        except KeyboardInterrupt:  # its own session does not get the terminal's ^C
            _stop(child)
            raise
        reader.join(30)  # the end of its output: a process it left behind may hold the pipe open
        wall = time.monotonic() - started
        stderr.seek(0)
        tail = list(deque(stderr.read().splitlines(), STDERR_LINES))
    if code is None:
        return Result(bench, {}, wall, f"timed out after {timeout:g} s", tail)
    if code != 0:
        return Result(bench, {}, wall, f"exited with {code}", tail)
    values = parse_ratios(lines, list(bench.ratios))
    if values is None:
        return Result(bench, {}, wall, f"printed no line with {', '.join(f'{n}=' for n in bench.ratios)}", tail)
    return Result(bench, values, wall)


def _echo(child: subprocess.Popen[str], lines: list[str], echo: TextIO, name: str) -> None:
    assert child.stdout is not None
    for line in child.stdout:
        lines.append(line.rstrip("\n"))
        echo.write(f"  {name}| {line}")
        echo.flush()


def _interruptible() -> None:
    """In the bench's process before it starts: SIGINT back to its default. A process started in the background
    by a shell without job control (``make bench &`` in a script) ignores SIGINT, and so does everything it starts:
    Python then installs no KeyboardInterrupt for it, and :func:`_stop` would wait out its 30 s and kill the bench
    without its ``finally`` blocks."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _stop(child: subprocess.Popen[str]) -> None:
    """SIGINT to the bench's session (its ``finally`` blocks stop what it started), then SIGKILL after 30 s."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(child.pid, signal.SIGINT)
    try:
        child.wait(30)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(child.pid, signal.SIGKILL)
        child.wait()


# -- the table -------------------------------------------------------------------------------------------------


HEADER = "| bench | ratio | value | goal | met | wall s |\n|---|---|---|---|---|---|"


def table(results: Sequence[Result], previous: Mapping[tuple[str, str], float]) -> str:
    """One markdown table: a row per ratio (a failed bench: one row saying why), the wall time on each bench's
    first row."""
    rows = [HEADER]
    for result in results:
        name, wall = result.bench.name, f"{result.wall_s:.0f}"
        if not result.ran:
            rows.append(f"| {name} | {', '.join(result.bench.ratios)} | failed | - | {result.error} | {wall} |")
            continue
        for index, (ratio, goal) in enumerate(result.bench.ratios.items()):
            value = result.values[ratio]
            met = goal.met(value, previous.get((name, ratio)))
            shown = "-" if met is None else "yes" if met else "**no**"
            if goal.op == "hold":
                before = previous.get((name, ratio))
                shown += f" (was {before:g})" if before is not None else " (no previous)"
            rows.append(f"| {name} | {ratio} | {value:g} | {goal} | {shown} | {wall if index == 0 else ''} |")
    return "\n".join(rows)


ROW = re.compile(r"^\| (\S+) \| (\S+) \| (-?[\d.eE+-]+) \|", re.MULTILINE)


def previous_values(page: str) -> dict[tuple[str, str], float]:
    """The newest value of each bench's ratio in the tables of ``page`` (below :data:`RESULTS_MARK`, newest
    first): a bench that failed in the newest table keeps the value of the one before."""
    _, mark, results = page.partition(RESULTS_MARK)
    found: dict[tuple[str, str], float] = {}
    for section in results.split("\n### ")[1:] if mark else []:
        for bench, ratio, value in ROW.findall(section):
            found.setdefault((bench, ratio), float(value))
    return found


def failures(results: Sequence[Result]) -> str:
    blocks = []
    for result in results:
        if not result.ran:
            shown = "\n".join(f"    {line}" for line in result.stderr_tail) or "    (nothing on stderr)"
            blocks.append(f"{result.bench.name} {result.error}; its last stderr lines:\n{shown}")
    return "\n".join(blocks)


# -- the run ---------------------------------------------------------------------------------------------------


@dataclass
class Machine:
    """Where and when a run happened, for the docs page."""

    date: str
    commit: str
    cores: int
    load: tuple[float, float, float]

    @classmethod
    def now(cls) -> Machine:
        def git(*args: str) -> str:
            done = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True)
            return done.stdout.strip() if done.returncode == 0 else ""

        commit = git("rev-parse", "--short", "HEAD") or "unknown"
        if git("status", "--porcelain", "--untracked-files=no"):
            commit += " (dirty)"
        return cls(datetime.date.today().isoformat(), commit, os.cpu_count() or 0, os.getloadavg())

    def line(self) -> str:
        load = " ".join(f"{value:.2f}" for value in self.load)
        return f"{self.cores} cores (nproc), load average {load} at the start"


def section(machine: Machine, benches: Sequence[Bench], results: Sequence[Result], body: str, total_s: float) -> str:
    commands = "\n".join(f"- `{bench.shown()}`" for bench in benches)
    return (
        f"### {machine.date} at {machine.commit}\n\n"
        f"{machine.line()}; `python bench/run_all.py`, {total_s / 60:.1f} min in all.\n\n"
        f"{body}\n\nCommands (`<kafka>`: the run's broker, `<postgres>`: its PostgreSQL server):\n\n{commands}\n"
    )


def write_docs(text: str, page: Path = DOCS_PAGE) -> None:
    """Adds ``text`` (a section) as the newest result on ``page``, above the earlier ones."""
    content = page.read_text(encoding="utf-8")
    head, mark, rest = content.partition(RESULTS_MARK)
    if not mark:
        raise SystemExit(f"{page} has no line {RESULTS_MARK!r} to add the results after")
    older = rest.strip("\n")
    page.write_text(f"{head}{mark}\n\n{text}" + (f"\n{older}\n" if older else ""), encoding="utf-8")


class Services:
    """The shared services, each started when the first bench that needs it runs and stopped after the last."""

    def __init__(self, given: Mapping[str, str | None], starters: Mapping[str, Callable[[], Iterator[str]]]) -> None:
        self.given = given
        self.starters = starters
        self.running: dict[str, contextlib.ExitStack] = {}
        self.urls: dict[str, str] = {}
        self.failed: dict[str, str] = {}

    def provide(self, needs: Sequence[str]) -> str | None:
        """Starts what ``needs`` lacks; the reason when one cannot be had."""
        for need in needs:
            if need in self.failed:
                return self.failed[need]
            if need in self.urls:
                continue
            if (url := self.given.get(need)) is not None:
                self.urls[need] = url
                continue
            stack = contextlib.ExitStack()
            try:
                self.urls[need] = stack.enter_context(contextlib.contextmanager(self.starters[need])())
            except BaseException as exc:
                stack.close()
                if not isinstance(exc, Exception):
                    raise
                self.failed[need] = f"{need} could not be started: {exc}"
                return self.failed[need]
            self.running[need] = stack
        return None

    def release(self, keep: set[str]) -> None:
        for need in [need for need in self.running if need not in keep]:
            self.running.pop(need).close()
            del self.urls[need]

    def close(self) -> None:
        self.release(set())


def kafka() -> Iterator[str]:
    sys.path.insert(0, str(ROOT / "tests"))
    from headwater.harness.cluster import find_cluster

    os.environ.setdefault("HEADWATER_KAFKA_JVM_OPTS", BROKER_JVM_OPTS)
    found = find_cluster()
    print(f"run_all: broker {found.bootstrap_servers} ({found.source})", flush=True)
    try:
        yield found.bootstrap_servers
    finally:
        found.stop()


def postgres() -> Iterator[str]:
    sys.path.insert(0, str(ROOT / "tests"))
    from support.databases import postgres_url

    with postgres_url() as url:
        print("run_all: PostgreSQL started", flush=True)
        yield url


def run_all(benches: Sequence[Bench], services: Services, echo: TextIO) -> list[Result]:
    results = []
    for index, bench in enumerate(benches):
        echo.write(f"run_all: {bench.shown()}\n")
        echo.flush()
        started = time.monotonic()
        refused = services.provide(list(bench.services))
        if refused is not None:
            results.append(Result(bench, {}, time.monotonic() - started, refused))
        else:
            results.append(run_bench(bench, services.urls, echo))
        services.release({need for later in benches[index + 1 :] for need in later.services})
    return results


def main(argv: Sequence[str] | None = None, benches: Sequence[Bench] = BENCHES, page: Path = DOCS_PAGE) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--only", help="These benches only, comma-separated.")
    parser.add_argument("--skip", default="", help="Benches to leave out, comma-separated.")
    parser.add_argument("--bootstrap-servers", help="A running broker; default: one started for the run.")
    parser.add_argument("--postgres-url", help="A running PostgreSQL server (superuser URL); default: one started.")
    parser.add_argument("--write-docs", action="store_true", help=f"Add the table to {DOCS_PAGE.relative_to(ROOT)}.")
    parser.add_argument("--list", action="store_true", help="Print the commands and stop.")
    args = parser.parse_args(argv)
    names = [bench.name for bench in benches]
    only = [name.strip() for name in args.only.split(",")] if args.only else names
    skip = [name.strip() for name in args.skip.split(",") if name.strip()]
    if unknown := sorted(set(only + skip) - set(names)):
        parser.error(f"no bench {', '.join(unknown)}; the benches: {', '.join(names)}")
    chosen = [bench for bench in benches if bench.name in only and bench.name not in skip]
    if args.list:
        print("\n".join(bench.shown() for bench in chosen))
        return 0
    machine = Machine.now()
    print(f"run_all: {len(chosen)} benches at {machine.commit}, {machine.line()}", flush=True)
    services = Services({"kafka": args.bootstrap_servers, "postgres": args.postgres_url}, STARTERS)
    started = time.monotonic()
    try:
        results = run_all(chosen, services, sys.stdout)
    finally:
        services.close()
    total = time.monotonic() - started
    body = table(results, previous_values(page.read_text(encoding="utf-8")) if page.exists() else {})
    print(f"\n{body}\n\n{total / 60:.1f} min in all")
    if broken := failures(results):
        print(f"\n{broken}")
    if args.write_docs:
        write_docs(section(machine, chosen, results, body, total), page)
        print(f"run_all: the table is added to {page}")
    return 0 if all(result.ran for result in results) else 1


STARTERS: Mapping[str, Callable[[], Iterator[str]]] = {"kafka": kafka, "postgres": postgres}


if __name__ == "__main__":
    sys.exit(main())
