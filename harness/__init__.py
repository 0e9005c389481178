"""Headwater's test harness: a simulated worker, instrumented connectors and the pytest plugin."""

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
from headwater.harness.simulated import SimulatedWorker

__all__ = [
    "HANDLES",
    "HookRecorder",
    "MonitorableSinkConnector",
    "MonitorableSinkTask",
    "MonitorableSourceConnector",
    "MonitorableSourceTask",
    "RuntimeHandles",
    "SimulatedWorker",
    "TaskHandle",
]
