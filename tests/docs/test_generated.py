"""The generated reference pages (docs/configuration.md, docs/hook-api.md, docs/transforms.md, docs/metrics.md)
match the code they are made from."""

from __future__ import annotations

import importlib.util
import inspect
from pathlib import Path
from types import ModuleType

import pytest

from headwater.runtime.config.worker import WORKER_CONFIG
from headwater.sdk import hookspecs

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def gen_docs() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_docs", ROOT / "tools" / "gen_docs.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_generated_pages_are_up_to_date(gen_docs: ModuleType) -> None:
    assert gen_docs.stale() == [], "run: python tools/gen_docs.py"


def test_every_hook_and_worker_key_is_on_its_page(gen_docs: ModuleType) -> None:
    hooks = [n for n, f in inspect.getmembers(hookspecs, inspect.isfunction) if hasattr(f, f"{hookspecs.PROJECT}_spec")]
    page = gen_docs.hook_page()
    assert hooks and all(f"\n## {name}\n" in page for name in hooks)
    config = gen_docs.configuration_page()
    assert all(f"| `{key.name}` |" in config for key in WORKER_CONFIG)


def test_every_metric_is_on_the_metrics_page(gen_docs: ModuleType) -> None:
    from headwater.runtime.metrics import METRICS

    page = gen_docs.metrics_page()
    assert METRICS and all(f"| `{metric.exposed_name}`" in page for metric in METRICS)
    assert all(f"`{name}`" in page for metric in METRICS for name in metric.kafka)


def test_a_stale_page_is_reported(gen_docs: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gen_docs, "DOCS", tmp_path)
    assert sorted(gen_docs.stale()) == ["configuration.md", "hook-api.md", "metrics.md", "transforms.md"], (
        "missing files are stale"
    )
    assert gen_docs.main([]) == 0
    assert gen_docs.stale() == []
    (tmp_path / "hook-api.md").write_text("# Hook API\n")
    assert gen_docs.main(["--check"]) == 1
