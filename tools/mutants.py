"""Measure the conformance suite against generated mutants (``make mutants``; outside ``make test``).

Cosmic Ray (https://cosmic-ray.readthedocs.io) mutates, one at a time, the offset, heartbeat and commit code of two
reference connectors (:data:`TARGETS`: the functions named there, nothing else in their modules), runs each
connector's conformance suite and own fast tests against every mutant, and this prints per connector the mutants
generated, killed, survived and timed out, the kill rate, and each survivor's place and diff.

Cosmic Ray writes each mutant into the source file itself, so it works whatever the package layout (the folders here
install as ``headwater.*`` through setuptools' package-dir, which a tool that copies the tree cannot follow), and
restores the file after the test; this script also keeps the files' text and writes it back when it ends, however
it ends. It runs in its own venv (``.venv-mutants``, Cosmic Ray alone); the tests run with the project's ``.venv``.

The Spark sink's tests need a SparkSession, whose JVM takes 20-30 s to start: its test command is a client of a
warm test server (``serve``, in ``.venv``) that keeps one session and runs pytest in-process for each mutant, after
dropping the mutated package and the test modules from ``sys.modules``. A mutant that hangs there is cut off by the
server's alarm (reported as timed out) and the next client starts a fresh server.

    .venv-mutants/bin/python tools/mutants.py [--only jdbc-cdc|spark-sink] [--list] [--again] [--jobs N]
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import io
import json
import os
import shlex
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
STATE = ROOT / ".mutants"
"""Sessions (Cosmic Ray's SQLite files), configs, the warm server's socket and log."""
PYTHON = ROOT / ".venv" / "bin" / "python"
TIMEOUT_MARK = "MUTANT-TIMED-OUT"

OPERATORS = {
    f"core/{name}"
    for name in (
        # one replacement per site, as mutmut makes them: boundaries, negations, arithmetic, constants, flow
        "ReplaceComparisonOperator_Eq_NotEq",
        "ReplaceComparisonOperator_NotEq_Eq",
        "ReplaceComparisonOperator_Lt_LtE",
        "ReplaceComparisonOperator_LtE_Lt",
        "ReplaceComparisonOperator_Gt_GtE",
        "ReplaceComparisonOperator_GtE_Gt",
        "ReplaceComparisonOperator_Is_IsNot",
        "ReplaceComparisonOperator_IsNot_Is",
        "ReplaceBinaryOperator_Add_Sub",
        "ReplaceBinaryOperator_Sub_Add",
        "ReplaceBinaryOperator_Mul_Div",
        "ReplaceBinaryOperator_Div_Mul",
        "ReplaceBinaryOperator_FloorDiv_Mul",
        "ReplaceBinaryOperator_BitOr_BitAnd",
        "ReplaceBinaryOperator_BitAnd_BitOr",
        "ReplaceUnaryOperator_Delete_Not",
        "ReplaceUnaryOperator_USub_UAdd",
        "AddNot",
        "ReplaceTrueWithFalse",
        "ReplaceFalseWithTrue",
        "ReplaceAndWithOr",
        "ReplaceOrWithAnd",
        "ReplaceBreakWithContinue",
        "ReplaceContinueWithBreak",
        "NumberReplacer",
        "ZeroIterationForLoop",
        "RemoveDecorator",
        "ExceptionReplacer",
    )
}
"""Cosmic Ray's operators used: each site gets the one or two mutants mutmut would make, not every operator pair."""


@dataclass(frozen=True)
class Target:
    """One connector: the functions to mutate per module, lines left alone, and the test command."""

    name: str
    scope: dict[str, tuple[str, ...]]
    tests: tuple[str, ...]
    pytest_args: tuple[str, ...] = ()
    skip_lines: tuple[str, ...] = ()
    """Mutations on a line containing one of these are not made (code of another mode than the one tested)."""
    warm: bool = False
    """Run the tests in the warm server (a SparkSession kept between mutants)."""
    env: dict[str, str] = field(default_factory=dict)


JDBC = "reference_connectors/jdbc_cdc"
SPARK = "reference_connectors/spark_sink"
TARGETS = [
    Target(
        "jdbc-cdc",
        {
            # trigger mode's offsets: where a task resumes, what each change and snapshot row carries, heartbeats,
            # the purge of what is committed
            f"{JDBC}/trigger.py": (
                "TriggerStream.__init__",
                "TriggerStream._start_snapshot",
                "TriggerStream.read",
                "TriggerStream._read",
                "TriggerStream._read_snapshot",
                "TriggerStream.heartbeat_offset",
                "TriggerStream.committed",
            ),
            f"{JDBC}/task.py": (
                "JdbcCdcSourceTask.poll",
                "JdbcCdcSourceTask.produce_heartbeat_records",
                "JdbcCdcSourceTask.offsets_committed",
            ),
            # which audit ids may be handed on (the position every offset carries)
            f"{JDBC}/watermark.py": ("Watermark.accept", "Watermark.needs_list", "Watermark._settled"),
        },
        tests=(
            "tests/reference_connectors/jdbc_cdc/test_trigger_offsets.py",
            "tests/reference_connectors/jdbc_cdc/test_watermark.py",
            "tests/reference_connectors/jdbc_cdc/test_trigger_mode.py",
            "tests/reference_connectors/jdbc_cdc/test_out_of_order_commits.py",
            "tests/reference_connectors/jdbc_cdc/test_exactly_once.py",
            "tests/reference_connectors/jdbc_cdc/test_conformance.py",
        ),
        pytest_args=("-m", "not services"),  # SQLite only: PostgreSQL, MariaDB and the broker are services
        skip_lines=("self.log", "self.transactions"),  # log mode's lines of the shared task
    ),
    Target(
        "spark-sink",
        {
            # what a flush writes and which offsets it returns, after the misfits' reports
            f"{SPARK}/writer.py": (
                "TableWriter.recover",
                "TableWriter.write",
                "TableWriter._report",
                "TableWriter._await",
            ),
            # which records of which partition a flush takes, and the last offset of each
            f"{SPARK}/buffer.py": (
                "PartitionBuffer.__len__",
                "PartitionBuffer.last_offset",
                "RecordBuffer.add",
                "RecordBuffer.take",
                "RecordBuffer.drop",
            ),
            # when the task flushes, which offsets count as written, what pre_commit returns, rewinds on open
            f"{SPARK}/task.py": (
                "SparkSinkTask.open",
                "SparkSinkTask.close",
                "SparkSinkTask.put",
                "SparkSinkTask._due",
                "SparkSinkTask.flush_buffer",
                "SparkSinkTask.collect",
                "SparkSinkTask.pre_commit",
                "SparkSinkTask.stop",
            ),
        },
        tests=(
            "tests/reference_connectors/spark_sink/test_commit_rules.py",
            "tests/reference_connectors/spark_sink/test_task.py",
            "tests/reference_connectors/spark_sink/test_conformance.py",
        ),
        # Delta's table code is not mutated, and its resume test takes half the run: Parquet's stands for both
        pytest_args=("-k", "not delta"),
        warm=True,
    ),
]


# ---- selecting the mutants -----------------------------------------------------------------------------------


def function_lines(path: Path, names: tuple[str, ...]) -> set[int]:
    """The lines of the functions ``names`` (``Class.method`` or ``function``) of the module at ``path``,
    decorators included; refuses a name the module has not got."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: dict[str, set[int]] = {}

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}{child.name}.")
            elif isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                first = min([child.lineno, *(d.lineno for d in child.decorator_list)])
                found[f"{prefix}{child.name}"] = set(range(first, (child.end_lineno or child.lineno) + 1))

    visit(tree, "")
    missing = [name for name in names if name not in found]
    if missing:
        raise SystemExit(f"{path.relative_to(ROOT)} has no {', '.join(missing)}: update TARGETS in {__file__}")
    return set().union(*(found[name] for name in names))


def annotations(path: Path) -> list[tuple[tuple[int, int], tuple[int, int]]]:
    """The spans of the module's annotations: never evaluated (``from __future__ import annotations``), so a
    mutant there is equivalent by construction."""
    spans = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        found: list[ast.expr | None] = []
        if isinstance(node, ast.AnnAssign | ast.arg):
            found.append(node.annotation)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            found.append(node.returns)
        for each in found:
            if each is not None:
                spans.append(((each.lineno, each.col_offset), (each.end_lineno or 0, each.end_col_offset or 0)))
    return spans


def select(target: Target, session: Path) -> int:
    """Mark the work items outside the target's functions, operators and lines as skipped; return how many are
    left to run."""
    from cosmic_ray.work_db import WorkDB, use_db
    from cosmic_ray.work_item import WorkerOutcome, WorkResult

    wanted = {str(ROOT / module): function_lines(ROOT / module, names) for module, names in target.scope.items()}
    texts = {module: Path(module).read_text(encoding="utf-8").splitlines() for module in wanted}
    annotated = {module: annotations(Path(module)) for module in wanted}
    left = 0
    with use_db(str(session), WorkDB.Mode.open) as db:
        skip = []
        for item in db.pending_work_items:
            (mutation,) = item.mutations
            module, line = str(mutation.module_path), mutation.start_pos[0]
            text = texts[module][line - 1]
            if (
                mutation.operator_name not in OPERATORS
                or line not in wanted[module]
                or any(mark in text for mark in target.skip_lines)
                or any(start <= tuple(mutation.start_pos) < end for start, end in annotated[module])
            ):
                skip.append(item.job_id)
            else:
                left += 1
        db.set_multiple_results(skip, WorkResult(worker_outcome=WorkerOutcome.SKIPPED))
    return left


# ---- running them ----------------------------------------------------------------------------------------------


def pytest_args(target: Target) -> list[str]:
    return ["-x", "-q", "-p", "no:randomly", "-p", "no:cacheprovider", *target.pytest_args, *target.tests]


def test_command(target: Target, timeout: float = 900.0) -> str:
    """The command Cosmic Ray runs per mutant; a warm server's run is cut off by the server itself a little before
    Cosmic Ray's ``timeout`` would kill the client (and leave the server busy)."""
    if target.warm:
        return shlex.join([str(PYTHON), str(Path(__file__)), "client", target.name, f"--timeout={int(timeout) - 5}"])
    return shlex.join([str(PYTHON), "-m", "pytest", *pytest_args(target)])


def write_config(target: Target, timeout: float) -> Path:
    modules = ", ".join(json.dumps(str(ROOT / m)) for m in target.scope)
    config = STATE / f"{target.name}.toml"
    config.write_text(
        "[cosmic-ray]\n"
        f"module-path = [{modules}]\n"
        f"timeout = {timeout}\n"
        "excluded-modules = []\n"
        f"test-command = {json.dumps(test_command(target, timeout))}\n"
        '\n[cosmic-ray.distributor]\nname = "local"\n',
        encoding="utf-8",
    )
    return config


RUNNING: list[subprocess.Popen[bytes]] = []
"""The Cosmic Ray processes this run started, ended by their ids if the run is interrupted."""


def cosmic_ray(*args: str) -> None:
    tool = Path(sys.executable).with_name("cosmic-ray")
    process = subprocess.Popen([str(tool), "--verbosity", "WARNING", *args], cwd=ROOT)
    RUNNING.append(process)
    if process.wait() != 0:
        raise SystemExit(f"cosmic-ray {args[0]} failed ({process.returncode})")


def baseline(target: Target) -> float:
    """Run the test command on the unmutated code (twice for the warm server: the second is the time a mutant
    takes); return its seconds, failing when the tests fail."""
    runs = 2 if target.warm else 1
    took = 0.0
    for _ in range(runs):
        started = time.monotonic()
        done = subprocess.run(shlex.split(test_command(target)), cwd=ROOT, capture_output=True, text=True)
        took = time.monotonic() - started
        if done.returncode != 0:
            raise SystemExit(f"{target.name}: the tests fail without a mutant:\n{done.stdout[-4000:]}{done.stderr}")
    return took


@dataclass
class Outcome:
    module: str
    line: int
    operator: str
    diff: str
    result: str
    """killed, survived or timeout"""


def outcomes(session: Path) -> list[Outcome]:
    from cosmic_ray.work_db import WorkDB, use_db
    from cosmic_ray.work_item import TestOutcome, WorkerOutcome

    found = []
    with use_db(str(session), WorkDB.Mode.open) as db:
        for item, result in db.completed_work_items:
            if result.worker_outcome == WorkerOutcome.SKIPPED:
                continue
            (mutation,) = item.mutations
            output = result.output or ""
            if output.strip() == "timeout" or TIMEOUT_MARK in output:
                kind = "timeout"
            elif result.test_outcome == TestOutcome.SURVIVED:
                kind = "survived"
            else:
                kind = "killed"
            module = str(Path(mutation.module_path).relative_to(ROOT))
            found.append(Outcome(module, mutation.start_pos[0], mutation.operator_name, result.diff or "", kind))
    return sorted(found, key=lambda o: (o.module, o.line, o.operator))


def report(target: Target, found: list[Outcome], seconds: float) -> str:
    counts = {kind: sum(o.result == kind for o in found) for kind in ("killed", "survived", "timeout")}
    total = len(found)
    rate = (counts["killed"] + counts["timeout"]) / total if total else 0.0
    lines = [
        f"\n== {target.name}: {total} mutants, {counts['killed']} killed, {counts['survived']} survived, "
        f"{counts['timeout']} timed out: kill rate {rate:.1%} ({seconds / 60:.1f} min)"
    ]
    for each in (o for o in found if o.result == "survived"):
        lines.append(f"-- survived: {each.module}:{each.line} ({each.operator.removeprefix('core/')})")
        lines += [
            f"   {line}"
            for line in each.diff.splitlines()
            if line.startswith(("+", "-")) and not line.startswith(("+++", "---"))
        ]
    return "\n".join(lines) + "\n"


@contextlib.contextmanager
def restoring(paths: list[Path]):  # type: ignore[no-untyped-def]
    """Write the files' text back when the run ends, however it ends (Ctrl-C, a killed Cosmic Ray)."""
    saved = {path: path.read_bytes() for path in paths}

    def interrupted(*_: object) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupted)
    try:
        yield
    finally:
        for path, text in saved.items():
            if path.read_bytes() != text:
                path.write_bytes(text)
                print(f"restored {path.relative_to(ROOT)}", file=sys.stderr)
        signal.signal(signal.SIGTERM, previous)


