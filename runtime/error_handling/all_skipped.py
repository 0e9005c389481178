"""The alarm of a task that skips every record it sees: a misconfiguration, not bad data.

Under ``errors.tolerance=all`` a failed record is skipped (KIP-298), which is right for the odd bad record and
wrong when every record fails the same way: a converter that refuses what a transform made (the ``bytes`` header
converter refuses the string header ``InsertHeader`` adds, as Kafka's ``ByteArrayConverter`` does), a transform
configured for fields the records lack. The task then stays RUNNING and moves nothing. Once a task has skipped
:data:`ALL_SKIPPED_AFTER` records in a row, with none getting through since it started or since the last one that
did, :class:`AllSkipped` logs one ERROR naming the task, the stage and the last error, and its :attr:`~AllSkipped.on`
(the ``headwater_connect_task_error_all_records_skipped`` metric) turns 1; the next record that gets through turns it
0 again. Kafka Connect has no such alarm.

The task loops call :meth:`AllSkipped.check` once per pass with how many records got through so far (a source's
acknowledged by the broker, a sink's put and not reported back as failed), never per record.
"""

from __future__ import annotations

import logging

from headwater.runtime.error_handling.tolerance import ErrorHandler, Stage

log = logging.getLogger(__name__)

ALL_SKIPPED_AFTER = 500
"""Records skipped in a row, none getting through, after which a task says it looks misconfigured: past the odd bad
record or a short run of them, yet within the first poll or two of a busy task."""

STAGE_WORDS = {
    Stage.KEY_CONVERTER: "key conversion",
    Stage.VALUE_CONVERTER: "value conversion",
    Stage.HEADER_CONVERTER: "header conversion",
    Stage.TRANSFORMATION: "transformation",
    Stage.TASK_PUT: "put",
    Stage.TASK_POLL: "poll",
    Stage.KAFKA_PRODUCE: "produce",
    Stage.KAFKA_CONSUME: "consume",
}
"""Each stage as the alarm's message names it."""


class AllSkipped:
    """One task's alarm; see the module docstring. ``after`` is :data:`ALL_SKIPPED_AFTER` but in tests."""

    __slots__ = ("_skipped_before", "_through", "after", "ever_through", "on", "task")

    def __init__(self, task: str, after: int = ALL_SKIPPED_AFTER) -> None:
        self.task = task
        self.after = after
        self.on = False
        """Whether the task has skipped every record it saw, at least :attr:`after` of them in a row."""
        self.ever_through = False
        """Whether a record ever got through."""
        self._through = 0
        self._skipped_before = 0
        """Records skipped before the current run of skipped ones began."""

    def check(self, through: int, errors: ErrorHandler) -> None:
        """``through`` records got through so far (it only grows); ``errors`` counts the skipped ones and keeps the
        last failure. Turns the alarm on, logging it, or off."""
        skipped = errors.counters.records_skipped
        if through != self._through:
            self._through = through
            self._skipped_before = skipped
            self.ever_through = True
            if self.on:
                self.on = False
                log.info("task %s: records get through again after a run of skipped ones", self.task)
            return
        in_a_row = skipped - self._skipped_before
        if self.on or in_a_row < self.after:
            return
        self.on = True
        since = "since the last record that got through" if self.ever_through else "since it started"
        last = errors.last_failure
        if last is None:
            stage, error = "unknown", "none recorded"
        else:
            stage, error = STAGE_WORDS.get(last.stage, last.stage.value), last.describe(False)
        log.error(
            "task %s has skipped every record it has seen %s (%d in a row, errors.tolerance=all): this looks like a "
            "misconfiguration, not bad data. Stage: %s; last error: %s (the task stays RUNNING and goes on skipping: "
            "check its converters and transforms, a converter that refuses what a transform made for example)",
            self.task,
            since,
            in_a_row,
            stage,
            error,
        )

    def __repr__(self) -> str:
        return f"AllSkipped({self.task}, on={self.on}, after={self.after})"
