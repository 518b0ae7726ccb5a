"""Theory speed: the compiled solver against the Python path, measured in one run.

Prints, warm (numba caches loaded), each figure as absolute time and as a ratio to the Python
orchestration of the same algorithm (``engine="python"``, the solver of the first releases):
- 100-point tanh/tanh curve at beta = 0.5, 1, 2 (target <= 10 ms, >= 10x);
- 50 x 50 (alpha, eta_tilde) grid (target <= 0.3 s);
- 100-point optimal-lam curve (target <= 0.3 s; the reference is a bounded Brent search per
  alpha on the Python path);
- max |dR| between the two engines on the validation-matrix settings and a fuzzed sample
  (target <= 1e-10);
- cold start: a new interpreter, import + first point, numba cache warm (target <= 1 s), and the
  first run of a fresh cache (compilation).
Run: python benchmarks/bench_theory.py   (about a minute on 2 cores)
"""

from __future__ import annotations

import argparse
import itertools
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

import asymptotics as A
from asymptotics.api.grid import optimal_lam, risk_grid

KW = dict(sigma="tanh", target="tanh", alpha0=0.5, eta=1.0, lam=0.01, model="srf")


def best_of(fn, repeat: int = 5) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def curve_figures() -> None:
    alphas = np.linspace(0.2, 5.0, 100)
    for beta in (0.5, 1.0, 2.0):
        kw = dict(KW, beta=beta)
        for engine in ("compiled", "python"):
            A.risk_curve(alphas[:3], progress=False, engine=engine, **kw)
        tc = best_of(lambda kw=kw: A.risk_curve(alphas, progress=False, **kw), repeat=7)
        tp = best_of(lambda kw=kw: A.risk_curve(alphas, progress=False, engine="python", **kw),
                     repeat=3)
        df = A.risk_curve(alphas, progress=False, **kw)
        print(f"100-point curve beta={beta:g}: compiled {tc * 1e3:6.2f} ms, python "
              f"{tp * 1e3:6.1f} ms, ratio {tp / tc:5.1f}x (target <= 10 ms); "
              f"{df.iterations.mean():.1f} iterations/point, all converged "
              f"{bool(df.converged.all())}")


def grid_figures() -> None:
    alphas, etas = np.linspace(0.2, 5.0, 50), np.linspace(0.0, 3.0, 50)
    kw = dict(sigma="tanh", target="tanh", alpha0=2.0, lam=0.01, model="srf")

    def old() -> None:
        for e in etas:
            A.risk_curve(alphas, eta=float(e), progress=False, engine="python", **kw)

    risk_grid(alpha=alphas[:2], eta=etas[:2], **kw)
    tc = best_of(lambda: risk_grid(alpha=alphas, eta=etas, **kw), repeat=5)
    t2 = best_of(lambda: risk_grid(alpha=alphas, eta=etas, n_jobs=2, **kw), repeat=5)
    tp = best_of(old, repeat=1)
    print(f"50 x 50 (alpha, eta) grid: compiled {tc:.3f} s (2 threads {t2:.3f} s), python "
          f"{tp:.2f} s, ratio {tp / tc:.1f}x (target <= 0.3 s)")


def optimal_figures() -> None:
    from scipy.optimize import minimize_scalar

    alphas = np.linspace(0.2, 5.0, 100)
    kw = dict(sigma="tanh", target="tanh", alpha0=2.0, eta=1.0, beta=1.0, model="srf")
    optimal_lam(alphas[:2], **kw)
    tc = best_of(lambda: optimal_lam(alphas, **kw), repeat=3)
    problem = A.build_problem(lam=1.0, **kw)

    def old() -> None:  # the Python path: bounded Brent on log10 lam per alpha
        from dataclasses import replace

        for a in alphas[::10]:
            minimize_scalar(lambda u, a=a: A.solve_point(replace(problem, lam=10.0**u), a,
                                                         engine="python").risk,
                            bounds=(-6, 3), method="bounded", options={"xatol": 1e-4})

    tp = best_of(old, repeat=1) * 10  # ten of the hundred alphas, scaled
    print(f"100-point optimal-lam curve: compiled {tc:.3f} s, python Brent per alpha "
          f"~{tp:.2f} s, ratio {tp / tc:.1f}x (target <= 0.3 s)")


def identity_figures() -> None:
    worst, n = 0.0, 0
    for sigma, target, beta, alpha0, eta, lam in itertools.product(
            ("tanh", "erf", "relu"), ("tanh", "sin", "relu", "he2"), (0.5, 1.0, 2.0),
            (0.5, 2.0, 20.0), (0.0, 1.0, 3.0), (0.01, 0.1)):
        kw = dict(sigma=sigma, target=target, alpha0=alpha0, eta=eta, lam=lam, beta=beta,
                  model="srf")
        a = [0.2, 1.0, 2.5, 5.0]
        f = A.risk_curve(a, progress=False, **kw)
        p = A.risk_curve(a, progress=False, engine="python", **kw)
        assert (f.converged == p.converged).all()
        worst = max(worst, float(np.nanmax(np.abs(f.risk - p.risk))))
        n += 4
    rng = np.random.default_rng(0)
    names = ("tanh", "erf", "relu", "sign", "sin", "he2", "softplus", "sigmoid")
    worst_f, nf, agree = 0.0, 0, 0
    for _ in range(300):
        kw = dict(sigma=str(rng.choice(names)), target=str(rng.choice(names)),
                  alpha0=float(10 ** rng.uniform(-0.7, 1.7)), eta=float(rng.uniform(0, 5)),
                  lam=float(10 ** rng.uniform(-4, 1)), beta=float(10 ** rng.uniform(-0.7, 0.7)),
                  delta=float(rng.uniform(0, 1)), model="srf")
        a = float(10 ** rng.uniform(-1.3, 1.3))
        f, p = A.risk(a, **kw), A.risk(a, engine="python", **kw)
        agree += f.converged == p.converged
        if f.converged and p.converged:
            worst_f = max(worst_f, abs(f.risk - p.risk))
            nf += 1
    print(f"identical results: max |dR| = {worst:.1e} over the {n} validation-matrix points; "
          f"{worst_f:.1e} over {nf} converged fuzzed points, convergence verdicts agree "
          f"{agree}/300 (target <= 1e-10)")


def cold_figures() -> None:
    code = ("import asymptotics as A; r = A.risk(3.0, sigma='tanh', target='tanh', alpha0=0.5, "
            "eta=1.0, lam=0.01); assert r.converged")
    subprocess.run([sys.executable, "-c", code], check=True)  # make sure the cache exists
    cold = []
    for _ in range(3):
        t = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], check=True)
        cold.append(time.perf_counter() - t)
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, NUMBA_CACHE_DIR=tmp)
        t = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], check=True, env=env)
        first = time.perf_counter() - t
    print(f"cold start (new interpreter, import + first point, numba cache warm): "
          f"{min(cold):.2f} s (target <= 1 s); first run with an empty cache (compilation): "
          f"{first:.1f} s")


def main() -> None:
    argparse.ArgumentParser(description=__doc__,  # (no options: --help prints the docstring)
                            formatter_class=argparse.RawDescriptionHelpFormatter).parse_args()
    print(f"cores: {os.cpu_count()}; numba threads: {os.environ.get('NUMBA_NUM_THREADS', '-')}")
    curve_figures()
    grid_figures()
    optimal_figures()
    identity_figures()
    cold_figures()


if __name__ == "__main__":
    main()
