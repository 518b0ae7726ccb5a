"""The spectral measure of THEORY.md §6: deterministic Marchenko-Pastur and empirical atoms.

Deterministic (d -> infinity): rho = c x with x ~ MP(beta), the law of the eigenvalues of
(1/d) G G^T, G a p x d standard Gaussian matrix, beta = p/d: density
sqrt((b - x)(x - a)) / (2 pi beta x) on [a, b] = [(1 - sqrt beta)^2, (1 + sqrt beta)^2], mean 1,
plus an atom 1 - 1/beta at 0 when beta > 1. The overlaps need only averages of rational functions
of rho against S = s0 + s1 rho, which follow in closed form from the Stieltjes transform

    M(t) = <1/(x + t)> = 2 / (1 - beta + t + sqrt((t + a)(t + b))),   t > 0,

(a cancellation-free form of the usual root), M2(t) = <1/(x + t)^2> = M(t)^2 (1 + D'(t)) / 2 with
D = sqrt((t + a)(t + b)); for t > 100 a moment series (Narayana polynomials) is used instead, and
for beta > 1 the duality with MP(1/beta) (:func:`resolvent_mp`).
Conditional means F = beta c, H = beta rho replace the sampled projections.

Empirical (finite d): eigen-decomposition of Omega = W Pi W^T, W = sqrt(c) W0, Pi = I - v v^T,
with F_i = p (u_i . W v)^2 and H_i = p (u_i . W t)^2.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable

import numpy as np

from asymptotics.core.coldstart import kernel

N_MOMENTS = 14


@kernel(cache=True, error_model="numpy")
def _binom(n: int, k: int) -> float:
    out = 1.0
    for i in range(k):
        out = out * (n - i) / (i + 1)
    return out


@kernel(cache=True, error_model="numpy")
def mp_moments(beta: float, kmax: int) -> np.ndarray:
    """Kernel: <x^k>, k = 0..kmax, for MP(beta) (Narayana polynomials)."""
    out = np.zeros(kmax + 1)
    out[0] = 1.0
    for k in range(1, kmax + 1):
        s = 0.0
        for j in range(k):
            s += _binom(k, j) * _binom(k - 1, j) / (j + 1) * beta**j
        out[k] = s
    return out


@kernel(cache=True, error_model="numpy")
def _resolvent_small(beta: float, t: float) -> tuple:
    """Kernel: :func:`resolvent_mp` for beta <= 1 (support in [0, 4], no atom)."""
    if t > 100.0:  # series in e = 1/t, each average summed directly (no cancellation)
        mom = mp_moments(beta, N_MOMENTS + 2)
        e = 1.0 / t
        r1 = 0.0  # <1/(1 + e x)>
        r2 = 0.0  # <1/(1 + e x)^2>
        s1 = 0.0  # <x/(1 + e x)>
        s1b = 0.0  # <x/(1 + e x)^2>
        s2 = 0.0  # <x^2/(1 + e x)^2>
        sgn = 1.0
        ek = 1.0
        for k in range(N_MOMENTS + 1):
            r1 += sgn * mom[k] * ek
            r2 += sgn * (k + 1) * mom[k] * ek
            s1 += sgn * mom[k + 1] * ek
            s1b += sgn * (k + 1) * mom[k + 1] * ek
            s2 += sgn * (k + 1) * mom[k + 2] * ek
            sgn = -sgn
            ek *= e
        return e * r1, e * e * r2, e * s1, e * e * s1b, e * e * s2
    sa = (1.0 - math.sqrt(beta)) ** 2
    sb = (1.0 + math.sqrt(beta)) ** 2
    dd = math.sqrt((t + sa) * (t + sb))
    ddp = (2.0 * t + sa + sb) / (2.0 * dd)
    m1 = 2.0 / (1.0 - beta + t + dd)
    m2 = 0.5 * m1 * m1 * (1.0 + ddp)
    # x1 = 4 t / ((dd + t)^2 - (1 - beta)^2), with dd - (1 - beta) = t (t + 2 + 2 beta) /
    # (dd + 1 - beta) (as dd^2 - (1 - beta)^2 = t (t + 2 + 2 beta)): no cancellation at small t
    x1 = 4.0 / (((t + 2.0 + 2.0 * beta) / (dd + 1.0 - beta) + 1.0) * (dd + t + 1.0 - beta))
    x1b = m1 - t * m2
    x2 = x1 - t * x1b
    return m1, m2, x1, x1b, x2


@kernel(cache=True, error_model="numpy")
def resolvent_mp(beta: float, t: float) -> tuple:
    """Kernel: <1/(x+t)>, <1/(x+t)^2>, <x/(x+t)>, <x/(x+t)^2>, <x^2/(x+t)^2> for MP(beta), t > 0.

    For beta > 1 by duality: MP(beta) = (1 - 1/beta) delta_0 + (1/beta) (law of beta y),
    y ~ MP(1/beta) (the nonzero eigenvalues of G G^T / d are those of G^T G / d), so every
    average is one of MP(1/beta) at t / beta (THEORY.md §6). The series in 1/t then converges
    for every beta (the support of MP(1/beta) lies in [0, 4]) and the atom's share of
    <x/(x+t)^2> never cancels against the bulk's."""
    if beta <= 1.0:
        return _resolvent_small(beta, t)
    m1, m2, x1, x1b, x2 = _resolvent_small(1.0 / beta, t / beta)
    atom = 1.0 - 1.0 / beta
    ib = 1.0 / beta
    return (atom / t + m1 * ib * ib, atom / (t * t) + m2 * ib * ib * ib, x1 * ib, x1b * ib * ib,
            x2 * ib)


