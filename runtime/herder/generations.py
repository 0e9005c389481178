"""The generation of each run of a connector or task on this worker: what its status records carry, so that a newer
run's statuses win over an older run's late ones.

Kafka Connect's statuses carry the worker's group generation (``AbstractHerder.generation``, which
``DistributedHerder`` reads from its group membership), so whatever a worker starts after a rebalance reports
newer statuses than what ran before it. Headwater's slot groups have no generation to read (a slot is a partition
of a consumer group), so a run's generation comes from the status store instead: one more than the generation of
the status the store holds for that connector or task when the run starts, 0 when it holds none. Once the store has
read what the other workers wrote (the distributed herder reads the status topic to its end before it starts what
it was assigned), each run's statuses are newer than every earlier run's, on any worker, and the store's rule
(:func:`~headwater.runtime.storage.status.may_replace`) keeps an earlier run's late report from replacing them.
A standalone worker works the same way.
"""

from __future__ import annotations

import threading

from headwater.runtime.storage.status import StatusStore


class Generations:
    """The generation of the current or last run of each connector (task ``None``) and task on this worker, from
    ``store``. Safe to use from several threads (task threads report their states)."""

    def __init__(self, store: StatusStore) -> None:
        self._store = store
        self._lock = threading.Lock()
        self._runs: dict[tuple[str, int | None], int] = {}

    def begin(self, connector: str, task: int | None = None) -> int:
        """A run of the connector or task starts on this worker (before it reports anything): give it one more than
        the generation of the stored status, 0 when there is none, and return that."""
        stored = self._store.connector(connector) if task is None else self._store.task(connector, task)
        generation = 0 if stored is None else stored.generation + 1
        with self._lock:
            self._runs[(connector, task)] = generation
        return generation

    def of(self, connector: str, task: int | None = None) -> int:
        """The generation of the connector's or task's current or last run on this worker. A status reported for
        one that never ran here (the STOPPED status of a connector assigned here in that state) begins a run."""
        with self._lock:
            found = self._runs.get((connector, task))
        return self.begin(connector, task) if found is None else found

    def __repr__(self) -> str:
        with self._lock:
            runs = ", ".join(
                f"{connector if task is None else f'{connector}-{task}'}: {generation}"
                for (connector, task), generation in sorted(self._runs.items(), key=lambda item: str(item[0]))
            )
        return f"Generations({{{runs}}})"
