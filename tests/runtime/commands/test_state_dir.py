"""The worker's state directory (``state.dir``): per user, private, never /tmp; the standalone worker's offsets file
is in it unless ``offset.storage.file.filename`` names another."""

from __future__ import annotations

import gc
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from headwater.runtime.commands.standalone import StandaloneWorker
from headwater.runtime.commands.standalone import main as standalone_main
from headwater.runtime.commands.state_dir import default_state_dir, offsets_file, prepare_state_dir
from headwater.runtime.config.worker import STANDALONE_CONFIG
from headwater.sdk.errors import ConfigError

WORKER = "bootstrap.servers=127.0.0.1:1\n"
SOURCE = "name=src\nconnector.class=sequence-source\ntopic=t\n"


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def gc_restored() -> Iterator[None]:
    """A worker command run in this process tunes the garbage collector; put it back after the test."""
    thresholds = gc.get_threshold()
    yield
    gc.unfreeze()
    gc.set_threshold(*thresholds)


def test_the_default_is_xdg_state_home_else_local_state_under_home(monkeypatch: pytest.MonkeyPatch) -> None:
    assert default_state_dir({"XDG_STATE_HOME": "/srv/state"}) == Path("/srv/state/headwater")
    monkeypatch.setenv("HOME", "/home/someone")
    expected = Path("/home/someone/.local/state/headwater")
    assert default_state_dir({}) == expected
    assert default_state_dir({"XDG_STATE_HOME": "relative/path"}) == expected  # the XDG spec ignores relative ones


def test_the_test_suite_never_uses_the_real_home_directory(private_state_dir: Path) -> None:
    """tests/support/fixtures.py points XDG_STATE_HOME at the session's tmp directory for every test."""
    assert default_state_dir() == private_state_dir / "headwater"
    assert not default_state_dir().is_relative_to(Path.home())


def test_the_offsets_file_is_in_the_state_directory_unless_named() -> None:
    parsed = STANDALONE_CONFIG.parse({})
    assert (parsed["state.dir"], parsed["offset.storage.file.filename"]) == (None, None)
    assert offsets_file(parsed) == default_state_dir() / "connect.offsets"
    assert offsets_file(STANDALONE_CONFIG.parse({"state.dir": "/srv/hw"})) == Path("/srv/hw/connect.offsets")
    named = {"state.dir": "/srv/hw", "offset.storage.file.filename": "/data/o.json"}
    assert offsets_file(STANDALONE_CONFIG.parse(named)) == Path("/data/o.json")


def test_a_missing_state_directory_is_created_private(tmp_path: Path) -> None:
    path = tmp_path / "a" / "b" / "headwater"
    assert prepare_state_dir(path) == path
    assert path.is_dir() and path.stat().st_mode & 0o777 == 0o700
    assert prepare_state_dir(path) == path  # an existing private one is used as it is


def test_a_state_directory_others_may_write_to_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "shared"
    path.mkdir()
    os.chmod(path, 0o777)
    with pytest.raises(ConfigError) as raised:
        prepare_state_dir(path)
    assert raised.value.key == "state.dir"
    assert "The state directory is writable by other users (mode 777)" in str(raised.value)
    assert f"chmod 700 {path}" in str(raised.value)


def test_a_state_directory_path_that_is_a_file_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path / "file", "")
    with pytest.raises(ConfigError, match=r"state\.dir: The state directory path exists and is not a directory"):
        prepare_state_dir(path)


def test_the_standalone_worker_keeps_its_offsets_in_the_state_directory(tmp_path: Path) -> None:
    worker = write(tmp_path / "worker.properties", WORKER + f"state.dir={tmp_path / 'state'}\n")
    built = StandaloneWorker.from_paths(worker, [write(tmp_path / "src.properties", SOURCE)])
    assert built.offset_store.path == tmp_path / "state" / "connect.offsets"
    assert not (tmp_path / "state").exists(), "building the worker creates nothing; running it does"


def test_the_standalone_worker_reads_the_state_directorys_offsets_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], gc_restored: None
) -> None:
    """Running reaches the offsets file in the state directory (a corrupt one stops it before any broker check)."""
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    write(state / "connect.offsets", "[]")
    worker = write(tmp_path / "worker.properties", WORKER + f"state.dir={state}\n")
    assert standalone_main(str(worker), [str(write(tmp_path / "src.properties", SOURCE))]) == 1
    assert f"corrupt offsets file {state / 'connect.offsets'}" in capsys.readouterr().err


def test_the_standalone_worker_refuses_a_shared_state_directory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], gc_restored: None
) -> None:
    state = tmp_path / "state"
    state.mkdir()
    os.chmod(state, 0o1777)  # like /tmp
    write(state / "connect.offsets", "[]")  # without the check the run would stop at this corrupt file, not hang
    worker = write(tmp_path / "worker.properties", WORKER + f"state.dir={state}\n")
    assert standalone_main(str(worker), [str(write(tmp_path / "src.properties", SOURCE))]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"headwater standalone: error: {worker}:2: state.dir: invalid value '{state}'"), err
    assert "The state directory is writable by other users (mode 1777)" in err
