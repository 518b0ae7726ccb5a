"""Compiled passes of one giant step's node sums (docs/THEORY.md §12.4).

**A polynomial target's other-axes sums.** Per spike node, ``steps.advance`` needs ``E e``,
``E[e R]`` and ``E[e^2] + delta`` over the other axes' rule (e = g - f, g the target at
``z = Uz + R Bz``), by numpy's products over blocks of nodes. For a target that is a polynomial
in z1..zk (its monomials read once from its text) the block of e is filled by one compiled
pass (:func:`poly_e`), with no array of z and no temporaries per operation: the same numbers
(the monomials in the printed order, each left to right) and the same sums.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from asymptotics.core import coldstart
from asymptotics.core.coldstart import kernel


@dataclass(frozen=True, eq=False)
class Polynomial:
    """A target polynomial in z1..zk: per monomial its exponents (terms x k) and coefficient."""

    exps: np.ndarray
    coefs: np.ndarray


@lru_cache(maxsize=64)
def polynomial(text: object, k: int, per: tuple | None) -> Polynomial | None:
    """The monomials of a target text that is a polynomial in z1..zk (``per``: every degree
    known), else None."""
    if not isinstance(text, str) or per is None or len(per) != k or any(d is None for d in per):
        return None
    try:
        import sympy as sp

        from asymptotics.coefficients.targets import parse_target

        expr, zs = parse_target(text)
        terms = sp.Poly(sp.expand(expr), *tuple(zs)[:k]).terms()
        exps = np.array([m for m, _ in terms], dtype=np.int64).reshape(len(terms), k)
        coefs = np.array([float(c) for _, c in terms], dtype=np.float64)
    except Exception:  # noqa: BLE001 (sympy raises many kinds on other expressions)
        return None
    if not (len(coefs) and np.all(np.isfinite(coefs))):
        return None
    return Polynomial(exps, coefs)


@kernel(cache=True, error_model="numpy")
def poly_e(Uz: np.ndarray, RzT: np.ndarray, f: np.ndarray, lo: int, exps: np.ndarray,
           coefs: np.ndarray, e: np.ndarray) -> None:
    """Kernel: ``e[i, j] = g(Uz[:, lo + i] + RzT[:, j]) - f[lo + i]`` for the rows of ``e``, g
    the polynomial of monomials ``exps`` (terms x k), ``coefs`` (in that order; each monomial
    left to right, as numpy evaluates the printed polynomial)."""
    k, nr = RzT.shape
    z = np.empty((k, nr))
    m = np.empty(nr)
    for i in range(e.shape[0]):
        for d in range(k):
            for j in range(nr):
                z[d, j] = Uz[d, lo + i] + RzT[d, j]
        for t in range(coefs.shape[0]):
            m[:] = coefs[t]
            for d in range(k):
                for _ in range(exps[t, d]):
                    for j in range(nr):
                        m[j] *= z[d, j]
            if t == 0:
                e[i, :] = m
            else:
                for j in range(nr):
                    e[i, j] += m[j]
        for j in range(nr):
            e[i, j] -= f[lo + i]


def rest_sums(g: Callable, evaluate: Callable, poly: Polynomial | None, Uz: np.ndarray,
              RzT: np.ndarray, W: np.ndarray, wr: np.ndarray, f: np.ndarray, delta: float,
              block: int) -> tuple[np.ndarray, np.ndarray]:
    """``(e @ W, e^2 @ wr + delta sum(wr))`` per node (Uz: (k, n)) in blocks of about ``block``
    target evaluations: e by :func:`poly_e` for a polynomial target (``poly``) once compiled,
    else by numpy (``evaluate(g, Z)``: the target at Z (..., k)); the sums by numpy either way."""
    k, n = Uz.shape
    rows = max(1, block // max(1, RzT.shape[1]))
    e01, e2, Z = np.empty((n, W.shape[1])), np.empty(n), np.empty((k, min(rows, n), RzT.shape[1]))
    fast = poly is not None and n > 0 and k > 0
    if fast:
        f = np.ascontiguousarray(f, dtype=np.float64)
        args = (Uz, RzT, f, 0, poly.exps, poly.coefs, np.empty((1, RzT.shape[1])))
        fast = coldstart.kernel_ready(poly_e, args, lambda: poly_e(*args))
    for lo in range(0, n, rows):
        sl = slice(lo, lo + rows)
        if fast:
            poly_e(Uz, RzT, f, lo, poly.exps, poly.coefs, e := Z[0, :min(rows, n - lo)])
        else:
            Zb = np.add(Uz[:, sl, None], RzT[:, None, :], out=Z[:, :min(rows, n - lo)])
            e = evaluate(g, np.moveaxis(Zb, 0, -1))
            e -= f[sl, None]
        e01[sl] = e @ W
        e *= e
        e2[sl] = e @ wr + delta * wr.sum()
    return e01, e2


#: nodes per block of :func:`_node_sums` (plain sums within, compensated across blocks)
SUM_BLOCK = 128


@kernel(cache=True, error_model="numpy")
def _node_sums(U: np.ndarray, wu: np.ndarray, m1: np.ndarray, m2: np.ndarray, v: np.ndarray,
               e0: np.ndarray, e1: np.ndarray, e2: np.ndarray) -> np.ndarray:
    """Kernel: :func:`node_sums`' sums, flat: per block of :data:`SUM_BLOCK` nodes summed
    plainly, the blocks' sums added with Neumaier's compensation."""
    n, r = U.shape
    K, m = m1.shape[1], e1.shape[1]
    q = K * r + K * m + 2 * K + K * K
    tot, comp, blk = np.zeros(q), np.zeros(q), np.zeros(q)
    for lo in range(0, n, SUM_BLOCK):
        blk[:] = 0.0
        for i in range(lo, min(lo + SUM_BLOCK, n)):
            s, nz, o = wu[i] * e0[i], wu[i] * e2[i], 0
            for g in range(K):
                a = s * m1[i, g]
                for j in range(r):
                    blk[o + j] += a * U[i, j]
                o += r
            for g in range(K):
                a = wu[i] * m1[i, g]
                for j in range(m):
                    blk[o + j] += a * e1[i, j]
                o += m
            for g in range(K):
                blk[o + g] += s * m2[i, g]
                blk[o + K + g] += nz * v[i, g]
            o += 2 * K
            for g in range(K):
                a = m1[i, g] * nz
                for h in range(K):
                    blk[o + g * K + h] += a * m1[i, h]
        for p in range(q):
            t = tot[p] + blk[p]
            if abs(tot[p]) >= abs(blk[p]):
                comp[p] += (tot[p] - t) + blk[p]
            else:
                comp[p] += (blk[p] - t) + tot[p]
            tot[p] = t
    return tot + comp


def node_sums(U: np.ndarray, wu: np.ndarray, m1: np.ndarray, m2: np.ndarray, v: np.ndarray,
              e0: np.ndarray, e1: np.ndarray, e2: np.ndarray) -> tuple | None:
    """``steps.advance``'s sums over the nodes of a rule (U, wu) in one compiled pass:
    ``(sum wu e0 m1_g U, sum wu m1_g e1, sum wu e0 m2_g, sum wu e2 v_g, sum wu e2 m1_g m1_h)``
    (numpy's products, summed in another order: to rounding); None before it is compiled."""
    args = tuple(np.ascontiguousarray(x, dtype=np.float64) for x in (U, wu, m1, m2, v, e0, e1,
                                                                     e2))
    if args[0].shape[0] == 0 or not coldstart.kernel_ready(
            _node_sums, args, lambda: _node_sums(*(x[:1] for x in args))):
        return None
    out = _node_sums(*args)
    r, K, m = U.shape[1], m1.shape[1], e1.shape[1]
    cut = np.cumsum([K * r, K * m, K, K])
    A, B, em2, nv, mm = np.split(out, cut)
    return A.reshape(K, r), B.reshape(K, m), em2, nv, mm.reshape(K, K)


@kernel(cache=True, error_model="numpy")
def product_nodes(x: np.ndarray, w: np.ndarray, r: int, prune: float) -> tuple:
    """Kernel: the product rule of r copies of the axis ``(x, w)`` (w >= 0), its weights
    ``(..(w_i w_j) ..) w_l`` above ``prune`` times the largest, in C order: ``(nodes (n, r),
    weights (n))`` (``steps.trapezoid``'s, before normalising)."""
    m = x.shape[0]
    top = 0.0  # the largest product: that of the largest weight (rounding is monotone)
    for d in range(r):
        top = np.max(w) if d == 0 else top * np.max(w)
    thr = prune * top
    N = m**r
    pts, wts, n = np.empty((N, r)), np.empty(N), 0
    idx = np.zeros(r, dtype=np.int64)
    for _ in range(N):
        p = w[idx[0]]
        for d in range(1, r):
            p = p * w[idx[d]]
        if p > thr:
            for d in range(r):
                pts[n, d] = x[idx[d]]
            wts[n] = p
            n += 1
        d = r - 1  # the next index in C order
        while d >= 0:
            idx[d] += 1
            if idx[d] < m:
                break
            idx[d] = 0
            d -= 1
    return pts[:n].copy(), wts[:n].copy()


def product_rule(x: np.ndarray, w: np.ndarray, r: int, prune: float) -> tuple | None:
    """:func:`product_nodes` once compiled (None before: numpy's outer products meanwhile)."""
    args = (np.ascontiguousarray(x, dtype=np.float64), np.ascontiguousarray(w, dtype=np.float64),
            int(r), float(prune))
    if r < 1 or not coldstart.kernel_ready(product_nodes, args,
                                           lambda: product_nodes(x[:1], w[:1], r, prune)):
        return None
    return product_nodes(*args)
