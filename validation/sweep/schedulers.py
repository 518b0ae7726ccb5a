"""Schedulers: joblib's loky pool (local) or dask.distributed; one BLAS thread per task."""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    pass

from .tasks import Task, run_task


def _local_results(tasks: Sequence[Task], n_jobs: int) -> Iterator[tuple[str, list[dict], float]]:
    if n_jobs == 1:
        for t in tasks:
            yield run_task(t)
        return
    from joblib import Parallel, delayed

    parent = os.getpid()
    yield from Parallel(n_jobs=n_jobs, backend="loky", return_as="generator_unordered",
                        batch_size=1, pre_dispatch="2*n_jobs")(
        delayed(_run_task_in_worker)(t, parent) for t in tasks)


def _run_task_in_worker(task: Task, parent: int) -> tuple[str, list[dict], float]:
    """:func:`run_task` in a pool worker that exits when ``parent`` dies (no orphans)."""
    from asymptotics._cli import watch_parent

    watch_parent(parent)
    return run_task(task)


def _dask_results(tasks: Sequence[Task], n_jobs: int,
                  address: str | None) -> Iterator[tuple[str, list[dict], float]]:
    try:
        from distributed import Client, LocalCluster, as_completed
    except ImportError:
        raise ImportError("scheduler 'dask' needs dask.distributed: pip install "
                          "'giantstep[dask]' (or use the default local scheduler)") from None
    import logging

    cluster = None
    if address:
        client = Client(address, timeout="30s")
    else:
        cluster = LocalCluster(n_workers=n_jobs, threads_per_worker=1, processes=True,
                               dashboard_address=None, silence_logs=logging.ERROR)
        client = Client(cluster)
    try:
        futures = [client.submit(run_task, t, key=f"giantstep-sweep-{t.key}", pure=False)
                   for t in tasks]
        for fut in as_completed(futures):
            yield fut.result()
            fut.release()
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


