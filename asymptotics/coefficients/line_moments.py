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
#: interpolate when the pieces cost fewer direct evaluations than GAIN times the shifts (the
#: pieces are reused by the next rule of a ladder and the other points of a curve)
GAIN = 2.0
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
    return on_line(lambda pts: gaussian_moments(fn, pts, np.full(pts.shape[0], s), **kw), t, s,
                   key=("gaussian", fn, float(s), tuple(sorted(kw.items()))))


#: the pieces computed so far, by (function, scale, rule) and piece index: a piece depends on
#: nothing else (the pieces are a fixed lattice), so the rules of a ladder, the points of a
#: curve and the lam of a grid share them; the numbers do not depend on what was cached
_PIECES: dict = {}
CACHE_KEYS = 512


def clear_cache() -> None:
    """Forget the cached pieces (benchmarks time a first computation)."""
    _PIECES.clear()


def on_line(direct: Callable[[np.ndarray], np.ndarray], t: np.ndarray, smoothness: float,
            key: object = None) -> np.ndarray:
    """``direct(t)`` ((n, q): q smooth functions of a scalar, evaluated by a fixed rule) through
    the checked piecewise Chebyshev interpolant of the module docstring, on the pieces
    [2 h i, 2 h (i + 1)] with h = min(1, ``smoothness``) (the scale on which the functions
    vary; 0: not smooth, direct). ``key``: what identifies ``direct`` (hashable; None: no
    cache)."""
    t = np.ascontiguousarray(t, dtype=np.float64)
    n = t.shape[0]
    h = min(HALF_LENGTH, smoothness)
    if not h > 0 or n == 0:
        return direct(t)
    p_lo, p_hi = int(np.floor(t.min() / (2 * h))), int(np.floor(t.max() / (2 * h)))
    n_pieces = p_hi - p_lo + 1
    if n_pieces * (M_CHEB + len(CHECKS)) >= GAIN * n:  # no gain, even with the pieces reused
        return direct(t)
    try:
        store = _PIECES.setdefault(key, {}) if key is not None else {}
    except TypeError:  # an unhashable key: no cache
        store = {}
    if len(_PIECES) > CACHE_KEYS:
        _PIECES.clear()
        store = {}
    todo = [i for i in range(p_lo, p_hi + 1) if i not in store]
    if todo:
        x, T = _cheb(M_CHEB)
        centres = h * (2 * np.asarray(todo, dtype=np.float64) + 1)
        checks = np.asarray(CHECKS)
        m = len(todo) * M_CHEB
        pts = np.concatenate([(centres[:, None] + h * x[None, :]).ravel(),
                              (centres[:, None] + h * checks[None, :]).ravel()])
        vals = np.asarray(direct(pts), dtype=np.float64)
        q = vals.shape[1]
        coef = np.einsum("jk,pkq->pjq", T, vals[:m].reshape(len(todo), M_CHEB, q))
        chk = vals[m:].reshape(len(todo), len(CHECKS), q)
        for j, i in enumerate(todo):
            c = np.ascontiguousarray(coef[j:j + 1])
            approx = _clenshaw(c, 2 * h * i, h, h * (2 * i + 1) + h * checks)
            scale = np.maximum(np.max(np.abs(vals[j * M_CHEB:(j + 1) * M_CHEB]), axis=0),
                               1e-300)
            ok = np.all(np.abs(approx - chk[j]) <= TOL * scale[None, :])
            store[i] = c[0] if ok else None
    if any(store[i] is None for i in range(p_lo, p_hi + 1)):
        return direct(t)
    coef = np.ascontiguousarray(np.stack([store[i] for i in range(p_lo, p_hi + 1)]))
    return _clenshaw(coef, 2 * h * p_lo, h, t)
