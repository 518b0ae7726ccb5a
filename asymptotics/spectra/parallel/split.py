"""A batch of points split into :data:`POINT_THREADS` contiguous parts computed at once on a
small persistent pool of daemon threads (docs/THEORY.md §16.8: the network features' traces,
:meth:`asymptotics.spectra.netbulk.OutsideTraces.traces_kernels`).

The work of a point is independent of the others' (each row of the inputs gives the same row of
the outputs), so a part's rows are the rows of the whole, bit for bit, as long as every step in
it is row-wise: the compiled kernels (``nogil=True``: plain Python threads, not numba's
threading layer) and BLAS's products with one thread (the caller's limit,
:func:`asymptotics.core.meta.blas_limit`, is process-wide: it holds in the workers). The caller
computes the first part itself; the others queue to the workers (started lazily, once a
process, again after a fork); :func:`rows_of` the same for a kernel that returns its rows (the
V-part's node sums). A worker's exception is raised in the caller, after every part has
stopped. Kernels not loaded compiled in this process yet (the cold start's interpreted runs,
numba disabled) and batches under :data:`SPLIT_MIN` points run on the caller alone."""

from __future__ import annotations

import math
import os
import queue
import threading
from collections.abc import Callable, Sequence

import numpy as np

#: the parts of a batch of points (threads at once, the caller's included; 1: the caller alone,
#: the reference)
POINT_THREADS: int = max(1, min(2, os.cpu_count() or 1))
#: the fewest points split: a part repeats the per-block kernel calls of the whole (~1 ms CPU
#: for the K = 3 traces' 32 blocks): 32 points 0.60 of the wall time for +13% CPU, 64 on ~0.53
#: for +4%; 16 points 0.65 for +22%, 2 points 0.81 for +48% (two free cores)
SPLIT_MIN: int = 32
#: the least estimated one-thread time of a batch split (s; the caller's estimate): a handoff
#: costs ~0.1 ms, more on a loaded machine (the coarse model's traces, ~1 us a point, and the
#: node sums of few points stay whole)
SPLIT_COST: float = 1e-3

_LOCK = threading.Lock()
_QUEUE: queue.SimpleQueue = queue.SimpleQueue()
_WORKERS: list[threading.Thread] = []
_IN_WORKER = threading.local()


class _Job:
    """One part: ``fn(*args)``, its exception kept for the caller."""

    __slots__ = ("fn", "args", "done", "error")

    def __init__(self, fn: Callable, args: tuple) -> None:
        self.fn, self.args = fn, args
        self.done = threading.Event()
        self.error: BaseException | None = None

    def __call__(self) -> None:
        try:
            self.fn(*self.args)
        except BaseException as exc:  # noqa: BLE001 (raised again in the caller)
            self.error = exc
        finally:
            self.done.set()


def _work(jobs: queue.SimpleQueue) -> None:
    """A worker: runs the queued parts, forever (a daemon)."""
    _IN_WORKER.on = True  # (a part that splits again runs whole: no wait on its own queue)
    while True:
        jobs.get()()


def _pool(threads: int) -> queue.SimpleQueue:
    """The workers' queue, with at least ``threads`` workers started."""
    with _LOCK:
        while len(_WORKERS) < threads:
            t = threading.Thread(target=_work, args=(_QUEUE,), daemon=True,
                                 name=f"giantstep-points-{len(_WORKERS)}")
            t.start()
            _WORKERS.append(t)
        return _QUEUE


def _after_fork() -> None:
    """A forked child has none of its parent's workers: a new queue, started on demand."""
    global _QUEUE, _LOCK
    _LOCK = threading.Lock()
    _QUEUE = queue.SimpleQueue()
    _WORKERS.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork)


def loaded(kernels: Sequence) -> bool:
    """Whether every kernel is a numba dispatcher with a compiled signature in this process
    (not interpreted, not a plain function): only those release the GIL."""
    return all(getattr(k, "overloads", None) for k in kernels)


def bounds(n: int, parts: int) -> list[tuple[int, int]]:
    """``parts`` contiguous ranges of ``range(n)``, their sizes within one of each other."""
    cuts = [n * k // parts for k in range(parts + 1)]
    return [(cuts[k], cuts[k + 1]) for k in range(parts) if cuts[k + 1] > cuts[k]]


def _ranges(n: int, parts: int | None, kernels: Sequence,
            cost: float) -> list[tuple[int, int]] | None:
    """The parts of ``n`` rows, or None where they run whole on the caller."""
    parts = POINT_THREADS if parts is None else int(parts)
    if parts <= 1 or n < max(SPLIT_MIN, 2) or cost < SPLIT_COST or not loaded(kernels) \
            or getattr(_IN_WORKER, "on", False):
        return None
    return bounds(n, parts)


def _run(fn: Callable, calls: list[tuple]) -> list:
    """``[fn(*args) for args in calls]``, the first on the caller, the others on the workers."""
    out: list = [None] * len(calls)

    def part(k: int, args: tuple) -> None:
        out[k] = fn(*args)

    jobs = [_Job(part, (k, args)) for k, args in enumerate(calls) if k]
    jobs_queue = _pool(len(jobs))
    for job in jobs:
        jobs_queue.put(job)
    try:
        part(0, calls[0])
    finally:
        for job in jobs:
            job.done.wait()
    for job in jobs:
        if job.error is not None:
            raise job.error
    return out


def by_points(fn: Callable[..., None], arrays: Sequence[np.ndarray], kernels: Sequence = (),
              parts: int | None = None, cost: float = math.inf) -> int:
    """``fn(*arrays)`` where ``fn`` writes the rows of its output arrays (among ``arrays``) from
    the same rows of its inputs: on ``parts`` (:data:`POINT_THREADS`) contiguous ranges of the
    rows at once, the caller computing the first, when there are :data:`SPLIT_MIN` rows or more,
    the caller's estimate ``cost`` of the whole's time is :data:`SPLIT_COST` or more and
    ``kernels`` are :func:`loaded`. Returns the number of parts run."""
    ranges = _ranges(arrays[0].shape[0], parts, kernels, cost)
    if ranges is None:
        fn(*arrays)
        return 1
    _run(fn, [tuple(a[lo:hi] for a in arrays) for lo, hi in ranges])
    return len(ranges)


def rows_of(kern, x: np.ndarray, *rest, parts: int | None = None,
            cost: float = math.inf) -> tuple:
    """``kern(x, *rest)``, a compiled kernel returning a tuple of arrays whose rows are those of
    ``x``'s rows, on the ranges of :func:`by_points` (the parts' rows stacked)."""
    ranges = _ranges(x.shape[0], parts, (kern,), cost)
    if ranges is None:
        return kern(x, *rest)
    outs = _run(kern, [(x[lo:hi], *rest) for lo, hi in ranges])
    return tuple(np.concatenate(rows) for rows in zip(*outs, strict=True))


__all__ = ["POINT_THREADS", "SPLIT_COST", "SPLIT_MIN", "bounds", "by_points", "loaded", "rows_of"]
