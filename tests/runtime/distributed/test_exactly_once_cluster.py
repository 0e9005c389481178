"""Exactly-once sources (KIP-618) on the simulated cluster: distributed workers over the in-memory broker, whose
transactions abort on a crash and fence older producers, on the virtual clock. A crashed worker's tasks resume on
the others from their last committed transaction, so what ``read_committed`` readers see holds every record exactly
once; the same crash without the support shows the duplicates it leaves. A task of an older generation kept alive
after its connector's tasks were reconfigured cannot commit."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from typing import Any, ClassVar

import pytest

from headwater.harness import SimulatedCluster
from headwater.harness.simulated_cluster import OFFSETS_TOPIC
from headwater.runtime.tasks.base import State, TaskId
from headwater.runtime.tasks.exactly_once_source import ExactlyOnceWorkerSourceTask
from headwater.runtime.tasks.source import WorkerSourceTask
from headwater.sdk import SourceRecord, SourceTask, hookimpl
from support.connectors import ALLOWED_MODULES
from support.counting_source import CountingSourceConnector, CountingSourceTask

SOURCE = "support.counting_source:CountingSourceConnector"
ENABLED = {"exactly.once.source.support": "enabled", "offset.flush.interval.ms": "100"}
DISABLED = {"exactly.once.source.support": "disabled", "offset.flush.interval.ms": "100"}


def create(cluster: SimulatedCluster, name: str, tasks: int, **extra: Any) -> None:
    config = {"connector.class": SOURCE, "tasks.max": str(tasks), "topic": f"out-{name}", **extra}
    cluster.live[0].herder.put_connector_config(name, config)


def running(cluster: SimulatedCluster, name: str, tasks: int) -> bool:
    return cluster.running([name]) == [TaskId(name, task) for task in range(tasks)]


def counts(cluster: SimulatedCluster, topic: str, committed_only: bool = True) -> dict[int, Counter[int]]:
    """Task -> how many times each sequence number is in ``topic``, as a read_committed reader sees it."""
    found: dict[int, Counter[int]] = {}
    for message in cluster.broker.messages(topic, committed_only=committed_only):
        value = json.loads(message.value or b"null")
        found.setdefault(value["task"], Counter())[value["seq"]] += 1
    return found


def crash_mid_stream(config: dict[str, str]) -> dict[int, Counter[int]]:
    """Three workers run 6 tasks; one crashes between two commits; the others take its tasks over."""
    cluster = SimulatedCluster(3, config, session_timeout_ms=3_000)
    create(cluster, "seq", 6)
    cluster.run_until(lambda: running(cluster, "seq", 6), what="6 tasks running")
    cluster.advance(1_050)  # mid-way between two offset commits of the at-least-once tasks
    cluster.crash(cluster.workers[1])
    cluster.run_until(lambda: running(cluster, "seq", 6), what="the crashed worker's tasks taken over")
    cluster.advance(1_000)
    for worker in cluster.live:
        worker.herder.stop()
    return counts(cluster, "out-seq")


def test_a_crash_leaves_every_record_exactly_once_with_the_support_and_duplicates_without() -> None:
    exact = crash_mid_stream(ENABLED)
    assert sorted(exact) == list(range(6))
    for task, seqs in exact.items():
        assert set(seqs) == set(range(max(seqs) + 1)), f"task {task} lost records"
        assert max(seqs.values()) == 1, f"task {task} wrote records twice: {[s for s, n in seqs.items() if n > 1]}"

    at_least_once = crash_mid_stream(DISABLED)
    duplicates = sum(n - 1 for seqs in at_least_once.values() for n in seqs.values())
    assert duplicates > 0, "without the support the crashed worker's uncommitted records are written again"


def test_every_source_task_runs_in_transactions_with_the_support_and_only_then() -> None:
    for config, kind in ((ENABLED, ExactlyOnceWorkerSourceTask), (DISABLED, WorkerSourceTask)):
        cluster = SimulatedCluster(1, config)
        create(cluster, "seq", 2)
        cluster.run_until(lambda c=cluster: running(c, "seq", 2), what="2 tasks running")  # type: ignore[misc]
        assert {type(task) for task in cluster.live[0].worker.tasks.values()} == {kind}


def test_records_of_an_open_transaction_are_hidden_until_it_commits() -> None:
    cluster = SimulatedCluster(1, {**ENABLED, "offset.flush.interval.ms": "60000"})
    create(cluster, "seq", 1, **{"transaction.boundary": "interval", "transaction.boundary.interval.ms": "500"})
    cluster.run_until(lambda: running(cluster, "seq", 1), what="the task running")
    task = cluster.live[0].worker.tasks[TaskId("seq", 0)]
    assert isinstance(task, ExactlyOnceWorkerSourceTask)
    cluster.run_until(lambda: task.records_sent > 0, what="records sent")
    assert task.commits == 0
    assert counts(cluster, "out-seq") == {}, "nothing committed yet"
    assert counts(cluster, "out-seq", committed_only=False) != {}
    cluster.run_until(lambda: task.commits == 1, what="the first interval's commit")
    committed = counts(cluster, "out-seq")[0]
    assert sum(committed.values()) == task.transaction_sizes[0] > 3


def test_a_zombie_of_an_older_task_generation_cannot_commit() -> None:
    """The connector goes from 3 tasks to 2, committing every 5 s. Task 2 of the old generation has records in its
    open transaction, and is kept alive on its worker as if its slot had not been revoked: the connector's owner
    fences it before the new tasks start, so its commit fails, it is FAILED, and its records are never read."""
    cluster = SimulatedCluster(1, ENABLED)
    worker = cluster.live[0]
    create(cluster, "seq", 3, **{"transaction.boundary": "interval", "transaction.boundary.interval.ms": "5000"})
    cluster.run_until(lambda: running(cluster, "seq", 3), what="3 tasks running")
    zombie = worker.worker.tasks[TaskId("seq", 2)]
    assert isinstance(zombie, ExactlyOnceWorkerSourceTask)
    cluster.run_until(lambda: zombie.records_sent > 0, what="the zombie-to-be sending in its first transaction")
    old = dict(worker.worker.tasks)
    worker.worker.tasks.pop(TaskId("seq", 2))  # the worker forgets it: it is not stopped when its slot goes
    assert worker.config_store.fenced_task_count("seq") == 3

    worker.herder.patch_connector_config("seq", {"tasks.max": "2"})
    cluster.run_until(
        lambda: running(cluster, "seq", 2) and all(task is not old[id] for id, task in worker.worker.tasks.items()),
        what="2 tasks of the new generation",
    )
    assert worker.config_store.fenced_task_count("seq") == 2
    assert zombie.commits == 0 and zombie.state is State.RUNNING
    cluster.advance(5_000)
    zombie.step()  # its interval is over: it commits
    assert zombie.state is State.FAILED
    assert "was fenced off" in str(zombie.failure)
    assert zombie.commits == 0
    assert counts(cluster, "out-seq", committed_only=False)[2], "it had sent records"
    assert 2 not in counts(cluster, "out-seq"), "none of them is ever read"


@pytest.mark.parametrize("boundary", ["poll", "interval"])
def test_offsets_are_committed_with_the_records_of_their_transaction(boundary: str) -> None:
    cluster = SimulatedCluster(1, ENABLED)
    create(cluster, "seq", 1, **{"transaction.boundary": boundary})
    cluster.run_until(lambda: running(cluster, "seq", 1), what="the task running")
    cluster.advance(1_000)
    worker = cluster.live[0]
    worker.herder.stop()
    worker.offset_store.refresh()
    committed = worker.offset_store.get("seq", [{"connector": "seq", "task": 0}])[0][1]
    seqs = counts(cluster, "out-seq")[0]
    assert committed == {"seq": max(seqs)}
    assert max(seqs.values()) == 1


def committed_by_the_task(last: int) -> set[int]:
    """The records up to ``last`` of the transactions BoundarySourceTask commits (commit.every=10, abort.every=25):
    each transaction runs from the record after the last commit or abort to the record that asked."""
    committed: set[int] = set()
    open_transaction: list[int] = []
    for n in range(last + 1):
        open_transaction.append(n)
        if n % 25 == 0:
            open_transaction = []
        elif n % 10 == 0:
            committed.update(open_transaction)
            open_transaction = []
    return committed


def test_connector_defined_transactions_commit_and_abort_where_the_task_asks() -> None:
    """The task commits right after every 10th record and aborts the transaction of every 25th: a read_committed
    reader sees exactly the records of committed transactions, and a crash leaves it so."""
    cluster = SimulatedCluster(2, ENABLED, session_timeout_ms=3_000)
    config = {
        "connector.class": "support.counting_source:BoundarySourceConnector",
        "tasks.max": "1",
        "topic": "out-tx",
        "transaction.boundary": "connector",
        "commit.every": "10",
        "abort.every": "25",
    }
    cluster.live[0].herder.put_connector_config("tx", config)
    cluster.run_until(lambda: running(cluster, "tx", 1), what="the task running")
    cluster.advance(500)
    owner = next(worker for worker in cluster.live if worker.tasks())
    cluster.crash(owner)
    cluster.run_until(lambda: running(cluster, "tx", 1), what="the task taken over")
    cluster.advance(500)

    seqs = counts(cluster, "out-tx")[0]
    assert max(seqs.values()) == 1, "no record twice"
    last = max(seqs)
    assert last % 10 == 0, "the last committed transaction ended on a commit request"
    assert set(seqs) == committed_by_the_task(last)
    task = cluster.live[0].worker.tasks[TaskId("tx", 0)]
    assert isinstance(task, ExactlyOnceWorkerSourceTask) and task.aborts > 0


@pytest.mark.parametrize(
    "config",
    [
        {"connector.class": "monitorable-source", "max.messages": "5"},
        {
            "connector.class": "support.counting_source:BoundarySourceConnector",
            "records": "6",
            "commit.every": "5",
            "transaction.boundary": "connector",
        },
    ],
    ids=["poll", "connector"],
)
def test_heartbeats_commit_in_transactions_while_the_source_has_no_data(config: dict[str, str]) -> None:
    cluster = SimulatedCluster(1, {**ENABLED, "heartbeat.interval.ms": "1000"})
    cluster.live[0].herder.put_connector_config("hb", {**config, "topic": "data", "tasks.max": "1"})
    cluster.run_until(lambda: running(cluster, "hb", 1), what="the task running")
    task = cluster.live[0].worker.tasks[TaskId("hb", 0)]
    assert isinstance(task, ExactlyOnceWorkerSourceTask)
    cluster.run_until(lambda: task.records_sent >= 5, what="its 5 records")
    commits = task.commits
    cluster.advance(5_000)
    assert task.heartbeat_records >= 4
    assert task.commits >= commits + 4, "each heartbeat commits on its own while no transaction is open"
    committed = cluster.broker.messages("connect-heartbeats", committed_only=True)
    assert len(committed) == task.heartbeat_records


def test_a_restarted_task_starts_only_once_a_transaction_open_on_the_offsets_topic_ended() -> None:
    """A starting task reads its committed offsets to the offsets topic's end. A transaction another producer holds
    open there (a sibling task's) stops a ``read_committed`` read at its first record, short of what the task
    committed after it began: the restarted task waits, not started, until that transaction ends, then goes on from
    its own last commit. Started at once, it would write again every record it committed meanwhile."""
    cluster = SimulatedCluster(1, ENABLED)
    worker = cluster.live[0]
    create(cluster, "seq", 1)
    cluster.run_until(lambda: running(cluster, "seq", 1), what="the task running")
    sibling = worker.transport.transactional_producer("seq-sibling", {})
    sibling.init_transactions(30_000)
    sibling.begin()
    for partition in range(cluster.broker.topics()[OFFSETS_TOPIC]):
        sibling.produce(OFFSETS_TOPIC, b"{}", b"sibling", partition=partition)
    task = worker.worker.tasks[TaskId("seq", 0)]
    committed = task.commits
    cluster.run_until(lambda: task.commits >= committed + 3, what="transactions committed after the sibling's began")

    worker.herder.restart_task(TaskId("seq", 0))
    cluster.run_until(lambda: worker.worker.tasks[TaskId("seq", 0)] is not task, what="the task restarted")
    restarted = worker.worker.tasks[TaskId("seq", 0)]
    cluster.advance(500)
    while_open = restarted.state, restarted.records_sent

    sibling.commit(30_000)
    cluster.run_until(lambda: restarted.state is State.RUNNING and restarted.commits > 0, what="the task running")
    cluster.advance(500)
    worker.herder.stop()
    seqs = counts(cluster, "out-seq")[0]
    assert set(seqs) == set(range(max(seqs) + 1)), "records lost"
    assert max(seqs.values()) == 1, f"records written twice: {sorted(s for s, n in seqs.items() if n > 1)}"
    assert while_open == (State.UNASSIGNED, 0), "it waited, not started, while the transaction was open"


class AheadSourceConnector(CountingSourceConnector):
    def task_class(self) -> type[SourceTask]:
        return AheadSourceTask


class AheadSourceTask(CountingSourceTask):
    """Counts like :class:`CountingSourceTask`, noting each poll (its first number) and each committed offset."""

    events: ClassVar[list[tuple[str, int]]] = []

    def poll(self) -> Sequence[SourceRecord]:
        AheadSourceTask.events.append(("poll", self.next))
        return super().poll()

    @hookimpl
    def offsets_committed(self, offsets: list[tuple[Any, Any]]) -> None:
        AheadSourceTask.events.extend(("committed", offset["seq"]) for _, offset in offsets)


def test_the_next_batch_is_polled_while_a_transaction_commits_and_sent_only_after() -> None:
    AheadSourceTask.events = []
    cluster = SimulatedCluster(1, {**ENABLED, **ALLOWED_MODULES})
    config = {"connector.class": f"{__name__}:AheadSourceConnector", "tasks.max": "1", "topic": "out-ahead"}
    cluster.live[0].herder.put_connector_config("ahead", {**config, "transaction.boundary": "poll"})
    cluster.run_until(lambda: AheadSourceTask.events.count(("committed", 29)) == 1, what="ten transactions")
    batch = CountingSourceTask.BATCH
    events = AheadSourceTask.events[: AheadSourceTask.events.index(("committed", 29)) + 1]
    expected = [("poll", 0)] + [e for n in range(10) for e in (("poll", batch * (n + 1)), ("committed", batch * n + 2))]
    assert events == expected, "each batch is polled before the transaction of the batch before it is finished"
    cluster.live[0].herder.stop()
    seqs = counts(cluster, "out-ahead")[0]
    assert set(seqs) == set(range(max(seqs) + 1)) and max(seqs.values()) == 1, "every record once"
    worker = cluster.live[0]
    worker.offset_store.refresh()
    assert worker.offset_store.get("ahead", [{"connector": "ahead", "task": 0}])[0][1] == {"seq": max(seqs)}


def test_a_failed_commit_never_sends_the_batch_polled_ahead_and_a_restart_polls_it_again() -> None:
    AheadSourceTask.events = []
    cluster = SimulatedCluster(1, {**ENABLED, **ALLOWED_MODULES})
    config = {"connector.class": f"{__name__}:AheadSourceConnector", "tasks.max": "1", "topic": "out-ahead"}
    herder = cluster.live[0].herder
    herder.put_connector_config("ahead", {**config, "transaction.boundary": "poll"})
    cluster.run_until(lambda: ("committed", 8) in AheadSourceTask.events, what="three transactions")
    (task,) = cluster.live[0].worker.tasks.values()
    assert isinstance(task, ExactlyOnceWorkerSourceTask)
    task.producer.faults.fail_next_deliveries(1)  # type: ignore[attr-defined]
    cluster.run_until(lambda: task.state is State.FAILED, what="the task failing on its failed commit")
    assert "cannot commit its transaction, which is aborted" in str(task.failure)
    polled = [n for kind, n in AheadSourceTask.events if kind == "poll"]
    committed = max(n for kind, n in AheadSourceTask.events if kind == "committed")
    assert polled[-1] > committed + CountingSourceTask.BATCH, "a batch was polled ahead of the failed commit"
    herder.restart_task(TaskId("ahead", 0))
    cluster.run_until(lambda: ("committed", polled[-1] + 8) in AheadSourceTask.events, what="the restarted task")
    polls = [n for kind, n in AheadSourceTask.events if kind == "poll"]
    assert polls.count(committed + 1) == 2 and polls.count(polled[-1]) == 2, (
        "the restarted task resumes after the last committed offset: the failed batch and the one polled ahead again"
    )
    herder.stop()
    seqs = counts(cluster, "out-ahead")[0]
    assert set(seqs) == set(range(max(seqs) + 1)) and max(seqs.values()) == 1, "every record once"
