"""Independent check of the eta_tilde = 0 limit: random-features ridge by deterministic equivalents.

Not used by the solver. By Gaussian equivalence (Mei & Montanari 2019; Hu & Lu 2022) random features
sigma(W x) behave as z = mu1 W x + mu_star xi plus a mean mu0 1 (an unpenalised intercept when
mu0 != 0), and the target splits as g = mu0_star + mu1_star <theta, x> + g_nl with g_nl acting as
noise of variance mu2_star - mu0_star^2 - mu1_star^2. Ridge on features with covariance
Sigma = mu1^2 W W^T + mu_star^2 I then follows the classic linear-ridge deterministic equivalent
(e.g. Hastie, Montanari, Rosset & Tibshirani 2022; Bach 2024): with lam_n = lam p / n,

    kappa = lam_n + kappa (p/n) <Sigma/(Sigma + kappa)>,   df2 = (p/n) <Sigma^2/(Sigma + kappa)^2>,
    excess = [kappa^2 b*' Sigma (Sigma + kappa)^-2 b* + s2_eff df2] / (1 - df2),

where b* = Sigma^-1 mu1 mu1_star W theta is the best linear predictor of the linear part, and the
averages run over rho ~ MP(beta) by the trapezoid rule of asymptotics.measures.spectral — nothing
here shares code with the self-consistent equations.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.optimize import brentq

from asymptotics.coefficients.cget import ge_coefficients
from asymptotics.coefficients.functions import Function


def _mp_avg(f, beta: float, n: int = 6000) -> float:
    """<f(rho)> over MP(beta) with f(0) used only on the atom at 0 (beta > 1)."""
    m, h = 1.0 + beta, 2.0 * math.sqrt(beta)
    theta = (np.arange(n) + 0.5) * math.pi / n
    x = m + h * np.cos(theta)
    w = h * h * np.sin(theta) ** 2 / (2 * math.pi * beta * x) * (math.pi / n)
    cont = float(np.sum(w * f(x)))
    atom = max(0.0, 1.0 - 1.0 / beta)
    return cont + (atom * float(f(np.zeros(1))[0]) if atom > 0 else 0.0)


def rf_ridge_risk(
    alpha: float,
    *,
    sigma: str | Function,
    target: str | Function,
    lam: float,
    beta: float = 1.0,
    delta: float = 0.0,
) -> float:
    """Test error of random-features ridge (eta_tilde = 0), THEORY.md §7 first bullet, lam > 0."""
    if not lam > 0:
        raise ValueError(f"lam must be > 0 for the deterministic-equivalent formula, got {lam}")
    k = ge_coefficients(sigma, target)
    a1, as2 = k.mu1**2, k.mu_star**2
    nl = k.mu2_star - k.mu0_star**2 - k.mu1_star**2
    ratio = beta / alpha  # p / n
    lam_n = lam * ratio

    def sig(r):
        return a1 * r + as2

    def lin_captured() -> float:  # mu1^2 theta' W' Sigma^-1 W theta = mu1^2 beta <rho / Sigma>
        if as2 == 0.0:
            return min(beta, 1.0)
        return a1 * beta * _mp_avg(lambda r: r / sig(r), beta)

    def eq(kap: float) -> float:
        return kap - lam_n - kap * ratio * _mp_avg(lambda r: sig(r) / (sig(r) + kap), beta)

    hi = lam_n + ratio * (a1 * (1 + beta) + as2) + 1.0
    kap = brentq(eq, lam_n, hi * 10, xtol=1e-15, rtol=1e-14, maxiter=500)
    df2 = ratio * _mp_avg(lambda r: sig(r) ** 2 / (sig(r) + kap) ** 2, beta)
    captured = lin_captured()
    resid_lin = k.mu1_star**2 * (1.0 - captured)
    bias_core = a1 * k.mu1_star**2 * beta * _mp_avg(
        lambda r: r / np.where(sig(r) > 0, sig(r), 1.0) / (sig(r) + kap) ** 2, beta
    )
    bias = kap**2 * bias_core
    s2_eff = nl + delta + resid_lin
    excess = (bias + s2_eff * df2) / (1.0 - df2)
    intercept = k.mu0_star**2 if abs(k.mu0) < 1e-14 else 0.0
    return nl + resid_lin + intercept + excess
