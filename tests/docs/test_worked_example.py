"""docs/testing.md's worked example is code the suite runs: each of its ``python title="<path>"`` blocks is a part of
that file, verbatim, and the page shows both the example (``examples/paged_api.py``) and its tests
(``tests/examples/test_paged_api.py``, which run it). A titled block is not run as a block of the page
(``tests/docs/test_examples.py`` runs the untitled ones): its file is."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "testing.md"
TITLED = re.compile(r'^```python title="(?P<path>[^"]+)"\n(?P<code>.*?)^```$', re.MULTILINE | re.DOTALL)
SHOWN = {"examples/paged_api.py", "tests/examples/test_paged_api.py"}


def titled_blocks(text: str) -> list[tuple[str, str]]:
    """``(path, code)`` of each ``python`` block of ``text`` titled with the path of the file it comes from."""
    return [(match["path"], match["code"]) for match in TITLED.finditer(text)]


def test_each_titled_block_is_a_verbatim_part_of_its_file() -> None:
    blocks = titled_blocks(PAGE.read_text(encoding="utf-8"))
    assert {path for path, _ in blocks} >= SHOWN, f"docs/testing.md no longer shows all of {sorted(SHOWN)}"
    for path, code in blocks:
        source = (ROOT / path).read_text(encoding="utf-8")
        assert code.strip() and f"\n{code}" in f"\n{source}", (
            f"docs/testing.md shows a block of {path} that the file does not hold, line for line; copy it again "
            f"from the file:\n{code}"
        )


def test_a_block_that_differs_from_its_file_is_found() -> None:
    page = '```python title="examples/paged_api.py"\ndef cursor(item: Item) -> str:\n    return item["id"]\n```\n'
    [(path, code)] = titled_blocks(page)
    assert path == "examples/paged_api.py"
    assert f"\n{code}" not in f"\n{(ROOT / path).read_text(encoding='utf-8')}"
