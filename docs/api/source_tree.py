"""A mkdocs hook for the API reference pages: lets griffe find ``headwater.sdk`` and its siblings.

The top-level folders are mapped onto ``headwater.*`` by setuptools' package-dir, which griffe cannot follow
through an editable install (it looks for a ``headwater/`` folder next to each mapped one). As
``tools/typecheck.py`` does for mypy, this lays out ``headwater/`` as links to those folders and to the root
package's own files in a temporary directory and makes it the python handler's search path (its default, the
repository's root, would find the root package's ``headwater/`` folder alone). Loaded by ``hooks:`` in
``mkdocs.yml``.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from mkdocs.plugins import event_priority

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ["sdk", "runtime", "harness", "reference_connectors"]

_tree: list[Path] = []  # the temporary directory, once made


@event_priority(100)  # before mkdocstrings makes its handler
def on_config(config: Any) -> None:
    if not _tree:
        tree = Path(tempfile.mkdtemp(prefix="headwater-api-"))
        (tree / "headwater").mkdir()
        for source in (ROOT / "headwater").iterdir():
            if source.is_file():
                (tree / "headwater" / source.name).symlink_to(source)
        for name in PACKAGES:
            (tree / "headwater" / name).symlink_to(ROOT / name, target_is_directory=True)
        _tree.append(tree)
    config["plugins"]["mkdocstrings"].config["handlers"].setdefault("python", {})["paths"] = [str(_tree[0])]
    if str(_tree[0]) not in sys.path:
        sys.path.insert(0, str(_tree[0]))


def on_shutdown() -> None:
    while _tree:
        tree = _tree.pop()
        if str(tree) in sys.path:
            sys.path.remove(str(tree))
        shutil.rmtree(tree, ignore_errors=True)