def mp_density(x: np.ndarray, beta: float) -> np.ndarray:
    """Absolutely continuous part of the MP(beta) density (the atom at 0 for beta > 1 excluded)."""
    x = np.asarray(x, dtype=np.float64)
    a, b = (1 - math.sqrt(beta)) ** 2, (1 + math.sqrt(beta)) ** 2
    out = np.zeros_like(x)
    inside = (x > a) & (x < b)
    xi = x[inside]
    out[inside] = np.sqrt((b - xi) * (xi - a)) / (2 * math.pi * beta * xi)
    return out


def mp_expectation(f: Callable[[np.ndarray], np.ndarray], beta: float, n: int = 256) -> float:
    """<f(x)> for x ~ MP(beta), for smooth f, to ~1e-13 with n ~ 256.

    x = m + h cos(theta) turns the square-root edges into a smooth periodic integrand
    (h^2 sin^2 theta / (2 pi beta x)), integrated by the trapezoid rule. The near-pole of 1/x
    when beta ~ 1 is removed by writing f(x)/x = (f(x) - f(0))/x + f(0)/x, the second term
    integrating to the mass of the continuous part, min(1, 1/beta).
    """
    if not (beta > 0 and math.isfinite(beta)):
        raise ValueError(f"beta must be > 0 and finite, got {beta}")
    m, h = 1.0 + beta, 2.0 * math.sqrt(beta)
    theta = (np.arange(n) + 0.5) * math.pi / n  # midpoint rule = trapezoid of the even extension
    x = m + h * np.cos(theta)
    w = h * h * np.sin(theta) ** 2 / (2 * math.pi * beta) * (math.pi / n)
    f0 = float(np.asarray(f(np.zeros(1)), dtype=np.float64)[0])
    if beta == 1.0:
        cont = float(np.sum(w * np.asarray(f(x), dtype=np.float64) / x))
    else:
        mass = min(1.0, 1.0 / beta)
        cont = float(np.sum(w * (np.asarray(f(x), dtype=np.float64) - f0) / x)) + f0 * mass
    atom = max(0.0, 1.0 - 1.0 / beta)
    return cont + atom * f0


@functools.lru_cache(maxsize=256)
def mp_median(q: float) -> float:
    """Median of the Marchenko-Pastur law of ratio ``q in (0, 1]``."""
    from scipy import integrate, optimize

    if not (0 < q <= 1):
        raise ValueError(f"q must be in (0, 1], got {q}")
    lo, hi = (1 - math.sqrt(q)) ** 2, (1 + math.sqrt(q)) ** 2

    def cdf(x: float) -> float:
        # x = m + h cos(t) removes the square-root end points
        m, h = (lo + hi) / 2, (hi - lo) / 2
        t0 = math.acos(min(1.0, max(-1.0, (x - m) / h)))
        val, _ = integrate.quad(
            lambda t: float(mp_density(np.array([m + h * math.cos(t)]), q)[0]) * h * math.sin(t),
            t0, math.pi, limit=200)
        return val

    return float(optimize.brentq(lambda x: cdf(x) - 0.5, lo + 1e-12, hi - 1e-12, xtol=1e-13))


def mp_singular_density(s: np.ndarray, beta: float, scale: float = 1.0) -> np.ndarray:
    """Density of the min(p, d) singular values of a p x d matrix with iid entries of variance
    ``scale^2 / d`` (beta = p/d): edges ``scale |1 -+ sqrt beta|``."""
    s = np.asarray(s, dtype=np.float64)
    f, q = max(1.0, beta), min(beta, 1.0 / beta)
    u = scale * scale * f
    return mp_density(s * s / u, q) * 2 * s / u
