"""A source connector whose ``start`` waits, as a mirror whose source cluster refuses connections does: it waits
in :func:`wait_for_the_source_cluster` until its gate in :data:`GATES` is opened or ``block.ms`` (60 s by default)
passes. What it was told is kept in :data:`STOPS`; its tasks write nothing."""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence

from headwater.sdk import ConfigDef, Importance, SourceConnector, SourceRecord, SourceTask, Type, hookimpl

GATES: dict[str, threading.Event] = {}
"""Connector name -> the gate its ``start`` waits for (made when first asked for)."""
RETURNED: dict[str, threading.Event] = {}
"""Connector name -> set once its ``start`` has returned."""
STOPS: list[tuple[str, bool]] = []
"""(connector, connector_deleted) of every ``stop`` delivered, in order."""


def gate(name: str) -> threading.Event:
    return GATES.setdefault(name, threading.Event())


def returned(name: str) -> threading.Event:
    return RETURNED.setdefault(name, threading.Event())


def wait_for_the_source_cluster(name: str, block_s: float) -> None:
    gate(name).wait(block_s)


class SlowStartSource(SourceConnector):
    def config_def(self) -> ConfigDef:
        return ConfigDef().define("block.ms", Type.LONG, 60_000, Importance.LOW, "How long start() waits at most.")

    def start(self, config: Mapping[str, str]) -> None:
        self.name = config["name"]
        wait_for_the_source_cluster(self.name, int(config.get("block.ms", 60_000)) / 1000)
        returned(self.name).set()

    @hookimpl(specname="stop")
    def on_stop(self, connector_deleted: bool) -> None:
        STOPS.append((self.name, connector_deleted))

    def task_class(self) -> type[SourceTask]:
        return IdleTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [{} for _ in range(max_tasks)]


class IdleTask(SourceTask):
    def start(self, config: Mapping[str, str]) -> None:
        pass

    def poll(self) -> Sequence[SourceRecord]:
        return []
