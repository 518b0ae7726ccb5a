"""Gaussian moments of F(t + s Z) at many shifts t and one scale s, through a piecewise
Chebyshev interpolant of the quadrature itself (docs/THEORY.md §10.2).

The K-group tables need ``gaussian_moments(F, t, s)`` at every kappa node, where t = u_g . kappa
takes thousands of distinct values for r >= 2 spikes. The moments are smooth functions of t
(the Gaussian smooths F's kinks when s > 0), so they are computed by the same rule on the
Chebyshev points of short pieces of [min t, max t] and interpolated (Clenshaw). The interpolant
is checked against the direct rule at points between the Chebyshev points; if any check differs
by more than ``TOL`` (relative to the moment's scale on the piece: sqrt(max E F^2) for E F and
E[F Z], max E F^2 for E F^2) the direct rule is used at the t of that piece, so the result is
the direct rule's to ``TOL`` either way (tests/test_line_moments.py).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import lru_cache

import numpy as np

from asymptotics.coefficients.functions import Function
from asymptotics.coefficients.quadrature import N_SMOOTH, gauss_hermite, gaussian_moments
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
def chebyshev_basis(m: int) -> tuple[np.ndarray, np.ndarray]:
    """First-kind Chebyshev points x_k and the matrix taking values there to coefficients."""
    k = np.arange(m)
    x = np.cos(np.pi * (k + 0.5) / m)
    T = np.cos(np.pi * np.outer(np.arange(m), k + 0.5) / m) * (2.0 / m)
    T[0] *= 0.5
    return x, T


@lru_cache(maxsize=4)
def mirrored_points(m: int) -> np.ndarray:
    """:func:`chebyshev_basis`' points made exactly antisymmetric (x_{m-1-k} = -x_k, the first
    half kept; an ulp from cos' at most): the points of the pieces [2 h i, 2 h (i + 1)] and
    [-2 h (i + 1), -2 h i] are then exact negatives of each other (:func:`on_line`'s ``mirror``)."""
    x = chebyshev_basis(m)[0].copy()
    x[m - m // 2:] = -x[:m // 2][::-1]
    return x


@lru_cache(maxsize=4)
def piece_offsets(m: int, mirror: bool) -> np.ndarray:
    """(2, m + len(CHECKS)): a piece's points as fractions of its half-length from its centre,
    its Chebyshev points (:func:`mirrored_points` if ``mirror``) then :data:`CHECKS`; row 1 that
    of a piece left of 0, whose checks ``mirror`` negates (cached: do not modify)."""
    x = mirrored_points(m) if mirror else chebyshev_basis(m)[0]
    c = np.asarray(CHECKS)
    return np.array([np.concatenate([x, c]), np.concatenate([x, -c if mirror else c])])


@kernel(cache=True, error_model="numpy")
def _by_piece(t: np.ndarray, lo: float, h: float, n_pieces: int) -> tuple:
    """Kernel: (starts (n_pieces + 1), order, x) of the points t sorted by their piece (a
    counting sort, stable): the points of piece p are t[order[starts[p]:starts[p + 1]]], x their
    coordinates in [-1, 1] on it, in that order."""
    n = t.shape[0]
    piece = np.empty(n, dtype=np.int64)
    starts = np.zeros(n_pieces + 1, dtype=np.int64)
    for i in range(n):
        p = max(min(int((t[i] - lo) / (2.0 * h)), n_pieces - 1), 0)
        piece[i] = p
        starts[p + 1] += 1
    for p in range(n_pieces):
        starts[p + 1] += starts[p]
    nxt = starts[:-1].copy()
    order = np.empty(n, dtype=np.int64)
    x = np.empty(n)
    for i in range(n):
        p = piece[i]
        k = nxt[p]
        nxt[p] = k + 1
        order[k] = i
        x[k] = min(max((t[i] - (lo + h * (2 * p + 1))) / h, -1.0), 1.0)
    return starts, order, x


@kernel(cache=True, error_model="numpy")
def _lanes(c: np.ndarray, y: np.ndarray, b1: np.ndarray, b2: np.ndarray) -> int:
    """Kernel: the recurrence b_j = c_j + y b_{j+1} - b_{j+2} (y = 2 x) of one series c (m) at
    the points y side by side (a loop over the points, which the compiler vectorises), two steps
    at a time from j = m - 1 down to j = 2 or 1; returns the next j (1: one step left, 0: none),
    b1, b2 then b_{j+1}, b_{j+2}."""
    n = y.shape[0]
    for k in range(n):
        b1[k] = 0.0
        b2[k] = 0.0
    j = c.shape[0] - 1
    while j >= 2:
        ca = c[j]
        cb = c[j - 1]
        for k in range(n):
            a = b1[k]
            b = ca + y[k] * a - b2[k]
            b1[k] = cb + y[k] * b - a
            b2[k] = b
        j -= 2
    return j


#: points evaluated side by side (their recurrences' state stays in the first-level cache)
LANES = 512


@kernel(cache=True, error_model="numpy")
def _clenshaw(coef: np.ndarray, lo: float, h: float, t: np.ndarray) -> np.ndarray:
    """Kernel: the piecewise Chebyshev series ``coef`` (pieces, m, q) on the pieces
    [lo + 2 h i, lo + 2 h (i + 1)], at the points t (n): (n, q). The points are taken by piece,
    up to ``LANES`` side by side (:func:`_lanes`); each point's numbers are those of its own
    recurrence b_j = c_j + (2 x) b_{j+1} - b_{j+2}, f = c_0 + x b_1 - b_2 (the same operations
    in the same order, bit for bit: tests/test_clen_clenshaw.py)."""
    n_pieces, m, q = coef.shape
    out = np.empty((t.shape[0], q))
    starts, order, xs = _by_piece(t, lo, h, n_pieces)
    x2 = 2.0 * xs
    ct = np.ascontiguousarray(coef.transpose(0, 2, 1))  # (pieces, q, m)
    b1 = np.empty(LANES)
    b2 = np.empty(LANES)
    for p in range(n_pieces):
        for s in range(starts[p], starts[p + 1], LANES):
            e = min(s + LANES, starts[p + 1])
            y, x, at = x2[s:e], xs[s:e], order[s:e]
            for c in range(q):
                j = _lanes(ct[p, c], y, b1, b2)
                c0 = coef[p, 0, c]
                if j == 1:  # the last step, then the sum
                    c1 = coef[p, 1, c]
                    for k in range(e - s):
                        a = b1[k]
                        b = c1 + y[k] * a - b2[k]
                        out[at[k], c] = c0 + x[k] * b - a
                else:
                    for k in range(e - s):
                        out[at[k], c] = c0 + x[k] * b1[k] - b2[k]
    return out


@kernel(cache=True, error_model="numpy")
def _new_pieces(vals: np.ndarray, T: np.ndarray, index: np.ndarray, h: float,
                checks: np.ndarray, moments: bool, tol: float) -> tuple:
    """Kernel: the Chebyshev series of new pieces from the direct values ``vals`` (pieces,
    M_CHEB + checks, q) (the values at the Chebyshev points, then at the check points ``checks``
    (pieces, checks), fractions of each piece's half-length from its centre) and
    whether each is accepted: the series (the arithmetic of ``_clenshaw`` on one piece) agrees
    with the values at the check points to ``tol`` times each column's scale, the largest
    |value| of the column on the piece or, where the columns are (E F, E[F Z], E F^2)
    (``moments``), sqrt(max E F^2) for the first two and max E F^2 for the third if larger
    (by Cauchy-Schwarz |E F| and |E[F Z]| are at most sqrt(E F^2))."""
    n_new, _, q = vals.shape
    m = T.shape[0]
    coef = np.zeros((n_new, m, q))
    ok = np.ones(n_new, dtype=np.bool_)
    scale = np.empty(q)
    b1 = np.empty(q)
    b2 = np.empty(q)
    for p in range(n_new):
        for j in range(m):
            for k in range(m):
                for c in range(q):
                    coef[p, j, c] += T[j, k] * vals[p, k, c]
        for c in range(q):
            big = 0.0
            for k in range(m):
                big = max(big, abs(vals[p, k, c]))
            scale[c] = max(big, 1e-300)
        if moments:
            s2 = 0.0
            for k in range(m):
                s2 = max(s2, abs(vals[p, k, 2]))
            scale[0] = max(scale[0], np.sqrt(s2))
            scale[1] = max(scale[1], np.sqrt(s2))
            scale[2] = max(scale[2], s2)
        lo = 2 * h * index[p]
        for c_i in range(checks.shape[1]):
            t = h * (2 * index[p] + 1) + h * checks[p, c_i]
            x = min(max((t - (lo + h * 1)) / h, -1.0), 1.0)
            x2 = 2.0 * x
            b1[:] = 0.0
            b2[:] = 0.0
            for j in range(m - 1, 0, -1):
                for c in range(q):
                    b = coef[p, j, c] + x2 * b1[c] - b2[c]
                    b2[c] = b1[c]
                    b1[c] = b
            for c in range(q):
                approx = coef[p, 0, c] + x * b1[c] - b2[c]
                if not abs(approx - vals[p, m + c_i, c]) <= tol * scale[c]:
                    ok[p] = False
    return coef, ok


def line_moments(fn: Function, t: np.ndarray, s: float, **kw) -> np.ndarray:
    """Rows (E F, E[F Z], E F^2) of F(t_i + s Z) for every t_i, as ``gaussian_moments(fn, t,
    s)`` with the same rule options ``kw`` (to :data:`TOL` of each moment's scale: sqrt(E F^2)
    for the first two, E F^2 for the third, their largest values on the piece; by
    Cauchy-Schwarz |E F| and |E[F Z]| are at most sqrt(E F^2))."""
    return on_line(lambda pts: direct_moments(fn, pts, float(s), **kw), t, s,
                   key=("gaussian", fn, float(s), tuple(sorted(kw.items()))),
                   moments=True)


def direct_moments(fn: Function, pts: np.ndarray, s: float, **kw) -> np.ndarray:
    """``gaussian_moments(fn, pts, s, **kw)`` at one scale s; for a smooth F, whose
    Gauss-Hermite rule is the same at every shift, without forming the rule's (shifts x nodes)
    copies (the same sums)."""
    if fn.kinks and s != 0.0:
        return gaussian_moments(fn, pts, np.full(pts.shape[0], s), **kw)
    x, w = gauss_hermite(int(kw.get("n_smooth", N_SMOOTH)))
    arg = pts[:, None] + (s * x)[None, :]  # (the products s x_j of the rule's broadcast)
    values = fn(arg)
    if not np.all(np.isfinite(values)):
        raise ValueError(f"function {fn.name!r} returned non-finite values at quadrature nodes")
    return _shared_moments(np.ascontiguousarray(values), x, w)


@kernel(cache=True, error_model="numpy")
def _shared_moments(values: np.ndarray, z: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Kernel: ``quadrature.weighted_moments`` for one rule (z, w) shared by every row."""
    m, n = values.shape
    out = np.zeros((m, 3))
    for i in range(m):
        s0 = 0.0
        s1 = 0.0
        s2 = 0.0
        for j in range(n):
            wf = w[j] * values[i, j]
            s0 += wf
            s1 += wf * z[j]
            s2 += wf * values[i, j]
        out[i, 0] = s0
        out[i, 1] = s1
        out[i, 2] = s2
    return out


#: the pieces computed so far, by (function, scale, rule) and piece index: a piece depends on
#: nothing else (the pieces are a fixed lattice), so the rules of a ladder, the points of a
#: curve and the lam of a grid share them; the numbers do not depend on what was cached
_PIECES: dict = {}
CACHE_KEYS = 512


def clear_cache() -> None:
    """Forget the cached pieces (benchmarks time a first computation)."""
    _PIECES.clear()


def on_line(direct: Callable[[np.ndarray], np.ndarray], t: np.ndarray, smoothness: float,
            key: object = None, moments: bool = False, gain: float = GAIN,
            mirror: bool = False, reach: tuple[float, float] | None = None) -> np.ndarray:
    """``direct(t)`` ((n, q): q smooth functions of a scalar, evaluated by a fixed rule) through
    the checked piecewise Chebyshev interpolant of the module docstring, on the pieces
    [2 h i, 2 h (i + 1)] with h = min(1, ``smoothness``) (the scale on which the functions
    vary; 0: not smooth, direct). ``key``: what identifies ``direct`` (hashable; None: no
    cache). A piece is accepted when its checks agree to ``TOL`` times each column's scale
    (``_new_pieces``; ``moments``: the columns are (E F, E[F Z], E F^2)); ``gain``: as
    :data:`GAIN` (a caller whose next rule reuses the pieces passes more); ``mirror``: the
    pieces' Chebyshev points by :func:`mirrored_points` (a ``direct`` that evaluates an odd
    function's mirror pairs once; ``key`` must tell such pieces apart); ``reach``: (min, max) of
    the shifts of a later call (a ladder's next rule) whose pieces are built with these (a
    piece depends on its index alone: the same numbers, one evaluation instead of two)."""
    t = np.ascontiguousarray(t, dtype=np.float64)
    n = t.shape[0]
    h = min(HALF_LENGTH, smoothness)
    if not h > 0 or n == 0:
        return direct(t)
    p_lo, p_hi = int(np.floor(t.min() / (2 * h))), int(np.floor(t.max() / (2 * h)))
    n_pieces = p_hi - p_lo + 1
    if n_pieces * (M_CHEB + len(CHECKS)) >= gain * n:  # no gain, even with the pieces reused
        return direct(t)
    try:
        store = _PIECES.setdefault(key, {}) if key is not None else {}
    except TypeError:  # an unhashable key: no cache
        store = {}
    if len(_PIECES) > CACHE_KEYS:
        _PIECES.clear()
        store = {}
    last = store.get("stack")  # (the last range's pieces stacked: the next rule's, often)
    if last is not None and last[0] == p_lo and last[1] == p_hi:
        return _clenshaw(last[2], 2 * h * p_lo, h, t)
    lo, hi = p_lo, p_hi
    if reach is not None and key is not None:
        lo = min(lo, int(math.floor(reach[0] / (2 * h))))
        hi = max(hi, int(math.floor(reach[1] / (2 * h))))
    todo = [i for i in range(lo, hi + 1) if i not in store]
    if todo:
        T = chebyshev_basis(M_CHEB)[1]
        index = np.asarray(todo, dtype=np.int64)
        centres = h * (2 * index.astype(np.float64) + 1)
        # per piece: its Chebyshev points, then its check points (``mirror``: negated on a piece
        # left of 0, the exact negatives of its mirror piece's, between the points as they are)
        offsets = piece_offsets(M_CHEB, mirror)[(index < 0).astype(np.intp)]
        checks = np.ascontiguousarray(offsets[:, M_CHEB:])
        pts = (centres[:, None] + h * offsets).ravel()
        vals = np.asarray(direct(pts), dtype=np.float64)
        vals = np.ascontiguousarray(vals.reshape(len(todo), M_CHEB + len(CHECKS), -1))
        coef, ok = _new_pieces(vals, T, index, h, checks, moments, TOL)
        for j, i in enumerate(todo):
            store[i] = coef[j] if ok[j] else None
    bad = [i - p_lo for i in range(p_lo, p_hi + 1) if store[i] is None]
    if len(bad) == n_pieces:
        return direct(t)
    if bad:  # the direct rule at the shifts of the pieces that failed their checks only
        fill = np.zeros_like(next(store[i] for i in range(p_lo, p_hi + 1) if store[i] is not None))
        coef = np.array([fill if store[i] is None else store[i] for i in range(p_lo, p_hi + 1)])
        out = _clenshaw(coef, 2 * h * p_lo, h, t)
        at = np.minimum(((t - 2 * h * p_lo) / (2 * h)).astype(np.int64), n_pieces - 1)
        miss = np.isin(np.maximum(at, 0), bad)  # (the pieces ``_clenshaw`` takes them in)
        out[miss] = direct(t[miss])
        return out
    coef = np.array([store[i] for i in range(p_lo, p_hi + 1)])  # (np.stack's array, faster)
    store["stack"] = (p_lo, p_hi, coef)
    return _clenshaw(coef, 2 * h * p_lo, h, t)


@kernel(cache=True, error_model="numpy")
def relu_moments(pts: np.ndarray, s: float, t: np.ndarray, wt: np.ndarray, half_width: float
                 ) -> np.ndarray:
    """Kernel: ``gaussian_moments(relu, pts, s)`` (s > 0) in one pass (the K-group tables,
    ``spiked.coefficients.moments``): per shift p the
    Gauss-Legendre pieces [-L, b], [b, L] split at the kink b = (0 - p)/s, the Gaussian density
    in the weights, the moments summed in the same order (exp from the C library instead of
    numpy's vectorised one: within an ulp); a shift whose split is clamped at -L takes the
    weights of the whole interval computed once (the same numbers)."""
    m, n = pts.shape[0], t.shape[0]
    L = half_width
    c = math.sqrt(2 * math.pi)
    out = np.zeros((m, 3))
    # the whole [-L, L] (the split clamped at b = -L) by the loop's own expressions, once
    z_f = (0.5 * (-L + L)) + (0.5 * (L - (-L))) * t
    w_f = np.empty(n)
    for j in range(n):
        w_f[j] = (0.5 * (L - (-L))) * wt[j] * np.exp(-0.5 * z_f[j] * z_f[j]) / c
    for i in range(m):
        p = pts[i]
        b = (0.0 - p) / s
        if not np.isfinite(b):
            b = L
        b = min(max(b, -L), L)
        s0 = s1 = s2 = 0.0
        full = b == -L and np.isfinite(p)  # ([-L, b] empty: its terms add exact zeros)
        for piece in range(1 if full else 0, 2):
            lo, hi = (-L, b) if piece == 0 else (b, L)
            mid, half = 0.5 * (lo + hi), 0.5 * (hi - lo)
            for j in range(n):
                z = z_f[j] if full else mid + half * t[j]
                v = max(p + s * z, 0.0)
                if v == 0.0:  # (a zero term adds exact zeros: its weight's exp is not needed)
                    continue
                w = w_f[j] if full else half * wt[j] * np.exp(-0.5 * z * z) / c
                wf = w * v
                s0 += wf
                s1 += wf * z
                s2 += wf * v
        out[i, 0], out[i, 1], out[i, 2] = s0, s1, s2
    return out


@kernel(cache=True, error_model="numpy")
def rows_moments(values: np.ndarray, z: np.ndarray, w: np.ndarray) -> tuple:
    """Kernel: (finite, rows (sum w F, sum w F z, sum w F^2)) for one rule (z, w) shared by every
    row: ``line_moments._shared_moments``' sums in the same order, four rows at a time."""
    m, n = values.shape
    out = np.zeros((m, 3))
    finite = True
    m4 = m - m % 4
    for i in range(0, m4, 4):
        a0, a1, a2, b0, b1, b2, c0, c1, c2, d0, d1, d2 = (0.0,) * 12
        for j in range(n):
            va, vb, vc, vd = values[i, j], values[i + 1, j], values[i + 2, j], values[i + 3, j]
            wa, wb, wc, wd = w[j] * va, w[j] * vb, w[j] * vc, w[j] * vd
            a0 += wa
            a1 += wa * z[j]
            a2 += wa * va
            b0 += wb
            b1 += wb * z[j]
            b2 += wb * vb
            c0 += wc
            c1 += wc * z[j]
            c2 += wc * vc
            d0 += wd
            d1 += wd * z[j]
            d2 += wd * vd
        out[i, 0], out[i, 1], out[i, 2] = a0, a1, a2
        out[i + 1, 0], out[i + 1, 1], out[i + 1, 2] = b0, b1, b2
        out[i + 2, 0], out[i + 2, 1], out[i + 2, 2] = c0, c1, c2
        out[i + 3, 0], out[i + 3, 1], out[i + 3, 2] = d0, d1, d2
    for i in range(m4, m):
        s0 = 0.0
        s1 = 0.0
        s2 = 0.0
        for j in range(n):
            wf = w[j] * values[i, j]
            s0 += wf
            s1 += wf * z[j]
            s2 += wf * values[i, j]
        out[i, 0], out[i, 1], out[i, 2] = s0, s1, s2
    for i in range(m):
        for c in range(3):
            if not np.isfinite(out[i, c]):
                finite = False
    return finite, out
