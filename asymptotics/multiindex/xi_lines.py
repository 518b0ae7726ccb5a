"""The xi-moments of the steps' mapping as functions of one pre-activation shift (THEORY.md §12.2).

Per node of the steps' integrals and per group, ``F = E sigma``, ``m1 = E sigma'``,
``m2 = E[xi sigma']`` and ``E sigma'^2`` at the pre-activation ``sqrt(c) xi + M`` depend on the
group's shift ``M`` alone. They are smooth in ``M`` (the Gaussian ``xi`` smooths a kinked sigma),
so they are taken from a piecewise Chebyshev interpolant of the xi rule itself, as in
``asymptotics.coefficients.line_moments`` (same lattice of pieces, same checks), with two
differences that matter on the steps' wide grids of shifts (|M| up to tens):

* a piece is checked against the rule to ``TOL`` of the moment's largest value over the pieces
  in use (not of its own: far out, where sigma is flat, ``m1`` and ``m2`` are rounding noise
  around zero, and a piece-relative check refuses every interpolant there);
* a refused piece falls back to the rule at the shifts inside that piece only.

The numbers are the rule's to ``TOL`` of each moment's scale either way, and do not depend on
which pieces earlier calls cached (tests/test_steps_speed.py compares with the rule).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from scipy.special import ndtr

from asymptotics.coefficients import step_quadrature
from asymptotics.coefficients.functions import Function, get_function
from asymptotics.coefficients.line_moments import chebyshev_basis
from asymptotics.coefficients.step_quadrature import SOFTPLUS, TANH, erf_affine, erf_closed, xi_sums
from asymptotics.core import coldstart
from asymptotics.core.meta import scratch
from asymptotics.multiindex.compiled.clenshaw import chebyshev_pieces, moments_into
from asymptotics.multiindex.compiled.clenshaw import clenshaw4 as _clenshaw4  # noqa: F401
from asymptotics.multiindex.compiled.softplus import pairs as _softplus_pairs

#: Chebyshev points per piece, the pieces' largest half-length, the agreement required, the
#: check points per piece (fractions of its half-length), the gain needed to interpolate
M_CHEB = 32
HALF_LENGTH = 1.0
#: the pieces' largest half-length for a group's own xi rule (a wide bulk: smooth on its scale)
WIDE_HALF_LENGTH = 8.0
TOL = 1e-13
#: a Chebyshev series' trailing terms summing (in absolute value) to below this fraction of the
#: moment's scale are not summed (:func:`on_pieces`)
TAIL = 1e-14
CHECKS = (-0.913, -0.371, 0.127, 0.652, 0.977)
GAIN = 2.0
#: pre-activations per block of the rule
DIRECT_BLOCK = 1 << 15  # its temporaries stay in cache (and heap: no page faults)
#: bulk scales closer than this (relative) are one scale (the moments move by as little)
SAME_SCALE = 1e-14

#: per (sigma, scale, xi rule): piece index -> (Chebyshev coefficients (m, q), the largest
#: check error (q), the largest value (q)); a piece depends on nothing else
_PIECES: dict = {}
CACHE_KEYS = 256


def clear_cache() -> None:
    """Forget the cached pieces."""
    _PIECES.clear()


def _compiled(disp, args: tuple, tiny: tuple | None = None) -> bool:
    """Whether the kernel ``disp`` runs compiled (in this process or numba's cache); otherwise
    one tiny call queues its compilation (``asymptotics.core.coldstart``) and the numpy path
    of :func:`chebyshev_pieces` runs meanwhile (the kernel interpreted would be far slower)."""
    return coldstart.kernel_ready(
        disp, args,
        lambda: disp(*(tiny or (args[0], args[1], args[2], np.ascontiguousarray(args[3][:1])))))


def _pieces(direct: Callable[[np.ndarray], np.ndarray], todo: list[int], h: float) -> dict:
    """New pieces ``todo``: coefficients, check errors and largest values."""
    x, T = chebyshev_basis(M_CHEB)
    checks = np.asarray(CHECKS)
    centres = h * (2 * np.asarray(todo, dtype=np.float64) + 1)
    m = len(todo) * M_CHEB
    pts = np.concatenate([(centres[:, None] + h * x[None, :]).ravel(),
                          (centres[:, None] + h * checks[None, :]).ravel()])
    vals = np.asarray(direct(pts), dtype=np.float64)
    q, n = vals.shape[1], len(todo)
    cheb, chk = vals[:m].reshape(n, M_CHEB, q), vals[m:].reshape(n, len(CHECKS), q)
    fit = step_quadrature.chebyshev_fit  # the arithmetic below, compiled (once it is)
    both = np.ascontiguousarray(np.concatenate([cheb, chk], axis=1))
    if _compiled(fit, args := (both, T, checks, float(h)), (both[:1], T, checks, float(h))):
        coef, err, big = fit(*args)
        return {i: (coef[j], err[j], big[j]) for j, i in enumerate(todo)}
    coef = np.einsum("jk,pkq->pjq", T, cheb)
    # every check in one call: the new pieces laid side by side from 0
    at = (h * (2 * np.arange(n, dtype=np.float64) + 1))[:, None] + h * checks[None, :]
    err = np.max(np.abs(chebyshev_pieces(coef, 0.0, h, at.ravel()).reshape(chk.shape) - chk),
                 axis=1)
    big = np.maximum(np.max(np.abs(cheb), axis=1), np.max(np.abs(chk), axis=1))
    return {i: (coef[j], err[j], big[j]) for j, i in enumerate(todo)}


def on_pieces(direct: Callable[[np.ndarray], np.ndarray], t: np.ndarray, smoothness: float,
              key: object, half: float = HALF_LENGTH) -> np.ndarray:
    """``direct(t)`` ((n, q): q smooth functions of a scalar by a fixed rule) through the checked
    piecewise interpolant of the module docstring; pieces of half-length min(half, smoothness)."""
    t = np.ascontiguousarray(t, dtype=np.float64)
    n = t.shape[0]
    tab = piece_table(direct, t.min(), t.max(), n, smoothness, key, half) if n else None
    if tab is None:
        return direct(t)
    coef, mp, lo, h, bad, fix = tab
    out = chebyshev_pieces(coef, lo, h, t, mp)
    for i, sel in fix(t):  # a refused piece: its halves (or the rule)
        out[sel] = _halves(direct, t[sel], *i)
    return out


def piece_table(direct: Callable[[np.ndarray], np.ndarray], t_min: float, t_max: float, n: int,
                smoothness: float, key: object, half: float) -> tuple | None:
    """:func:`on_pieces`' series for ``n`` points in [t_min, t_max]: ``(coef, mp, lo, h, bad,
    fix)``, ``fix(t)`` the refused pieces' ``_halves`` arguments and their points of ``t``;
    None where the rule is summed directly."""
    h = min(half, smoothness)
    if not h > 0 or n == 0:
        return None
    p_lo, p_hi = math.floor(t_min / (2 * h)), math.floor(t_max / (2 * h))
    n_pieces = p_hi - p_lo + 1
    if n_pieces * (M_CHEB + len(CHECKS)) >= GAIN * n:
        return None
    if len(_PIECES) > CACHE_KEYS:
        _PIECES.clear()
    store = _PIECES.setdefault(key, {}) if key is not None else {}
    todo = [i for i in range(p_lo, p_hi + 1) if i not in store]
    if todo:
        store.update(_pieces(direct, todo, h))
    used = [store[i] for i in range(p_lo, p_hi + 1)]
    scale = np.maximum(np.max(np.stack([u[2] for u in used]), axis=0), 1e-300)
    bad = np.any(np.stack([u[1] for u in used]) > TOL * scale, axis=1)
    coef = np.stack([u[0] for u in used])
    # the series' tail below TAIL of each column's scale (over all pieces) is dropped: the sums
    # move by less than that, and Clenshaw runs over the terms that matter only
    tail = np.cumsum(np.max(np.abs(coef), axis=0)[::-1], axis=0)[::-1]  # (m, q)
    keep = int(np.count_nonzero(np.any(tail > TAIL * scale[None, :], axis=1)))
    coef = np.array(coef[:, :max(keep, 2)])
    # and per piece (flat pieces, far from where sigma bends, need a few terms)
    tails = np.cumsum(np.abs(coef)[:, ::-1], axis=1)[:, ::-1] > TAIL * scale  # (pieces, m, q)
    mp = np.maximum(np.count_nonzero(np.any(tails, axis=2), axis=1), 2)
    coef[np.arange(coef.shape[1])[None, :] >= mp[:, None]] = 0.0
    lo = 2 * h * p_lo

    def fix(x: np.ndarray) -> list:
        piece = np.clip(np.floor((x - lo) / (2.0 * h)), 0, n_pieces - 1) if bad.any() else None
        return [((p_lo + int(i), h, store, scale), sel) for i in np.flatnonzero(bad)
                if (sel := np.flatnonzero(piece == i)).size]

    return coef, mp, lo, h, bad, fix


def _halves(direct: Callable[[np.ndarray], np.ndarray], t: np.ndarray, i: int, h: float,
            store: dict, scale: np.ndarray) -> np.ndarray:
    """The points ``t`` of a refused piece ``i`` (of :func:`on_pieces`): its two halves' checked
    interpolants (to TOL of the same scale), the rule itself in a half refused again."""
    if ("half", i) not in store:
        sub = _pieces(direct, [2 * i, 2 * i + 1], 0.5 * h)
        store[("half", i)] = [np.stack(x) for x in zip(sub[2 * i], sub[2 * i + 1], strict=True)]
    coef, err, _ = store[("half", i)]
    half = np.clip(np.floor((t - 2 * h * i) / h), 0, 1).astype(np.int64)
    ok = np.all(err <= TOL * scale, axis=1)[half]
    tails = np.cumsum(np.abs(coef)[:, ::-1], axis=1)[:, ::-1] > TAIL * scale
    mp = np.maximum(np.count_nonzero(np.any(tails, axis=2), axis=1), 2)
    coef = np.where(np.arange(coef.shape[1])[None, :, None] >= mp[:, None, None], 0.0, coef)
    out = np.empty((len(t), coef.shape[2]))
    for sel, f in ((ok, lambda x: chebyshev_pieces(coef, 2 * h * i, h / 2, x, mp)), (~ok, direct)):
        out[sel] = f(t[sel]) if sel.any() else out[sel]
    return out


def _softplus_fdf(z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """softplus and its derivative (the logistic) from one exponential: with e = exp(-|z|),
    softplus = max(z, 0) + log1p(e), sigmoid = 1 / (1 + e) for z >= 0, e / (1 + e) below
    (the registered pair, ``logaddexp`` and ``expit``, to 5e-16 relative at half the cost)."""
    e = np.exp(-np.abs(z))
    f = np.log1p(e)
    f += np.maximum(z, 0.0)
    d = 1.0 + e
    np.divide(np.where(z >= 0, 1.0, e), d, out=d)
    return f, d


def value_and_derivative(sigma: Function, z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``sigma.value_and_derivative(z)``; the registered softplus by :func:`_softplus_fdf`."""
    if (sigma.identity is None and sigma.name == "softplus" and sigma.fdf is None
            and sigma.expression == "log(1 + exp(z))"):
        return _softplus_fdf(z)
    return sigma.value_and_derivative(z)


