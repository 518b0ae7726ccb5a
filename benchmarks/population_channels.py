"""Diagnostic for docs/DERIVATIONS.md §7: the channels from the population covariance of the
bulk rows, C = (I + eta c1 M)^2 + eta^2 E zeta^2 Q / alpha0, built from a sampled first batch
only (no W0, no network): Sigma = Pi C Pi = sum_j lam_j e_j e_j^T, Bv = (B Pi) b + eps with
b = Sigma^+ Pi C v, and every channel a weighted sum over the e_j (kernel _special_columns; the
bulk average <1/S> is still MP(c)). Compared with the stored d = 2000 network mean, the sRF theory
and the rank-one network theory. Not a deterministic theory (one d x d eigen-decomposition of a
sampled matrix): it tests the structure that a free-probability evaluation would make exact.
Run: python benchmarks/population_channels.py SIGMA TARGET ALPHA0 ETA BETA ALPHA LAM [--d 1000]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd

import asymptotics as A
from asymptotics.coefficients.cget import ge_coefficients
from asymptotics.coefficients.functions import get_function
from asymptotics.measures.spectral import EMPTY, SpectralMeasure

SUMMARY = Path(__file__).resolve().parents[1] / "validation" / "data" / "matrix_summary.csv"


def population_measure(sig, tgt, alpha0, eta, beta, d, rng) -> SpectralMeasure:
    s, g = get_function(sig), get_function(tgt)
    k = ge_coefficients(s, g)
    sp = A.build_problem(model="srf", sigma=s, target=g, alpha0=alpha0, eta=eta, lam=0.01,
                         beta=beta).spike
    n0 = int(round(alpha0 * d))
    X = rng.standard_normal((n0, d))
    theta = rng.standard_normal(d)
    theta /= np.linalg.norm(theta)
    e = g(X @ theta) - k.mu0
    u = X.T @ e / n0
    v = u / np.linalg.norm(u)
    M = (X.T * e) @ X / n0
    Q = (X.T * e**2) @ X / n0
    L = np.eye(d) + eta * k.c1 * M
    C = L @ L + eta**2 * max(k.s2 - k.c1**2, 0.0) * Q / alpha0
    Pi = np.eye(d) - np.outer(v, v)
    lam, E = np.linalg.eigh(Pi @ C @ Pi)
    keep = lam > 1e-9 * lam.max()
    lam, E = lam[keep], E[:, keep]
    Cv = Pi @ C @ v
    proj = E.T @ Cv
    var_eps = float(v @ C @ v - np.sum(proj**2 / lam))
    gam = float(v @ theta)
    t = theta - gam * v
    t /= np.linalg.norm(t)
    c = float(lam.sum() / d)
    return SpectralMeasure("channels", beta, c, EMPTY,
                           np.concatenate([[max(var_eps, 0.0)], proj / lam]), lam, E.T @ t,
                           r=sp.r, gamma=gam)


def main() -> None:
    ap = argparse.ArgumentParser()
    for name in ("sigma", "target"):
        ap.add_argument(name)
    for name in ("alpha0", "eta", "beta", "alpha", "lam"):
        ap.add_argument(name, type=float)
    ap.add_argument("--d", type=int, default=1000)
    ap.add_argument("--reps", type=int, default=1)
    a = ap.parse_args()
    kw = dict(sigma=a.sigma, target=a.target, alpha0=a.alpha0, eta=a.eta, lam=a.lam,
              beta=a.beta)
    srf = dict(kw, model="srf")
    summ = pd.read_csv(SUMMARY)
    row = summ[(summ.sigma == a.sigma) & (summ.target == a.target) & (summ.beta == a.beta)
               & (summ.alpha0 == a.alpha0) & (summ.eta == a.eta) & (summ.model == "network")
               & (summ.d == 2000) & (summ.alpha == a.alpha) & (summ.lam == a.lam)]
    sim = f"{row.sim_mean.iloc[0]:.5f} +- {row.sim_se.iloc[0]:.5f}" if len(row) else "n/a"
    rng = np.random.default_rng(0)
    pop = [A.risk(a.alpha, **srf, measure=population_measure(
        a.sigma, a.target, a.alpha0, a.eta, a.beta, a.d, rng)).risk for _ in range(a.reps)]
    print(f"{a.sigma}/{a.target} beta={a.beta:g} alpha0={a.alpha0:g} eta={a.eta:g} "
          f"alpha={a.alpha:g} lam={a.lam:g}: network (d=2000 store) {sim} | sRF "
          f"{A.risk(a.alpha, **srf).risk:.5f} | network theory "
          f"{A.risk(a.alpha, **kw, model='network').risk:.5f} | population channels (d={a.d}) "
          + ", ".join(f"{p:.5f}" for p in pop))


if __name__ == "__main__":
    main()
