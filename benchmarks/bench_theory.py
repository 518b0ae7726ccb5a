"""Theory speed: ms per point, iterations per point, 100-point curve (warm), cold start.

Targets: <= 0.1 s for a 100-point tanh/tanh curve at beta = 1 (warm), <= 2 s cold start
with the numba cache populated. For scale, the public notebook needs ~15 s per point.
Run: python benchmarks/bench_theory.py
"""

from __future__ import annotations

import subprocess
import sys
import time

import numpy as np

import asymptotics as A

KW = dict(sigma="tanh", target="tanh", alpha0=0.5, eta=1.0, lam=0.01, beta=1.0)


def best_of(fn, repeat: int = 5) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def main() -> None:
    alphas = np.linspace(0.2, 5.0, 100)
    A.risk_curve(alphas[:3], progress=False, **KW)  # compile / load caches
    t_curve = best_of(lambda: A.risk_curve(alphas, progress=False, **KW))
    df = A.risk_curve(alphas, progress=False, **KW)
    problem = A.build_problem(**KW)
    t_point = best_of(lambda: A.solve_point(problem, 3.0), repeat=20)
    t_full = best_of(lambda: A.risk(3.0, **KW), repeat=5)
    print(f"100-point curve (warm, beta=1, tanh/tanh): {t_curve * 1e3:.1f} ms "
          f"(target <= 100 ms) -> {t_curve / 100 * 1e3:.2f} ms per point")
    print(f"iterations per point along the curve: mean {df.iterations.mean():.1f}, "
          f"max {df.iterations.max()}; all converged: {bool(df.converged.all())}; "
          f"max residual {df.residual.max():.2e}")
    print(f"single point, cold start of the solver (coefficients cached): {t_point * 1e3:.2f} ms")
    print(f"single point including cGET quadrature and MP set-up: {t_full * 1e3:.2f} ms")
    print(f"speed-up over the ~15 s per point public notebook: {15 / (t_curve / 100):.0f}x")
    for beta in (0.5, 2.0):
        kw = dict(KW, beta=beta)
        A.risk_curve(alphas[:2], progress=False, **kw)
        t = best_of(lambda kw=kw: A.risk_curve(alphas, progress=False, **kw), repeat=3)
        print(f"100-point curve beta={beta}: {t * 1e3:.1f} ms")
    code = ("import asymptotics as A; r = A.risk(3.0, sigma='tanh', target='tanh', alpha0=0.5, "
            "eta=1.0, lam=0.01, beta=1.0); assert r.converged")
    subprocess.run([sys.executable, "-c", code], check=True)  # make sure the cache exists
    cold = []
    for _ in range(3):
        t = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], check=True)
        cold.append(time.perf_counter() - t)
    print(f"cold start (new interpreter, import + first point, numba cache warm): "
          f"{min(cold):.2f} s (target <= 2 s)")


if __name__ == "__main__":
    main()
