"""What the REST API needs of a herder: the standalone and the distributed herder both offer it (Kafka Connect's
``Herder`` interface)."""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from headwater.runtime.active_topics import ActiveTopics
from headwater.runtime.connector_offsets import Offset
from headwater.runtime.herder import RestartPlan
from headwater.runtime.storage.status import Status, StatusStore
from headwater.runtime.tasks.base import TaskId
from headwater.runtime.worker import Worker


class Herder(Protocol):
    """Connector configs, target states and restarts, as one worker's REST API serves them. Methods naming a
    connector raise :class:`~headwater.runtime.errors.NotFoundError` when there is none of that name."""

    @property
    def worker(self) -> Worker: ...

    @property
    def lock(self) -> threading.RLock:
        """Held by requests that read or write in several steps (PATCH, restart with its status)."""
        ...

    @property
    def status_store(self) -> StatusStore: ...

    @property
    def active_topics(self) -> ActiveTopics: ...

    def put_connector_config(
        self, name: str, props: Mapping[str, Any], allow_replace: bool = True, initial_state: str = "RUNNING"
    ) -> bool:
        """Create or replace a connector; return whether it was created."""
        ...

    def delete_connector(self, name: str) -> None: ...

    def restart(self, name: str, include_tasks: bool = False, only_failed: bool = False) -> RestartPlan: ...

    def restart_task(self, id: TaskId) -> None: ...

    def pause_connector(self, name: str) -> None: ...

    def resume_connector(self, name: str) -> None: ...

    def stop_connector(self, name: str) -> None: ...

    def connectors(self) -> list[str]:
        """Every connector's name, sorted."""
        ...

    def connector_config(self, name: str) -> dict[str, Any]: ...

    def connector_type(self, name: str) -> str: ...

    def tasks(self, name: str) -> list[dict[str, str]]: ...

    def task_statuses(self, name: str) -> dict[int, Status]: ...

    def reset_active_topics(self, name: str) -> None: ...

    def connector_offsets(self, name: str) -> list[Offset]: ...

    def alter_connector_offsets(self, name: str, offsets: Sequence[Mapping[str, Any]]) -> str: ...

    def reset_connector_offsets(self, name: str) -> str: ...
