"""The hook reference in docs/hooks.md names every hook of sdk/hookspecs.py with its exact signature (datasette's
pattern), and says whether the first result wins."""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from headwater.sdk import hookspecs

HOOKS_MD = Path(__file__).resolve().parents[2] / "docs" / "hooks.md"
SPEC_ATTR = f"{hookspecs.PROJECT}_spec"

HOOKS: dict[str, Callable[..., Any]] = {
    name: function
    for name, function in inspect.getmembers(hookspecs, inspect.isfunction)
    if hasattr(function, SPEC_ATTR)
}


def sections(markdown: str) -> dict[str, str]:
    """The text under each ``## heading``, up to the next one, by heading."""
    parts = re.split(r"^## +(.+?)\s*$", markdown, flags=re.MULTILINE)
    return {heading: body for heading, body in zip(parts[1::2], parts[2::2], strict=True)}


def first_code_line(section: str) -> str | None:
    found = re.search(r"^```[a-z]*\n(.*?)\n", section, flags=re.MULTILINE)
    return found.group(1).strip() if found else None


@pytest.fixture(scope="module")
def documented() -> dict[str, str]:
    return sections(HOOKS_MD.read_text())


def test_hookspecs_declare_the_hooks() -> None:
    assert {"produce_heartbeat_records", "pre_commit", "stop", "offsets_committed"} <= set(HOOKS)


@pytest.mark.parametrize("name", sorted(HOOKS))
def test_hook_is_documented_with_its_signature(name: str, documented: dict[str, str]) -> None:
    assert name in documented, f"docs/hooks.md has no '## {name}' section for hook {name}"
    expected = f"{name}({', '.join(inspect.signature(HOOKS[name]).parameters)})"
    shown = first_code_line(documented[name])
    assert shown == expected, f"docs/hooks.md shows {shown!r} for hook {name}; the hookspec is {expected!r}"


@pytest.mark.parametrize("name", sorted(HOOKS))
def test_hook_reference_says_whether_first_result_wins(name: str, documented: dict[str, str]) -> None:
    firstresult = getattr(HOOKS[name], SPEC_ATTR)["firstresult"]
    expected = f"**firstresult: {'yes' if firstresult else 'no'}**"
    assert expected in documented.get(name, ""), f"docs/hooks.md must say {expected} for hook {name}"


def test_hook_reference_documents_no_other_hooks(documented: dict[str, str]) -> None:
    stale = sorted(set(documented) - set(HOOKS))
    assert not stale, f"docs/hooks.md documents hooks that sdk/hookspecs.py does not declare: {stale}"
