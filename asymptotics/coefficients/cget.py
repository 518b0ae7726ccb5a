"""Gaussian-equivalence coefficients (THEORY.md §2) and their conditional version, cGET (§4).

Unconditional, z ~ N(0,1):
    mu0 = E sigma(z), mu1 = E z sigma(z), mu_star^2 = E sigma^2 - mu0^2 - mu1^2,
    mu0_star = E g(z), mu1_star = E z g(z), mu2_star = E g(z)^2,
    dmu1 = E sigma'(z), c1 = E z sigma'(z), s2 = E (sigma'(z) - dmu1)^2.
(For weakly differentiable sigma, dmu1 = mu1 by Stein; for ``sign`` sigma' = 0 a.e. and dmu1 = 0,
which is what a gradient step computes.)

Conditional on kappa, with z ~ N(0,1):
    mu0(k) = E sigma(r k + sqrt(c) z),  mu1(k) = E[sigma(r k + sqrt(c) z) z] / sqrt(c),
    mu_star(k)^2 = E sigma(r k + sqrt(c) z)^2 - mu0(k)^2 - c mu1(k)^2,
    h(k) = E g(gamma k + rho z),  h1(k) = E[z g(gamma k + rho z)],  h2(k) = E g(gamma k + rho z)^2.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from asymptotics.coefficients.functions import Function, get_function
from asymptotics.coefficients.quadrature import gaussian_moments, kappa_rule


@dataclass(frozen=True)
class GECoefficients:
    """Unconditional Gaussian-equivalence coefficients of (sigma, g), THEORY.md §2."""

    mu0: float
    mu1: float
    mu_star: float
    mu0_star: float
    mu1_star: float
    mu2_star: float
    dmu1: float
    c1: float
    s2: float


def ge_coefficients(sigma: str | Function, target: str | Function) -> GECoefficients:
    """Compute THEORY.md §2 by quadrature (split at kinks); once per (sigma, target) in a
    process (the result is a frozen record of floats)."""
    s, g = get_function(sigma), get_function(target)
    try:
        return _ge_cached(s, g)
    except TypeError:  # a function that cannot be a cache key: computed every time
        return _ge(s, g)


@lru_cache(maxsize=256)
def _ge_cached(s: Function, g: Function) -> GECoefficients:
    return _ge(s, g)


def _ge(s: Function, g: Function) -> GECoefficients:
    zero, one = np.zeros(1), np.ones(1)
    ms = gaussian_moments(s, zero, one)[0]
    mg = gaussian_moments(g, zero, one)[0]
    md = gaussian_moments(s, zero, one, derivative=True)[0]
    mu0, mu1, e2 = ms
    mu_star2 = e2 - mu0**2 - mu1**2
    return GECoefficients(
        mu0=float(mu0),
        mu1=float(mu1),
        mu_star=math.sqrt(max(mu_star2, 0.0)),
        mu0_star=float(mg[0]),
        mu1_star=float(mg[1]),
        mu2_star=float(mg[2]),
        dmu1=float(md[0]),
        c1=float(md[1]),
        s2=float(max(md[2] - md[0] ** 2, 0.0)),
    )


@dataclass(frozen=True)
class ConditionalCoefficients:
    """cGET coefficients on the kappa quadrature nodes (THEORY.md §4); ``weights`` sum to 1."""

    kappa: np.ndarray
    weights: np.ndarray
    mu0: np.ndarray
    mu1: np.ndarray
    mu_star2: np.ndarray
    h: np.ndarray
    h1: np.ndarray
    h2: np.ndarray


def conditional_coefficients(
    sigma: str | Function,
    target: str | Function,
    *,
    r: float,
    c: float,
    gamma: float,
    n_kappa: int = 120,
) -> ConditionalCoefficients:
    """cGET coefficients for the spiked features sigma(sqrt(c) <w, x> + r kappa), THEORY.md §4."""
    s, g = get_function(sigma), get_function(target)
    if not (c > 0 and math.isfinite(c)):
        raise ValueError(f"bulk variance c must be > 0, got {c}")
    if not (-1.0 <= gamma <= 1.0):
        raise ValueError(f"gamma must be in [-1, 1], got {gamma}")
    rho = math.sqrt(max(1.0 - gamma * gamma, 0.0))
    kinks: list[float] = []
    if g.kinks and gamma != 0.0:
        kinks += [t / gamma for t in g.kinks]
    if s.kinks and r != 0.0 and c < 0.05:
        kinks += [t / r for t in s.kinks]
    kappa, weights = kappa_rule(tuple(sorted(set(kinks))), n=n_kappa if not kinks else 60)
    sq = math.sqrt(c)
    ms = gaussian_moments(s, r * kappa, np.full_like(kappa, sq))
    mg = gaussian_moments(g, gamma * kappa, np.full_like(kappa, rho))
    mu0 = ms[:, 0]
    mu1 = ms[:, 1] / sq
    mu_star2 = ms[:, 2] - mu0**2 - c * mu1**2
    # exact zeros (e.g. mu_star = 0 for a linear sigma, mu0 = 0 for an odd one) come out of the
    # quadrature as round-off; flush them so that empty channels are exactly empty.
    s_scale = float(np.max(ms[:, 2])) + 1e-300
    g_scale = float(np.max(mg[:, 2])) + 1e-300
    return ConditionalCoefficients(
        kappa=np.ascontiguousarray(kappa),
        weights=np.ascontiguousarray(weights),
        mu0=_flush(mu0, np.sqrt(s_scale)),
        mu1=_flush(mu1, np.sqrt(s_scale)),
        mu_star2=np.maximum(_flush(mu_star2, s_scale), 0.0),
        h=_flush(mg[:, 0], np.sqrt(g_scale)),
        h1=_flush(mg[:, 1], np.sqrt(g_scale)),
        h2=mg[:, 2].copy(),
    )


def _flush(values: np.ndarray, scale: float, rel: float = 1e-12) -> np.ndarray:
    out = np.array(values, dtype=np.float64)
    if np.max(np.abs(out)) <= rel * scale:
        out[:] = 0.0
    else:
        out[np.abs(out) <= 1e-15 * scale] = 0.0
    return out
