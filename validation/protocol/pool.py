"""The one scheduler: independent picklable tasks on a process pool, results as they complete.

:func:`run_tasks` is what every parallel loop of the package goes through: the campaigns
(:func:`validation.campaign.run_campaign`: the sweep, the validation matrix, the K-group,
finite-width and multi-step campaigns), the repetitions of
:func:`validation.protocol.simulator.simulate_curve` and
:func:`validation.multistep.simulator.run_multistep`.

Guarantees:

- ``n_jobs = 1`` runs every task in this process, in order, with nothing spawned;
- ``n_jobs > 1``: a pool of ``n_jobs`` spawned worker processes (stdlib ``concurrent.futures``);
  each worker runs with one BLAS / OpenMP / numba thread (the environment it is spawned with, and
  ``threadpoolctl`` around every task) and ends as soon as this process is gone
  (``asymptotics.core.progress.watch_parent``: a SIGKILL of the command leaves no orphans);
- at most ``n_jobs`` tasks are in flight; ``stop()`` (optional) is asked before each new task is
  started: once it is true nothing new starts, the running tasks finish and are yielded;
- results come as ``(index, result)`` pairs in completion order; a task's result depends only on
  the task (seeds are part of the tasks), so callers that order by ``index`` get the same
  numbers whatever ``n_jobs``;
- ``scheduler="dask"`` runs the same tasks on ``dask.distributed`` (a ``LocalCluster`` of
  ``n_jobs`` single-threaded worker processes, or the cluster at ``address``; optional extra
  ``giantstep[dask]``).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any

SCHEDULERS = ("local", "dask")
#: thread-count variables a worker is spawned with (BLAS, OpenMP, numba, the row-block threads
#: of :mod:`validation.protocol.montecarlo`, which follow ``OMP_NUM_THREADS``)
THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                    "NUMBA_NUM_THREADS")


def run_tasks(fn: Callable[[Any], Any], tasks: Iterable[Any], n_jobs: int = 1, *,
              scheduler: str = "local", address: str | None = None,
              stop: Callable[[], bool] | None = None,
              name: Callable[[Any], str] | None = None) -> Iterator[tuple[int, Any]]:
    """``(i, fn(tasks[i]))`` for every task, as they complete (module docstring).

    ``fn`` and the tasks must be picklable for ``n_jobs > 1`` (a module-level function);
    ``name(task)`` gives dask its task keys."""
    if scheduler not in SCHEDULERS:
        raise ValueError(f"scheduler must be one of {', '.join(SCHEDULERS)}, got {scheduler!r}")
    if isinstance(n_jobs, bool) or int(n_jobs) != n_jobs or n_jobs < 1:
        raise ValueError(f"n_jobs must be an integer >= 1, got {n_jobs!r}")
    if address and scheduler != "dask":
        raise ValueError("address is for scheduler='dask'")
    stop = stop or (lambda: False)
    if scheduler == "dask":
        return _dask(fn, list(tasks), int(n_jobs), address, name)
    if n_jobs == 1:
        return _serial(fn, tasks, stop)
    return _local(fn, tasks, int(n_jobs), stop)


def _serial(fn: Callable, tasks: Iterable, stop: Callable[[], bool]) -> Iterator[tuple[int, Any]]:
    for i, t in enumerate(tasks):
        if stop():
            return
        yield i, fn(t)


@contextmanager
def _single_threaded_environment():
    """The thread variables at 1 while workers are spawned (they inherit them), then restored."""
    saved = {v: os.environ.get(v) for v in THREAD_VARIABLES}
    os.environ.update({v: "1" for v in THREAD_VARIABLES})
    try:
        yield
    finally:
        for v, old in saved.items():
            if old is None:
                os.environ.pop(v, None)
            else:
                os.environ[v] = old


def _worker_init(parent: int) -> None:
    from asymptotics.core.coldstart import forbid_compiler
    from asymptotics.core.meta import one_line_warnings
    from asymptotics.core.progress import watch_parent

    watch_parent(parent)
    forbid_compiler()  # a worker compiles what is not cached itself, one at a time (a file lock)
    one_line_warnings()  # a worker's warnings read like its parent's: one line, no file path


def _call(fn: Callable, task: Any) -> Any:
    """``fn(task)`` in a worker, with one thread for every BLAS / OpenMP library loaded. A worker
    never starts a background compiler (a dask worker has no initializer: say it here too)."""
    from threadpoolctl import threadpool_limits

    from asymptotics.core.coldstart import forbid_compiler

    forbid_compiler()
    with threadpool_limits(limits=1):
        return fn(task)


def _local(fn: Callable, tasks: Iterable, n_jobs: int,
           stop: Callable[[], bool]) -> Iterator[tuple[int, Any]]:
    import multiprocessing as mp
    from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait

    with _single_threaded_environment(), ProcessPoolExecutor(
            n_jobs, mp_context=mp.get_context("spawn"), initializer=_worker_init,
            initargs=(os.getpid(),)) as pool:
        queue = enumerate(tasks)
        running: dict = {}

        def submit(k: int) -> None:
            for _ in range(k):
                if stop():
                    return
                item = next(queue, None)
                if item is None:
                    return
                running[pool.submit(_call, fn, item[1])] = item[0]

        submit(n_jobs)
        try:
            while running:
                finished, _ = wait(list(running), return_when=FIRST_COMPLETED)
                for f in finished:
                    i = running.pop(f)
                    yield i, f.result()
                submit(n_jobs - len(running))
        finally:
            for f in running:  # the consumer stopped early or a task failed: start nothing more
                f.cancel()


def _dask(fn: Callable, tasks: list, n_jobs: int, address: str | None,
          name: Callable[[Any], str] | None) -> Iterator[tuple[int, Any]]:
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
        index = {}
        futures = []
        for i, t in enumerate(tasks):
            key = f"giantstep-{name(t)}" if name else None
            fut = client.submit(_call, fn, t, key=key, pure=False)
            index[fut.key] = i
            futures.append(fut)
        for fut in as_completed(futures):
            yield index[fut.key], fut.result()
            fut.release()
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
