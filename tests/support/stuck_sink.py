"""A sink connector whose task never stops, for tests of a worker's exit: its task hands a write to a
``ThreadPoolExecutor`` that never ends (as a Spark sink's background write stuck in a Spark job does) and waits for
it in ``stop``. A worker subprocess loads it as ``support.stuck_sink:StuckSinkConnector``."""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor

from headwater.sdk import SinkConnector, SinkRecord, SinkTask

NEVER = threading.Event()
"""Never set: what the stuck write waits for."""


class StuckSinkTask(SinkTask):
    def start(self, config: Mapping[str, str]) -> None:
        self.executor = ThreadPoolExecutor(1, thread_name_prefix="stuck-write")
        self.write = self.executor.submit(NEVER.wait)

    def put(self, records: Sequence[SinkRecord]) -> None:
        pass

    def stop(self) -> None:
        self.write.result()


class StuckSinkConnector(SinkConnector):
    def start(self, config: Mapping[str, str]) -> None:
        self.config = dict(config)

    def task_class(self) -> type[SinkTask]:
        return StuckSinkTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [self.config]