def _on_rule(sigma: Function, sc: float, M: np.ndarray, xi: np.ndarray) -> tuple:
    """:func:`value_and_derivative` at ``sc xi + M``; softplus by ``compiled.softplus.pairs``."""
    if sigma is get_function("softplus") and (out := _softplus_pairs(sc, M, xi)) is not None:
        return out
    return value_and_derivative(sigma, sc * xi[None, :] + M[:, None])


def _row_blocks(n: int, nodes: int) -> list[slice]:
    """Blocks of about :data:`DIRECT_BLOCK` pre-activations (shifts x nodes): a multiple of 64
    shifts each (the matrix-vector products' unrolled rows as on all shifts at once: the same
    sums), a last block of one shift joined to the one before (numpy's vector products)."""
    rows = 64 * max(1, DIRECT_BLOCK // max(1, 64 * nodes))
    starts = list(range(0, n, rows)) or [0]
    if len(starts) > 1 and n - starts[-1] == 1:
        starts.pop()
    return list(map(slice, starts, starts[1:] + [n]))


def xi_direct(sigma: Function, sc: float, M: np.ndarray, xi: np.ndarray,
               wxi: np.ndarray, least: int | None = None) -> np.ndarray:
    """Columns (F, m1, m2, E sigma'^2) at pre-activations sc xi + M (M: (n,)), by the xi rule;
    in blocks of :data:`DIRECT_BLOCK` pre-activations (``least``: :func:`_fused`'s)."""
    fused = _fused(sigma, sc, M, xi, wxi, False, least)
    if fused is not None:
        return fused
    if len(blocks := _row_blocks(M.shape[0], xi.shape[0])) > 1:
        return np.concatenate([xi_direct(sigma, sc, M[sl], xi, wxi, least) for sl in blocks])
    s, ds = _on_rule(sigma, sc, M, xi)
    if sc > 0:  # Stein's lemma: m1 and m2 on sigma itself (smooth in M even for a kinked sigma)
        m1 = (s @ (wxi * xi)) / sc
        m2 = (s @ (wxi * (xi * xi - 1.0))) / sc
    else:
        m1, m2 = ds @ wxi, np.zeros(M.shape[0])
    return np.column_stack([s @ wxi, m1, m2, (ds * ds) @ wxi])


FUSED_MIN = 150_000


def fits(sigma: Function) -> int | None:
    """``xi_moments``' ``least`` in the steps' mapping: 0 (fits by :func:`_fused`) for tanh (the
    faster; to 5e-15), else None (softplus' Stein sums cancel: compiled, it moved by 2.6e-11)."""
    return 0 if sigma is get_function("tanh") else None


def _fused(sigma: Function, sc: float, M: np.ndarray, xi: np.ndarray, wxi: np.ndarray,
           small: bool, least: int | None = None) -> np.ndarray | None:
    """The columns by ``coefficients.step_quadrature.xi_sums`` for the registered softplus and tanh
    (sc > 0, the kernel compiled) when there are ``least`` (default :data:`FUSED_MIN`) terms or
    more (numpy's vectorised passes are faster on what stays in cache), else None."""
    kind = {id(get_function("softplus")): SOFTPLUS, id(get_function("tanh")): TANH}.get(id(sigma))
    least = FUSED_MIN if least is None else least
    if kind is None or not sc > 0 or M.shape[0] * xi.shape[0] < least:
        return None
    args = (kind, float(sc), np.ascontiguousarray(M, dtype=np.float64),
            np.ascontiguousarray(xi, dtype=np.float64), np.ascontiguousarray(wxi, dtype=np.float64),
            small)
    if not _compiled(xi_sums, args, args[:2] + (args[2][:1],) + args[3:]):
        return None
    return xi_sums(*args)

#: bulk scales below which, for a sigma without kinks and three or more groups, m1 and m2 are
#: sums of sigma' (Stein's form divides by sqrt(c): rounding / sqrt(c) refuses every piece)
SMALL_BULK = 0.5


def xi_direct_small(sigma: Function, sc: float, M: np.ndarray, xi: np.ndarray,
                    wxi: np.ndarray, least: int | None = None) -> np.ndarray:
    """:func:`xi_direct`, with ``m1 = E sigma'`` and ``m2 = E[xi sigma']`` summed directly for
    a sigma without kinks when ``0 < sc <`` :data:`SMALL_BULK` (the same integrals)."""
    if not (0 < sc < SMALL_BULK) or sigma.kinks:
        return xi_direct(sigma, sc, M, xi, wxi, least)
    fused = _fused(sigma, sc, M, xi, wxi, True, least)
    if fused is not None:
        return fused
    if len(blocks := _row_blocks(M.shape[0], xi.shape[0])) > 1:
        return np.concatenate([xi_direct_small(sigma, sc, M[sl], xi, wxi, least)
                               for sl in blocks])
    s, ds = _on_rule(sigma, sc, M, xi)
    return np.column_stack([s @ wxi, ds @ wxi, ds @ (wxi * xi), (ds * ds) @ wxi])


def _is_relu(sigma: Function) -> bool:
    return sigma.identity is None and sigma.expression == "relu(z)"


is_relu = _is_relu

#: a group's rule (``xi_moments``' ``rules[g]``): its Gaussian moments in closed form (relu, erf)
CLOSED = "closed"
FAST_RELU = True  # relu, every group closed: step_quadrature.relu_moments on (n, K) at once


def relu_closed(sc: float, M: np.ndarray) -> np.ndarray:
    """:func:`xi_direct`'s columns for ReLU (sc > 0) exactly: with x = M / sc, E sigma =
    M Phi(x) + sc phi(x), E sigma' = E sigma'^2 = Phi(x), E[xi sigma'] = phi(x) (entire
    functions of M: no rule, hence no kinks or ripples in the shift)."""
    x = M / sc
    Phi = ndtr(x)
    phi = np.exp(-0.5 * x * x) * (1.0 / math.sqrt(2.0 * math.pi))
    return np.column_stack([M * Phi + sc * phi, Phi, phi, Phi])


def has_closed(sigma: Function) -> bool:
    """Whether the xi-moments of sigma have the closed forms of :func:`closed_form`."""
    return _is_relu(sigma) or erf_affine(sigma) is not None


def closed_form(sigma: Function, sc: float, M: np.ndarray) -> np.ndarray:
    """:func:`xi_direct`'s columns in closed form (relu: :func:`relu_closed`; erf(a z + b):
    :func:`erf_closed`), sc > 0."""
    ab = erf_affine(sigma)
    return erf_closed(sc, M, *ab) if ab is not None else relu_closed(sc, M)


def _relu_rule(sc: float, M: np.ndarray, xi: np.ndarray, wxi: np.ndarray) -> np.ndarray:
    """:func:`xi_direct` for ReLU (sc > 0) in closed form: the rule's sums run over the nodes
    with ``sc xi + M > 0``, a suffix of the sorted nodes, so each column is a suffix sum of
    ``w xi^j`` (the same terms; O(n log nodes) instead of O(n nodes))."""
    order = np.argsort(xi, kind="stable")
    xs, ws = xi[order], wxi[order]
    n = xs.shape[0]
    suffix = np.zeros((4, n + 1))
    for p in range(4):
        suffix[p, :n] = np.cumsum((ws * xs**p)[::-1])[::-1]
    j = np.searchsorted(xs, -M / sc, side="right")
    # the rule's own test sc xi + M > 0 at the neighbouring nodes (rounding of -M / sc)
    below = (j > 0) & (sc * xs[np.maximum(j - 1, 0)] + M > 0)
    j = j - below
    above = (j < n) & ~(sc * xs[np.minimum(j, n - 1)] + M > 0)
    j = j + above
    C0, C1, C2, C3 = suffix[:, j]
    return np.column_stack([sc * C1 + M * C0, (sc * C2 + M * C1) / sc,
                            (sc * (C3 - C1) + M * (C2 - C0)) / sc, C0])


def _into(direct: Callable[[np.ndarray], np.ndarray], M: np.ndarray, same: list,
          piecewise: tuple, F: np.ndarray, out: np.ndarray) -> bool:
    """The groups ``same``'s columns of :func:`xi_moments` by ``compiled.clenshaw.moments_into``
    straight into ``F`` and ``out`` (v too) when :func:`on_pieces` would interpolate and the
    kernel runs compiled: on_pieces' numbers, bit for bit, without its (n, 4) array and copies;
    else False (nothing done)."""
    n, cols = M.shape[0], np.array(same, dtype=np.int64)
    args = (M, cols, F, out[0], out[1], out[2])
    tiny = (np.zeros((1, 2, 4)), np.full(1, 2, np.int64), 0.0, 1.0, M[:1], cols[:1], F[:1],
            out[0, :1], out[1, :1], out[2, :1])
    if n == 0 or M.dtype != np.float64 or not coldstart.kernel_ready(
            moments_into, tiny, lambda: moments_into(*tiny), compile_mode_ready=True):
        return False
    t_min, t_max = min(float(M[:, g].min()) for g in same), max(float(M[:, g].max()) for g in same)
    tab = piece_table(direct, t_min, t_max, n * len(same), *piecewise)
    if tab is None or tab[0].shape[2] != 4:
        return False
    coef, mp, lo, h, bad, fix = tab
    moments_into(np.ascontiguousarray(coef), mp.astype(np.int64), float(lo), float(h), *args)
    if bad.any():  # a refused piece: its halves (or the rule), at its points of every group
        t = np.concatenate([M[:, g] for g in same])
        for i, sel in fix(t):
            vals, rows, gs = _halves(direct, t[sel], *i), sel % n, cols[sel // n]
            F[rows, gs], out[0, rows, gs], out[1, rows, gs] = vals[:, 0], vals[:, 1], vals[:, 2]
            out[2, rows, gs] = np.maximum(vals[:, 3] - vals[:, 1] * vals[:, 1], 0.0)
    return True


def xi_moments(sigma: Function, c: np.ndarray, M: np.ndarray, xi: np.ndarray,
               wxi: np.ndarray, rules: list | None = None, small: bool = False,
               least: int | None = None) -> tuple[np.ndarray, ...]:
    """Per node and group: F = E sigma, m1 = E sigma', m2 = E[xi sigma'], v = Var sigma'
    over xi ~ N(0, 1) at pre-activation sqrt(c) xi + M (module docstring); ``rules[g]``: None
    (the rule ``xi, wxi``), ``(nodes, weights, name)`` (group g's own xi rule) or
    :data:`CLOSED`; ``small``: a bulk below :data:`SMALL_BULK` of a sigma without kinks by
    :func:`xi_direct_small` on pieces of half-length 1 (sigma's own scale; checked as ever);
    ``least``: the rule's sums compiled (:func:`_fused`) from that many terms (default
    :data:`FUSED_MIN`; the pieces then cached apart: the same numbers to rounding)."""
    n, K = M.shape
    scs = np.sqrt(np.asarray(c, dtype=np.float64))
    if FAST_RELU and rules is not None and has_closed(sigma) and np.all(scs > 0) and all(
            isinstance(x, str) and x == CLOSED for x in rules):  # relu, erf: on (n, K) at once
        return step_quadrature.closed_moments(M, scs, SAME_SCALE, erf_affine(sigma))
    F, out = scratch("xi.F", (n, K)), scratch("xi.out", (3, n, K))  # F apart: may be freed first
    done, into = np.zeros(K, dtype=bool), np.zeros(K, dtype=bool)
    for g in range(K):
        if done[g]:
            continue
        # groups of one bulk (to rounding: a symmetric readout's groups) share one evaluation
        same = [h for h in range(g, K) if not done[h]
                and abs(scs[h] - scs[g]) <= SAME_SCALE * scs[g]]
        done[same] = True
        sc = float(scs[g])
        closed = rules is not None and isinstance(rules[g], str) and rules[g] == CLOSED
        xg, wg, name = rules[g] if rules is not None and rules[g] is not None and not closed \
            else (xi, wxi, "xi")
        small_g = small and 0 < sc < SMALL_BULK and not sigma.kinks
        key = (name + ("-small" if small_g else "") + ("" if least is None else f"-{least}"),
               sigma, sc, xg.shape[0])
        try:
            hash(key)
        except TypeError:  # an unhashable sigma: no cache
            key = None
        direct = xi_direct_small if small_g else xi_direct
        fn = lambda m, sc=sc, xg=xg, wg=wg, f=direct: f(sigma, sc, m, xg, wg, least)  # noqa: E731
        piecewise = (max(sc, 1.0) if small_g else sc, key,
                     HALF_LENGTH if name == "xi" else WIDE_HALF_LENGTH)
        if not (closed and sc > 0) and not (sc > 0 and _is_relu(sigma)) and _into(
                fn, M, same, piecewise, F, out):
            into[same] = True
            continue  # the series summed straight into F, m1, m2, v
        t = np.concatenate([M[:, h] for h in same])
        if closed and sc > 0:
            vals = closed_form(sigma, sc, t)
        elif sc > 0 and _is_relu(sigma):
            vals = _relu_rule(sc, t, xi, wxi)
        else:
            vals = on_pieces(fn, t, *piecewise)
        for i, h in enumerate(same):
            F[:, h] = vals[i * n:(i + 1) * n, 0]
            out[:, :, h] = vals[i * n:(i + 1) * n, 1:].T
        vals = t = None  # freed before the next group's (memory)
    m1, m2, v = out
    if into.any():  # the groups summed by _into have their v; the others here
        for h in np.flatnonzero(~into):
            v[:, h] -= m1[:, h] * m1[:, h]
            np.maximum(v[:, h], 0.0, out=v[:, h])
        return F, m1, m2, v
    v -= m1 * m1  # Var sigma' = E sigma'^2 - m1^2 (in place: the same numbers)
    return F, m1, m2, np.maximum(v, 0.0, out=v)
