"""Slot topics: every worker derives the same names and partition counts from the same configs."""

from __future__ import annotations

import re

import pytest

from headwater.runtime.config.distributed_worker import MAX_PREFIX_LENGTH
from headwater.runtime.distributed import Slot, SlotPlan, connector_topic, task_topic
from headwater.runtime.storage import MemoryConfigStore
from headwater.runtime.tasks.base import TaskId

TASKS = [{"task.number": "0", "topic": "t"}, {"task.number": "1", "topic": "t"}]


@pytest.fixture
def store() -> MemoryConfigStore:
    store = MemoryConfigStore()
    store.put_connector_config("seq", {"connector.class": "sequence-source"})
    store.put_task_configs("seq", TASKS)
    return store


def test_names_are_legal_topics_that_show_the_connector() -> None:
    for name in ["seq", "with space/and:colon", "ü" * 300]:
        for topic in [connector_topic("p.slots", name), task_topic("p.slots", name, TASKS)]:
            assert re.fullmatch(r"[A-Za-z0-9._-]+", topic), topic
            assert len(topic) - len("p.slots") <= 249 - MAX_PREFIX_LENGTH, "room for the longest prefix allowed"
    assert connector_topic("p", "seq").startswith("p.connector.seq.")
    assert task_topic("p", "seq", TASKS).startswith("p.tasks.seq.")


def test_names_tell_apart_what_the_readable_part_does_not() -> None:
    assert connector_topic("p", "a b") != connector_topic("p", "a_b")
    assert task_topic("p", "seq", TASKS) != task_topic("p", "seq", TASKS[:1])
    assert task_topic("p", "seq", TASKS) != task_topic("p", "seq", [TASKS[1], TASKS[0]])
    assert task_topic("p", "seq", TASKS) != task_topic("p", "other", TASKS)


def test_names_do_not_depend_on_key_order() -> None:
    reordered = [dict(reversed(list(config.items()))) for config in TASKS]
    assert task_topic("p", "seq", reordered) == task_topic("p", "seq", TASKS)


def test_plan_has_a_connector_slot_and_a_slot_per_task(store: MemoryConfigStore) -> None:
    plan = SlotPlan.of(store, "p")
    tasks = task_topic("p", "seq", TASKS)
    assert plan.connector_partitions() == {connector_topic("p", "seq"): 1}
    assert plan.task_partitions() == {tasks: 2}
    assert plan.task(Slot(tasks, 1)) == (TaskId("seq", 1), TASKS[1])
    assert plan.task(Slot(tasks, 2)) is None
    assert plan.task(Slot("p.tasks.other", 0)) is None


def test_new_task_configs_are_a_new_topic_sized_to_them(store: MemoryConfigStore) -> None:
    before = SlotPlan.of(store, "p")
    store.put_task_configs("seq", TASKS[:1])
    after = SlotPlan.of(store, "p")
    assert after.task_partitions() == {task_topic("p", "seq", TASKS[:1]): 1}
    assert set(after.task_partitions()).isdisjoint(before.task_partitions())
    assert after.connector_partitions() == before.connector_partitions()


def test_stopped_and_taskless_connectors_have_no_task_slots(store: MemoryConfigStore) -> None:
    store.put_connector_config("idle", {"connector.class": "sequence-source"})
    store.put_target_state("seq", "STOPPED")
    plan = SlotPlan.of(store, "p")
    assert plan.task_partitions() == {}
    assert set(plan.connectors.values()) == {"seq", "idle"}


def test_paused_connectors_keep_their_task_slots(store: MemoryConfigStore) -> None:
    store.put_target_state("seq", "PAUSED")
    assert SlotPlan.of(store, "p").task_partitions() == {task_topic("p", "seq", TASKS): 2}


def test_deleted_connectors_have_no_slots(store: MemoryConfigStore) -> None:
    store.remove_connector("seq")
    plan = SlotPlan.of(store, "p")
    assert plan.connector_partitions() == {}
    assert plan.task_partitions() == {}
