"""The ``properties`` blocks of the docs and the README, read as a worker reads a config file: what the static check
of their keys (``tests/docs/test_config_examples.py``) and the end-to-end run of their recipes
(``tests/docs/test_recipes_run.py``) both walk."""

from __future__ import annotations

import re
from pathlib import Path
from typing import NamedTuple

from headwater.runtime.config.properties import parse_properties

ROOT = Path(__file__).resolve().parents[2]
PAGES = [*sorted((ROOT / "docs").glob("*.md")), ROOT / "README.md"]
BLOCK = re.compile(r"^( *)```properties\n(.*?)\n\1```", re.S | re.M)
GUIDES = {"spark-sink.md": "spark-sink", "jdbc-cdc.md": "jdbc-cdc", "kafka-mirror.md": "kafka-mirror"}
"""Pages of one connector, whose config fragments (a block without ``connector.class``) are that connector's."""
WORKER_KEYS = ("bootstrap.servers", "group.id")


class Block(NamedTuple):
    page: str
    number: int
    """The block's place among the page's ``properties`` blocks, from 0."""
    values: dict[str, str]

    @property
    def id(self) -> str:
        return f"{self.page}-{self.number}"


def page_blocks(page: Path) -> list[Block]:
    """Every ``properties`` block of ``page``, its lines unindented."""
    found = []
    for number, match in enumerate(BLOCK.finditer(page.read_text(encoding="utf-8"))):
        text = "\n".join(line.strip() for line in match.group(2).splitlines())
        found.append(Block(page.name, number, dict(parse_properties(text, page).values)))
    return found


def connector_blocks() -> list[Block]:
    """Every connector config, or fragment of one, in the docs and the README: a block with ``connector.class``, or
    on a connector's own page one without worker keys (``connector.class`` then set to that connector)."""
    found = []
    for page in PAGES:
        for block in page_blocks(page):
            values = block.values
            if "connector.class" not in values and (page.name not in GUIDES or any(k in values for k in WORKER_KEYS)):
                continue  # a worker config
            values.setdefault("connector.class", GUIDES.get(page.name, ""))
            found.append(block)
    return found
