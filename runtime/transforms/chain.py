"""A task's chain of transformations, applied in order to each record (Kafka Connect's ``TransformationChain``).

Each stage is a transformation and, optionally, the predicate that decides whether it applies (negated or not). A
stage that raises fails the record at stage ``TRANSFORMATION``: :class:`~headwater.runtime.tasks.tolerance.StageFailed`
carries the failure, named by the transformation's class and alias, to the task's error handling, which retries,
skips (and dead-letters) or fails as the connector's ``errors.*`` keys say.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Generic

from headwater.runtime.tasks.tolerance import Failure, Stage, StageFailed, class_name
from headwater.sdk.transforms import Predicate, R, Transformation


@dataclass(frozen=True)
class TransformStage(Generic[R]):
    """One transformation of a chain, with its alias and the predicate that guards it, if any."""

    alias: str
    transformation: Transformation[R]
    predicate: Predicate[R] | None = None
    negate: bool = False


class TransformationChain(Generic[R]):
    """The stages, applied in order; empty when the connector config names no transforms."""

    def __init__(self, stages: Sequence[TransformStage[R]] = ()) -> None:
        self.stages: list[TransformStage[R]] = list(stages)

    def __bool__(self) -> bool:
        return bool(self.stages)

    def apply(self, record: R, original: Any = None) -> R | None:
        """``record`` through every stage; ``None`` when one dropped it. A stage that raises raises
        :class:`StageFailed` for ``original`` (what the record arrived as; ``record`` itself by default)."""
        for stage in self.stages:
            guard = stage.predicate
            try:
                if guard is not None and guard.test(record) == stage.negate:
                    continue
                transformed = stage.transformation.apply(record)
            except Exception as error:
                executing = f"{class_name(stage.transformation)} (alias {stage.alias})"
                failed = original if original is not None else record
                raise StageFailed(Failure(Stage.TRANSFORMATION, executing, error, failed)) from error
            if transformed is None:
                return None
            record = transformed
        return record

    def close(self) -> None:
        """Close every transformation and predicate once (a predicate may guard several stages)."""
        closed: set[int] = set()
        for stage in self.stages:
            for part in (stage.transformation, stage.predicate):
                if part is not None and id(part) not in closed:
                    closed.add(id(part))
                    part.close()

    def __repr__(self) -> str:
        return f"TransformationChain({[stage.alias for stage in self.stages]})"
