"""The request and response bodies of the REST API, in Kafka Connect's shapes, as pydantic models: request bodies
are parsed with them and every response is documented with them in the served OpenAPI spec."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

ConfigMap = dict[str, Any]
"""A connector config: a JSON object of strings (numbers and booleans are taken as their text)."""


class ErrorMessage(BaseModel):
    error_code: int = Field(description="The HTTP status code.")
    message: str


class ServerInfo(BaseModel):
    version: str
    commit: str
    kafka_cluster_id: str | None


class WorkerStatus(BaseModel):
    status: Literal["healthy", "starting", "unhealthy"]
    message: str


class LoggerLevel(BaseModel):
    level: str = Field(description="TRACE, DEBUG, INFO, WARN, ERROR, FATAL or OFF.")
    last_modified: int | None = Field(description="When this worker last changed it (epoch ms); null if never.")


class CreateConnectorRequest(BaseModel):
    name: str | None = None
    config: ConfigMap | None = None
    initial_state: Literal["RUNNING", "PAUSED", "STOPPED"] | None = None


class ConnectorTaskId(BaseModel):
    connector: str
    task: int


class ConnectorInfo(BaseModel):
    name: str
    config: dict[str, str]
    tasks: list[ConnectorTaskId]
    type: Literal["source", "sink", "unknown"]


class TaskInfo(BaseModel):
    id: ConnectorTaskId
    config: dict[str, str]


class ConnectorState(BaseModel):
    state: str
    worker_id: str
    version: str | None = Field(None, description="The plugin's version; left out when it cannot be told.")
    trace: str | None = Field(None, description="The failure's stack trace; left out when there is none.")


class TaskState(ConnectorState):
    id: int


class ConnectorStateInfo(BaseModel):
    name: str
    connector: ConnectorState
    tasks: list[TaskState]
    type: Literal["source", "sink", "unknown"]


class ConnectorExpansion(BaseModel):
    status: ConnectorStateInfo | None = None
    info: ConnectorInfo | None = None


class ActiveTopics(BaseModel):
    topics: list[str]


class ConnectorOffset(BaseModel):
    partition: dict[str, Any]
    offset: dict[str, Any] | None


class ConnectorOffsets(BaseModel):
    offsets: list[ConnectorOffset] | None = None


class Message(BaseModel):
    message: str


class PluginInfo(BaseModel):
    model_config = ConfigDict(populate_by_name=True)

    class_: str = Field(alias="class")
    type: str
    version: str | None = None


class ConfigKeyInfo(BaseModel):
    name: str
    type: str
    required: bool
    default_value: str | None
    importance: str
    documentation: str
    group: str | None
    order_in_group: int
    width: str
    display_name: str
    dependents: list[str]


class ConfigValueInfo(BaseModel):
    name: str
    value: str | None
    recommended_values: list[str]
    errors: list[str]
    visible: bool


class ConfigInfo(BaseModel):
    definition: ConfigKeyInfo | None
    value: ConfigValueInfo


class ConfigInfos(BaseModel):
    name: str
    error_count: int
    groups: list[str]
    configs: list[ConfigInfo]
