"""docs/migration.md read as its tests need it: per section, the Java connector's example config (an ``ini`` block),
the Headwater config it becomes (a ``properties`` block) and the key table, and the one rewrite a test applies to
run an example where it runs: addresses, topic names and the bucket swapped for the test's own."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from headwater.runtime.config.properties import parse_properties

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "migration.md"
_BLOCK = re.compile(r"^```(ini|properties)\n(.*?)\n```", re.S | re.M)
_ROW = re.compile(r"^\| (.+?) \| (.+?) \|(.*)\|$", re.M)
_CODE = re.compile(r"`([^`]+)`")


@dataclass(frozen=True)
class Migration:
    """One section of the guide: ``java`` and ``headwater`` are its two example configs, ``rows`` its table as
    (the Java side's backquoted names, the Headwater side's cell text)."""

    title: str
    java: dict[str, str]
    headwater: dict[str, str]
    rows: tuple[tuple[tuple[str, ...], str], ...]

    def java_keys_in_table(self) -> set[str]:
        """Every key the table's first column names (``source.consumer.*`` stands for its prefix)."""
        return {name.split(" ")[0] for names, _ in self.rows for name in names}


def migrations(path: Path = GUIDE) -> dict[str, Migration]:
    """The guide's sections that map a Java connector, by the Headwater connector they map it to."""
    found: dict[str, Migration] = {}
    text = path.read_text(encoding="utf-8")
    for section in re.split(r"^## ", text, flags=re.M)[1:]:
        blocks = {kind: parse_properties(body, path).values for kind, body in _BLOCK.findall(section)}
        if set(blocks) != {"ini", "properties"}:
            continue
        table = section[section.index("\n|") :]
        rows = tuple(
            (tuple(_CODE.findall(java)), headwater)
            for java, headwater, _ in _ROW.findall(table)
            if not java.startswith("---") and _CODE.search(java)
        )
        headwater = {key: str(value) for key, value in blocks["properties"].items()}
        java = {key: str(value) for key, value in blocks["ini"].items()}
        found[headwater["connector.class"]] = Migration(section.splitlines()[0], java, headwater, rows)
    return found


def rewritten(config: Mapping[str, str], swaps: Mapping[str, str], **values: str) -> dict[str, str]:
    """``config`` with each of ``swaps``'s words replaced in every value (topic names, hosts), then ``values`` (keys
    with ``_`` for ``.``) set: what a test changes to run a documented example against its own services."""
    pattern = re.compile("|".join(re.escape(word) for word in sorted(swaps, key=len, reverse=True)))
    out = {key: pattern.sub(lambda m: swaps[m.group(0)], value) if swaps else value for key, value in config.items()}
    out.update({key.replace("_", "."): value for key, value in values.items()})
    return out
