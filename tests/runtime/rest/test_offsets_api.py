"""Connector offsets over HTTP (KIP-875): read any time; alter and reset only while STOPPED; source offsets in the
offset store, sink offsets in the consumer group ``connect-<name>``. On the in-memory worker, but for the sink's
offsets in a consumer group of the real broker."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from confluent_kafka import Producer

from headwater.harness.monitorable import RuntimeHandles
from headwater.runtime.herder.offset_alterations import ALTERED, NO_OFFSETS, RESET
from headwater.runtime.storage.offsets import FileOffsetStore
from support.rest_worker import MemoryRestWorker, RestWorker, sink_config, source_config, wait_until


def not_stopped(name: str) -> str:
    return (
        "Connectors must be in the STOPPED state before their offsets can be modified. This can be done for the "
        f"specified connector by issuing a 'PUT' request to the '/connectors/{name}/stop' endpoint"
    )


@pytest.mark.parametrize("store", ["memory", "file"])
def test_source_offsets_read_altered_and_reset(
    make_live_rest: Callable[..., MemoryRestWorker],
    unique_name: str,
    runtime_handles: RuntimeHandles,
    tmp_path: Path,
    store: str,
) -> None:
    """In the offset store the worker has: in memory, or the standalone command's offsets file, which holds each
    change when read again from the disk."""
    path = tmp_path / "offsets"
    offsets = FileOffsetStore(path) if store == "file" else None
    if offsets is not None:
        offsets.start()  # as the standalone command starts it, before its worker
    live_rest = make_live_rest(offset_store=offsets)

    def on_disk() -> list[dict[str, object]]:
        if store != "file":
            return live_rest.offsets(unique_name)
        stored = FileOffsetStore(path)
        stored.start()
        try:
            found = stored.get(unique_name, stored.connector_partitions(unique_name))
            return [{"partition": partition, "offset": offset} for partition, offset in found if offset is not None]
        finally:
            stored.stop()

    live_rest.create(unique_name, source_config(f"{unique_name}-t"))
    partition = {"task.id": f"{unique_name}-0"}
    live_rest.wait_for_offsets(unique_name, [{"partition": partition, "offset": {"saved": 2}}])
    assert live_rest.http.put(f"/connectors/{unique_name}/stop").status_code == 204
    other = {"task.id": "elsewhere"}
    body = {"offsets": [{"partition": partition, "offset": {"saved": 10}}, {"partition": other, "offset": {"n": 1}}]}
    altered = live_rest.http.patch(f"/connectors/{unique_name}/offsets", json=body)
    assert altered.status_code == 200
    assert altered.json() == {"message": ALTERED}
    assert sorted(live_rest.offsets(unique_name), key=str) == sorted(body["offsets"], key=str)
    assert sorted(on_disk(), key=str) == sorted(body["offsets"], key=str)
    removed = live_rest.http.patch(
        f"/connectors/{unique_name}/offsets", json={"offsets": [{"partition": other, "offset": None}]}
    )
    assert removed.status_code == 200
    assert live_rest.offsets(unique_name) == [{"partition": partition, "offset": {"saved": 10}}]
    assert on_disk() == [{"partition": partition, "offset": {"saved": 10}}]
    assert live_rest.http.put(f"/connectors/{unique_name}/resume").status_code == 202
    wait_until(
        lambda: ("start", {"saved": 10}) in runtime_handles.task(unique_name).events, "the task starting from 10"
    )
    assert live_rest.http.put(f"/connectors/{unique_name}/stop").status_code == 204
    reset = live_rest.http.delete(f"/connectors/{unique_name}/offsets")
    assert reset.status_code == 200
    assert reset.json() == {"message": RESET}
    assert live_rest.offsets(unique_name) == []
    assert on_disk() == []


def test_altering_or_resetting_a_running_connector_is_refused(live_rest: MemoryRestWorker, unique_name: str) -> None:
    live_rest.create(unique_name, source_config(f"{unique_name}-t"))
    partition = {"task.id": f"{unique_name}-0"}
    live_rest.wait_for_offsets(unique_name, [{"partition": partition, "offset": {"saved": 2}}])
    body = {"offsets": [{"partition": partition, "offset": {"saved": 0}}]}
    for response in (
        live_rest.http.patch(f"/connectors/{unique_name}/offsets", json=body),
        live_rest.http.delete(f"/connectors/{unique_name}/offsets"),
    ):
        assert response.status_code == 400
        assert response.json() == {"error_code": 400, "message": not_stopped(unique_name)}
    assert live_rest.http.put(f"/connectors/{unique_name}/pause").status_code == 202
    paused = live_rest.http.delete(f"/connectors/{unique_name}/offsets")
    assert paused.status_code == 400, "PAUSED is not STOPPED"
    assert live_rest.offsets(unique_name) == [{"partition": partition, "offset": {"saved": 2}}]


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({}, NO_OFFSETS),
        ({"offsets": []}, NO_OFFSETS),
        ({"offsets": [{"partition": {"k": [1]}, "offset": {"n": 1}}]}, "source partition values must be primitives"),
    ],
)
def test_bad_alter_requests(
    live_rest: MemoryRestWorker, unique_name: str, body: dict[str, object], message: str
) -> None:
    live_rest.create(unique_name, source_config("t"), initial_state="STOPPED")
    response = live_rest.http.patch(f"/connectors/{unique_name}/offsets", json=body)
    assert response.status_code == 400
    assert message in response.json()["message"]


@pytest.mark.kafka
def test_sink_offsets_are_the_consumer_groups(
    rest_worker: RestWorker, kafka_bootstrap: str, unique_name: str, runtime_handles: RuntimeHandles
) -> None:
    topic = f"{unique_name}-in"
    producer = Producer({"bootstrap.servers": kafka_bootstrap})
    for n in range(5):
        producer.produce(topic, json.dumps({"n": n}).encode(), partition=0)
    assert producer.flush(30) == 0
    rest_worker.create(unique_name, sink_config(topic))
    partition = {"kafka_topic": topic, "kafka_partition": 0}
    rest_worker.wait_for_offsets(unique_name, [{"partition": partition, "offset": {"kafka_offset": 5}}])
    assert rest_worker.http.put(f"/connectors/{unique_name}/stop").status_code == 204
    body = {"offsets": [{"partition": {**partition, "kafka_partition": "0"}, "offset": {"kafka_offset": "2"}}]}
    altered = rest_worker.http.patch(f"/connectors/{unique_name}/offsets", json=body)
    assert altered.status_code == 200, altered.text
    assert altered.json() == {"message": ALTERED}
    assert rest_worker.offsets(unique_name) == [{"partition": partition, "offset": {"kafka_offset": 2}}]
    runtime_handles.task(unique_name).records.clear()
    assert rest_worker.http.put(f"/connectors/{unique_name}/resume").status_code == 202
    wait_until(lambda: len(runtime_handles.task(unique_name).records) == 3, "records 2, 3 and 4 delivered again")
    assert [record.offset for record in runtime_handles.task(unique_name).records] == [2, 3, 4]
    rest_worker.wait_for_offsets(unique_name, [{"partition": partition, "offset": {"kafka_offset": 5}}])
    assert rest_worker.http.put(f"/connectors/{unique_name}/stop").status_code == 204
    nulled = rest_worker.http.patch(
        f"/connectors/{unique_name}/offsets", json={"offsets": [{"partition": partition, "offset": None}]}
    )
    assert nulled.status_code == 200, nulled.text
    assert rest_worker.offsets(unique_name) == []
    reset = rest_worker.http.delete(f"/connectors/{unique_name}/offsets")
    assert reset.status_code == 200
    assert reset.json() == {"message": RESET}


def test_bad_sink_partition_is_refused(live_rest: MemoryRestWorker, unique_name: str) -> None:
    live_rest.create(unique_name, sink_config(f"{unique_name}-in"), initial_state="STOPPED")
    body = {"offsets": [{"partition": {"kafka_topic": "t", "kafka_partition": -1}, "offset": {"kafka_offset": 1}}]}
    response = live_rest.http.patch(f"/connectors/{unique_name}/offsets", json=body)
    assert response.status_code == 400
    assert "kafka_partition" in response.json()["message"]
