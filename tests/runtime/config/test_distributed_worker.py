"""The distributed worker's config: Kafka Connect's required keys, topic names, slot topic prefix."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from headwater.runtime.commands.distributed import DistributedWorker, main
from headwater.runtime.config.distributed_worker import slots_prefix
from headwater.runtime.config.properties import format_properties
from headwater.runtime.distributed import DISTRIBUTED_CONFIG
from headwater.sdk.errors import ConfigError

REQUIRED = {
    "group.id": "g",
    "config.storage.topic": "g-configs",
    "offset.storage.topic": "g-offsets",
    "status.storage.topic": "g-status",
}


def write(tmp_path: Path, **props: Any) -> Path:
    path = tmp_path / "worker.properties"
    path.write_text(format_properties({**REQUIRED, **props}), encoding="utf-8")
    return path


@pytest.mark.parametrize("missing", sorted(REQUIRED))
def test_group_and_topics_are_required(missing: str) -> None:
    with pytest.raises(ConfigError) as error:
        DISTRIBUTED_CONFIG.parse({k: v for k, v in REQUIRED.items() if k != missing})
    assert missing in str(error.value)


def test_defaults_are_kafka_connects() -> None:
    config = DISTRIBUTED_CONFIG.parse(REQUIRED)
    assert config["offset.storage.partitions"] == 25
    assert config["status.storage.partitions"] == 5
    assert config["config.storage.replication.factor"] == 3
    assert config["session.timeout.ms"] == 10_000
    assert slots_prefix(config) == "g-configs.slots"


@pytest.mark.parametrize("topic", ["has space", "a/b", "", "x" * 250, ".."])
def test_illegal_topic_names_are_refused(topic: str) -> None:
    with pytest.raises(ConfigError, match=re.escape("config.storage.topic")):
        DISTRIBUTED_CONFIG.parse({**REQUIRED, "config.storage.topic": topic})


def test_a_derived_prefix_too_long_for_slot_topics_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path, **{"config.storage.topic": "c" * 200})
    with pytest.raises(ConfigError, match=re.escape("slots.topic.prefix")):
        DistributedWorker.from_path(path)


def test_bad_file_exits_2_naming_the_key(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, **{"session.timeout.ms": "soon"})
    assert main(str(path)) == 2
    assert "session.timeout.ms" in capsys.readouterr().err
