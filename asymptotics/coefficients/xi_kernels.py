"""Fused sums of a registered activation over a Gaussian rule in xi (docs/THEORY.md §12.4).

The steps' xi-moments at a pre-activation ``sc xi + M`` (``asymptotics.multiindex.xi_lines``)
are four sums over the rule's nodes of sigma and sigma' (Stein's form: ``E sigma``,
``E[xi sigma] / sc``, ``E[(xi^2 - 1) sigma] / sc``, ``E sigma'^2``; or, for a narrow bulk,
``E sigma``, ``E sigma'``, ``E[xi sigma']``, ``E sigma'^2``). Here they are one compiled pass per
shift, sigma and sigma' computed once per node from the same formulas as the registered
functions (softplus from one exponential, tanh and 1 - tanh^2): no array of the rule's size per
shift is formed. The sums are the same as numpy's to rounding (the order of the terms).
"""

from __future__ import annotations

import math

import numpy as np

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
