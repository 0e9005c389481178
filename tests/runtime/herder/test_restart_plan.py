"""The restart plan both herders build (Kafka Connect's ``AbstractHerder.buildRestartPlan``, KIP-745)."""

from __future__ import annotations

import pytest

from headwater.runtime.herder import RestartPlan, RestartRequest, build_restart_plan
from headwater.runtime.storage.status import Status


def status(state: str) -> Status:
    return Status(state, None, "w:1", 0)


TASKS = {0: status("RUNNING"), 1: status("FAILED"), 2: status("PAUSED"), 3: None}


@pytest.mark.parametrize(
    ("include_tasks", "only_failed", "connector_state", "expected"),
    [
        (False, False, "RUNNING", RestartPlan(True, [])),
        (False, True, "RUNNING", RestartPlan(False, [])),
        (False, True, "FAILED", RestartPlan(True, [])),
        (True, False, "RUNNING", RestartPlan(True, [0, 1, 2, 3])),
        (True, True, "RUNNING", RestartPlan(False, [1])),
        (True, True, "FAILED", RestartPlan(True, [1])),
    ],
)
def test_the_plan_follows_the_flags_and_the_statuses(
    include_tasks: bool, only_failed: bool, connector_state: str, expected: RestartPlan
) -> None:
    request = RestartRequest("c", None, include_tasks, only_failed)
    assert build_restart_plan(request, status(connector_state), TASKS) == expected


def test_an_unknown_connector_status_is_not_failed() -> None:
    request = RestartRequest("c", None, True, True)
    assert build_restart_plan(request, None, TASKS) == RestartPlan(False, [1])


def test_a_task_request_restarts_that_task_only() -> None:
    assert build_restart_plan(RestartRequest("c", 2), status("FAILED"), TASKS) == RestartPlan(False, [2])
