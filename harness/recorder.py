"""A cross-cutting plugin that records every hook call, in order, for tests."""

from __future__ import annotations

from collections.abc import Callable, Generator, Mapping
from typing import Any

from headwater.sdk.hookspecs import hookimpl


class HookRecorder:
    """Wraps every hook and records ``(hook, owner, arguments)`` before the implementations run."""

    def __init__(self, owner_of: Callable[[object], str]) -> None:
        self.calls: list[tuple[str, str, dict[str, Any]]] = []
        """Every hook call in order: ``(hook, owner, arguments)``, the owner named by ``owner_of``."""
        self._owner_of = owner_of

    @hookimpl(wrapper=True)
    def produce_heartbeat_records(self, task: object, topic: str) -> Generator[None, Any, Any]:
        self.calls.append(("produce_heartbeat_records", self._owner_of(task), {"topic": topic}))
        return (yield)

    @hookimpl(wrapper=True)
    def pre_commit(self, task: object, current_offsets: Mapping[Any, int]) -> Generator[None, Any, Any]:
        self.calls.append(("pre_commit", self._owner_of(task), {"current_offsets": dict(current_offsets)}))
        return (yield)

    @hookimpl(wrapper=True)
    def stop(self, instance: object, connector_deleted: bool) -> Generator[None, Any, Any]:
        self.calls.append(("stop", self._owner_of(instance), {"connector_deleted": connector_deleted}))
        return (yield)

    @hookimpl(wrapper=True)
    def offsets_committed(self, task: object, offsets: Any) -> Generator[None, Any, Any]:
        self.calls.append(("offsets_committed", self._owner_of(task), {"offsets": offsets}))
        return (yield)
