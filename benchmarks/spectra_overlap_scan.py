"""Where the weights' learned-direction overlap offsets of SPECTRA_THEORY.md come from: a d-scan
of the squared overlap of W1's top right singular vector with two directions of the simulated
network (docs/THEORY.md §16.4): ``v_hat``, the unit mean row of W1 - W0 over the p neurons (the
driver's ``learned 1``), and ``v_pop``, the unit population mean row given the batch,
(eta/n0) sum_i e_i E_w0[sigma'(w0.x_i)] x_i (the theory's v: W1 = B + r 1_p v^T with the rows
of B of mean zero given the batch; E_w0 by Gauss-Hermite at |x_i|/sqrt(d)). v_hat = v_pop plus
the sample mean of the p bulk rows, which the top singular vector shares: an estimator bias of
order 1/p. Prints, per d, the theory (asymptotics.spectrum at that d), both overlaps (mean, s.e.)
and the least-squares slope of (overlap - theory) against 1/p with its 95% interval.

    python benchmarks/spectra_overlap_scan.py [--dims 1000 2000 4000] [--seeds 12 6 3]
        [--csv validation/reports/data/spectra_overlap_scan.csv]

The CSV (one row per setting and d) is what validation/reports/SPECTRA_THEORY.md's section on
the weights' overlaps reads (``python -m validation.experiments.spectra_theory --report-only``).
"""

from __future__ import annotations

import argparse
import math
import os
from pathlib import Path

import numpy as np
from scipy.sparse.linalg import svds

import asymptotics as A
from asymptotics.coefficients.functions import get_function
from asymptotics.coefficients.quadrature import gauss_hermite

SETTINGS = {
    "small batch": dict(sigma="tanh", target="tanh", beta=1.0, alpha0=0.5, eta=2.0),
    "one step": dict(sigma="tanh", target="tanh", beta=0.5, alpha0=2.0, eta=1.0),
}


def draw(*, sigma: str, target: str, beta: float, alpha0: float, eta: float, d: int,
         seed: int) -> tuple[float, float]:
    """(overlap with v_hat, overlap with v_pop) of W1's top right singular vector, one draw
    (the protocol of validation.experiments.spectra_sim.simulate_network, theta* = e_1)."""
    rng = np.random.default_rng(seed)
    sig, g = get_function(sigma), get_function(target)
    dsig = sig.derivative
    p, n0 = round(beta * d), round(alpha0 * d)
    W0 = rng.standard_normal((p, d))
    W0 /= np.linalg.norm(W0, axis=1, keepdims=True)
    X0 = rng.standard_normal((n0, d))
    H = X0 @ W0.T
    e = g(X0[:, 0]) - sig(H).mean(axis=1)
    W1 = W0 + (eta / n0) * (dsig(H) * e[:, None]).T @ X0
    v_hat = W1.mean(axis=0) - W0.mean(axis=0)
    z, w = gauss_hermite(64)
    s = np.linalg.norm(X0, axis=1) / math.sqrt(d)
    m = dsig(s[:, None] * z[None, :]) @ w  # E_w0 sigma'(w0.x_i), w0.x_i ~ N(0, |x_i|^2/d)
    v_pop = (eta / n0) * (e * m) @ X0
    _, _, vt = svds(W1, k=1)
    top = vt[0]
    return tuple(float((top @ u) ** 2 / (u @ u)) for u in (v_hat, v_pop))


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dims", type=int, nargs="+", default=[1000, 2000, 4000])
    ap.add_argument("--seeds", type=int, nargs="+", default=[12, 6, 3])
    ap.add_argument("--settings", nargs="+", default=list(SETTINGS))
    ap.add_argument("--csv", default=None, help="write the rows to this CSV")
    a = ap.parse_args(argv)
    rows = []
    for name in a.settings:
        kw = SETTINGS[name]
        print(f"## {name}: {kw}")
        print("| d | p | seeds | theory | v_hat | se | z | v_pop | se | z |")
        print("|---|---|---|---|---|---|---|---|---|---|")
        xs, ys, ws, yp, wp = [], [], [], [], []
        for d, n_s in zip(a.dims, a.seeds, strict=True):
            law = A.spectrum("weights", model="network", d=d, **kw)
            th = law.outliers[0].overlaps["learned 1"]
            ov = np.array([draw(d=d, seed=s, **kw) for s in range(n_s)])
            mu, se = ov.mean(axis=0), ov.std(axis=0, ddof=1) / math.sqrt(n_s)
            p = kw["beta"] * d
            print(f"| {d} | {p:g} | {n_s} | {th:.6f} | {mu[0]:.6f} | {se[0]:.1e} | "
                  f"{(mu[0] - th) / se[0]:+.1f} | {mu[1]:.6f} | {se[1]:.1e} | "
                  f"{(mu[1] - th) / se[1]:+.1f} |", flush=True)
            rows.append(dict(setting=name, **kw, d=d, p=p, seeds=n_s, theory=th,
                             v_hat=mu[0], v_hat_se=se[0], v_pop=mu[1], v_pop_se=se[1]))
            xs.append(1.0 / p)
            ys.append(mu[0] - th)
            ws.append(se[0])
            yp.append(mu[1] - th)
            wp.append(se[1])
        for label, y, sd in (("v_hat", ys, ws), ("v_pop", yp, wp)):
            x, y, sd = np.array(xs), np.array(y), np.array(sd)
            # weighted least squares through 0: offset = k / p
            k = float(np.sum(x * y / sd**2) / np.sum(x * x / sd**2))
            k_se = float(1.0 / math.sqrt(np.sum(x * x / sd**2)))
            chi2 = float(np.sum(((y - k * x) / sd) ** 2))
            print(f"{label}: offset = k/p, k = {k:.4g} +- {1.96 * k_se:.2g} (95%), chi2 = "
                  f"{chi2:.2f} on {len(x) - 1} dof")
    if a.csv:
        import pandas as pd

        path = Path(a.csv)
        tmp = path.with_name(path.name + ".tmp")
        pd.DataFrame(rows).to_csv(tmp, index=False)
        os.replace(tmp, path)


if __name__ == "__main__":
    main()
