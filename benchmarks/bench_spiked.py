"""Speed of the K-group, r-spike theory (docs/THEORY.md §10) against one sRF point, in one run.

Prints, warm (numba caches loaded, best of several), the time of
- one sRF point, ``asymptotics.risk(alpha, model="srf")`` (the reference, parameters included);
- one K-group point, ``risk_spiked(alpha, ...)`` in full (tables + solve, on every kappa rule
  of the accuracy ladder it climbs, ``asymptotics.equations.ladder.LADDER``) and the solve alone
  (``solve_spiked`` on a prepared problem, as along a curve), for K <= 4, r <= 2 (target 10x the
  sRF point) and r = 3 (target 100x);
and the ratios. Run: python benchmarks/bench_spiked.py   (about half a minute)
"""

from __future__ import annotations

import argparse
import time

import asymptotics as A
from asymptotics.spiked import build_spiked_problem, risk_spiked, solve_spiked

SETTINGS = {
    "K=2, r=1": (10, dict(sigma="tanh", target="tanh", loadings=[[0.6], [-0.3]], bulk=[1.0, 1.2],
                          fractions=[0.5, 0.5], overlaps=[[0.8]], lam=0.01, beta=1.0)),
    "K=4, r=2": (10, dict(sigma="tanh", target="z1*z2 + tanh(z1)",
                          loadings=[[0.8, 0.1], [-0.5, 0.6], [0.2, -0.7], [0.4, 0.4]],
                          bulk=[1.0, 1.1, 0.9, 1.2], fractions=[0.25] * 4,
                          overlaps=[[0.8, 0.1], [0.2, 0.7]], lam=0.01, beta=1.0)),
    "K=4, r=2 relu": (10, dict(sigma="relu", target="tanh", loadings=[[0.8, 0.1], [-0.5, 0.6],
                                                                       [0.2, -0.7], [0.4, 0.4]],
                               bulk=[1.0, 1.1, 0.9, 1.2], fractions=[0.1, 0.2, 0.3, 0.4],
                               overlaps=[[0.8], [0.2]], lam=0.01, beta=1.5)),
    "K=4, r=3": (100, dict(sigma="tanh", target="z1*z2 + tanh(z1) + z3",
                           loadings=[[0.8, 0.1, 0.2], [-0.5, 0.6, 0.1], [0.2, -0.7, 0.3],
                                     [0.4, 0.4, -0.5]],
                           bulk=[1.0, 1.1, 0.9, 1.2], fractions=[0.25] * 4,
                           overlaps=[[0.8, 0.1, 0.0], [0.2, 0.7, 0.0], [0.0, 0.0, 0.6]],
                           lam=0.01, beta=1.0)),
}
ALPHAS = (0.7, 1.5, 3.0)


def best_of(fn, repeat: int = 5) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def main() -> None:
    argparse.ArgumentParser(description=__doc__,  # (no options: --help prints the docstring)
                            formatter_class=argparse.RawDescriptionHelpFormatter).parse_args()
    for a in ALPHAS:  # warm
        A.risk(a, model="srf")

    def srf() -> float:
        return best_of(lambda: [A.risk(a, model="srf") for a in ALPHAS], 7) / len(ALPHAS)

    t_srf = srf()
    print(f"one-spike sRF point (tanh/tanh, alpha0 = 2, eta = 1): {t_srf * 1e3:.2f} ms "
          "(re-measured before each setting, the machine's load varies)")
    for name, (target, kw) in SETTINGS.items():
        t_srf = srf()
        res = [risk_spiked(a, **kw) for a in ALPHAS]  # warm (and compile)
        t_full = best_of(lambda kw=kw: [risk_spiked(a, **kw) for a in ALPHAS], 3) / len(ALPHAS)
        prob = build_spiked_problem(**kw)
        t_solve = best_of(lambda prob=prob: [solve_spiked(prob, a) for a in ALPHAS], 5)
        t_solve /= len(ALPHAS)
        conv = all(r.converged for r in res)
        nodes = sorted({r.n_kappa for r in res})
        print(f"{name:14s} ({prob.tables.weights.shape[0]:5d} kappa nodes, sRF "
              f"{t_srf * 1e3:.2f} ms): point "
              f"{t_full * 1e3:7.1f} ms = {t_full / t_srf:6.1f}x sRF, solve alone "
              f"{t_solve * 1e3:6.2f} ms = {t_solve / t_srf:6.1f}x (target {target}x); "
              f"converged {conv}, iterations {[r.iterations for r in res]}, "
              f"kappa rule settled at {nodes} nodes/dim (0: r = 1 rule)")


if __name__ == "__main__":
    main()
