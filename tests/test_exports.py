"""Each package's public API is its ``__all__``: sorted, complete and importable (httpx's ``test_exports``)."""

from __future__ import annotations

import importlib
import inspect
import re
import subprocess
import sys
from types import ModuleType

import pytest

PACKAGES = [
    "headwater",
    "headwater.sdk",
    "headwater.runtime",
    "headwater.runtime.transport",
    "headwater.runtime.transport.kafka",
    "headwater.runtime.transport.memory",
    "headwater.runtime.rest",
    "headwater.runtime.distributed",
    "headwater.runtime.metrics",
    "headwater.runtime.storage",
    "headwater.runtime.converters",
    "headwater.harness",
    "headwater.demo",
    "headwater.reference_connectors",
    "headwater.reference_connectors.kafka_mirror",
    "headwater.reference_connectors.jdbc_cdc",
    "headwater.reference_connectors.spark_sink",
]

SDK_API = [
    "CONFIG_PROVIDER_ENTRY_POINT_GROUP",
    "CONNECTOR_ENTRY_POINT_GROUP",
    "PLUGIN_ENTRY_POINT_GROUP",
    "PREDICATE_ENTRY_POINT_GROUP",
    "REQUIRED",
    "TRANSFORMATION_ENTRY_POINT_GROUP",
    "AvroSchema",
    "Clock",
    "ConfigDef",
    "ConfigError",
    "ConfigKey",
    "ConfigProvider",
    "ConnectError",
    "Connector",
    "ConnectorContext",
    "ConnectorTransactionBoundaries",
    "Counter",
    "ErrantRecordReporter",
    "ExactlyOnceSupport",
    "Gauge",
    "Header",
    "Histogram",
    "IllegalWorkerStateError",
    "Importance",
    "MetricKind",
    "OffsetStorageReader",
    "PluginMetrics",
    "Predicate",
    "RetriableError",
    "Schema",
    "SinkConnector",
    "SinkRecord",
    "SinkTask",
    "SinkTaskContext",
    "SourceBatch",
    "SourceConnector",
    "SourceOffset",
    "SourcePartition",
    "SourceRecord",
    "SourceTask",
    "SourceTaskContext",
    "Task",
    "TaskConfig",
    "TopicPartition",
    "TransactionContext",
    "Transformation",
    "Type",
    "at_least",
    "hookimpl",
    "in_range",
    "non_empty_string",
    "one_of",
    "regex",
]
"""What a connector author may import. Changing the SDK's surface means changing this list, deliberately."""


def isort_style(name: str) -> tuple[int, list[int | str]]:
    """ruff's RUF022 order: SCREAMING_SNAKE_CASE, then CamelCase, then the rest; natural order within each."""
    category = 0 if len(name) > 1 and name.isupper() else 1 if name[:1].isupper() else 2
    return category, [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name)]


def public_api(module: ModuleType) -> list[str]:
    """Public classes and functions of the headwater package bound in ``module``'s namespace."""
    return [
        name
        for name, value in vars(module).items()
        if not name.startswith("_")
        and (inspect.isclass(value) or inspect.isfunction(value))
        and getattr(value, "__module__", "").startswith("headwater.")
    ]


@pytest.fixture(params=PACKAGES)
def package(request: pytest.FixtureRequest) -> ModuleType:
    return importlib.import_module(request.param)


def test_all_is_sorted_and_unique(package: ModuleType) -> None:
    names = list(package.__all__)
    assert names == sorted(set(names), key=isort_style)


def test_every_name_in_all_exists(package: ModuleType) -> None:
    missing = [name for name in package.__all__ if not hasattr(package, name)]
    assert missing == []


def test_no_public_api_left_unexported(package: ModuleType) -> None:
    unexported = sorted(set(public_api(package)) - set(package.__all__))
    assert unexported == []


def test_sdk_surface_is_pinned() -> None:
    sdk = importlib.import_module("headwater.sdk")
    assert sdk.__all__ == SDK_API


AUTHOR_TOOLS = [
    "ConformanceContext",
    "SinkConformance",
    "SinkMachine",
    "SourceConformance",
    "SourceMachine",
    "TopicRecord",
    "fault_schedules",
    "faults",
    "increasing_offsets",
    "json_values",
    "machine_settings",
    "machine_test",
    "sink_conformance",
    "source_conformance",
    "source_offsets",
    "source_partitions",
    "source_records",
    "topic_records",
]
"""The conformance suite and the Hypothesis tools, imported from ``headwater.harness`` on first use."""


def test_author_tools_are_exported_and_need_neither_pytest_nor_hypothesis_until_used() -> None:
    script = (
        "import sys, headwater.harness as h\n"
        "assert 'hypothesis' not in sys.modules and 'pytest' not in sys.modules, sorted(sys.modules)\n"
        f"missing = [n for n in {AUTHOR_TOOLS!r} if not callable(getattr(h, n))]\n"
        "assert not missing, missing\n"
        "assert 'hypothesis' in sys.modules and 'pytest' in sys.modules\n"
    )
    harness = importlib.import_module("headwater.harness")
    assert set(AUTHOR_TOOLS) <= set(harness.__all__)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


def test_sort_key_puts_constants_then_classes_then_the_rest() -> None:
    names = ["regex", "Worker", "WORKER_CONFIG", "T", "task2", "task10", "Task"]
    assert sorted(names, key=isort_style) == ["WORKER_CONFIG", "T", "Task", "Worker", "regex", "task2", "task10"]
