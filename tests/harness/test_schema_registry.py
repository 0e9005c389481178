"""The harness's Schema Registry: Apicurio Registry from Maven Central, answering Confluent's REST API."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from headwater.harness.schema_registry import (
    LocalSchemaRegistry,
    RegistryUnavailable,
    find_java,
    java_version,
)

CONTENT_TYPE = {"Content-Type": "application/vnd.schemaregistry.v1+json"}
ORDER = {"type": "record", "name": "Order", "fields": [{"name": "id", "type": "int"}]}


def test_no_java_new_enough_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    old = tmp_path / "java"
    old.write_text("#!/bin/sh\necho 'openjdk version \"17.0.9\" 2023-10-17' >&2\n")
    old.chmod(0o755)
    monkeypatch.setattr("headwater.harness.schema_registry.java_candidates", lambda: [str(old)])
    assert java_version(str(old)) == 17
    with pytest.raises(RegistryUnavailable, match=r"Java 21 or newer; found: .*java \(17\)"):
        find_java()


def test_a_registry_registers_serves_refuses_and_deletes_schemas(schema_registry_url: str) -> None:
    with httpx.Client(base_url=schema_registry_url, headers=CONTENT_TYPE, timeout=30) as http:
        created = http.post("/subjects/orders-value/versions", json={"schema": json.dumps(ORDER)})
        assert created.status_code == 200, created.text
        schema_id = created.json()["id"]
        assert json.loads(http.get(f"/schemas/ids/{schema_id}").json()["schema"]) == ORDER
        assert "orders-value" in http.get("/subjects").json()
        assert http.put("/config/orders-value", json={"compatibility": "BACKWARD"}).status_code == 200
        changed = {**ORDER, "fields": [{"name": "id", "type": "string"}]}
        refused = http.post("/subjects/orders-value/versions", json={"schema": json.dumps(changed)})
        assert refused.status_code == 409 and "ncompatible" in refused.text
        assert http.delete("/subjects/orders-value").status_code == 200  # soft: Confluent's first step
        assert "orders-value" not in http.get("/subjects").json()
        hard = http.delete("/subjects/orders-value", params={"permanent": "true"})
        assert hard.status_code == 200, hard.text  # needs the registry's deletion settings
        assert "orders-value" not in http.get("/subjects", params={"deleted": "true"}).json()


def test_a_registry_not_started_has_no_url() -> None:
    registry = LocalSchemaRegistry()
    assert "not started" in repr(registry)
    with pytest.raises(RegistryUnavailable, match="not started"):
        _ = registry.url


def test_a_second_registry_starts_beside_the_sessions(schema_registry_url: str) -> None:
    """Two registries on one machine (another test run's, say) do not share a port: the session's is running."""
    with LocalSchemaRegistry() as second:
        assert second.url != schema_registry_url
        assert httpx.get(f"{second.url}/subjects", timeout=30).json() == []
