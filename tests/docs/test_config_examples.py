"""Every connector config the docs, the README and the demo show has no key the worker would refuse or report as
unknown: a false warning on the project's own examples would teach users to ignore the warning. (Every config the
test suite creates is held to the same by the guard in ``tests/support/unknown_keys.py``.)"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from headwater.demo.pipeline import sink_config, source_config
from headwater.runtime.config.known_keys import refused_keys
from headwater.runtime.config.override_policy import client_refusals
from headwater.runtime.herder.validation import DEFAULT_WORKER_CONFIG, unknown_connector_keys
from headwater.runtime.plugins import resolve_connector_class
from headwater.sdk import SinkConnector
from support.doc_blocks import ROOT, connector_blocks


def documented_configs() -> list[Any]:
    """A pytest param per connector config (or fragment of one) in a ``properties`` block of the docs."""
    return [pytest.param(block.values, id=block.id) for block in connector_blocks()]


def demo_configs() -> list[Any]:
    names, shop = SimpleNamespace(prefix="demo"), SimpleNamespace(url="sqlite:///shop.db")
    configs = [source_config(shop, names, "orders"), *(sink_config(names, Path("t"), spark) for spark in (True, False))]
    return [pytest.param(config, id=f"demo-{n}") for n, config in enumerate(configs)]


def test_the_docs_show_connector_configs() -> None:
    classes = {param.values[0]["connector.class"] for param in documented_configs()}
    assert {"spark-sink", "jdbc-cdc", "kafka-mirror", "synthetic.SequenceSourceConnector"} <= classes


@pytest.mark.parametrize("config", [*documented_configs(), *demo_configs()])
def test_an_example_config_has_no_unknown_or_refused_key(
    config: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(ROOT / "examples"))
    connector = resolve_connector_class(config["connector.class"])()
    assert connector.config_def().keys, "a connector that declares no key is not checked for unknown keys"
    assert refused_keys(config, "sink" if isinstance(connector, SinkConnector) else "source") == {}
    assert unknown_connector_keys(config, connector, DEFAULT_WORKER_CONFIG) == {}
    assert client_refusals(config, DEFAULT_WORKER_CONFIG) == {}
