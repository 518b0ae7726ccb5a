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
