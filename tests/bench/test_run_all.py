"""The runner of every bench (``make bench``), on stand-in benches: each ratio is read from its bench's output and
set against its goal, a bench that fails, hangs or prints no ratios is a failed row with its stderr, the exit code
says whether all ran, and the docs page keeps each run's table above the earlier ones. No bench of ``bench/`` is
left out of the runner's list."""

from __future__ import annotations

import io
import signal
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType

import pytest

BENCH_DIR = Path(__file__).resolve().parents[2] / "bench"
DOCS_PAGE = BENCH_DIR.parent / "docs" / "performance.md"


@pytest.fixture(scope="module")
def runner(load_bench: Callable[[str], ModuleType]) -> ModuleType:
    return load_bench("run_all")


def script(directory: Path, name: str, body: str) -> Path:
    path = directory / f"{name}.py"
    path.write_text(f"import sys, time\n{body}\n")
    return path


@pytest.fixture
def benches(runner: ModuleType, tmp_path: Path) -> list[object]:
    """A bench that meets one goal and misses the other, one that holds, one that fails, one that prints nothing."""
    bench, goal = runner.Bench, runner.Goal
    return [
        bench(
            "fast",
            ("--n", "3"),
            {"a_ratio": runner.at_least(0.8), "b_ratio": goal("<", 16)},
            script=script(
                tmp_path,
                "fast",
                "print('warm-up: a_ratio=0.1 b_ratio=1'); print(f'a_ratio=0.91 b_ratio=20 n={sys.argv[2]}')",
            ),
        ),
        bench("steady", (), {"x": runner.HOLD}, script=script(tmp_path, "steady", "print('x=1.50 other=2')")),
        bench(
            "broken",
            (),
            {"y": runner.HOLD},
            script=script(tmp_path, "broken", "print('y=1'); sys.stderr.write('Traceback\\nBoom: no broker\\n'); 1/0"),
        ),
        bench("quiet", (), {"z": runner.NONE}, script=script(tmp_path, "quiet", "print('done')")),
    ]


@pytest.fixture
def page(runner: ModuleType, tmp_path: Path) -> Path:
    path = tmp_path / "performance.md"
    path.write_text(f"# Performance\n\nProse.\n\n{runner.RESULTS_MARK}\n")
    return path


def rows(output: str) -> dict[tuple[str, str], list[str]]:
    """The table's rows by bench and ratio: value, goal, met."""
    found = {}
    for line in output.splitlines():
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        if len(cells) == 6 and cells[0] not in ("bench", "---"):
            found[cells[0], cells[1]] = cells[2:5]
    return found


