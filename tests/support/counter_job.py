"""A connector job for a child process (``python -c COUNTER_JOB``), run where the test session's imports must not
reach: with parts of this venv hidden (``tests/test_package.py``) and in a fresh venv (``tests/install/``)."""

COUNTER_JOB = """
from collections.abc import Mapping

from headwater.harness import SimulatedWorker
from headwater.sdk import SourceConnector, SourceRecord, SourceTask


class Counter(SourceConnector):
    def start(self, config: Mapping[str, str]) -> None:
        self.config = dict(config)

    def task_class(self) -> type[SourceTask]:
        return CounterTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [self.config]


class CounterTask(SourceTask):
    def start(self, config: Mapping[str, str]) -> None:
        self.sent = 0

    def poll(self) -> list[SourceRecord]:
        self.sent += 1
        return [SourceRecord({"counter": 0}, {"n": self.sent}, "counts", self.sent)] if self.sent <= 3 else []


with SimulatedWorker() as worker:
    worker.add_connector("counter", Counter, {})
    worker.advance(1000)
    assert worker.values("counts") == [1, 2, 3], worker.values("counts")
"""
"""A source connector run on the simulated worker: its three records reach the topic. The SDK and the simulated
worker are all it imports, as with the core install (``headwater`` alone)."""
