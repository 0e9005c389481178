"""docs/kafka-mirror.md lists every option of the mirror connector with its default, and every client override."""

from __future__ import annotations

import re
from pathlib import Path

from headwater.reference_connectors.kafka_mirror import CONFIG_DEF, KIP_310_CONFIG
from headwater.reference_connectors.kafka_mirror.config import ADMIN_PREFIX, CONSUMER_PREFIX

DOC = Path(__file__).resolve().parents[2] / "docs" / "kafka-mirror.md"


def documented_defaults() -> dict[str, str]:
    rows = re.findall(r"^\| `([a-z.]+)` \| (.+?) \|", DOC.read_text(), flags=re.MULTILINE)
    return {key: default.strip("`") for key, default in rows}


def rendered(default: object) -> str:
    if default is None or default == "":
        return "empty"
    if isinstance(default, bool):
        return str(default).lower()
    return str(default)


def test_every_option_is_documented_with_its_default() -> None:
    documented = documented_defaults()
    expected = {key.name: "required" if key.required else rendered(key.default) for key in KIP_310_CONFIG.keys.values()}
    assert documented == expected


def test_every_client_override_is_named() -> None:
    text = DOC.read_text()
    paragraph = text[text.index("**Client settings.**") :].split("\n\n")[0]
    for prefix in (CONSUMER_PREFIX, ADMIN_PREFIX):
        options = [name.removeprefix(prefix) for name in CONFIG_DEF.keys if name.startswith(prefix)]
        after = paragraph[paragraph.index(f"`{prefix}` may override") :]
        assert [option for option in options if f"`{option}`" not in after] == [], prefix
