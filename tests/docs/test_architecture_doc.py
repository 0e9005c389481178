"""docs/architecture.md matches the tree: its package table lists every package of ``runtime/`` and no other, its
root table every module at ``runtime/``'s root, its layers the order ``tests/test_layers.py`` enforces; the root
stays small and no module grows past 500 lines without a reason written here."""

from __future__ import annotations

import re
from pathlib import Path

from test_layers import LAYERS

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "architecture.md"
RUNTIME = ROOT / "runtime"
MOST_ROOT_MODULES = 10
LONGEST = 500
ONE_CONCEPT_PAST_LONGEST: dict[str, str] = {}
"""Modules over :data:`LONGEST` lines, each with the one concept it holds."""


def section(title: str) -> str:
    text = DOC.read_text()
    start = text.index(title)
    end = text.find("\n#", start + len(title))
    return text[start : end if end > 0 else None]


def first_column(table: str) -> list[str]:
    return re.findall(r"^\| `([^`]+)` \|", table, flags=re.MULTILINE)


def runtime_packages() -> list[str]:
    return sorted(
        f"{path.parent.relative_to(ROOT)}/"
        for path in RUNTIME.rglob("__init__.py")
        if path.parent != RUNTIME and "__pycache__" not in path.parts
    )


def root_modules() -> list[str]:
    return sorted(path.name for path in RUNTIME.glob("*.py"))


def test_the_package_table_lists_every_runtime_package() -> None:
    assert sorted(first_column(section("### Packages"))) == runtime_packages()


def test_the_root_table_lists_every_root_module() -> None:
    table = section("### The root")
    assert sorted(first_column(table)) == root_modules()


def test_the_layers_are_the_tests_layers_in_the_same_order() -> None:
    documented = re.findall(r"^\| (\w+) \|", section("### Layers"), flags=re.MULTILINE)
    runtime_layers = [name for name, prefixes in LAYERS if any(p.startswith("headwater.runtime") for p in prefixes)]
    assert documented[1:] == runtime_layers  # the first row is the table's header


def test_each_layer_row_names_the_layers_modules() -> None:
    rows = dict(re.findall(r"^\| (\w+) \| (.+?) \|", section("### Layers"), flags=re.MULTILINE))
    for name, prefixes in LAYERS:
        for prefix in prefixes:
            if not prefix.startswith("headwater.runtime"):
                continue
            path = "runtime" + prefix.removeprefix("headwater.runtime").replace(".", "/")
            if prefix == "headwater.runtime":
                named = "`runtime/__init__.py`"
            else:
                named = f"`{path}/`" if (ROOT / path).is_dir() else f"`{path}.py`"
            assert named in rows[name], f"the {name} row of docs/architecture.md does not name {named}"


def test_the_runtime_root_holds_a_handful_of_modules() -> None:
    assert len(root_modules()) <= MOST_ROOT_MODULES, root_modules()


def test_no_module_grows_past_the_limit_without_a_reason() -> None:
    long = {
        str(path.relative_to(ROOT))
        for folder in ("sdk", "runtime", "harness", "reference_connectors", "demo")
        for path in (ROOT / folder).rglob("*.py")
        if len(path.read_text().splitlines()) > LONGEST
    }
    assert long <= set(ONE_CONCEPT_PAST_LONGEST), sorted(long - set(ONE_CONCEPT_PAST_LONGEST))
