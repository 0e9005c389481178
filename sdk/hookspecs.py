"""Hook declarations: what a connector or task may override, each with a built-in default.

Declarations only, like pytest's ``hookspec.py``. The defaults live in the runtime's built-in plugin, registered
with ``trylast=True``. A connector overrides a hook by decorating a method of its task (or connector) class with
:data:`hookimpl`; the runtime registers every task and connector instance as a plugin of its own plugin manager,
next to the defaults and to any cross-cutting plugins found through the ``headwater.plugins`` entry-point group.

An implementation may accept any subset of a hook's arguments, by name. A method on the task itself usually
takes none of ``task``/``instance`` (it has ``self``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pluggy

from headwater.sdk.records import SourceOffset, SourcePartition, SourceRecord, TopicPartition

if TYPE_CHECKING:
    from headwater.sdk.connector import Connector
    from headwater.sdk.task import SinkTask, SourceTask, Task

PROJECT = "headwater"

hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)
"""Marks a method of a task or connector (or a function of a plugin) as the implementation of a hook."""


@hookspec(firstresult=True)
def produce_heartbeat_records(
    task: SourceTask, topic: str, offsets: Sequence[tuple[SourcePartition | None, SourceOffset | None]]
) -> Sequence[SourceRecord] | None:
    """Return records that move the task's source offsets while it has no data to send (KIP-910).

    When: on the task's own thread, at the top of a loop pass, before ``poll``, once
    ``heartbeat.interval.ms`` has passed since the previous call; never while the task is paused, never when the
    interval is 0 (the default). The timer restarts after every call, whatever it returns.

    ``task``: the source task. ``topic``: the heartbeat topic resolved from the connector's
    ``heartbeat.records.topic``, else the worker's (default ``connect-heartbeats``); records should be sent there.
    ``offsets``: ``(source partition, offset)`` pairs, the newest offset the task has handed to the runtime for
    each source partition, acknowledged or not (stored offsets for partitions not seen since start are not read).

    A heartbeat reports only the position of data already handed over: its offset must never run ahead of the
    records the task has returned from ``poll`` (it is committed like theirs, and a restarted task resumes after
    it, so records read but not yet returned would be lost). The hook is called only when every record of earlier
    polls has been handed to the producer.

    Returns the heartbeat records. They travel the ordinary send, acknowledge and commit path: a heartbeat's offset
    for a source partition becomes committable only when every earlier record of that partition is acknowledged.
    A record without a key is given its source partition as key, which the ``key.converter`` then writes like any
    key: the heartbeat topic is compacted, and Kafka refuses a record without a key on a compacted topic (with a
    key converter that cannot write a mapping, such as ``bytes``, give the records keys of your own).
    The first non-``None`` result wins; the built-in default returns no records.
    """


@hookspec(firstresult=True)
def pre_commit(task: SinkTask, current_offsets: Mapping[TopicPartition, int]) -> Mapping[TopicPartition, int] | None:
    """Return the offsets that are safe to commit for a sink task (KIP-89).

    When: on the task's own thread, before every offset commit: periodically every ``offset.flush.interval.ms``,
    at the next loop pass after ``SinkTaskContext.request_commit()``, when partitions are revoked (before
    ``close``), when the task is paused, and on shutdown (before ``close`` of every partition). Not called when no
    partition is assigned.

    ``current_offsets``: for each partition being committed, the next offset to consume (last offset passed to
    ``put`` + 1).

    Returns committable offsets, as next-offset-to-consume. An empty mapping means "commit nothing"; an offset above
    ``current_offsets`` or for a partition not being committed is ignored; a partition left out keeps its last
    committed offset. Raising rewinds the consumer to the last committed offsets, so records are delivered again.
    The first non-``None`` result wins; the built-in default calls ``task.flush(current_offsets)`` and returns
    ``current_offsets``.
    """


@hookspec
def stop(instance: Connector | Task, connector_deleted: bool) -> None:
    """Stop a connector or task, telling it whether its connector was deleted (KIP-901).

    When: once per connector or task instance, on the thread that ran it, after its last ``poll``/``put`` and, for
    a sink, after ``close`` of its partitions. For a deleted connector the herder stops every task first, then
    the connector.

    ``instance``: the connector or task being stopped. ``connector_deleted``: ``True`` only when the connector has
    been deleted, so that it can remove what it provisioned (triggers, slots, queues); ``False`` on a plain stop,
    restart, reconfiguration, pause-to-stop or rebalance. The flag is best effort: a worker that dies never
    delivers it.

    All implementations run. The built-in default calls the plain ``instance.stop()`` unless the instance
    implements this hook itself, so a class that only defines ``stop(self)`` keeps working. Implement it under
    another method name so the plain ``stop()`` keeps its signature::

        @hookimpl(specname="stop")
        def on_stop(self, connector_deleted: bool) -> None:
            if connector_deleted:
                self.drop_audit_table()
            self.close_connection()
    """


@hookspec
def offsets_committed(task: Task, offsets: Any) -> None:
    """Tell a task that its offsets are durably committed.

    When: on the task's own thread, after each successful offset commit (periodic, requested, revocation, final).
    For a source task ``offsets`` is a list of ``(source partition, committed offset)`` pairs (offset ``None`` for
    a deleted one), so a source that keeps a change log can purge up to it. For a sink task it maps
    :class:`TopicPartition` to the committed next offset.

    All implementations run; the built-in default does nothing. An exception is logged and ignored.
    """


__all__ = [
    "PROJECT",
    "hookimpl",
    "hookspec",
    "offsets_committed",
    "pre_commit",
    "produce_heartbeat_records",
    "stop",
]
