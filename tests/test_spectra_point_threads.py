"""The network features' traces with the points split over threads (docs/THEORY.md §16.8;
``asymptotics/spectra/parallel/split.py``): each point's ``T`` is the one-thread path's bit for
bit (K = 2, 3, 4, Vhat1 symmetric or not: every way of ``traces_kernels``), the parts run on the
pool's workers with BLAS on one thread there, a worker's exception reaches the caller, and the
cold start (kernels not loaded compiled), few points or a short estimated time and a worker's
own calls stay on the caller alone."""

from __future__ import annotations

import os
import threading

import numpy as np
import pytest
from threadpoolctl import threadpool_info, threadpool_limits

from asymptotics.network.bulk import GroupBulk
from asymptotics.spectra import netbulk
from asymptotics.spectra.netbulk import OutsideTraces
from asymptotics.spectra.parallel import split
from tests.test_spectra_netjac import _covs


@pytest.fixture(autouse=True)
def _small_batches_split(monkeypatch) -> None:
    """The tests' batches are small: split them whatever their estimated time."""
    monkeypatch.setattr(split, "SPLIT_COST", 0.0)


def _points(rng, N: int, K: int, sym: bool) -> tuple[np.ndarray, np.ndarray]:
    vh = 0.3 * (rng.standard_normal((N, K, K)) + 1j * rng.standard_normal((N, K, K)))
    if sym:
        vh = vh + np.swapaxes(vh, 1, 2)
    D = 0.5 + rng.random((N, K)) + 1j * rng.random((N, K))
    return vh, D


@pytest.mark.parametrize("sym", [True, False])
@pytest.mark.parametrize("K", [2, 3, 4])
def test_split_traces_are_the_one_thread_traces(monkeypatch, K: int, sym: bool) -> None:
    rng = np.random.default_rng(40 + K)
    tr = OutsideTraces(GroupBulk(_covs(rng, 3, 16, K, 0.1)))
    assert len(tr.groups) == K - 1
    N = 3 * split.SPLIT_MIN + 5
    vh, D = _points(rng, N, K, sym)
    monkeypatch.setattr(split, "POINT_THREADS", 1)
    T1 = tr.traces_kernels(vh, D)  # (loads the kernels: the next calls may split)
    assert np.array_equal(T1, tr.traces_kernels(vh, D))
    ranges: list[tuple[int, str]] = []
    rows = OutsideTraces._traces_rows

    def spy(self, vh_, *args):
        ranges.append((vh_.shape[0], threading.current_thread().name))
        return rows(self, vh_, *args)

    monkeypatch.setattr(OutsideTraces, "_traces_rows", spy)
    for parts in (2, 3):
        monkeypatch.setattr(split, "POINT_THREADS", parts)
        ranges.clear()
        T = tr.traces_kernels(vh, D)
        assert np.array_equal(T, T1), (parts, np.max(np.abs(T - T1)))
        assert sorted(n for n, _ in ranges) == sorted(hi - lo for lo, hi in split.bounds(N, parts))
        assert sum(name.startswith("giantstep-points") for _, name in ranges) == parts - 1
    # the commuting model (no pairs: one kernel over every block) splits the same way
    com = tr.commuting()
    monkeypatch.setattr(split, "POINT_THREADS", 1)
    C1 = com.traces_kernels(vh, D)
    monkeypatch.setattr(split, "POINT_THREADS", 2)
    assert np.array_equal(com.traces_kernels(vh, D), C1)


def test_points_of_a_density_are_split(monkeypatch) -> None:
    """A batch of points through :meth:`OutsideTraces.traces` (compiled) reaches the pool,
    and the workers' BLAS runs on :data:`netbulk.BLAS_THREADS` thread inside the caller's limit
    (threadpoolctl's limit is process-wide), the caller's setting back after."""
    rng = np.random.default_rng(7)
    tr = OutsideTraces(GroupBulk(_covs(rng, 2, 12, 3, 0.1)))
    vh, D = _points(rng, 2 * split.SPLIT_MIN, 3, True)
    tr.traces(vh, D)
    tr.traces(vh, D)  # (the first call may have queued the kernels)
    seen: list[tuple[str, list[int]]] = []
    rows = OutsideTraces._traces_rows

    def spy(self, *args):
        seen.append((threading.current_thread().name,
                     [m["num_threads"] for m in threadpool_info() if m["user_api"] == "blas"]))
        return rows(self, *args)

    monkeypatch.setattr(OutsideTraces, "_traces_rows", spy)
    monkeypatch.setattr(split, "POINT_THREADS", 2)
    with threadpool_limits(2, user_api="blas"):
        tr.traces(vh, D)
        after = [m["num_threads"] for m in threadpool_info() if m["user_api"] == "blas"]
    assert sorted(name.startswith("giantstep-points") for name, _ in seen) == [False, True], seen
    assert all(t == [netbulk.BLAS_THREADS] * len(t) for _, t in seen), seen
    assert after == [2] * len(after)


def _rows_plus_one(x: np.ndarray, out: np.ndarray) -> None:
    out[:] = x + 1.0


