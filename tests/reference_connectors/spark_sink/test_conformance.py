"""The sink conformance suite on the Spark sink, writing a local Parquet table in the foreground: every commit covers
only rows in the table (checked at each commit against the table as pyarrow reads it), offsets resume after a
restart and a crash, a revocation loses nothing. ``make mutants`` runs this module against the generated mutants of
the sink's commit code."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from headwater.harness import ConformanceContext, sink_conformance
from headwater.reference_connectors.spark_sink import SparkSinkConnector
from support.lake import read_parquet

pytestmark = pytest.mark.spark


def config(context: ConformanceContext) -> dict[str, Any]:
    """Three records a flush (and a flush at least every second), written in the foreground: a background write
    takes real time the virtual clock does not wait for."""
    return {
        "table.path": str(context.tmp_path / "table"),
        "table.format": "parquet",
        "flush.max.records": 3,
        "flush.interval.ms": 1_000,
        "write.background": "false",
    }


def written(config: Mapping[str, Any]) -> list[Any]:
    """The values in the table, as the records carried them (without the metadata columns)."""
    return [{"conformance": row["conformance"]} for row in read_parquet(Path(config["table.path"]))]


TestSparkSink = sink_conformance(
    SparkSinkConnector,
    config,
    written=written,
    bad_configs=[({"flush.max.records": "0"}, "flush.max.records"), ({"table.path": None}, "table.path")],
)
