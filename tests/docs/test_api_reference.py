"""The API reference (docs/api/) documents every public name of ``headwater.sdk`` and ``headwater.harness``: each
name in a package's ``__all__`` has a mkdocstrings directive (``::: path``) that leads to that very object."""

from __future__ import annotations

import importlib
import re
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
API = ROOT / "docs" / "api"
PAGES = {"headwater.sdk": API / "sdk.md", "headwater.harness": API / "harness.md"}
DIRECTIVE = re.compile(r"^::: +(\S+)", re.MULTILINE)


def directives(page: Path) -> list[str]:
    """The object paths of a page's mkdocstrings directives, in order."""
    return DIRECTIVE.findall(page.read_text(encoding="utf-8"))


def resolve(path: str) -> Any:
    """The object a dotted path names: the longest importable module, then attributes."""
    parts = path.split(".")
    for end in range(len(parts), 0, -1):
        try:
            found: Any = importlib.import_module(".".join(parts[:end]))
        except ModuleNotFoundError:
            continue
        for name in parts[end:]:
            found = getattr(found, name)
        return found
    raise ModuleNotFoundError(path)


def undocumented(package: ModuleType, paths: list[str]) -> list[str]:
    """The names of ``package.__all__`` that no directive in ``paths`` leads to."""
    by_name: dict[str, list[str]] = {}
    for path in paths:
        by_name.setdefault(path.rpartition(".")[2], []).append(path)
    return [
        name
        for name in package.__all__
        if not any(resolve(path) is getattr(package, name) for path in by_name.get(name, []))
    ]


@pytest.mark.parametrize("package_name", sorted(PAGES))
def test_every_public_name_is_on_its_page(package_name: str) -> None:
    package = importlib.import_module(package_name)
    missing = undocumented(package, directives(PAGES[package_name]))
    assert missing == [], f"add `::: {package_name}.<name>` to {PAGES[package_name].relative_to(ROOT)} for {missing}"


@pytest.mark.parametrize("package_name", sorted(PAGES))
def test_every_directive_names_a_public_object_once(package_name: str) -> None:
    paths = directives(PAGES[package_name])
    assert len(paths) == len(set(paths)), f"documented twice: {sorted(p for p in paths if paths.count(p) > 1)}"
    public = set(importlib.import_module(package_name).__all__)
    assert [p for p in paths if p.rpartition(".")[2] not in public] == [], "a directive for a name not in __all__"


def test_a_missing_name_is_reported() -> None:
    sdk = importlib.import_module("headwater.sdk")
    paths = [p for p in directives(PAGES["headwater.sdk"]) if not p.endswith(".Type")]
    assert undocumented(sdk, paths) == ["Type"]
    # a directive that leads to another object of the same name does not count
    assert undocumented(sdk, [*paths, "typing.Type"]) == ["Type"]


def test_the_pages_are_in_the_navigation() -> None:
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    assert all(f" {page.relative_to(ROOT / 'docs')}\n" in nav for page in PAGES.values())
    assert "mkdocstrings" in nav and re.search(r"^strict: true$", nav, re.MULTILINE)
