"""A task's chain of transformations, applied in order to each record (Kafka Connect's ``TransformationChain``).

Each stage is a transformation and, optionally, the predicate that decides whether it applies (negated or not). A
stage that raises fails the record at stage ``TRANSFORMATION``:
:class:`~headwater.runtime.error_handling.tolerance.StageFailed` carries the failure, named by the
transformation's class and alias, to the task's error handling, which retries, skips (and dead-letters) or fails as
the connector's ``errors.*`` keys say.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic

from headwater.runtime.error_handling.tolerance import Failure, Stage, StageFailed, class_name
from headwater.runtime.transforms.records import Rewriting, copied, working_copy
from headwater.sdk.records import SourceRecord
from headwater.sdk.transforms import Predicate, R, Transformation


@dataclass(frozen=True)
class TransformStage(Generic[R]):
    """One transformation of a chain, with its alias and the predicate that guards it, if any."""

    alias: str
    transformation: Transformation[R]
    predicate: Predicate[R] | None = None
    negate: bool = False

    @property
    def rewriting(self) -> Rewriting[R] | None:
        """The transformation, when it is a built-in that rewrites a record the chain owns in place."""
        return self.transformation if isinstance(self.transformation, Rewriting) else None


class TransformationChain(Generic[R]):
    """The stages, applied in order; empty when the connector config names no transforms."""

    def __init__(self, stages: Sequence[TransformStage[R]] = ()) -> None:
        self.stages: list[TransformStage[R]] = list(stages)
        self._steps: list[tuple[TransformStage[R], Rewriting[R] | None, str | None]] = [
            (stage, stage.rewriting, _part(stage.rewriting)) for stage in self.stages
        ]
        if self.stages and all(rewriting and stage.predicate is None for stage, rewriting, _ in self._steps):
            # the usual chain, built-ins only and unguarded: one copy, then every stage in place
            self._rewrite_calls: list[Callable[[R], R | None]] = [
                rewriting.rewrite for _, rewriting, _ in self._steps if rewriting
            ]
            self._rewrite_stages: list[TransformStage[R]] = [stage for stage, rewriting, _ in self._steps if rewriting]
            maps = {part for _, _, part in self._steps}
            self._copies_value, self._copies_key = "value" in maps, "key" in maps
            self._value_only = self._copies_value and not self._copies_key
            self.apply = self._rewrite_all  # type: ignore[method-assign]

    def __bool__(self) -> bool:
        return bool(self.stages)

    def apply(self, record: R, original: Any = None, owned: bool = False, maps_owned: bool = False) -> R | None:
        """``record`` through every stage; ``None`` when one dropped it. A stage that raises raises
        :class:`StageFailed` for ``original`` (what the record arrived as; ``record`` itself by default).

        ``record`` is never changed unless ``owned`` (the caller made it and hands it over: the sink loop's
        converted records), when built-ins may change the record object itself in place; its key's and value's
        maps too when ``maps_owned`` (a converter made them for this record alone), else the chain copies them
        before changing them."""
        given = record
        owns_record, owns_key, owns_value = owned, maps_owned, maps_owned
        for stage, rewriting, part in self._steps:
            guard = stage.predicate
            try:
                if guard is not None and guard.test(record) == stage.negate:
                    continue
                if rewriting is None:
                    transformed = stage.transformation.apply(record)
                    owns_record = owns_key = owns_value = False  # what it returns may be shared
                else:
                    if not owns_record or (part == "value" and not owns_value) or (part == "key" and not owns_key):
                        record = working_copy(record, part, owns_record)
                        owns_record = True
                        owns_key, owns_value = owns_key or part == "key", owns_value or part == "value"
                    transformed = rewriting.rewrite(record)
            except Exception as error:
                raise _failed(stage, error, original if original is not None else given) from error
            if transformed is None:
                return None
            record = transformed
        return record

    def _rewrite_all(self, record: R, original: Any = None, owned: bool = False, maps_owned: bool = False) -> R | None:
        """:meth:`apply` for a chain of unguarded :class:`Rewriting` stages: the record and the maps they change
        copied once (what the caller does not hand over), then each stage in place."""
        given = record
        if maps_owned:
            if not owned:
                record = working_copy(record, None)
        elif not owned and self._value_only and type(record) is SourceRecord and type(record.value) is dict:
            record = copied(record, record.value.copy())
        else:
            record = working_copy(record, "value" if self._copies_value else None, owned)
            if self._copies_key:
                record = working_copy(record, "key", True)
        done = 0  # stages done: one ``try`` for the chain, and the failing stage found by its place
        try:
            for rewrite in self._rewrite_calls:
                rewritten = rewrite(record)
                if rewritten is None:
                    return None
                record = rewritten
                done += 1
        except Exception as error:
            raise _failed(self._rewrite_stages[done], error, original if original is not None else given) from error
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


def _failed(stage: TransformStage[Any], error: Exception, record: Any) -> StageFailed:
    executing = f"{class_name(stage.transformation)} (alias {stage.alias})"
    return StageFailed(Failure(Stage.TRANSFORMATION, executing, error, record))


def _part(rewriting: Rewriting[Any] | None) -> str | None:
    return None if rewriting is None else rewriting.rewritten_part
