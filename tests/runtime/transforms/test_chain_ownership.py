"""The chain's in-place rewriting (``Rewriting``) never reaches what it does not own: the record a source task
returned and the maps a converter made stay as they were, whatever the chain is (built-ins only, guarded, or with a
plugin transformation between built-ins whose records share a map), and a failure reports the record as it
arrived. In memory, no JVM."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

import pytest

from headwater.runtime.clock import VirtualClock
from headwater.runtime.config.error_keys import ErrorSettings
from headwater.runtime.converters import JsonConverter, SimpleHeaderConverter
from headwater.runtime.error_handling.tolerance import ErrorHandler, StageFailed
from headwater.runtime.tasks.sink_conversion import SinkConversion
from headwater.runtime.transforms import build_chain
from headwater.runtime.transforms.records import ConvertedRecord, rebuilt
from headwater.runtime.transport.base import Message
from headwater.sdk.config import ConfigDef
from headwater.sdk.records import SinkRecord, SourceRecord
from headwater.sdk.transforms import R, Transformation

T = "org.apache.kafka.connect.transforms."
REWRITES = {
    "stamp.type": T + "InsertField$Value",
    "stamp.static.field": "pipeline",
    "stamp.static.value": "hw",
    "stamp.topic.field": "from",
    "tidy.type": T + "ReplaceField$Value",
    "tidy.exclude": "secret",
    "tidy.renames": "amount:total",
    "keyed.type": T + "InsertField$Key",
    "keyed.static.field": "k2",
    "keyed.static.value": "v",
    "route.type": T + "RegexRouter",
    "route.regex": "(.*)-in",
    "route.replacement": "$1-out",
    "mark.type": T + "InsertHeader",
    "mark.header": "h",
    "mark.value.literal": "x",
    "wrap.type": T + "HoistField$Value",
    "wrap.field": "row",
    "again.type": T + "InsertField$Value",
    "again.static.field": "again",
    "again.static.value": "yes",
}


SHARED = {"id": 2, "amount": 1.5, "secret": "t"}
"""The value map every :class:`SharingTransformation` gives: one object, shared."""


class SharingTransformation(Transformation[R]):
    """A plugin transformation whose records share one value map (allowed: records are immutable to Kafka)."""

    def config_def(self) -> ConfigDef:
        return ConfigDef()

    def configure(self, config: Mapping[str, Any]) -> None:
        pass

    def apply(self, record: R) -> R | None:
        return rebuilt(record, value=SHARED, timestamp=7)


def chain_of(aliases: str, **extra: str) -> Any:
    config = {"transforms": aliases, **{f"transforms.{key}": value for key, value in REWRITES.items()}}
    config.update({"transforms.share.type": f"{__name__}.SharingTransformation"})
    config.update(extra)
    return build_chain(config)


def source_record() -> SourceRecord:
    value = {"id": 1, "amount": 2.5, "secret": "s", "nested": {"a": [1]}}
    return SourceRecord({"t": "x"}, {"pos": 1}, "orders-in", value, {"k": 1}, None, 5, (("a", b"1"),))


CHAINS = [
    "stamp,tidy,keyed,route,mark",  # built-ins only: the one-copy path
    "stamp,tidy,route",  # built-ins changing the value alone: a source record's one-step copy
    "stamp,share,tidy,route",  # a plugin between built-ins: the general path
    "share,stamp,tidy,wrap,again",  # a map rewritten after a plugin and after a hoist
]


@pytest.mark.parametrize("aliases", CHAINS)
def test_a_source_record_and_its_maps_are_never_changed(aliases: str) -> None:
    given = source_record()
    before = copy.deepcopy(given)
    out = chain_of(aliases).apply(given)
    assert given == before  # the task's record, its value and key maps, nested values too
    assert SHARED == {"id": 2, "amount": 1.5, "secret": "t"}
    assert out is not given and out is not None and out.value != before.value and out.value != SHARED


@pytest.mark.parametrize("aliases", CHAINS)
def test_an_owned_sink_record_may_change_but_never_the_converters_maps(aliases: str) -> None:
    value, key = {"id": 1, "amount": 2.5, "secret": "s"}, {"k": 1}
    value_before, key_before = copy.deepcopy(value), copy.deepcopy(key)
    given = ConvertedRecord("orders-in", 0, 9, key, value, 5, (), None, None, None)
    out = chain_of(aliases).apply(given, None, owned=True)
    assert (value, key) == (value_before, key_before)
    assert SHARED == {"id": 2, "amount": 1.5, "secret": "t"}
    assert isinstance(out, SinkRecord) and out.value != value_before and out.value != SHARED


def test_a_guarded_chain_leaves_the_record_alone_too() -> None:
    guarded = {
        "predicates": "p",
        "predicates.p.type": T + "predicates.TopicNameMatches",
        "predicates.p.pattern": "orders.*",
        "transforms.tidy.predicate": "p",
    }
    given = source_record()
    before = copy.deepcopy(given)
    out = chain_of("stamp,tidy,route", **guarded).apply(given)
    assert given == before
    assert out is not None and "total" in out.value and out.topic == "orders-out"


def test_a_failing_stage_reports_the_record_as_it_arrived() -> None:
    given = source_record()
    given.value["amount"] = 1
    before = copy.deepcopy(given)
    chain = chain_of(
        "stamp,tidy,late",
        **{"transforms.late.type": T + "InsertField$Value", "transforms.late.offset.field": "o"},
    )
    with pytest.raises(StageFailed) as failed:
        chain.apply(given)  # a source record has no offset: the third stage fails
    assert failed.value.failure.record is given and given == before


class SharingConverter:
    """A plugin value converter that hands every message the same map (a cache, say)."""

    def configure(self, config: Mapping[str, Any], is_key: bool) -> None:
        pass

    def from_connect(self, topic: str, schema: Any, value: Any) -> bytes | None:
        raise NotImplementedError

    def to_connect(self, topic: str, data: bytes | None) -> Any:
        return SHARED


@pytest.mark.parametrize("aliases", CHAINS)
def test_the_sink_loop_copies_a_plugin_converters_maps_and_not_the_json_converters(aliases: str) -> None:
    """The sink loop hands its converted records to the chain to change in place, their maps too when a built-in
    converter made them; a plugin converter's maps are copied first."""
    messages = [Message("orders-in", 0, offset, b'{"k": 1}', b'{"id": 1, "secret": "s"}', 5, ()) for offset in range(3)]
    errors = ErrorHandler("sink-0", ErrorSettings(), VirtualClock())
    keys = JsonConverter()
    keys.configure({"schemas.enable": "false"}, True)
    for converter in (SharingConverter(), JsonConverter()):
        if isinstance(converter, JsonConverter):
            converter.configure({"schemas.enable": "false"}, False)
        conversion = SinkConversion(keys, converter, SimpleHeaderConverter(), errors, chain_of(aliases))
        converted = conversion.convert([], messages).records
        assert SHARED == {"id": 2, "amount": 1.5, "secret": "t"}
        assert len(converted) == 3 and all("secret" not in str(record.value) for record in converted)
