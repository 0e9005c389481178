"""Headwater's transforms against Kafka Connect's own, on the same records: the parity check of issue 22.

:func:`python_apply` runs a connector config's ``transforms``/``predicates`` keys through Headwater's chain
(:func:`headwater.runtime.transforms.build_chain`) on records given as :mod:`support.java_transforms` dicts, and
answers in the same shape as :meth:`support.java_transforms.JavaTransforms.apply`: the output record, ``None`` for
a dropped one, ``{"error": ...}`` for one a transformation raised on. :func:`assert_parity` compares the two sides
record by record (topic, partition, key, value, timestamp, headers, with :func:`~support.java_transforms.typed`
values, so 1, 1.0 and True differ);
:func:`pairs` and :func:`schema_pairs` give both sides' answers for the report (``support.parity_report``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from headwater.runtime.error_handling.tolerance import StageFailed
from headwater.runtime.transforms import build_chain
from headwater.runtime.transforms.builtins.schemas import normalized
from headwater.sdk.records import SinkRecord, SourceRecord
from support.java_transforms import JavaTransforms, typed

COMPARED = ("topic", "partition", "key", "value", "timestamp", "headers")
"""The fields of an output record both sides must agree on (and ``offset`` for sink records)."""


def to_record(record: Mapping[str, Any]) -> SinkRecord | SourceRecord:
    headers = tuple((str(header[0]), header[1]) for header in record.get("headers") or ())
    if record.get("kind", "sink") == "source":
        return SourceRecord(
            None,
            None,
            record["topic"],
            record.get("value"),
            record.get("key"),
            record.get("partition"),
            record.get("timestamp"),
            headers,
            record.get("key_schema"),
            record.get("value_schema"),
        )
    return SinkRecord(
        record["topic"],
        record.get("partition", 0),
        record.get("offset", 0),
        record.get("key"),
        record.get("value"),
        record.get("timestamp"),
        headers,
    )


def from_record(record: SinkRecord | SourceRecord) -> dict[str, Any]:
    found: dict[str, Any] = {
        "kind": "source" if isinstance(record, SourceRecord) else "sink",
        "topic": record.topic,
        "partition": record.partition,
        "key": record.key,
        "value": record.value,
        "timestamp": record.timestamp,
        "headers": [tuple(header) for header in record.headers],
    }
    if isinstance(record, SinkRecord):
        found["offset"] = record.offset
    return found


def python_apply(config: Mapping[str, str], records: Sequence[Mapping[str, Any]]) -> list[dict[str, Any] | None]:
    """Headwater's answer for ``records`` through the chain ``config`` describes (built once, closed after)."""
    chain = build_chain(config)
    answers: list[dict[str, Any] | None] = []
    try:
        for given in records:
            try:
                result = chain.apply(to_record(given))
            except StageFailed as failed:
                error = failed.failure.error
                answers.append({"error": f"{type(error).__name__}: {error}"})
                continue
            answers.append(None if result is None else from_record(result))
    finally:
        chain.close()
    return answers


def comparable(answer: Mapping[str, Any] | None) -> Any:
    """What must be equal on both sides: ``None`` for a dropped record, ``"error"`` for a failed one (messages
    differ between the languages), else the compared fields with typed values."""
    if answer is None:
        return None
    if "error" in answer:
        return "error"
    fields = [*COMPARED, "offset"] if answer.get("kind", "sink") == "sink" else COMPARED
    return {
        field: typed([list(h) for h in answer[field]] if field == "headers" else answer.get(field)) for field in fields
    }


def assert_parity(
    java: JavaTransforms, config: Mapping[str, str], records: Sequence[Mapping[str, Any]]
) -> list[dict[str, Any] | None]:
    """Both sides agree on every record; return Headwater's answers."""
    ours, theirs = python_apply(config, records), java.apply(dict(config), list(records))
    for index, (mine, kafka) in enumerate(zip(ours, theirs, strict=True)):
        assert comparable(mine) == comparable(kafka), (
            f"record {index} {records[index]!r}:\n  Headwater: {mine!r}\n  Kafka:     {kafka!r}"
        )
    return ours


SCHEMA_COMPARED = ("key", "value", "key_schema", "value_schema", "headers")
"""What must be equal on both sides for records with schemas: the schemas too, as the JsonConverter writes them."""


def _with_schemas(config: Mapping[str, str], records: Sequence[Mapping[str, Any]]) -> list[Any]:
    """Headwater's key, value, schemas (normalized, as Kafka's side writes them) and headers; ``"error"`` for a
    record a transformation raised on."""
    stages = build_chain(config)
    answers: list[Any] = []
    try:
        for given in records:
            try:
                out = stages.apply(to_record(given))
            except StageFailed:
                answers.append("error")
                continue
            found = None if out is None else {field: getattr(out, field) for field in SCHEMA_COMPARED}
            if found is not None:
                found["headers"] = [list(header) for header in found["headers"]]
                for part in ("key_schema", "value_schema"):
                    found[part] = None if found[part] is None else normalized(found[part])
            answers.append(found)
    finally:
        stages.close()
    return answers


def schema_pairs(
    java: JavaTransforms,
    config: Mapping[str, str],
    records: Sequence[Mapping[str, Any]],
    *,
    converter: Mapping[str, str] | None = None,
) -> list[Any]:
    """For each record, Headwater's and Kafka's key, value, schemas and headers (``"error"`` for a failure, ``None``
    for a dropped record), typed so that equal pairs agree. ``converter`` holds settings of Kafka's JsonConverter,
    which reads the records and writes the output: ``{"replace.null.with.default": "false"}`` keeps nulls where a
    schema has a default, as Headwater's payloads keep them."""
    kafka: list[Any] = []
    for out in java.apply(dict(config), list(records), converter=converter):
        if out is None or "error" in out:
            kafka.append(out and "error")
            continue
        kafka.append({field: out.get(field) for field in SCHEMA_COMPARED})
        kafka[-1]["headers"] = [list(header) for header in out["headers"]]
    ours = _with_schemas(config, records)
    return [(typed(mine), typed(theirs)) for mine, theirs in zip(ours, kafka, strict=True)]


def assert_schema_parity(
    java: JavaTransforms,
    config: Mapping[str, str],
    records: Sequence[Mapping[str, Any]],
    *,
    converter: Mapping[str, str] | None = None,
) -> None:
    """Both sides agree on every record's key, value, schemas and headers (a failure on one side must be one on
    the other); ``converter`` as for :func:`schema_pairs`."""
    for index, (mine, theirs) in enumerate(schema_pairs(java, config, records, converter=converter)):
        assert mine == theirs, f"record {index}:\n  Headwater: {mine!r}\n  Kafka:     {theirs!r}"


def pairs(java: JavaTransforms, config: Mapping[str, str], records: Sequence[Mapping[str, Any]]) -> list[Any]:
    """For each record, Headwater's and Kafka's :func:`comparable` answers."""
    ours, theirs = python_apply(config, records), java.apply(dict(config), list(records))
    return [(comparable(mine), comparable(kafka)) for mine, kafka in zip(ours, theirs, strict=True)]
