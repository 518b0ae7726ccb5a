"""Cost of one network repetition against the BLAS work it cannot avoid (issue 3, item 2).

    python benchmarks/bench_simulation.py            # d = 2000 (ratio) and d = 8000
    python benchmarks/bench_simulation.py --skip-large

For d = 2000, beta = 1, alpha = 3, alpha0 = 2 (tanh/tanh, eta_tilde = 1, lam = 0.01), one seed:
the wall time of ``simulate_once``, then in the same process the time of the products it must do,
on random matrices of the same shapes: the step (X0 W0^T and S^T X0), the readout (X W1^T and the
Gram F^T F as a symmetric rank-k update), the test pass (X_test W1^T) and one p x p Cholesky.
Ratio target <= 1.3. Peak memory is the resident-set high-water mark of a fresh process.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time

import numpy as np
from scipy import linalg
from scipy.linalg import blas

from validation.simulator import Setting, simulate_once


def _time(fn, repeat: int = 1) -> float:
    best = np.inf
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def unavoidable(s: Setting) -> float:
    """Seconds of the GEMMs and Cholesky a repetition of ``s`` needs, same shapes."""
    rng = np.random.default_rng(0)
    d, p, n0, n, nt = s.d, s.p, s.n0, s.n, s.n_test_used
    shapes = [((n0, d), (d, p)), ((p, n0), (n0, d)),  # step: X0 W0^T, S^T X0
              ((n, d), (d, p)), ((nt, d), (d, p))]  # readout and test: X W1^T
    total = 0.0
    for a_shape, b_shape in shapes:
        a, b = rng.standard_normal(a_shape), rng.standard_normal(b_shape)
        total += _time(lambda a=a, b=b: a @ b)
    F = rng.standard_normal((n, p))
    total += _time(lambda f=F: blas.dsyrk(1.0, f, trans=1, lower=0))  # the Gram F^T F
    del F
    A = rng.standard_normal((p, p))
    A = A @ A.T / p + np.eye(p)
    total += _time(lambda: linalg.cho_factor(A, lower=True))
    return total


def one_run(d: int) -> dict:
    s = Setting(model="network", sigma="tanh", target="tanh", alpha=3.0, alpha0=2.0, eta=1.0,
                lam=0.01, beta=1.0, d=d)
    t0 = time.perf_counter()
    risk = simulate_once(s, np.random.SeedSequence(0))
    wall = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # KiB -> GiB
    return dict(d=d, p=s.p, n0=s.n0, n=s.n, n_test=s.n_test_used, risk=risk, wall_s=wall,
                peak_rss_gib=peak)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--skip-large", action="store_true", help="skip d = 8000")
    ap.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(one_run(args.child)))
        return
    for d in (2000,) if args.skip_large else (2000, 8000):
        # a fresh process per size, so the peak RSS is that of the simulation alone
        out = subprocess.run([sys.executable, __file__, "--child", str(d)], check=True,
                             capture_output=True, text=True).stdout
        r = json.loads(out.strip().splitlines()[-1])
        line = (f"d={r['d']} p={r['p']} n0={r['n0']} n={r['n']} n_test={r['n_test']}: "
                f"wall {r['wall_s']:.2f} s, peak RSS {r['peak_rss_gib']:.2f} GiB, "
                f"risk {r['risk']:.4f}")
        if d == 2000:
            s = Setting(model="network", sigma="tanh", target="tanh", alpha=3.0, alpha0=2.0,
                        eta=1.0, lam=0.01, beta=1.0, d=d)
            ref = unavoidable(s)
            line += f"; unavoidable BLAS {ref:.2f} s; ratio {r['wall_s'] / ref:.2f} (target <= 1.3)"
        print(line, flush=True)


if __name__ == "__main__":
    main()
