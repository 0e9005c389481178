"""docs/jdbc-cdc.md lists every option of the CDC connector with its default."""

from __future__ import annotations

import re
from pathlib import Path

from headwater.reference_connectors.jdbc_cdc import CONFIG_DEF

DOC = Path(__file__).resolve().parents[2] / "docs" / "jdbc-cdc.md"


def rendered(default: object) -> str:
    if default is None or default == "" or default == []:
        return "empty"
    if isinstance(default, bool):
        return str(default).lower()
    return str(default)


def test_every_option_is_documented_with_its_default() -> None:
    options = DOC.read_text().split("\n## Options\n", 1)[1].split("\n## ", 1)[0]  # the section, not the type tables
    rows = re.findall(r"^\| `([a-z.]+)` \| (.+?) \|", options, flags=re.MULTILINE)
    documented = {key: default.strip("`") for key, default in rows}
    expected = {key.name: "required" if key.required else rendered(key.default) for key in CONFIG_DEF.keys.values()}
    assert documented == expected
