"""Versions users can read over REST, on an in-memory worker: ``GET /`` reports the installed Headwater's version
and the commit it was built from."""

from __future__ import annotations

import importlib.metadata

import pytest

from headwater import release
from support.distribution import SOURCE_ROOT
from support.rest_worker import MemoryRestWorker


def test_root_reports_the_installed_version_and_the_commit_built_from(memory_rest: MemoryRestWorker) -> None:
    assert memory_rest.http.get("/").json() == {
        "version": importlib.metadata.version("headwater"),
        "commit": release.git_commit(SOURCE_ROOT) or "unknown",
        "kafka_cluster_id": None,
    }


def test_root_says_unknown_when_the_commit_cannot_be_told(
    memory_rest: MemoryRestWorker, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(release, "commit", lambda: None)
    assert memory_rest.http.get("/").json()["commit"] == "unknown"