def test_the_table_sets_each_ratio_against_its_goal_and_marks_failed_benches(
    runner: ModuleType, benches: list[object], page: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert runner.main([], benches, page) == 1, "two benches did not run"
    output = capsys.readouterr().out
    table = rows(output)
    assert table["fast", "a_ratio"] == ["0.91", ">= 0.8", "yes"]
    assert table["fast", "b_ratio"] == ["20", "< 16", "**no**"]
    assert table["steady", "x"] == ["1.5", "hold", "- (no previous)"]
    assert table["broken", "y"] == ["failed", "-", "exited with 1"]
    assert table["quiet", "z"] == ["failed", "-", "printed no line with z="]
    assert "  fast| warm-up: a_ratio=0.1" in output, "a bench's output is shown as it runs"
    assert "broken exited with 1; its last stderr lines:\n    Traceback\n    Boom: no broker" in output


def test_a_run_of_benches_that_all_ran_exits_0(
    runner: ModuleType, benches: list[object], page: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert runner.main(["--only", "fast,steady"], benches, page) == 0
    assert {bench for bench, _ in rows(capsys.readouterr().out)} == {"fast", "steady"}


@pytest.mark.parametrize("sigint", ["default", "ignored"])
def test_a_bench_that_hangs_is_stopped_and_failed(runner: ModuleType, tmp_path: Path, sigint: str) -> None:
    """Also where the runner was started with SIGINT ignored (in the background by a shell without job control),
    which its children would inherit."""
    bench = runner.Bench("hangs", (), {"x": runner.NONE}, script=script(tmp_path, "hangs", "time.sleep(60)"))
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN) if sigint == "ignored" else None
    try:
        result = runner.run_bench(bench, {}, io.StringIO(), timeout_s=1)
    finally:
        if previous is not None:
            signal.signal(signal.SIGINT, previous)
    assert not result.ran and result.error == "timed out after 1 s"
    assert result.wall_s < 30, "SIGINT stopped it"
    assert any("KeyboardInterrupt" in line for line in result.stderr_tail), result.stderr_tail


def test_the_docs_keep_each_run_above_the_earlier_ones_and_hold_compares_with_the_newest(
    runner: ModuleType, benches: list[object], page: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runner.main(["--only", "steady", "--write-docs"], benches, page)
    first = page.read_text()
    assert first.startswith("# Performance\n\nProse.\n\n" + runner.RESULTS_MARK)
    assert "| steady | x | 1.5 | hold | - (no previous) |" in first
    assert "- `python bench/steady.py`" in first and "load average" in first
    (page.parent / "steady.py").write_text("print('x=1.2')")
    capsys.readouterr()
    runner.main(["--only", "steady", "--write-docs"], benches, page)
    assert rows(capsys.readouterr().out)["steady", "x"] == ["1.2", "hold", "**no** (was 1.5)"]
    second = page.read_text()
    assert second.index("| steady | x | 1.2 |") < second.index("| steady | x | 1.5 |"), "the newest first"
    assert second.count("\n### ") == 2
    assert runner.previous_values(second) == {("steady", "x"): 1.2}


def test_a_service_that_cannot_start_fails_the_benches_that_need_it_and_no_other(
    runner: ModuleType, tmp_path: Path
) -> None:
    def broker() -> Iterator[str]:
        raise RuntimeError("no Java")
        yield ""

    ok = script(tmp_path, "ok", "print(f'r=1 got={sys.argv[-1]}')")
    benches = [
        runner.Bench("needs", (), {"r": runner.NONE}, {"kafka": "--bootstrap-servers"}, script=ok),
        runner.Bench("alone", (), {"r": runner.NONE}, script=ok),
    ]
    services = runner.Services({"kafka": None}, {"kafka": broker})
    needs, alone = runner.run_all(benches, services, io.StringIO())
    assert needs.error == "kafka could not be started: no Java"
    assert alone.ran and alone.values == {"r": 1.0}


def test_a_shared_service_is_given_to_each_bench_by_its_option_and_stopped_after_the_last(
    runner: ModuleType, tmp_path: Path
) -> None:
    events: list[str] = []
    output = io.StringIO()

    def database() -> Iterator[str]:
        events.append("start")
        yield "postgresql://here"
        events.append("stop before three" if "three|" not in output.getvalue() else "stop after three")

    echo = "print('r=1'); open(sys.argv[0] + '.args', 'w').write(' '.join(sys.argv[1:]))"
    benches = [
        runner.Bench(name, (), {"r": runner.NONE}, {"postgres": option}, script=script(tmp_path, name, echo))
        for name, option in (("one", "--postgres-url"), ("two", "--db"))
    ]
    benches.append(runner.Bench("three", (), {"r": runner.NONE}, script=script(tmp_path, "three", echo)))
    services = runner.Services({"postgres": None}, {"postgres": database})
    results = runner.run_all(benches, services, output)
    assert all(result.ran for result in results)
    assert (tmp_path / "one.py.args").read_text() == "--postgres-url postgresql://here"
    assert (tmp_path / "two.py.args").read_text() == "--db postgresql://here"
    assert events == ["start", "stop before three"], "started once, stopped after the last bench that needs it"


def test_every_bench_of_the_folder_is_in_the_runners_list(runner: ModuleType) -> None:
    listed = {bench.name for bench in runner.BENCHES}
    found = {path.stem for path in BENCH_DIR.glob("*.py")} - set(runner.NOT_BENCHES)
    assert found == listed, f"benches not run by bench/run_all.py: {sorted(found - listed)}"
    assert all(bench.path.exists() for bench in runner.BENCHES)


def test_an_unknown_bench_is_refused(runner: ModuleType, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as raised:
        runner.main(["--only", "core_loop"])
    assert raised.value.code == 2 and "no bench core_loop" in capsys.readouterr().err


def test_the_docs_tables_name_the_runners_benches_and_ratios(runner: ModuleType) -> None:
    recorded = runner.previous_values(DOCS_PAGE.read_text())
    assert ("kafka_pipeline", "source_ratio") in recorded, "the page keeps its results mark and tables"
    known = {(bench.name, ratio) for bench in runner.BENCHES for ratio in bench.ratios}
    assert set(recorded) <= known, f"ratios the runner no longer reads: {sorted(set(recorded) - known)}"
