"""docs/spark-sink.md lists every option of the Spark sink with its default, and the session defaults."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytest.importorskip("pyspark", reason="the Spark sink needs the spark-sink extra")

from headwater.reference_connectors.spark_sink import CONFIG_DEF, SPARK_DEFAULTS

DOC = Path(__file__).resolve().parents[2] / "docs" / "spark-sink.md"


def documented_defaults() -> dict[str, str]:
    rows = re.findall(r"^\| `([a-z.]+)` \| (.+?) \|", DOC.read_text(), flags=re.MULTILINE)
    return {key: default.strip("`") for key, default in rows}


def rendered(default: object) -> str:
    if default is None or default == "" or default == []:
        return "empty"
    if isinstance(default, bool):
        return str(default).lower()
    if isinstance(default, list):
        return ",".join(default)
    return str(default)


def test_every_option_is_documented_with_its_default() -> None:
    expected = {key.name: "required" if key.required else rendered(key.default) for key in CONFIG_DEF.keys.values()}
    assert documented_defaults() == expected


def test_every_session_default_is_named() -> None:
    text = " ".join(DOC.read_text().split())
    assert [f"`{key}={value}`" for key, value in SPARK_DEFAULTS.items() if f"`{key}={value}`" not in text] == []
