"""Cost of one network repetition against the BLAS work it cannot avoid.

    python benchmarks/bench_simulation.py            # d = 2000 (ratio) and d = 8000
    python benchmarks/bench_simulation.py --skip-large

For d = 2000, beta = 1, alpha = 3, alpha0 = 2 (tanh/tanh, eta_tilde = 1, lam = 0.01), one seed:
the wall time of ``simulate_once``, then in the same process the time of the products it must do,
on random matrices of the same shapes: the step (X0 W0^T and S^T X0), the readout (X W1^T and the
Gram F^T F as a symmetric rank-k update), the test pass (X_test W1^T) and one p x p Cholesky.
Ratio target <= 1.3. Both sides are the best of ``--repeat`` runs (same seed), after a start-up
repetition at d = 200 that loads the numba kernels and starts the thread pools (its time is
printed: a one-off per process). Peak memory is the resident-set high-water mark of a fresh
process.
"""

# ruff: noqa: I001 - validation is imported first: its OpenBLAS thread setting must precede numpy
from __future__ import annotations

import validation  # noqa: F401

import argparse
import json
import resource
import subprocess
import sys
import time

import numpy as np
from scipy import linalg
from scipy.linalg import blas

from validation.protocol.simulator import Setting, simulate_once


def _time(fn, repeat: int) -> float:
    best = np.inf
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def unavoidable(s: Setting, repeat: int) -> float:
    """Seconds of the GEMMs and Cholesky a repetition of ``s`` needs, same shapes."""
    rng = np.random.default_rng(0)
    d, p, n0, n, nt = s.d, s.p, s.n0, s.n, s.n_test_used
    shapes = [((n0, d), (d, p)), ((p, n0), (n0, d)),  # step: X0 W0^T, S^T X0
              ((n, d), (d, p)), ((nt, d), (d, p))]  # readout and test: X W1^T
    total = 0.0
    for a_shape, b_shape in shapes:
        a, b = rng.standard_normal(a_shape), rng.standard_normal(b_shape)
        total += _time(lambda a=a, b=b: a @ b, repeat)
    F = rng.standard_normal((n, p))
    total += _time(lambda f=F: blas.dsyrk(1.0, f, trans=1, lower=0), repeat)  # the Gram F^T F
    del F
    A = rng.standard_normal((p, p))
    A = A @ A.T / p + np.eye(p)
    total += _time(lambda: linalg.cho_factor(A, lower=True), repeat)
    return total


def setting(d: int) -> Setting:
    return Setting(model="network", sigma="tanh", target="tanh", alpha=3.0, alpha0=2.0, eta=1.0,
                   lam=0.01, beta=1.0, d=d)


def one_run(d: int, repeat: int) -> dict:
    """Start-up, best-of-``repeat`` wall time of repetition 0 at ``d``, and (d = 2000) the BLAS
    reference; in this process only, so the peak RSS is that of the simulation."""
    t0 = time.perf_counter()
    simulate_once(setting(200), np.random.SeedSequence(0))  # start-up: kernels, thread pools
    startup = time.perf_counter() - t0
    s, walls = setting(d), []
    for _ in range(repeat):
        t0 = time.perf_counter()
        risk = simulate_once(s, np.random.SeedSequence(0))
        walls.append(time.perf_counter() - t0)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # KiB -> GiB
    out = dict(d=d, p=s.p, n0=s.n0, n=s.n, n_test=s.n_test_used, risk=risk, wall_s=min(walls),
               walls=walls, startup_s=startup, peak_rss_gib=peak)
    if d == 2000:
        out["blas_s"] = unavoidable(s, repeat)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--skip-large", action="store_true", help="skip d = 8000")
    ap.add_argument("--repeat", type=int, default=3,
                    help="timed runs at d = 2000, best taken (d = 8000: one)")
    ap.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.repeat < 1:
        ap.error(f"--repeat must be >= 1, got {args.repeat}")
    if args.child:
        print(json.dumps(one_run(args.child, args.repeat)))
        return
    for d in (2000,) if args.skip_large else (2000, 8000):
        # a fresh process per size, so the peak RSS is that of the simulation alone
        repeat = args.repeat if d == 2000 else 1
        out = subprocess.run([sys.executable, __file__, "--child", str(d), "--repeat",
                              str(repeat)], check=True, capture_output=True, text=True).stdout
        r = json.loads(out.strip().splitlines()[-1])
        line = (f"d={r['d']} p={r['p']} n0={r['n0']} n={r['n']} n_test={r['n_test']}: "
                f"wall {r['wall_s']:.2f} s (runs {', '.join(f'{w:.2f}' for w in r['walls'])}), "
                f"start-up {r['startup_s']:.2f} s, peak RSS {r['peak_rss_gib']:.2f} GiB, "
                f"risk {r['risk']:.4f}")
        if "blas_s" in r:
            line += (f"; unavoidable BLAS {r['blas_s']:.2f} s; "
                     f"ratio {r['wall_s'] / r['blas_s']:.2f} (target <= 1.3)")
        print(line, flush=True)


if __name__ == "__main__":
    main()
