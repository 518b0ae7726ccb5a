"""The one scheduler (validation.protocol.pool.run_tasks) and the one row store
(validation.protocol.rows): every
parallel loop and every cache of the package goes through them."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from validation.protocol.pool import run_tasks

ROOT = Path(__file__).resolve().parents[1]


def _square(x: int) -> int:
    return x * x


def _blas_threads(_: object) -> int:
    from threadpoolctl import threadpool_info

    return max((i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"),
               default=1)


def _ppid(_: object) -> int:
    return os.getppid()


def test_serial_runs_in_process_in_order():
    assert list(run_tasks(_square, range(5), 1)) == [(i, i * i) for i in range(5)]
    assert list(run_tasks(_ppid, [0], 1)) == [(0, os.getppid())]


def test_pool_gives_every_result_once_with_one_blas_thread_per_worker(monkeypatch):
    monkeypatch.delenv("OPENBLAS_NUM_THREADS", raising=False)  # the pool's own limit, not ours
    out = list(run_tasks(_square, range(7), 2))
    assert sorted(out) == [(i, i * i) for i in range(7)]
    assert {v for _, v in run_tasks(_ppid, range(3), 2)} == {os.getpid()}  # spawned by us
    assert {v for _, v in run_tasks(_blas_threads, range(2), 2)} == {1}


def test_stop_starts_nothing_new():
    calls = []

    def stop() -> bool:
        calls.append(1)
        return len(calls) > 2

    assert [i for i, _ in run_tasks(_square, range(10), 1, stop=stop)] == [0, 1]
    started = [i for i, _ in run_tasks(_square, range(10), 2, stop=lambda: True)]
    assert started == []


@pytest.mark.parametrize("bad", [0, -1, 1.5, True])
def test_bad_worker_count_says_what_is_allowed(bad):
    with pytest.raises(ValueError, match="n_jobs must be an integer >= 1"):
        run_tasks(_square, [1], bad)
    with pytest.raises(ValueError, match="scheduler must be one of local, dask"):
        run_tasks(_square, [1], 1, scheduler="threads")


def test_multistep_repetitions_do_not_depend_on_the_worker_count():
    from validation.multistep.simulator import MultiStepConfig, run_multistep

    c = MultiStepConfig(d=32, kappa=2.0, alpha0=0.5, eta=1.5, steps=2, beta=0.5)
    one = run_multistep(c, seeds=3, seed=5, n_jobs=1)
    two = run_multistep(c, seeds=3, seed=5, n_jobs=2)
    cols = [k for k in one.columns if k != "seconds"]
    assert one[cols].equals(two[cols])
    assert len(one) == 27 and np.isfinite(one["mean_overlap"]).all()


# ------------------------------------------------------------------------------------------------
# one scheduler: no other module of the package builds a pool of its own

PATTERNS = ("ProcessPoolExecutor", "Parallel(", "import multiprocessing", "from multiprocessing",
            "LocalCluster", "from distributed", "import loky")


def test_process_pools_are_built_in_one_place_only():
    offenders = {}
    for pkg in ("asymptotics", "validation", "figures"):
        for path in sorted((ROOT / pkg).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            found = [p for p in PATTERNS if p in path.read_text()]
            if found and rel != "validation/protocol/pool.py":
                offenders[rel] = found
    assert offenders == {}, f"process pools outside validation/protocol/pool.py: {offenders}"
