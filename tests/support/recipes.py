"""The docs' connector configs as ``tests/docs/test_recipes_run.py`` runs them on one shared worker: a page's
``properties`` block read as written, a recipe (a config, substituted, with where its records go), and the shared
worker with what a test asks it (states, metrics, the records each task skipped, the alarm's log lines)."""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from pathlib import Path

from confluent_kafka import Producer
from prometheus_client.parser import text_string_to_metric_families

from headwater.harness.kafka_worker import KafkaInspector
from support.doc_blocks import ROOT, page_blocks
from support.rest_worker import RestWorker, wait_until

DOCS = ROOT / "docs"
CONVERTER_KEY = re.compile(r"(key|value|header)\.converter(\..+)?")
ENVIRONMENT_KEYS = {
    "bootstrap.servers",
    "offset.storage.file.filename",
    "offset.flush.interval.ms",
    "listeners",
    "connector.class.allowed.modules",
}
"""Worker-block keys the shared worker sets from the environment instead (see the test module's docstring)."""
ALARM = "has skipped every record it has seen"


def block(page: str, number: int) -> dict[str, str]:
    """Block ``number`` of ``page``'s ``properties`` blocks, a copy."""
    return dict(page_blocks(DOCS / page if page != "README.md" else ROOT / page)[number].values)


def worker_converters(worker_block: dict[str, str]) -> dict[str, str]:
    """A page's worker block as connector keys: its converter keys (the rest must be the environment's)."""
    others = {key for key in worker_block if not CONVERTER_KEY.fullmatch(key)} - ENVIRONMENT_KEYS
    assert not others, f"worker keys this test does not apply: {sorted(others)}"
    return {key: value for key, value in worker_block.items() if CONVERTER_KEY.fullmatch(key)}


@dataclass
class Recipe:
    """One connector config of the docs as run here: ``ids`` are the blocks it runs, ``config`` the substituted
    config (its ``name`` unique), ``topics`` where its records go and how many at least; a sink's ``table`` where
    its rows go."""

    ids: tuple[str, ...]
    config: dict[str, str]
    topics: dict[str, int] = field(default_factory=dict)
    tasks: int = 1
    table: str = ""

    @property
    def name(self) -> str:
        return self.config["name"]


class AlarmRecords(logging.Handler):
    """Keeps the worker's ERROR lines, the alarm's among them (logged on the tasks' threads, before or while a test
    looks)."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


@dataclass
class Recipes:
    """The shared worker and what runs on it: ``suffix`` makes names no other test or run uses, ``tmp`` holds the
    worker's files."""

    worker: RestWorker
    inspector: KafkaInspector
    alarms: AlarmRecords
    suffix: str
    tmp: Path
    started: dict[str, Recipe] = field(default_factory=dict)

    def start(self, recipe: Recipe) -> None:
        self.worker.create(recipe.name, recipe.config)
        self.started[recipe.ids[0]] = recipe

    def metrics(self) -> dict[tuple[str, str, str], float]:
        """Every task sample of the worker's /metrics: (name, connector, task) -> value."""
        response = self.worker.http.get("/metrics")
        assert response.status_code == 200
        return {
            (sample.name, sample.labels["connector"], sample.labels["task"]): sample.value
            for family in text_string_to_metric_families(response.text)
            for sample in family.samples
            if "task" in sample.labels and "connector" in sample.labels
        }

    def assert_moved(self, recipe: Recipe) -> None:
        """The recipe's topics hold its records, it and its tasks are RUNNING, and no task skipped a record."""
        self.worker.wait_for_states(recipe.name, "RUNNING", ["RUNNING"] * recipe.tasks)
        for topic, count in recipe.topics.items():
            wait_until(
                lambda t=topic, c=count: len(self.inspector.messages(t)) >= c or any(self.skipped(recipe).values()),
                f"{count} records in {topic}",
            )
        self.worker.wait_for_states(recipe.name, "RUNNING", ["RUNNING"] * recipe.tasks)
        skipped = self.skipped(recipe)
        assert len(skipped) == recipe.tasks and not any(skipped.values()), (recipe.ids, skipped, self.errors(recipe))
        assert not [line for line in self.alarms.lines if ALARM in line and f"task {recipe.name}-" in line]

    def skipped(self, recipe: Recipe) -> dict[str, float]:
        """Records each task of ``recipe`` skipped, by task."""
        return {
            task: value
            for (name, connector, task), value in self.metrics().items()
            if name == "headwater_connect_task_error_records_skipped_total" and connector == recipe.name
        }

    def errors(self, recipe: Recipe) -> list[str]:
        """The worker's ERROR lines about ``recipe``'s tasks."""
        return [line for line in self.alarms.lines if recipe.name in line]


def produce(
    bootstrap: str, topic: str, values: list[bytes], headers: list[tuple[str, bytes]] | None = None, partition: int = -1
) -> None:
    """``values`` into ``topic``: into ``partition``, or where the producer's partitioner puts them."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for value in values:
        producer.produce(topic, value, headers=headers, partition=partition)
    assert producer.flush(60) == 0
