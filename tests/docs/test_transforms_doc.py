"""docs/transforms.md shows every built-in transformation and predicate under each of its names, with its settings
table and an example whose chain builds; every chain shown on the page builds."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from headwater.runtime.config.properties import parse_properties
from headwater.runtime.transforms import build_chain
from headwater.runtime.transforms.builtins import BUILTIN_PREDICATES, BUILTIN_TRANSFORMATIONS
from headwater.sdk import ConfigError

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "transforms.md"
BLOCK = re.compile(r"^```properties\n(.*?)\n```", re.S | re.M)


@pytest.fixture(scope="module")
def gen_docs() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_docs", ROOT / "tools" / "gen_docs.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def page_chains() -> list[Any]:
    found = []
    for number, match in enumerate(BLOCK.finditer(PAGE.read_text(encoding="utf-8"))):
        found.append(pytest.param(parse_properties(match.group(1), PAGE).values, id=f"block-{number}"))
    return found


def test_every_builtin_name_and_setting_is_on_the_page(gen_docs: ModuleType) -> None:
    page = gen_docs.transforms_page()
    for registry in (BUILTIN_TRANSFORMATIONS, BUILTIN_PREDICATES):
        for name, cls in registry.items():
            assert f"`{name}`" in page, name
            for key in cls().config_def():
                assert f"| `{key.name}` |" in page, f"{name}: {key.name}"
    assert "{transformations}" not in page and "{predicates}" not in page


@pytest.mark.parametrize("props", page_chains())
def test_every_chain_on_the_page_builds(props: dict[str, str]) -> None:
    assert props.get("transforms"), "a block without a chain"
    chain = build_chain(props)
    assert chain, "an empty chain"
    chain.close()


def test_every_builtins_example_builds(gen_docs: ModuleType) -> None:
    examples = gen_docs.transform_examples()
    assert len(examples) >= 15
    for short, props, _ in examples:
        build_chain(props).close()
        assert short in props.values()


def test_a_builtin_without_an_example_is_caught_by_the_example_test(
    gen_docs: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delitem(gen_docs.EXAMPLES, "RegexRouter")
    with pytest.raises(ConfigError, match=r"transforms\.example\.regex"):
        test_every_builtins_example_builds(gen_docs)
