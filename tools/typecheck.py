"""Run mypy on the installed layout: `sdk/` is `headwater.sdk` and so on.

The top-level folders are mapped onto `headwater.*` by setuptools' package-dir, which mypy cannot follow through
an editable install, so this builds a tree of links under `.typecheck/headwater/` (the root package's own files from
`headwater/`, one link per folder) and checks the packages there.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ["sdk", "runtime", "harness", "reference_connectors", "demo"]
ROOT_PACKAGE = ROOT / "headwater"


def main() -> int:
    tree = ROOT / ".typecheck" / "headwater"
    tree.mkdir(parents=True, exist_ok=True)
    for source in ROOT_PACKAGE.iterdir():
        link = tree / source.name
        if source.is_file() and not link.is_symlink():
            link.symlink_to(source)
    for name in PACKAGES:
        link = tree / name
        if not link.is_symlink():
            if link.exists():
                link.unlink()
            link.symlink_to(ROOT / name, target_is_directory=True)
    args = [sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml")]
    args += ["-m", "headwater"]
    for module in sorted(ROOT_PACKAGE.glob("*.py")):
        if module.stem != "__init__":
            args += ["-m", f"headwater.{module.stem}"]
    for name in PACKAGES:
        if any((ROOT / name).glob("*.py")):
            args += ["-p", f"headwater.{name}"]
    env = dict(os.environ, MYPYPATH=str(tree.parent))
    return subprocess.call(args, cwd=ROOT, env=env)


if __name__ == "__main__":
    sys.exit(main())
