"""The worker's state directory (``state.dir``): where a worker keeps what must outlive it on this machine, such as
a standalone worker's source offsets. It is per user, never a shared ``/tmp`` where another user could plant or
read the files: ``$XDG_STATE_HOME/headwater`` by default, else ``~/.local/state/headwater``.

The worker creates the directory (mode 0700) when it first needs it, and refuses to use a path that is not a
directory or a directory other users may write to, naming ``state.dir`` and the problem."""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from headwater.sdk.errors import ConfigError

STATE_DIR = "state.dir"
"""The worker key naming the state directory."""

OFFSETS_FILE = "offset.storage.file.filename"
"""The worker key naming a standalone worker's offsets file; unset, it is :data:`OFFSETS_FILE_NAME` in the state
directory."""

OFFSETS_FILE_NAME = "connect.offsets"

MODE = 0o700
"""The mode a state directory the worker creates gets: only its user may list, read or write it."""


def default_state_dir(environ: Mapping[str, str] = os.environ) -> Path:
    """``$XDG_STATE_HOME/headwater`` when ``XDG_STATE_HOME`` is an absolute path (the XDG base directory
    specification ignores a relative one), else ``~/.local/state/headwater``."""
    xdg = environ.get("XDG_STATE_HOME", "")
    if os.path.isabs(xdg):
        return Path(xdg) / "headwater"
    return Path.home() / ".local" / "state" / "headwater"


def state_dir(config: Mapping[str, Any]) -> Path:
    """The state directory a parsed worker config names (``state.dir``), else the default one."""
    given = config.get(STATE_DIR)
    return Path(given) if given else default_state_dir()


def offsets_file(config: Mapping[str, Any]) -> Path:
    """A standalone worker's offsets file: ``offset.storage.file.filename`` when set, else
    ``<state dir>/connect.offsets``."""
    given = config.get(OFFSETS_FILE)
    return Path(given) if given else state_dir(config) / OFFSETS_FILE_NAME


def prepare_state_dir(path: Path) -> Path:
    """``path``, created with mode 0700 (and its missing parents) when it does not exist. Raise
    :class:`ConfigError` naming ``state.dir`` when it cannot be created, is not a directory, or is writable by its
    group or by other users (they could replace the worker's state)."""
    try:
        path.mkdir(mode=MODE, parents=True, exist_ok=True)
    except FileExistsError:
        raise ConfigError(STATE_DIR, str(path), "The state directory path exists and is not a directory") from None
    except OSError as error:
        reason = f"Cannot create the state directory: {error.strerror or error}; set {STATE_DIR} to a writable path"
        raise ConfigError(STATE_DIR, str(path), reason) from None
    mode = path.stat().st_mode
    if not stat.S_ISDIR(mode):
        raise ConfigError(STATE_DIR, str(path), "The state directory path exists and is not a directory")
    if mode & (stat.S_IWGRP | stat.S_IWOTH):
        reason = (
            f"The state directory is writable by other users (mode {stat.S_IMODE(mode):o}), who could replace the "
            f"worker's state; make it private (chmod 700 {path}) or set {STATE_DIR} to another directory"
        )
        raise ConfigError(STATE_DIR, str(path), reason)
    return path
