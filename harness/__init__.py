"""Headwater's test harness: a simulated worker, instrumented connectors, the pytest plugin, the conformance suite,
and Hypothesis strategies and stateful tests for connector authors.

Every name is imported on first use, so the pytest plugin (loaded by every project that installs Headwater) costs
nothing until a fixture is used, and the conformance suite (pytest) and the strategies and stateful tests
(Hypothesis) need their library only when used.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from headwater.harness.conformance import ConformanceContext
    from headwater.harness.driver import ConnectorDriver
    from headwater.harness.guarantees import GuaranteeViolation
    from headwater.harness.monitorable import (
        HANDLES,
        MonitorableSinkConnector,
        MonitorableSinkTask,
        MonitorableSourceConnector,
        MonitorableSourceTask,
        RuntimeHandles,
        TaskHandle,
    )
    from headwater.harness.recorder import HookRecorder
    from headwater.harness.schedule import FAULT_KINDS, SINK_FAULTS, SOURCE_FAULTS, Fault, play_schedule
    from headwater.harness.simulated import SimulatedWorker
    from headwater.harness.simulated_cluster import SimulatedCluster
    from headwater.harness.sink_suite import SinkConformance, sink_conformance
    from headwater.harness.source_suite import SourceConformance, source_conformance
    from headwater.harness.stateful import SinkMachine, SourceMachine, machine_settings, machine_test
    from headwater.harness.strategies import (
        TopicRecord,
        fault_schedules,
        faults,
        increasing_offsets,
        json_values,
        source_offsets,
        source_partitions,
        source_records,
        topic_records,
    )
    from headwater.harness.tap import ConnectorTap

_LAZY = {
    "headwater.harness.conformance": ["ConformanceContext"],
    "headwater.harness.driver": ["ConnectorDriver"],
    "headwater.harness.guarantees": ["GuaranteeViolation"],
    "headwater.harness.monitorable": [
        "HANDLES",
        "MonitorableSinkConnector",
        "MonitorableSinkTask",
        "MonitorableSourceConnector",
        "MonitorableSourceTask",
        "RuntimeHandles",
        "TaskHandle",
    ],
    "headwater.harness.recorder": ["HookRecorder"],
    "headwater.harness.schedule": ["FAULT_KINDS", "SINK_FAULTS", "SOURCE_FAULTS", "Fault", "play_schedule"],
    "headwater.harness.simulated": ["SimulatedWorker"],
    "headwater.harness.simulated_cluster": ["SimulatedCluster"],
    "headwater.harness.sink_suite": ["SinkConformance", "sink_conformance"],
    "headwater.harness.source_suite": ["SourceConformance", "source_conformance"],
    "headwater.harness.stateful": ["SinkMachine", "SourceMachine", "machine_settings", "machine_test"],
    "headwater.harness.strategies": [
        "TopicRecord",
        "fault_schedules",
        "faults",
        "increasing_offsets",
        "json_values",
        "source_offsets",
        "source_partitions",
        "source_records",
        "topic_records",
    ],
    "headwater.harness.tap": ["ConnectorTap"],
}
_LAZY_NAMES = {name: module for module, names in _LAZY.items() for name in names}


def __getattr__(name: str) -> Any:
    module = _LAZY_NAMES.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


__all__ = [
    "FAULT_KINDS",
    "HANDLES",
    "SINK_FAULTS",
    "SOURCE_FAULTS",
    "ConformanceContext",
    "ConnectorDriver",
    "ConnectorTap",
    "Fault",
    "GuaranteeViolation",
    "HookRecorder",
    "MonitorableSinkConnector",
    "MonitorableSinkTask",
    "MonitorableSourceConnector",
    "MonitorableSourceTask",
    "RuntimeHandles",
    "SimulatedCluster",
    "SimulatedWorker",
    "SinkConformance",
    "SinkMachine",
    "SourceConformance",
    "SourceMachine",
    "TaskHandle",
    "TopicRecord",
    "fault_schedules",
    "faults",
    "increasing_offsets",
    "json_values",
    "machine_settings",
    "machine_test",
    "play_schedule",
    "sink_conformance",
    "source_conformance",
    "source_offsets",
    "source_partitions",
    "source_records",
    "topic_records",
]