def survivors_again(session: Path) -> int:
    """Make the survivors of the session's last run pending again (the killed stay killed: more checks never let a
    killed mutant survive); return how many."""
    with contextlib.closing(sqlite3.connect(session)) as db, db:
        return db.execute("DELETE FROM work_results WHERE test_outcome = 'SURVIVED'").rowcount


def measure(target: Target, list_only: bool, again: bool) -> str:
    """Generate, select and run the target's mutants (with ``again``, only the last run's survivors); return its
    report."""
    session = STATE / f"{target.name}.sqlite"
    try:
        seconds = 0.0 if list_only else baseline(target)
        # generous: a run three times as long as the unmutated one is a mutant's endless loop
        config = write_config(target, round(max(60.0, 3 * seconds), 1))
        if again and session.exists():
            left = survivors_again(session)
            print(f"{target.name}: the {left} survivors of the last run again", flush=True)
        else:
            cosmic_ray("init", "--force", str(config), str(session))
            left = select(target, session)
        print(f"{target.name}: {left} mutants; the unmutated tests take {seconds:.1f} s", flush=True)
        if list_only:
            return ""
        started = time.monotonic()
        cosmic_ray("exec", str(config), str(session))
        return report(target, outcomes(session), time.monotonic() - started)
    finally:
        if target.warm:
            stop_server(target)


