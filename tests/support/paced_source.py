"""A counting source (:mod:`support.counting_source`) that waits ``pace.ms`` in each poll, so that it keeps writing
at a steady rate through a broker outage, and tells how many records it has made (:data:`MADE`, by connector)."""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence

from headwater.sdk import ConfigDef, Importance, SourceRecord, SourceTask, Type
from support.counting_source import CountingSourceConnector, CountingSourceTask

MADE: dict[str, int] = {}
"""The number of records each connector's task 0 has returned from ``poll`` (they are numbered 0 to this - 1)."""


class PacedSourceConnector(CountingSourceConnector):
    def config_def(self) -> ConfigDef:
        return super().config_def().define("pace.ms", Type.LONG, 100, Importance.LOW, "Wait in each poll.")

    def task_class(self) -> type[SourceTask]:
        return PacedSourceTask


class PacedSourceTask(CountingSourceTask):
    def start(self, config: Mapping[str, str]) -> None:
        super().start(config)
        self.pace_s = int(config.get("pace.ms", "100")) / 1000
        self.stopping = threading.Event()

    def poll(self) -> Sequence[SourceRecord]:
        if self.stopping.wait(self.pace_s):
            return []
        records = super().poll()
        if self.partition["task"] == 0:
            MADE[str(self.partition["connector"])] = self.next
        return records

    def stop(self) -> None:
        self.stopping.set()
