"""The field transformations' settings: every one Kafka Connect 4.3.1 defines is defined, documented (the docs page
is generated from these), and nothing else is, but for the settings Kafka removed, which are refused."""

from __future__ import annotations

import pytest

from headwater.runtime.transforms.builtins import BUILTIN_TRANSFORMATIONS, FIELD_TRANSFORMATIONS
from headwater.sdk.config import ConfigDef

NULLS = "replace.null.with.default"
KAFKA_SETTINGS = {
    "InsertField": {"topic.field", "partition.field", "offset.field", "timestamp.field", "static.field",
                    "static.value", NULLS},
    "ReplaceField": {"exclude", "include", "renames", NULLS},
    "MaskField": {"fields", "replacement", NULLS},
    "HoistField": {"field"},
    "ExtractField": {"field", "field.syntax.version", NULLS},
    "ValueToKey": {"fields", NULLS},
    "Flatten": {"delimiter"},
    "Cast": {"spec", NULLS},
}  # fmt: skip
"""Each transformation's settings in Kafka Connect 4.3.1 (its ``CONFIG_DEF``)."""

REFUSED = {"ReplaceField": {"blacklist", "whitelist"}}
"""Settings Kafka Connect 4.0 removed (and ignores): defined so that they are refused with the replacement's name."""


def definition(name: str) -> ConfigDef:
    definition: ConfigDef = FIELD_TRANSFORMATIONS[name]().config_def()
    return definition


@pytest.mark.parametrize("name", sorted(FIELD_TRANSFORMATIONS))
def test_each_setting_is_kafkas_and_documented(name: str) -> None:
    base = name.split("$")[0]
    keys = {key.name: key for key in definition(name)}
    assert set(keys) == KAFKA_SETTINGS[base] | REFUSED.get(base, set())
    for key in keys.values():
        assert len(key.documentation) >= 30 and key.documentation.endswith("."), key


def test_every_field_transformation_has_both_names_and_both_variants() -> None:
    for base in KAFKA_SETTINGS:
        variants = ["ValueToKey"] if base == "ValueToKey" else [f"{base}$Key", f"{base}$Value"]
        for variant in variants:
            java_name = "org.apache.kafka.connect.transforms." + variant
            assert (
                BUILTIN_TRANSFORMATIONS[variant] is BUILTIN_TRANSFORMATIONS[java_name] is FIELD_TRANSFORMATIONS[variant]
            )
    assert FIELD_TRANSFORMATIONS["Cast$Key"].part == "key" and FIELD_TRANSFORMATIONS["Flatten$Value"].part == "value"