def run(targets: list[Target], list_only: bool, jobs: int, again: bool) -> int:
    """Both connectors at once by default (each mutates only its own modules, and neither's tests import the
    other's)."""
    STATE.mkdir(exist_ok=True)
    with restoring([ROOT / m for t in targets for m in t.scope]):
        pool = ThreadPoolExecutor(jobs)
        try:
            reports = list(pool.map(lambda t: measure(t, list_only, again), targets))
        finally:
            for process in RUNNING:
                if process.poll() is None:
                    process.kill()
            pool.shutdown()
    print("".join(reports))
    return 0


# ---- the warm test server (runs in .venv) -----------------------------------------------------------------------


def socket_path(name: str) -> Path:
    return STATE / f"{name}.sock"


def serve(name: str) -> None:
    """Run pytest in this process for each client, keeping what the tests' session fixtures start in the JVM
    (the SparkSession) between runs; one client at a time."""
    import pytest

    sys.dont_write_bytecode = True
    target = next(t for t in TARGETS if t.name == name)
    packages = tuple(f"headwater.{Path(m).parent.as_posix().replace('/', '.')}" for m in target.scope)
    tests = str(ROOT / "tests")
    path = socket_path(name)
    path.unlink(missing_ok=True)
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    server.listen(1)
    (STATE / f"{name}.pid").write_text(str(os.getpid()))
    while True:
        connection, _ = server.accept()
        with connection, connection.makefile("rw") as stream:
            request = json.loads(stream.readline())
            if request.get("quit"):
                path.unlink(missing_ok=True)
                return
            for module in [m for m in sys.modules if m.startswith(packages)]:
                del sys.modules[module]
            for module, loaded in list(sys.modules.items()):
                if (getattr(loaded, "__file__", None) or "").startswith(tests):
                    del sys.modules[module]

            def timed_out(*_: object) -> None:
                stream.write(json.dumps({"code": 1, "output": TIMEOUT_MARK}) + "\n")
                stream.flush()
                path.unlink(missing_ok=True)
                os._exit(3)  # the next client starts a fresh server

            signal.signal(signal.SIGALRM, timed_out)
            signal.alarm(int(request["timeout"]))
            output = io.StringIO()
            with contextlib.redirect_stdout(output), contextlib.redirect_stderr(output):
                code = int(pytest.main(request["args"]))
            signal.alarm(0)
            stream.write(json.dumps({"code": code, "output": output.getvalue()[-6000:]}) + "\n")
            stream.flush()


