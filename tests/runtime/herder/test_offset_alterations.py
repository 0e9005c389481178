"""A sink connector's offsets (KIP-875) through the transport's admin client: on the in-memory transport as on a
real broker (tests/runtime/rest/test_offsets_api.py), with the broker's refusal of deleting a group that has
members."""

from __future__ import annotations

import pytest

from headwater.harness import MonitorableSinkConnector, SimulatedWorker
from headwater.runtime.transport.memory import MemoryTransport
from headwater.sdk import ConnectError, TopicPartition

IN = TopicPartition("in", 0)
PARTITION = {"kafka_topic": "in", "kafka_partition": 0}


def stopped_sink(worker: SimulatedWorker) -> None:
    worker.add_connector("snk", MonitorableSinkConnector, {"topics": "in"})
    for value in range(5):
        worker.produce("in", value, partition=0)
    worker.run_until(lambda: worker.group_offsets("snk").get(IN) == 5, what="the sink commits offset 5")
    worker.stop_connector("snk")


def test_sink_offsets_are_read_altered_and_reset_in_memory(simulated_worker: SimulatedWorker) -> None:
    stopped_sink(simulated_worker)
    herder = simulated_worker.herder
    assert herder.connector_offsets("snk") == [{"partition": PARTITION, "offset": {"kafka_offset": 5}}]
    herder.alter_connector_offsets("snk", [{"partition": PARTITION, "offset": {"kafka_offset": 2}}])
    assert simulated_worker.group_offsets("snk") == {IN: 2}
    herder.alter_connector_offsets("snk", [{"partition": PARTITION, "offset": None}])
    assert herder.connector_offsets("snk") == []
    herder.alter_connector_offsets("snk", [{"partition": PARTITION, "offset": {"kafka_offset": 4}}])
    herder.reset_connector_offsets("snk")
    assert herder.connector_offsets("snk") == []


def test_resetting_a_group_that_still_has_members_is_refused(simulated_worker: SimulatedWorker) -> None:
    stopped_sink(simulated_worker)
    transport = simulated_worker.transport
    assert isinstance(transport, MemoryTransport)
    zombie = transport.consumer("connect-snk", {})
    zombie.subscribe(["in"], _Quiet())
    zombie.poll(1, 0)
    with pytest.raises(ConnectError, match=r"connect-snk: Broker: The group is not empty\. If the group still has"):
        simulated_worker.herder.reset_connector_offsets("snk")
    assert simulated_worker.group_offsets("snk") == {IN: 5}
    zombie.close()
    simulated_worker.herder.reset_connector_offsets("snk")
    assert simulated_worker.group_offsets("snk") == {}


class _Quiet:
    def on_partitions_assigned(self, partitions: object) -> None: ...

    def on_partitions_revoked(self, partitions: object) -> None: ...

    def on_partitions_lost(self, partitions: object) -> None: ...
