"""Sweep runner speed: the 50 x 50 (alpha, eta_tilde) theory grid on 1 and 2 workers.

Target: <= 10 s warm on 2 cores (loky workers started, numba caches loaded), and the
parallel efficiency T1 / (2 T2) from 1 to 2 workers. Each run writes a fresh store (fsync per
task included). sigma = g = tanh, alpha0 = 2, lam = 0.01, beta = 1; 50 curves of 50 points.
Run: python benchmarks/bench_sweep.py [--workers 2] [--repeat 2]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import numpy as np

from validation.sweep import sweep

GRID = {"alpha": list(np.linspace(0.2, 5.0, 50)), "eta": list(np.linspace(0.0, 3.0, 50))}
FIXED = dict(sigma="tanh", target="tanh", alpha0=2.0, lam=0.01, beta=1.0)


def timed(n_jobs: int, repeat: int) -> tuple[float, float, int]:
    """Best wall time, the CPU seconds of its tasks (summed over workers), points converged."""
    best, cpu, n_conv = float("inf"), 0.0, 0
    for _ in range(repeat):
        with tempfile.TemporaryDirectory() as tmp:
            t = time.perf_counter()
            df = sweep("theory", GRID, store=Path(tmp) / "s.csv", n_jobs=n_jobs, progress=False,
                       **FIXED)
            wall = time.perf_counter() - t
            if wall < best:
                best = wall
                cpu = float(df.groupby("task")["cpu_seconds"].first().sum())
            n_conv = int(df["converged"].sum())
    return best, cpu, n_conv


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--repeat", type=int, default=2, help="best of this many runs")
    args = p.parse_args()
    small = {"alpha": GRID["alpha"][:3], "eta": GRID["eta"][:2 * args.workers]}
    for n in (1, args.workers):  # start the pool, load the numba caches in every process
        sweep("theory", small, n_jobs=n, progress=False, **FIXED)
    print(f"cores: {os.cpu_count()}, load average before: "
          f"{', '.join(f'{v:.1f}' for v in os.getloadavg())}")
    t1, cpu1, c1 = timed(1, args.repeat)
    tn, cpun, cn = timed(args.workers, args.repeat)
    print(f"50x50 (alpha, eta_tilde) theory grid, 1 worker (in process): {t1:.2f} s wall, "
          f"{cpu1:.2f} s CPU in tasks ({c1}/2500 converged)")
    print(f"50x50 (alpha, eta_tilde) theory grid, {args.workers} workers (loky, warm): {tn:.2f} s "
          f"wall, {cpun:.2f} s CPU in tasks ({cn}/2500 converged; target <= 10 s on 2 cores)")
    print(f"parallel efficiency 1 -> {args.workers} workers: {t1 / (args.workers * tn):.0%} "
          f"(speed-up {t1 / tn:.2f}x)")
    print(f"on idle cores (CPU-bound estimate): {cpu1:.2f} s on 1, "
          f"{cpun / args.workers:.2f} s on {args.workers} (wall above is inflated by any other "
          "load on the machine: compare the load averages)")
    print(f"load average after: {', '.join(f'{v:.1f}' for v in os.getloadavg())}")


if __name__ == "__main__":
    main()
