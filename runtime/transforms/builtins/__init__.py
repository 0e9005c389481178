"""The built-in transformations and predicates, by the names a connector config's ``type`` may give them: Kafka
Connect's short names (``InsertField$Value``) and its Java class names
(``org.apache.kafka.connect.transforms.InsertField$Value``), so configs written for Kafka Connect run unchanged."""

from __future__ import annotations

from typing import Any

from headwater.runtime.transforms.builtins.cast import Cast
from headwater.runtime.transforms.builtins.fields import InsertField, ReplaceField
from headwater.runtime.transforms.builtins.flatten import Flatten
from headwater.runtime.transforms.builtins.headers import DropHeaders, HeaderFrom, InsertHeader
from headwater.runtime.transforms.builtins.mask import MaskField
from headwater.runtime.transforms.builtins.nesting import ExtractField, HoistField, ValueToKey
from headwater.runtime.transforms.builtins.predicates import HasHeaderKey, RecordIsTombstone, TopicNameMatches
from headwater.runtime.transforms.builtins.routing import Filter, RegexRouter, TimestampRouter
from headwater.runtime.transforms.builtins.schema_metadata import SetSchemaMetadata
from headwater.runtime.transforms.builtins.timestamps import TimestampConverter

TRANSFORMS_PACKAGE = "org.apache.kafka.connect.transforms."
PREDICATES_PACKAGE = "org.apache.kafka.connect.transforms.predicates."


def _variants(base: type[Any]) -> dict[str, type[Any]]:
    """``Name$Key`` and ``Name$Value`` classes of a transformation with both variants."""
    made: dict[str, type[Any]] = {}
    for part in ("key", "value"):
        variant = type(f"{base.__name__}{part.capitalize()}", (base,), {"part": part, "__module__": base.__module__})
        variant.__qualname__ = f"{base.__name__}${part.capitalize()}"
        made[f"{base.__name__}${part.capitalize()}"] = variant
    return made


def _named(package: str, classes: dict[str, type[Any]]) -> dict[str, type[Any]]:
    return {**classes, **{package + name: cls for name, cls in classes.items()}}


FIELD_TRANSFORMATIONS: dict[str, type[Any]] = {
    **_variants(InsertField),
    **_variants(ReplaceField),
    **_variants(MaskField),
    **_variants(HoistField),
    **_variants(ExtractField),
    "ValueToKey": ValueToKey,
    **_variants(Flatten),
    **_variants(Cast),
}
"""The transformations of the fields of a key or value (:mod:`.fields` and its neighbours)."""

RECORD_TRANSFORMATIONS: dict[str, type[Any]] = {
    **_variants(HeaderFrom),
    **_variants(TimestampConverter),
    **_variants(SetSchemaMetadata),
    "RegexRouter": RegexRouter,
    "TimestampRouter": TimestampRouter,
    "Filter": Filter,
    "DropHeaders": DropHeaders,
    "InsertHeader": InsertHeader,
}
"""The transformations of a record's topic, headers, timestamps and schemas, and filtering."""

BUILTIN_TRANSFORMATIONS: dict[str, type[Any]] = _named(
    TRANSFORMS_PACKAGE, {**FIELD_TRANSFORMATIONS, **RECORD_TRANSFORMATIONS}
)
"""Each built-in transformation by its short and its Java class name."""

BUILTIN_PREDICATES: dict[str, type[Any]] = _named(
    PREDICATES_PACKAGE,
    {"TopicNameMatches": TopicNameMatches, "HasHeaderKey": HasHeaderKey, "RecordIsTombstone": RecordIsTombstone},
)
"""Each built-in predicate by its short and its Java class name."""