def client(name: str, timeout: int) -> int:
    """Send the target's pytest run to its warm server (starting one when none answers); exit as pytest did."""
    target = next(t for t in TARGETS if t.name == name)
    path = socket_path(name)
    deadline = time.monotonic() + 300
    started = False
    while True:
        try:
            connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            connection.connect(str(path))
            break
        except OSError:
            connection.close()
            if not started:
                log = (STATE / f"{name}.server.log").open("a")
                command = [str(PYTHON), str(Path(__file__)), "serve", name]
                subprocess.Popen(command, cwd=ROOT, stdout=log, stderr=log, start_new_session=True)
                started = True
            if time.monotonic() > deadline:
                print(f"the warm test server of {name} did not start: see {STATE / name}.server.log")
                return 2
            time.sleep(0.2)
    with connection, connection.makefile("rw") as stream:
        stream.write(json.dumps({"args": pytest_args(target), "timeout": timeout}) + "\n")
        stream.flush()
        line = stream.readline()
    answer = json.loads(line) if line else {"code": 1, "output": "the warm server died"}
    print(answer["output"])
    return int(answer["code"])


def stop_server(target: Target) -> None:
    path = socket_path(target.name)
    with contextlib.suppress(OSError), socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:
        connection.connect(str(path))
        connection.sendall(b'{"quit": true}\n')


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", nargs="?", default="run", choices=["run", "serve", "client"])
    parser.add_argument("name", nargs="?")
    parser.add_argument("--only", choices=[t.name for t in TARGETS])
    parser.add_argument("--list", action="store_true", help="count the mutants, run nothing")
    parser.add_argument("--again", action="store_true", help="test only the last run's survivors again")
    parser.add_argument("--jobs", type=int, default=2, help="connectors measured at once")
    parser.add_argument("--timeout", type=int, default=900, help="(client) seconds the server gives pytest")
    args = parser.parse_args()
    if args.command == "serve":
        serve(args.name)
        return 0
    if args.command == "client":
        return client(args.name, args.timeout)
    return run([t for t in TARGETS if args.only in (None, t.name)], args.list, args.jobs, args.again)


if __name__ == "__main__":
    sys.exit(main())
