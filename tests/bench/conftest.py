"""Fixtures for the benchmark tests."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest

BENCH_DIR = Path(__file__).resolve().parents[2] / "bench"


@pytest.fixture(scope="session")
def load_bench() -> Callable[[str], ModuleType]:
    """``load_bench("spark_sink")``: a script of ``bench/`` loaded as a module (registered in ``sys.modules``, which
    dataclasses need while their classes are made)."""

    def load(name: str) -> ModuleType:
        spec = importlib.util.spec_from_file_location(f"{name}_bench", BENCH_DIR / f"{name}.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
        return module

    return load


@pytest.fixture
def assert_rejects_sides(capsys: pytest.CaptureFixture[str]) -> Callable[[ModuleType, str], None]:
    """``assert_rejects_sides(bench, "raw,headwater")``: the bench's ``main`` stops with a usage error (exit 2)
    about ``--sides``."""

    def check(bench: ModuleType, sides: str) -> None:
        with pytest.raises(SystemExit) as raised:
            bench.main(["--sides", sides])
        assert raised.value.code == 2 and "--sides" in capsys.readouterr().err

    return check
