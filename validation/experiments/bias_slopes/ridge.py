"""The K-group model with a linear activation (docs/THEORY.md §10): ridge on the exactly
Gaussian features W x, whose test error for a sampled W is the deterministic equivalent of linear
ridge (Hastie, Montanari, Rosset, Tibshirani 2022, arXiv 1903.08560; independent of the replica
equations), against the theory at p = infinity (``linear``: three groups, two spikes, a two-index
target) and at the width p = d (``finite_width``: two groups, loadings ~ 1/sqrt(p), the target
fully learned). Used by :mod:`validation.experiments.bias_slopes` to measure the finite-d bias of
the sampled risk and by ``tests/test_spiked_theory.py``."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

#: the linear setting: loadings, bulk variances, fractions, overlaps, ridge, target
U3 = ((1.0, 0.3), (-0.4, 0.8), (0.5, -0.6))
C3, PI3 = (1.0, 0.5, 1.5), (0.3, 0.3, 0.4)
GAMMA = ((0.7, 0.2), (0.1, 0.6))
TARGET = "z1*z2 + z1 + 0.5*z2"
ALPHAS = (0.5, 2.0, 5.0)
LAM = 0.05
#: the finite-width setting: loadings times sqrt(p), bulk variances, fractions, alpha
U2, C2, PI2, ALPHA_FW = ((1.5,), (-1.0,)), (1.0, 0.7), (0.5, 0.5), 2.0


@dataclass(frozen=True)
class RidgeSetting:
    """``kind``: ``'linear'`` (risks at :data:`ALPHAS`) or ``'finite_width'`` (at ALPHA_FW)."""

    name: str
    kind: str


def linear_ridge_risk(W: np.ndarray, Theta: np.ndarray, grad: np.ndarray, Eg2: float,
                      alpha: float, lam: float) -> float:
    """Ridge on the Gaussian features W x by the deterministic equivalent of linear ridge with
    population covariance W W^T, the target's nonlinear part acting as noise; E[x g] =
    Theta E[grad g] (Stein)."""
    from scipy.optimize import brentq

    p, d = W.shape
    n = alpha * d
    ev, U = np.linalg.eigh(W @ W.T)
    ev = np.maximum(ev, 0.0)
    b = U.T @ (W @ (Theta @ grad))
    bstar = np.where(ev > 1e-10 * ev.max(), b / np.where(ev > 0, ev, 1.0), 0.0)
    s0 = Eg2 - float(np.sum(ev * bstar**2))
    lam_n = lam * p / n
    kap = brentq(lambda k: k - lam_n - k * np.sum(ev / (ev + k)) / n, 1e-14,
                 lam_n + ev.sum() / n + 10, xtol=1e-15, rtol=1e-14)
    df2 = np.sum(ev**2 / (ev + kap) ** 2) / n
    bias = kap**2 * np.sum(ev * bstar**2 / (ev + kap) ** 2)
    return float(s0 + (bias + s0 * df2) / (1 - df2))


def _eg2() -> float:
    """E g^2 of z1 z2 + z1 + z2/2 with corr(z1, z2) = r12 = Gamma_1 . Gamma_2."""
    gam = np.array(GAMMA)
    r12 = float(gam[:, 0] @ gam[:, 1])
    return 1 + 2 * r12**2 + 1.25 + r12


def linear_draw(d: int, rng: np.random.Generator) -> dict[str, float]:
    """One sampled W (three groups, rows sqrt(c_g) G_i + V u_g, G on the sphere) and two
    target directions with overlaps Gamma: the exact risk at each alpha of :data:`ALPHAS`."""
    from asymptotics.spiked.empirical import group_labels, sphere_rows

    U, c, gam = np.array(U3), np.array(C3), np.array(GAMMA)
    lab = group_labels(np.array(PI3), d)
    rho = np.sqrt(1 - np.sum(gam**2, axis=0))
    G = sphere_rows(rng, d, d)
    Q, _ = np.linalg.qr(rng.standard_normal((d, 4)))
    W = np.sqrt(c[lab])[:, None] * G + U[lab] @ Q[:, :2].T
    theta = Q[:, :2] @ gam + Q[:, 2:] * rho[None, :]
    return {f"risk@{a:g}": linear_ridge_risk(W, theta, np.array([1.0, 0.5]), _eg2(), a, LAM)
            for a in ALPHAS}


def finite_width_draw(d: int, rng: np.random.Generator) -> dict[str, float]:
    """One sampled W at p = d (two groups, loadings u_g/sqrt(p), the target direction learned):
    the exact risk at ALPHA_FW."""
    from asymptotics.spiked.empirical import group_labels, sphere_rows

    p = d
    U, c = np.array(U2) / math.sqrt(p), np.array(C2)
    lab = group_labels(np.array(PI2), p)
    G = sphere_rows(rng, p, d)
    v = np.linalg.qr(rng.standard_normal((d, 1)))[0]
    W = np.sqrt(c[lab])[:, None] * G + U[lab] @ v.T
    return {f"risk@{ALPHA_FW:g}": linear_ridge_risk(W, v, np.array([1.0]), 1.0, ALPHA_FW, LAM)}


def theory(kind: str, d: int) -> dict[str, float]:
    """The theory's risks: p = infinity for ``linear``, p = d for ``finite_width``."""
    from asymptotics.spiked import risk_spiked

    if kind == "linear":
        kw = dict(sigma="z", target=TARGET, loadings=np.array(U3), bulk=np.array(C3),
                  fractions=np.array(PI3), overlaps=np.array(GAMMA), lam=LAM, beta=1.0)
        return {f"risk@{a:g}": float(risk_spiked(a, **kw).risk) for a in ALPHAS}
    kw = dict(sigma="z", target="z", loadings=np.array(U2) / math.sqrt(d), bulk=np.array(C2),
              fractions=np.array(PI2), overlaps=[[1.0]], lam=LAM, beta=1.0)
    return {f"risk@{ALPHA_FW:g}": float(risk_spiked(ALPHA_FW, p=d, **kw).risk)}
