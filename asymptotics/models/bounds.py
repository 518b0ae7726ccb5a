"""Limits and bounds of the risk, docs/THEORY.md §7 (Cui et al. 2024, arXiv:2402.04980).

For the spiked features with c = gamma = 1, as alpha -> infinity the risk tends to the error of the
best function in the learned span, bracketed by
    upper = inf_b E_k[(g(k) - b mu0(k))^2],
    lower = inf_{b1, b2} E_k[(g(k) - b1 mu0(k) - b2 mu1(k) k)^2],
with mu0(k), mu1(k) the cGET coefficients of THEORY.md §4.

Large lam: the ridge penalty shrinks every channel except the mean one. The feature mean
mu0(k) 1_p has norm ~ sqrt(p), so its coefficient m = <a, 1>/sqrt(p) costs lam m^2 = O(1) against a
loss of order n: it is unpenalised in the proportional limit. Hence, for any (r, c, gamma),
    lim_{lam -> inf} R = inf_b E_k[(h(k) - b mu0(k))^2] + E_k[h2(k) - h(k)^2],
which is E g^2 when mu0(k) = 0 (odd sigma at eta_tilde = 0) and Var g for random features with
mu0 != 0 (THEORY.md §7 states the first case). At finite d the limits lam -> inf and d -> inf do not
commute: the network's m is shrunk once lam >> n.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from asymptotics.coefficients.cget import conditional_coefficients
from asymptotics.coefficients.functions import Function


@dataclass(frozen=True)
class RiskBounds:
    """Large-alpha bounds for spike strength ``r`` (c = gamma = 1 unless given)."""

    r: float
    c: float
    gamma: float
    lower: float
    upper: float


def _lstsq_error(target: np.ndarray, basis: list[np.ndarray], w: np.ndarray) -> float:
    """min_b E_w[(target - sum_j b_j basis_j)^2] by the normal equations."""
    B = np.stack(basis, axis=1)
    G = B.T @ (w[:, None] * B)
    rhs = B.T @ (w * target)
    coef = np.linalg.lstsq(G, rhs, rcond=1e-13)[0]
    resid = target - B @ coef
    return float(np.sum(w * resid**2))


def risk_bounds(
    sigma: str | Function,
    target: str | Function,
    *,
    r: float,
    c: float = 1.0,
    gamma: float = 1.0,
) -> RiskBounds:
    """Upper and lower large-alpha bounds of THEORY.md §7 (exact projections on the kappa rule)."""
    if not r >= 0:
        raise ValueError(f"r must be >= 0, got {r}")
    k = conditional_coefficients(sigma, target, r=r, c=c, gamma=gamma)
    w = k.weights
    g = k.h  # E g(gamma k + rho z) given k; = g(k) for gamma = 1
    noise = float(np.sum(w * (k.h2 - k.h**2)))  # variance of g not explained by kappa
    upper = _lstsq_error(g, [k.mu0], w) if np.any(k.mu0 != 0) else float(np.sum(w * g**2))
    lower = _lstsq_error(g, [k.mu0, k.mu1 * k.kappa], w)
    return RiskBounds(float(r), float(c), float(gamma), lower + noise, upper + noise)


def large_lambda_limit(
    sigma: str | Function, target: str | Function, *, r: float, c: float, gamma: float
) -> float:
    """lim_{lam -> inf} R: only the unpenalised mean channel survives (module docstring)."""
    return risk_bounds(sigma, target, r=r, c=c, gamma=gamma).upper
