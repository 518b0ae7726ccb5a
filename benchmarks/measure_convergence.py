"""Deterministic (Marchenko-Pastur) vs empirical finite-d spectral measure (THEORY.md §6).

For each d, samples W0 (p x d, rows uniform on the sphere), v and t (orthonormal), builds the
empirical atoms (rho_i, F_i, H_i) of Omega = W Pi W^T and solves the same equations with them;
prints |R_empirical - R_MP| averaged over seeds. The deterministic measure is the d -> infinity
limit, so the gap must shrink with d (the sampled F, H fluctuate like d^-1/2).
Run: python benchmarks/measure_convergence.py [--dims 500,1000,2000,4000] [--seeds 3]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import asymptotics as A

SETTINGS = [
    dict(sigma="tanh", target="tanh", alpha0=0.5, eta=1.0, lam=0.01, beta=1.0, alpha=3.0),
    dict(sigma="relu", target="tanh", alpha0=2.0, eta=1.0, lam=0.1, beta=0.5, alpha=2.0),
]


def empirical_gap(setting: dict, d: int, seed: int) -> float:
    kw = dict(setting)
    alpha = kw.pop("alpha")
    det = A.risk(alpha, **kw, strict=True, model="srf")
    rng = np.random.default_rng(np.random.SeedSequence([seed, d]))
    p = int(round(kw["beta"] * d))
    W0 = rng.standard_normal((p, d))
    W0 /= np.linalg.norm(W0, axis=1, keepdims=True)
    q, _ = np.linalg.qr(rng.standard_normal((d, 2)))
    measure = A.empirical_measure(W0, q[:, 0], q[:, 1], det.c)
    emp = A.risk(alpha, **kw, measure=measure, strict=True, model="srf")
    return emp.risk - det.risk


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--dims", default="500,1000,2000,4000")
    ap.add_argument("--seeds", type=int, default=3)
    args = ap.parse_args()
    dims = [int(x) for x in args.dims.split(",")]
    for s in SETTINGS:
        print(f"setting: {s}")
        print(f"{'d':>6} {'mean |dR|':>12} {'mean dR':>12} {'sd dR':>10} {'time/seed s':>12}")
        for d in dims:
            t = time.perf_counter()
            gaps = np.array([empirical_gap(s, d, k) for k in range(args.seeds)])
            dt = (time.perf_counter() - t) / args.seeds
            print(f"{d:>6} {np.mean(np.abs(gaps)):>12.2e} {np.mean(gaps):>12.2e} "
                  f"{np.std(gaps):>10.2e} {dt:>12.1f}", flush=True)


if __name__ == "__main__":
    main()
