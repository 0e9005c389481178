"""What every herder does is written once, in :class:`~headwater.runtime.herder.Herder`: the standalone and the
distributed herder only say where configs live and who carries out a change."""

from __future__ import annotations

import inspect

import pytest

from headwater.runtime.distributed import DistributedHerder
from headwater.runtime.herder import Herder, StandaloneHerder

SHARED = [
    name
    for name, member in vars(Herder).items()
    if inspect.isfunction(member) and not name.startswith("_") and name != "connectors"
]


@pytest.mark.parametrize("herder", [StandaloneHerder, DistributedHerder])
def test_no_herder_rewrites_what_every_herder_does(herder: type[Herder]) -> None:
    assert issubclass(herder, Herder)
    assert {"restart", "put_connector_config", "delete_connector", "patch_connector_config"} <= set(SHARED)
    assert [name for name in SHARED if name in vars(herder)] == []
