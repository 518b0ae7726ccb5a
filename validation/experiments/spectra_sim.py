"""Monte Carlo of the spectra that :func:`asymptotics.spectrum` predicts (docs/THEORY.md §16):
the trained network of the protocol (§1: rows of W0 uniform on the sphere, a0 = 1/sqrt(p), one
or two giant steps eta = eta_tilde p on fresh batches of n0 = alpha0 d samples) and its sRF
surrogate (W1 = sqrt(c) W0 + r 1 v^T); per draw the eigenvalues of W W^T and of F^T F,
F = sigma(X W^T)/sqrt(p) on n = alpha d fresh inputs, and the squared overlaps of the top
eigenvectors with 1_p/sqrt(p), the learned direction(s) (for the weights after one step the
population mean row v_pop, :func:`population_direction`, and the mean row v_hat beside it; for
the features W0 v and, for the network, its bulk column B v = (W - 1_p mean row) v, v = v_hat,
and after several steps B t, t the unit part of theta* outside v) and theta*. Also the fit of
simulated-minus-theory overlap offsets as k/p (:func:`fit_text`) and the report's section on the
weights' learned-direction overlap d-scan (:func:`overlap_scan_section`)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from asymptotics.coefficients.functions import get_function
from asymptotics.coefficients.quadrature import gauss_hermite

TOP = 3  # eigenvectors whose overlaps are recorded
OVERLAP_SCAN = (Path(__file__).resolve().parents[2] / "validation" / "reports" / "data"
                / "spectra_overlap_scan.csv")


@dataclass(frozen=True)
class Draw:
    """One simulated spectrum: ``w_eig`` (W W^T), ``f_eig`` (F^T F), ascending; overlaps of the
    top ``TOP`` eigenvectors (descending order) as dicts name -> array."""

    w_eig: np.ndarray
    f_eig: np.ndarray
    w_overlaps: dict
    f_overlaps: dict


def sphere(rng: np.random.Generator, p: int, d: int) -> np.ndarray:
    W = rng.standard_normal((p, d))
    return W / np.linalg.norm(W, axis=1, keepdims=True)


def _top(eig: np.ndarray, vec: np.ndarray, dirs: dict) -> dict:
    idx = np.argsort(eig)[::-1][:TOP]
    return {k: (vec[:, idx].T @ u) ** 2 for k, u in dirs.items()}


def _features(sig, W: np.ndarray, X: np.ndarray, dirs: dict) -> tuple[np.ndarray, dict]:
    p = W.shape[0]
    F = sig(X @ W.T) / math.sqrt(p)
    ev, vec = np.linalg.eigh(F.T @ F)
    return ev, _top(ev, vec, dirs)


def _weights(W: np.ndarray, right: dict) -> tuple[np.ndarray, dict]:
    p = W.shape[0]
    U, s, Vt = np.linalg.svd(W, full_matrices=False)
    ev = np.sort(s ** 2)
    idx = np.argsort(s)[::-1][:TOP]
    out = {"mean": (U[:, idx].T @ (np.ones(p) / math.sqrt(p))) ** 2}
    for k, u in right.items():
        out[k] = (Vt[idx] @ u) ** 2
    return ev, out


def simulate_network(*, sigma: str, target: str, d: int, beta: float, alpha: float,
                     alpha0: float, eta: float | tuple, seed: int, steps: int = 1) -> Draw:
    """The protocol's network after ``steps`` giant steps (fresh batches, constant readout),
    theta* = e_1. The weights' ``learned 1`` is the theory's direction after one step, the
    population mean row given the batch (:func:`population_direction`, docs/THEORY.md §16.3);
    ``learned 1 (v_hat)`` (and, after more steps, ``learned 1``) the unit mean row of W minus
    W0's, the features' learned directions use the latter."""
    rng = np.random.default_rng(seed)
    sig, dsig, g = get_function(sigma), get_function(sigma).derivative, get_function(target)
    p, n0, n = round(beta * d), round(alpha0 * d), round(alpha * d)
    theta = np.zeros(d)
    theta[0] = 1.0
    W0 = sphere(rng, p, d)
    W = W0.copy()
    etas = (eta,) * steps if np.isscalar(eta) else tuple(eta)
    v_pop = None
    for t in range(steps):
        X0 = rng.standard_normal((n0, d))
        H = X0 @ W.T
        e = g(X0 @ theta) - sig(H).mean(axis=1)  # a0 = 1/sqrt(p): f = mean of sigma
        W = W + (etas[t] / n0) * (dsig(H) * e[:, None]).T @ X0
        if steps == 1:
            v_pop = _unit(population_direction(dsig, X0, e, etas[t]))
    mv = W.mean(axis=0) - W0.mean(axis=0)
    v = mv / np.linalg.norm(mv)
    X = rng.standard_normal((n, d))
    w_eig, w_ov = _weights(W, {"learned 1": v if v_pop is None else v_pop,
                               "learned 1 (v_hat)": v, "target 1": theta})
    B = W - W.mean(axis=0)
    fdirs = {"mean": np.ones(p) / math.sqrt(p), "learned 1": _unit(W0 @ v),
             "learned 1 (B v)": _unit(B @ v)}
    if steps > 1:  # the bulk's column on the target's part outside v (docs/THEORY.md §16.8)
        fdirs["target 1 (B t)"] = _unit(B @ _unit(theta - v * (v @ theta)))
    f_eig, f_ov = _features(sig, W, X, fdirs)
    return Draw(w_eig, f_eig, w_ov, f_ov)


def population_direction(dsig, X0: np.ndarray, e: np.ndarray, eta: float) -> np.ndarray:
    """The first step's population mean row given the batch (docs/THEORY.md §16.3), the
    theory's learned direction: (eta/n0) sum_i e_i E_w0[sigma'(w0.x_i)] x_i, the expectation
    over w0 with w0.x_i ~ N(0, |x_i|^2/d) by 64-point Gauss-Hermite. The unit mean row of
    W1 - W0 over the p neurons (``v_hat``) adds the sample mean of the bulk rows, which W1's
    top singular vector shares: a bias of order 1/p in its overlap."""
    n0, d = X0.shape
    z, w = gauss_hermite(64)
    s = np.linalg.norm(X0, axis=1) / math.sqrt(d)
    m = dsig(s[:, None] * z[None, :]) @ w
    return (eta / n0) * (e * m) @ X0


def simulate_srf(*, sigma: str, r: float, c: float, gamma: float, d: int, beta: float,
                 alpha: float, seed: int) -> Draw:
    """The sRF surrogate W1 = sqrt(c) W0 + r 1 v^T, <v, theta*> = gamma."""
    rng = np.random.default_rng(seed)
    sig = get_function(sigma)
    p, n = round(beta * d), round(alpha * d)
    v = np.zeros(d)
    v[0] = 1.0
    theta = np.zeros(d)
    theta[0], theta[1] = gamma, math.sqrt(max(1.0 - gamma * gamma, 0.0))
    W0 = sphere(rng, p, d)
    W = math.sqrt(c) * W0 + r * np.outer(np.ones(p), v)
    X = rng.standard_normal((n, d))
    w_eig, w_ov = _weights(W, {"learned 1": v, "target 1": theta})
    f_eig, f_ov = _features(sig, W, X, {"mean": np.ones(p) / math.sqrt(p),
                                        "learned 1": _unit(W0 @ v)})
    return Draw(w_eig, f_eig, w_ov, f_ov)


def _unit(x: np.ndarray) -> np.ndarray:
    return x / np.linalg.norm(x)


def kolmogorov(eig: np.ndarray, cdf, n_out: int) -> float:
    """sup_x |F_emp(x) - F(x)| over the eigenvalues without the top ``n_out`` (the outliers),
    F the limiting law's cdf (atom included; numerically zero eigenvalues, below 1e-9 of the
    largest, are the rank deficit and count as 0); both one-sided limits at every jump."""
    x = np.sort(eig)[: eig.size - n_out]
    x = np.where(np.abs(x) < 1e-9 * np.max(np.abs(eig)), 0.0, x)
    m = x.size
    u = np.unique(x)
    le = np.searchsorted(x, u, side="right") / m
    lt = np.searchsorted(x, u, side="left") / m
    F = cdf(u)
    F_left = np.where(u > 0.0, cdf(u * (1.0 - 1e-12)), 0.0)
    return float(max(np.max(np.abs(le - F)), np.max(np.abs(lt - F_left))))


def fit_inverse_p(p: np.ndarray, offset: np.ndarray, se: np.ndarray) -> tuple[float, float, float]:
    """(k, its 95% half-width, chi2) of the weighted least-squares fit offset = k/p through 0
    (weights 1/se^2): whether simulated-minus-theory offsets scale as 1/p."""
    x, y, sd = 1.0 / np.asarray(p, float), np.asarray(offset, float), np.asarray(se, float)
    info = float(np.sum(x * x / sd ** 2))
    k = float(np.sum(x * y / sd ** 2)) / info
    return k, 1.96 / math.sqrt(info), float(np.sum(((y - k * x) / sd) ** 2))


def fit_text(what: str, p, offset, se) -> str:
    """:func:`fit_inverse_p` as a sentence for the reports."""
    k, h, chi2 = fit_inverse_p(p, offset, se)
    return f"{what} = k/p with k = {k:.3g} +- {h:.2g} (95%; chi2 {chi2:.1f} on {len(p) - 1} dof)"


def overlap_scan_section() -> list[str]:
    """The section on the weights' learned-direction overlap offsets (the CSV of
    ``python benchmarks/spectra_overlap_scan.py --csv ...``): the driver's direction v_hat
    against the population mean row v_pop, over d, and the weighted least-squares slope of the
    offset against 1/p (through 0)."""
    import pandas as pd

    if not OVERLAP_SCAN.exists():
        return []
    df = pd.read_csv(OVERLAP_SCAN)
    out = ["## The weights' learned-direction overlap: which direction is simulated", "",
           "The network's weights' `learned 1` rows above compare W1's top right singular "
           "vector with the theory's `v`, the population mean row given the batch, `v_pop = "
           "(eta/n0) sum_i e_i E_w0[sigma'(w0.x_i)] x_i` (docs/THEORY.md §16.3; "
           "`validation.experiments.spectra_sim.population_direction`); the `learned 1 (v_hat)` "
           "rows beside them (not counted in the summary) with `v_hat`, the unit mean row of "
           "`W1 - W0` over the p neurons. `v_hat` adds the sample mean of the bulk rows, which "
           "the top singular vector shares: an estimator bias of order 1/p. A d-scan of both "
           "(tanh; `python "
           "benchmarks/spectra_overlap_scan.py --csv validation/reports/data/"
           "spectra_overlap_scan.csv`):", "",
           "| setting | d | p | draws | theory | v_hat | se | z | v_pop | se | z |",
           "|---|---|---|---|---|---|---|---|---|---|---|"]
    out += [f"| {r.setting} | {r.d} | {r.p:g} | {r.seeds} | {r.theory:.6f} | {r.v_hat:.6f} | "
            f"{r.v_hat_se:.1e} | {(r.v_hat - r.theory) / r.v_hat_se:+.1f} | {r.v_pop:.6f} | "
            f"{r.v_pop_se:.1e} | {(r.v_pop - r.theory) / r.v_pop_se:+.1f} |"
            for _, r in df.iterrows()] + [""]
    for name, g in df.groupby("setting", sort=False):
        fits = [fit_text(f"`{col}` offset", g.p, g[col] - g.theory, g[f"{col}_se"])
                for col in ("v_hat", "v_pop")]
        out.append(f"- {name}: " + "; ".join(fits) + ".")
    return out + [""]
