"""Gaussian moments of F(t + s Z) at many shifts t and one scale s, through a piecewise
Chebyshev interpolant of the quadrature itself (docs/THEORY.md §10.2).

The K-group tables need ``gaussian_moments(F, t, s)`` at every kappa node, where t = u_g . kappa
takes thousands of distinct values for r >= 2 spikes. The moments are smooth functions of t
(the Gaussian smooths F's kinks when s > 0), so they are computed by the same rule on the
Chebyshev points of short pieces of [min t, max t] and interpolated (Clenshaw). The interpolant
is checked against the direct rule at points between the Chebyshev points; if any check differs
by more than ``TOL`` (relative to the moment's scale) the direct rule is used at every t, so the
result is the direct rule's to ``TOL`` either way (tests/test_line_moments.py).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache

import numpy as np

from asymptotics.coefficients.functions import Function
from asymptotics.coefficients.quadrature import gaussian_moments
from asymptotics.core.coldstart import kernel

#: Chebyshev points per piece, the pieces' largest half-length, the agreement required
M_CHEB = 32
HALF_LENGTH = 1.0
TOL = 1e-13
#: check points per piece, as fractions of its half-length (between Chebyshev points)
CHECKS = (-0.913, -0.371, 0.127, 0.652, 0.977)


@lru_cache(maxsize=4)
def _cheb(m: int) -> tuple[np.ndarray, np.ndarray]:
    """First-kind Chebyshev points x_k and the matrix taking values there to coefficients."""
    k = np.arange(m)
    x = np.cos(np.pi * (k + 0.5) / m)
    T = np.cos(np.pi * np.outer(np.arange(m), k + 0.5) / m) * (2.0 / m)
    T[0] *= 0.5
    return x, T


@kernel(cache=True, error_model="numpy")
def _clenshaw(coef: np.ndarray, lo: float, h: float, t: np.ndarray) -> np.ndarray:
    """Kernel: the piecewise Chebyshev series ``coef`` (pieces, m, q) on the pieces
    [lo + 2 h i, lo + 2 h (i + 1)], at the points t (n): (n, q)."""
    n_pieces, m, q = coef.shape
    out = np.empty((t.shape[0], q))
    for i in range(t.shape[0]):
        p = min(int((t[i] - lo) / (2.0 * h)), n_pieces - 1)
        x = min(max((t[i] - (lo + h * (2 * p + 1))) / h, -1.0), 1.0)
        for c in range(q):
            b1 = 0.0
            b2 = 0.0
            for j in range(m - 1, 0, -1):
                b1, b2 = coef[p, j, c] + 2.0 * x * b1 - b2, b1
            out[i, c] = coef[p, 0, c] + x * b1 - b2
    return out


def line_moments(fn: Function, t: np.ndarray, s: float, **kw) -> np.ndarray:
    """Rows (E F, E[F Z], E F^2) of F(t_i + s Z) for every t_i, as ``gaussian_moments(fn, t,
    s)`` with the same rule options ``kw`` (to :data:`TOL` of each moment's scale)."""
    return on_line(lambda pts: gaussian_moments(fn, pts, np.full(pts.shape[0], s), **kw), t, s)


def on_line(direct: Callable[[np.ndarray], np.ndarray], t: np.ndarray,
            smoothness: float) -> np.ndarray:
    """``direct(t)`` ((n, q): q smooth functions of a scalar, evaluated by a fixed rule) through
    the checked piecewise Chebyshev interpolant of the module docstring; pieces of half-length
    at most ``smoothness`` (the scale on which the functions vary; 0: not smooth, direct)."""
    t = np.ascontiguousarray(t, dtype=np.float64)
    n = t.shape[0]
    lo, hi = (float(t.min()), float(t.max())) if n else (0.0, 0.0)
    h = min(HALF_LENGTH, smoothness)
    n_pieces = max(1, int(np.ceil((hi - lo) / (2 * h)))) if h > 0 else 0
    if h <= 0 or n_pieces * (M_CHEB + len(CHECKS)) >= n // 2:  # no gain (or not smooth)
        return direct(t)
    h = max((hi - lo) / (2 * n_pieces), 1e-300)
    x, T = _cheb(M_CHEB)
    centres = lo + h * (2 * np.arange(n_pieces) + 1)
    checks = np.asarray(CHECKS)
    pts = np.concatenate([(centres[:, None] + h * x[None, :]).ravel(),
                          (centres[:, None] + h * checks[None, :]).ravel()])
    vals = np.asarray(direct(pts), dtype=np.float64)
    q = vals.shape[1]
    nodes = vals[:n_pieces * M_CHEB].reshape(n_pieces, M_CHEB, q)
    coef = np.ascontiguousarray(np.einsum("jk,pkq->pjq", T, nodes))  # (pieces, m, q)
    approx = _clenshaw(coef, lo, h, pts[n_pieces * M_CHEB:])
    scales = np.maximum(np.max(np.abs(vals), axis=0), 1e-300)
    if not np.all(np.abs(approx - vals[n_pieces * M_CHEB:]) <= TOL * scales[None, :]):
        return direct(t)
    return _clenshaw(coef, lo, h, t)
