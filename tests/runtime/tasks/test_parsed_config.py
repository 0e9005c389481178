"""A task reads its config parsed by its connector's ``ConfigDef`` (``context.parsed_config``, Kafka's
``AbstractConfig``), on a simulated worker: defined keys as their types, defaults for those the task config leaves
out, the keys ``task_configs`` added kept as strings, ``start`` still given strings; a value the definition rejects
fails the task before its ``start`` with a ConfigError naming the key; a required key the task config leaves out
raises a KeyError naming it when read."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from headwater.harness import SimulatedWorker
from headwater.runtime.tasks.base import State
from headwater.sdk import ConfigError
from support.metered import SEEN, MeteredSource

Make = Callable[..., SimulatedWorker]


@pytest.fixture(autouse=True)
def _forget() -> None:
    SEEN.clear()


def test_defined_keys_are_parsed_others_stay_strings(make_simulated_worker: Make) -> None:
    worker = make_simulated_worker()
    worker.add_connector("typed", MeteredSource, topic=" data ", batch_size="3", tables="a, b,,c", uppercase="TRUE")
    worker.run_until(lambda: len(worker.values("data")) == 6, what="6 records")
    parsed = SEEN["typed"]
    assert parsed["batch.size"] == 3
    assert parsed["tables"] == ["a", "b", "c"]
    assert parsed["uppercase"] is True
    assert parsed["topic"] == "data", "a STRING is stripped, as the definition parses it"
    assert parsed["max.messages"] == 6 and parsed["ratio"] == 0.5, "defaults where the task config has none"
    assert parsed["assigned"] == "p0,p1", "a key task_configs added is kept as the string it is"
    assert parsed["connector.class"].endswith("MeteredSource")
    assert worker.task("typed").task.context.config["batch.size"] == "3", "start and context.config stay strings"
    with pytest.raises(TypeError):
        parsed["batch.size"] = 4  # type: ignore[index]


def test_a_value_the_definition_rejects_fails_the_task_naming_the_key(make_simulated_worker: Make) -> None:
    worker = make_simulated_worker()
    worker.add_connector("bad", MeteredSource, topic="data", task_batch_size="0")
    worker.run_until(lambda: worker.task_state("bad") is State.FAILED, what="the task failed")
    failure = worker.task("bad").failure
    assert isinstance(failure, ConfigError)
    assert failure.key == "batch.size"
    assert "Invalid value 0 for configuration batch.size: Value must be at least 1" in str(failure)
    assert "bad" not in SEEN, "the task's start was never called"


def test_an_unparsable_value_fails_the_task_naming_the_key(make_simulated_worker: Make) -> None:
    worker = make_simulated_worker()
    worker.add_connector("bad", MeteredSource, topic="data", task_uppercase="maybe")
    worker.run_until(lambda: worker.task_state("bad") is State.FAILED, what="the task failed")
    failure = worker.task("bad").failure
    assert isinstance(failure, ConfigError) and failure.key == "uppercase", failure


def test_a_required_key_the_task_config_leaves_out_names_itself(make_simulated_worker: Make) -> None:
    worker = make_simulated_worker()
    worker.add_connector("partial", MeteredSource, topic="data", drop_topic="true")
    worker.run_until(lambda: "partial" in SEEN, what="the task started")
    assert worker.task_state("partial") is State.RUNNING
    parsed = SEEN["partial"]
    assert "topic" not in parsed
    with pytest.raises(KeyError, match="topic: the connector's config_def requires it"):
        parsed["topic"]
