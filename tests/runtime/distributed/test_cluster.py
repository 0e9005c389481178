"""Three ``headwater distributed`` processes on the real broker: tasks spread evenly, a SIGKILLed worker's tasks
resume on the others within the session timeout plus one rebalance with no record lost, a new worker takes tasks
whose previous owners commit them first, and a worker that leaves hands its tasks over committed and at once. (A
delete through a worker without tasks reaching their owners is ``test_herder``'s, on workers in threads.)"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Producer

from headwater.harness.kafka_worker import KafkaInspector, RawRecords
from support.distributed_process import DistributedCluster, DistributedWorkerProcess
from support.rest_worker import sink_config, wait_until

pytestmark = pytest.mark.kafka

SESSION_TIMEOUT_S = 6.0
REBALANCE_S = 5.0
"""One rebalance after the coordinator dropped a worker: the others hear of it at their next heartbeat (500 ms),
rejoin and sync, and the new owners start the tasks; generous, for a loaded two-core machine."""


def sequence_config(topic: str, tasks: int, **extra: Any) -> dict[str, str]:
    """A paced sequence source keyed by task number, bytes through and through."""
    config = {
        "connector.class": "sequence-source",
        "topic": topic,
        "tasks.max": tasks,
        "task.keys": "true",
        "batch.size": 20,
        "poll.interval.ms": 50,
        "record.bytes": 10,
        "key.converter": "bytes",
        "value.converter": "bytes",
        **extra,
    }
    return {key: str(value) for key, value in config.items()}


def create(cluster: DistributedCluster, name: str, config: dict[str, str], via: DistributedWorkerProcess) -> None:
    response = cluster.http(via).post("/connectors", json={"name": name, "config": config})
    assert response.status_code == 201, response.text


def per_worker(owners: dict[int, str], workers: list[DistributedWorkerProcess]) -> list[int]:
    return [list(owners.values()).count(worker.worker_id) for worker in workers]


def sequences(raw_records: RawRecords, topic: str) -> dict[int, list[int]]:
    """Task -> the sequence numbers it wrote to ``topic``, in order."""
    found: dict[int, list[int]] = {}
    for _, key, value in raw_records(topic):
        assert key is not None and value is not None
        found.setdefault(int(key), []).append(int(value))
    return found


def test_killed_workers_tasks_resume_on_the_others_losing_nothing(
    cluster: DistributedCluster, unique_name: str, raw_records: RawRecords
) -> None:
    workers = [cluster.add_worker() for _ in range(3)]
    create(cluster, "seq", sequence_config(unique_name, 6), workers[0])
    cluster.wait_for_running("seq", 6)
    wait_until(lambda: per_worker(cluster.running_tasks("seq"), workers) == [2, 2, 2], "two tasks per worker")
    for worker in workers:  # tasks spread evenly, and every worker answers with the same picture
        assert per_worker(cluster.running_tasks("seq", via=worker), workers) == [2, 2, 2]
    victim, survivors = workers[1], [workers[0], workers[2]]
    moved = sorted(task for task, owner in cluster.running_tasks("seq").items() if owner == victim.worker_id)
    wait_until(lambda: all(len(sequences(raw_records, unique_name).get(t, [])) > 20 for t in moved), "records")

    victim.kill()
    cluster.wait_for_running("seq", 6, timeout=SESSION_TIMEOUT_S + REBALANCE_S + 60)
    assert set(cluster.running_tasks("seq").values()) == {w.worker_id for w in survivors}
    written = {task: max(seqs) for task, seqs in sequences(raw_records, unique_name).items()}
    wait_until(
        lambda: all(max(sequences(raw_records, unique_name)[t]) > written[t] + 40 for t in moved),
        "the moved tasks writing on",
    )

    assert cluster.http().put("/connectors/seq/stop").status_code == 204
    wait_until(lambda: cluster.running_tasks("seq") == {}, "the connector stopped")
    found = sequences(raw_records, unique_name)
    assert sorted(found) == list(range(6))
    for task, seqs in found.items():
        assert set(seqs) == set(range(max(seqs) + 1)), f"task {task} lost records"
        assert seqs == sorted(seqs) or task in moved, f"only a moved task writes some records twice: {task}"


@pytest.fixture
def producing(kafka_bootstrap: str, unique_name: str) -> Iterator[dict[int, int]]:
    """Keyed records to topic ``unique_name`` (4 partitions), about 200 a second until the test ends; yields the
    number produced per partition so far."""
    KafkaInspector(kafka_bootstrap).create_topic(unique_name, 4)
    produced: dict[int, int] = {}
    stop = threading.Event()

    def produce() -> None:
        producer = Producer({"bootstrap.servers": kafka_bootstrap, "linger.ms": 5})
        n = 0
        while not stop.wait(0.005):
            producer.produce(unique_name, b"%d" % n, b"%d" % n, partition=n % 4)
            produced[n % 4] = produced.get(n % 4, 0) + 1
            n += 1
            producer.poll(0)
        producer.flush(10)

    thread = threading.Thread(target=produce, daemon=True)
    thread.start()
    yield produced
    stop.set()
    thread.join(15)


def runs(worker: DistributedWorkerProcess, name: str) -> dict[int, list[list[dict[str, Any]]]]:
    """Task -> the events of each run of it on ``worker`` (from its ``start`` on), without the ``flush`` that the
    default ``pre_commit`` does inside it."""
    found: dict[int, list[list[dict[str, Any]]]] = {}
    for event in worker.events(name):
        if event["task"] is None or event["event"] == "flush":
            continue
        if event["event"] == "start":
            found.setdefault(event["task"], []).append([])
        found[event["task"]][-1].append(event)
    return found


def committed_before_stopping(worker: DistributedWorkerProcess, name: str) -> set[int]:
    """The sink tasks that stopped on ``worker`` after putting records, each having run ``pre_commit`` -> ``close``
    -> commit (the commit left out only when an earlier one had committed those offsets already) -> ``stop``, having
    committed every partition it put records of (one it got in a rebalance and put nothing of keeps the offset its
    previous owner committed)."""
    checked = set()
    for task, task_runs in runs(worker, name).items():
        for events in task_runs:
            names = [event["event"] for event in events]
            if names[-1] != "stop" or "put" not in names:
                continue  # still running, or stopped before it had records (nothing to commit)
            last = len(names) - 1 - names[::-1].index("pre_commit")
            assert names[last:] in (["pre_commit", "close", "committed", "stop"], ["pre_commit", "close", "stop"])
            assert events[-1]["detail"] is False, "the connector still exists"
            put = {partition for e in events if e["event"] == "put" for _, partition, _ in e["detail"]}
            final = {p: o for p, o in map(tuple, events[last]["detail"]) if int(p.rsplit("-", 1)[1]) in put}
            committed = [dict(map(tuple, e["detail"])) for e in events if e["event"] == "committed"]
            assert committed and committed[-1].items() >= final.items(), "what the task had put is committed"
            checked.add(task)
    return checked


def test_sink_tasks_commit_before_moving_to_a_new_worker_or_off_a_leaving_one(
    cluster: DistributedCluster, unique_name: str, producing: dict[int, int]
) -> None:
    quiet = {"offset_flush_interval_ms": 600_000}  # only revocations and stops commit
    sink = f"snk-{unique_name}"  # its group connect-<name> is this test's alone
    first = [cluster.add_worker(**quiet) for _ in range(2)]
    create(cluster, sink, sink_config(unique_name, tasks_max=4), first[0])
    wait_until(lambda: per_worker(cluster.running_tasks(sink), first) == [2, 2], "two sink tasks per worker")

    def putting() -> bool:
        current = [run[-1] for worker in first for run in runs(worker, sink).values() if run[-1][-1]["event"] != "stop"]
        return len(current) == 4 and all(any(e["event"] == "put" for e in run) for run in current)

    wait_until(putting, "every task putting records", timeout_s=90)

    newcomer = cluster.add_worker(**quiet)
    workers = [*first, newcomer]
    wait_until(lambda: sorted(per_worker(cluster.running_tasks(sink), workers)) == [1, 1, 2], "four tasks on three")
    moved = {task for task, owner in cluster.running_tasks(sink).items() if owner == newcomer.worker_id}
    handed_over = committed_before_stopping(first[0], sink) | committed_before_stopping(first[1], sink)
    assert moved <= handed_over, "each task on the new worker was committed and stopped by its previous owner"

    leaving = first[0]
    kept = {task for task, owner in cluster.running_tasks(sink).items() if owner == leaving.worker_id}
    assert leaving.terminate() == 0
    cluster.wait_for_running(sink, 4)
    assert kept <= committed_before_stopping(leaving, sink), "the leaving worker committed its tasks"

    def delivered() -> bool:
        produced = dict(producing)  # before reading what was put
        seen: dict[int, set[int]] = {}
        for worker in workers:
            for event in worker.events(sink):
                if event["event"] == "put":
                    for _, partition, offset in event["detail"]:
                        seen.setdefault(partition, set()).add(offset)
        return all(seen.get(p, set()) >= set(range(count)) for p, count in produced.items())

    wait_until(delivered, "every record produced so far put by some sink task")