def test_worker_exception_reaches_the_caller() -> None:
    x = np.arange(40.0)

    def fn(a: np.ndarray, out: np.ndarray) -> None:
        if a[0] != 0.0:  # (not the caller's part)
            raise ZeroDivisionError("in a worker")
        out[:] = a

    with pytest.raises(ZeroDivisionError, match="in a worker"):
        split.by_points(fn, (x, np.empty_like(x)), parts=2)
    out = np.empty_like(x)  # the pool still works after
    assert split.by_points(_rows_plus_one, (x, out), parts=2) == 2
    assert np.array_equal(out, x + 1.0)


def test_cold_kernels_few_points_and_workers_stay_on_the_caller() -> None:
    x = np.arange(float(max(split.SPLIT_MIN, 2) * 2))
    out = np.empty_like(x)

    def plain(*a):  # (numba disabled, or a kernel interpreted: no compiled signature)
        return None

    assert split.by_points(_rows_plus_one, (x, out), kernels=(plain,), parts=2) == 1
    from asymptotics.core.coldstart import kernel

    @kernel(cache=False)
    def fresh(a):  # (a kernel with no compiled signature in this process yet)
        return a

    assert not split.loaded((fresh,))
    assert split.by_points(_rows_plus_one, (x, out), kernels=(fresh,), parts=2) == 1
    assert split.by_points(_rows_plus_one, (x[:split.SPLIT_MIN - 1], out[:split.SPLIT_MIN - 1]),
                           parts=2) == 1
    split.SPLIT_COST = 1e-3  # (restored by the fixture's monkeypatch)
    assert split.by_points(_rows_plus_one, (x, out), parts=2, cost=0.9e-3) == 1
    assert split.by_points(_rows_plus_one, (x, out), parts=2, cost=1e-3) == 2
    inner: list[int] = []

    def nested(a: np.ndarray, o: np.ndarray) -> None:
        inner.append(split.by_points(_rows_plus_one, (a, o), parts=2))

    x2 = np.arange(float(4 * split.SPLIT_MIN))
    split.by_points(nested, (x2, np.empty_like(x2)), parts=2)
    assert sorted(inner) == [1, 2]  # (the worker's part runs whole)
    assert split.bounds(5, 3) == [(0, 1), (1, 3), (3, 5)]


def test_several_user_threads_share_the_pool() -> None:
    results: dict[int, bool] = {}

    def user(k: int) -> None:
        x = np.arange(100.0) * k
        ok = True
        for _ in range(30):
            out = np.empty_like(x)
            ok &= split.by_points(_rows_plus_one, (x, out), parts=3) == 3
            ok &= bool(np.array_equal(out, x + 1.0))
        results[k] = ok

    threads = [threading.Thread(target=user, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert results == {k: True for k in range(4)}


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork")
def test_a_forked_child_starts_its_own_workers() -> None:
    x = np.arange(60.0)
    split.by_points(_rows_plus_one, (x, np.empty_like(x)), parts=2)  # (the parent's workers)
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover (the child)
        try:
            out = np.empty_like(x)
            ok = split.by_points(_rows_plus_one, (x, out), parts=2) == 2 and \
                np.array_equal(out, x + 1.0)
            os.write(w, b"1" if ok else b"0")
        finally:
            os._exit(0)
    os.close(w)
    import select

    ready, _, _ = select.select([r], [], [], 30.0)
    got = os.read(r, 1) if ready else b""
    os.close(r)
    os.waitpid(pid, 0) if ready else os.kill(pid, 9)
    assert got == b"1"


@pytest.mark.parametrize("K", [2, 3, 4])
def test_split_node_sums_are_the_one_thread_sums(K: int) -> None:
    """The V-part's node sums (by feature for K = 2, 3; by node) on parts of the points."""
    from asymptotics.spectra.traces.net_jacobian import node_tables
    from asymptotics.spectra.traces.outside_kernels import vpart_sums, vpart_sums_t

    rng = np.random.default_rng(60 + K)
    nodes = 50
    w = rng.random(nodes)
    mb1 = rng.standard_normal((nodes, K))
    outer = np.ascontiguousarray((mb1[:, :, None] * mb1[:, None, :]).reshape(-1, K * K))
    ms2 = np.ascontiguousarray(rng.random((nodes, K)))
    pi = np.full(K, 1.0 / K)
    sums = (pi, outer, np.ascontiguousarray(w[:, None] * outer), ms2,
            np.ascontiguousarray(w[:, None] * ms2), 0.7)
    N = 2 * split.SPLIT_MIN + 3
    x = 0.2 * (rng.standard_normal((N, K + K * K)) + 1j * rng.standard_normal((N, K + K * K)))
    calls = [(vpart_sums, (x, *sums))]
    if K in (2, 3):
        t = node_tables(*sums)
        calls.append((vpart_sums_t, (x, pi, np.ascontiguousarray(t[3].T),
                                     np.ascontiguousarray(t[4].T), 0.7)))
    for kern, args in calls:
        ref = kern(*args)  # (loads the kernel)
        assert split._ranges(N, 2, (kern,), 1.0) is not None
        for parts in (2, 3):
            got = split.rows_of(kern, *args, parts=parts)
            assert all(np.array_equal(a, b) for a, b in zip(got, ref, strict=True))
