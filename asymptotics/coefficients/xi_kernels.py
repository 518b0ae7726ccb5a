"""Fused sums of a registered activation over a Gaussian rule in xi (docs/THEORY.md §12.4).

The steps' xi-moments at a pre-activation ``sc xi + M`` (``asymptotics.multiindex.xi_lines``)
are four sums over the rule's nodes of sigma and sigma' (Stein's form: ``E sigma``,
``E[xi sigma] / sc``, ``E[(xi^2 - 1) sigma] / sc``, ``E sigma'^2``; or, for a narrow bulk,
``E sigma``, ``E sigma'``, ``E[xi sigma']``, ``E sigma'^2``). Here they are one compiled pass per
shift, sigma and sigma' computed once per node from the same formulas as the registered
functions (softplus from one exponential, tanh and 1 - tanh^2): no array of the rule's size per
shift is formed. The sums are the same as numpy's to rounding (the order of the terms).
For ``sigma = k erf(a z + b)`` the four are in closed form (:func:`erf_closed`).
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
from scipy.special import erf

from asymptotics.coefficients.functions import Function
from asymptotics.core.coldstart import kernel

#: the activations summed here (``kind`` of :func:`xi_sums`)
SOFTPLUS, TANH = 0, 1


@kernel(cache=True, error_model="numpy")
def xi_sums(kind: int, sc: float, M: np.ndarray, xi: np.ndarray, w: np.ndarray,
            small: bool) -> np.ndarray:
    """Kernel: the four sums of the module docstring at every shift ``M`` (n) over the rule
    ``(xi, w)``: Stein's form (``small`` False; sc > 0) or sigma' summed (``small`` True)."""
    n, m = M.shape[0], xi.shape[0]
    a1, a2 = w * xi, w * (xi * xi - 1.0)
    out = np.empty((n, 4))
    for i in range(n):
        s0, s1, s2, s3 = 0.0, 0.0, 0.0, 0.0
        for j in range(m):
            z = sc * xi[j] + M[i]
            if kind == SOFTPLUS:
                e = math.exp(-abs(z))
                f = math.log1p(e) + max(z, 0.0)
                d = (1.0 if z >= 0 else e) / (1.0 + e)
            else:
                f = math.tanh(z)
                d = 1.0 - f * f
            s0 += w[j] * f
            s3 += w[j] * (d * d)
            if small:
                s1 += w[j] * d
                s2 += w[j] * xi[j] * d
            else:
                s1 += a1[j] * f
                s2 += a2[j] * f
        out[i, 0] = s0
        out[i, 1] = s1 if small else s1 / sc
        out[i, 2] = s2 if small else s2 / sc
        out[i, 3] = s3
    return out


@lru_cache(maxsize=64)
def _erf_affine(expression: str | None) -> tuple[float, float, float] | None:
    """``(k, a, b)`` when the expression is ``k erf(a z + b)`` with k, a != 0, else None."""
    if not expression or "erf" not in expression:
        return None
    from asymptotics.coefficients.functions import to_sympy

    try:
        expr, symbols = to_sympy(expression, ("z",))
        z = symbols["z"]
        k, core = expr.as_coeff_Mul()  # sympy writes erf(-x) as -erf(x)
        if core.func.__name__ != "erf" or len(core.args) != 1:
            return None
        arg = core.args[0].as_poly(z)
        if arg is None or arg.degree() != 1:
            return None
        k, a, b = float(k), float(arg.coeff_monomial(z)), float(arg.coeff_monomial(1))
    except Exception:  # noqa: BLE001 (sympy raises many kinds on other expressions)
        return None
    ok = k != 0 and a != 0 and all(math.isfinite(x) for x in (k, a, b))
    return (k, a, b) if ok else None


def erf_affine(sigma: Function) -> tuple[float, float, float] | None:
    """``(k, a, b)`` for sigma = k erf(a z + b) (``erf``, ``erf(z-1)``, ...), else None."""
    if sigma.identity is not None:
        return None
    return _erf_affine(sigma.expression)


def erf_closed(sc: float, M: np.ndarray, k: float, a: float, b: float) -> np.ndarray:
    """:func:`xi_direct`'s columns for sigma = k erf(a z + b) exactly (THEORY.md §12.4): with
    mu = a M + b, s = a sc, E exp(-j (s xi + mu)^2) = exp(-j mu^2 / (1 + 2 j s^2)) /
    sqrt(1 + 2 j s^2), so E sigma = k erf(mu / sqrt(1 + 2 s^2)), E sigma' = k a (2 / sqrt(pi))
    E exp(-(s xi + mu)^2), E[xi sigma'] = sc d/dM E sigma' (Stein), E sigma'^2 = k^2 a^2 (4 / pi)
    E exp(-2 (s xi + mu)^2) (entire functions of M: no rule, no ripples)."""
    mu = a * np.asarray(M, dtype=np.float64) + b
    s2 = (a * sc) ** 2
    d1, d2 = 1.0 + 2.0 * s2, 1.0 + 4.0 * s2
    m1 = (k * a * 2.0 / math.sqrt(math.pi * d1)) * np.exp(-mu * mu / d1)
    v = (k * k * a * a * 4.0 / (math.pi * math.sqrt(d2))) * np.exp(-2.0 * mu * mu / d2)
    return np.column_stack([k * erf(mu / math.sqrt(d1)), m1, m1 * (-2.0 * a * sc / d1) * mu, v])
