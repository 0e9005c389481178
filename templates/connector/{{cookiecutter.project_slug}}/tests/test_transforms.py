"""The connector's transformation, made and configured the way a worker makes it from a connector config: through
its entry point (``{{ cookiecutter.project_slug }}-tag``) and ``build_chain``."""

from __future__ import annotations

from typing import Any

import pytest
from headwater.runtime.transforms import build_chain
from headwater.sdk import ConfigError, ConnectError, SinkRecord, SourceRecord

CONFIG = {
    "transforms": "tag",
    "transforms.tag.type": "{{ cookiecutter.project_slug }}-tag",
    "transforms.tag.field.value": "acme",
}


def source_record(value: Any) -> SourceRecord:
    return SourceRecord(source_partition={"file": "f"}, source_offset={"line": 0}, topic="t", value=value)


def test_the_field_is_added_to_source_and_sink_records() -> None:
    chain = build_chain(CONFIG)
    original = source_record({"id": 1})
    assert chain.apply(original).value == {"id": 1, "origin": "acme"}
    assert original.value == {"id": 1}, "the record given is never changed"
    sink = SinkRecord(topic="t", partition=0, offset=5, key=None, value={"id": 2})
    assert chain.apply(sink).value == {"id": 2, "origin": "acme"}
    chain.close()


def test_the_field_name_is_a_setting() -> None:
    chain = build_chain({**CONFIG, "transforms.tag.field.name": "tenant"})
    assert chain.apply(source_record({})).value == {"tenant": "acme"}


def test_a_tombstone_passes_unchanged() -> None:
    record = source_record(None)
    assert build_chain(CONFIG).apply(record) is record


def test_the_value_is_required() -> None:
    with pytest.raises(ConfigError, match=r"transforms\.tag\.field\.value"):
        build_chain({key: value for key, value in CONFIG.items() if key != "transforms.tag.field.value"})


def test_a_value_that_is_not_a_map_fails_the_record_at_stage_transformation() -> None:
    with pytest.raises(Exception, match="map value") as failed:
        build_chain(CONFIG).apply(source_record("text"))
    assert failed.value.failure.stage.value == "TRANSFORMATION"
    assert isinstance(failed.value.__cause__, ConnectError)
