"""Compiled passes of one giant step's node sums (docs/THEORY.md §12.4).

**A polynomial target's other-axes sums.** Per spike node, ``steps.advance`` needs ``E e``,
``E[e R]`` and ``E[e^2] + delta`` over the other axes' rule (e = g - f, g the target at
``z = Uz + R Bz``), by numpy's products over blocks of nodes. For a target that is a polynomial
in z1..zk (its monomials read once from its text) the block of e is filled by one compiled
pass (:func:`poly_e`), with no array of z and no temporaries per operation: the same numbers
(the monomials in the printed order, each left to right) and the same sums."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from asymptotics.coefficients.targets import grid_target, rows_into
from asymptotics.core import coldstart, meta
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
    return Polynomial(exps, coefs) if len(coefs) and np.all(np.isfinite(coefs)) else None


@kernel(cache=True, error_model="numpy")
def poly_e(Uz: np.ndarray, RzT: np.ndarray, f: np.ndarray, lo: int, exps: np.ndarray,
           coefs: np.ndarray, e: np.ndarray) -> None:
    """Kernel: ``e[i, j] = g(Uz[:, lo + i] + RzT[:, j]) - f[lo + i]`` for the rows of ``e``, g
    the polynomial of monomials ``exps`` (terms x k), ``coefs`` (in that order; each monomial
    left to right, as numpy evaluates the printed polynomial)."""
    k, nr = RzT.shape
    z, m = np.empty((k, nr)), np.empty(nr)
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
              block: int, fill: Callable | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``(e @ W, e^2 @ wr + delta sum(wr))`` per node (Uz: (k, n)) in blocks of about ``block``
    target evaluations: e by ``fill`` (default :func:`poly_e`, or a kernel of its arguments and
    numbers) for a polynomial target (``poly``) once compiled, else by numpy (``evaluate(g, Z)``:
    the target at Z (..., k); its terms of few distinct values tabled once,
    ``targets.grid_target``: the same numbers); the sums by numpy either way."""
    (k, n), nr, new = Uz.shape, RzT.shape[1], meta.scratch  # buffers kept per thread
    e01, e2, Z = new("e01", (n, W.shape[1])), new("e2", n), new("Z", (k, min(
        rows := max(1, block // max(1, nr)), n), nr))
    fast, fill = poly is not None and n > 0 and k > 0, fill or poly_e
    if fast:
        f = np.ascontiguousarray(f, dtype=np.float64)
        args = (Uz, RzT, f, 0, poly.exps, poly.coefs, np.empty((1, RzT.shape[1])))
        fast = coldstart.kernel_ready(fill, args, lambda: fill(*args))
    grid = None if fast else grid_target(g, Uz, RzT)  # else the target by rows into E:
    E = None if fast or grid is not None else new("E", (min(rows, n), nr))
    for lo in range(0, n, rows):
        sl = slice(lo, lo + rows)
        if fast:
            fill(Uz, RzT, f, lo, poly.exps, poly.coefs, e := Z[0, :min(rows, n - lo)])
        else:
            e = grid(sl) if grid is not None else rows_into(g, evaluate, np.moveaxis(np.add(
                Uz[:, sl, None], RzT[:, None, :], out=Z[:, :min(rows, n - lo)]), 0, -1), E)
            e -= f[sl, None]
        np.matmul(e, W, out=e01[sl]), np.multiply(e, e, out=e)  # in place: the same numbers
        np.add(np.matmul(e, wr, out=e2[sl]), delta * wr.sum(), out=e2[sl])
    return e01, e2


#: nodes per block of :func:`_node_sums` (plain sums within, compensated across blocks)
SUM_BLOCK = 128


@kernel(cache=True, error_model="numpy")
def _node_sums(U: np.ndarray, wu: np.ndarray, m1: np.ndarray, m2: np.ndarray, v: np.ndarray,
               e0: np.ndarray, e1: np.ndarray, e2: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """Kernel: :func:`node_sums`' sums, flat: per block of :data:`SUM_BLOCK` nodes summed
    plainly, the blocks' sums added with Neumaier's compensation; node i's terms from row
    ``idx[i]`` of the arrays but ``wu`` (empty ``idx``: row i)."""
    n, r, K, m = wu.shape[0], U.shape[1], m1.shape[1], e1.shape[1]
    q = K * r + K * m + 2 * K + K * K
    tot, comp, blk = np.zeros(q), np.zeros(q), np.zeros(q)
    for lo in range(0, n, SUM_BLOCK):
        blk[:] = 0.0
        for i in range(lo, min(lo + SUM_BLOCK, n)):
            x = idx[i] if idx.shape[0] > 0 else i
            s, nz, o = wu[i] * e0[x], wu[i] * e2[x], 0
            for g in range(K):
                a = s * m1[x, g]
                for j in range(r):
                    blk[o + j] += a * U[x, j]
                o += r
            for g in range(K):
                a = wu[i] * m1[x, g]
                for j in range(m):
                    blk[o + j] += a * e1[x, j]
                o += m
            for g in range(K):
                blk[o + g] += s * m2[x, g]
                blk[o + K + g] += nz * v[x, g]
            o += 2 * K
            for g in range(K):
                a = m1[x, g] * nz
                for h in range(K):
                    blk[o + g * K + h] += a * m1[x, h]
        for p in range(q):
            t = tot[p] + blk[p]
            if abs(tot[p]) >= abs(blk[p]):
                comp[p] += (tot[p] - t) + blk[p]
            else:
                comp[p] += (blk[p] - t) + tot[p]
            tot[p] = t
    return tot + comp


def node_sums(U: np.ndarray, wu: np.ndarray, m1: np.ndarray, m2: np.ndarray, v: np.ndarray,
              e0: np.ndarray, e1: np.ndarray, e2: np.ndarray, idx: np.ndarray | None = None
              ) -> tuple | None:
    """``steps.advance``'s sums over the nodes of a rule (U, wu) in one compiled pass:
    ``(sum wu e0 m1_g U, sum wu m1_g e1, sum wu e0 m2_g, sum wu e2 v_g, sum wu e2 m1_g m1_h)``
    (numpy's products, summed in another order: to rounding); ``idx``: the rule's nodes are those
    rows (but ``wu``: a sub-rule's; no copies, nor of e0, e1: strided views); None till compiled."""
    args = tuple((np.asarray if i in (5, 6) else np.ascontiguousarray)(x, dtype=np.float64)
                 for i, x in enumerate((U, wu, m1, m2, v, e0, e1, e2)))
    args += (np.zeros(0, np.int64) if idx is None else np.ascontiguousarray(idx, np.int64),)
    if args[1].shape[0] == 0 or not coldstart.kernel_ready(
            _node_sums, args, lambda: _node_sums(*(x[:1] for x in args[:-1]), args[-1][:0])):
        return None
    out = _node_sums(*args)
    r, K, m = U.shape[1], m1.shape[1], e1.shape[1]
    A, B, em2, nv, mm = np.split(out, np.cumsum([K * r, K * m, K, K]))
    return A.reshape(K, r), B.reshape(K, m), em2, nv, mm.reshape(K, K)


@kernel(cache=True, error_model="numpy")
def product_nodes(x: np.ndarray, w: np.ndarray, r: int, prune: float) -> tuple:
    """Kernel: the product rule of r copies of the axis ``(x, w)`` (w >= 0), its weights
    ``(..(w_i w_j) ..) w_l`` above ``prune`` times the largest, in C order: ``(nodes (n, r),
    weights (n))`` (``steps.trapezoid``'s, before normalising). The weights over the last axis
    are formed in a tight loop per index of the others (counted first, then filled)."""
    m = x.shape[0]
    top = 0.0  # the largest product: that of the largest weight (rounding is monotone)
    for d in range(r):
        top = np.max(w) if d == 0 else top * np.max(w)
    thr, wmax = prune * top, np.max(w)
    rows = m ** (r - 1)
    n = 0
    for sweep in range(2):
        if sweep == 1:
            pts, wts = np.empty((n, r)), np.empty(n)
            n = 0
        idx = np.zeros(max(r - 1, 1), dtype=np.int64)
        for _ in range(rows):
            p0 = 1.0
            if r > 1:
                p0 = w[idx[0]]
                for d in range(1, r - 1):
                    p0 = p0 * w[idx[d]]
            if r == 1 or p0 * wmax > thr:  # else no weight of this row is kept
                for j in range(m):
                    p = w[j] if r == 1 else p0 * w[j]
                    if p > thr:
                        if sweep == 1:
                            for d in range(r - 1):
                                pts[n, d] = x[idx[d]]
                            pts[n, r - 1] = x[j]
                            wts[n] = p
                        n += 1
            d = r - 2  # the next index of the other axes in C order
            while d >= 0:
                idx[d] += 1
                if idx[d] < m:
                    break
                idx[d] = 0
                d -= 1
    return pts, wts


def product_rule(x: np.ndarray, w: np.ndarray, r: int, prune: float) -> tuple | None:
    """:func:`product_nodes` once compiled (None before: numpy's outer products meanwhile)."""
    args = (np.ascontiguousarray(x, dtype=np.float64), np.ascontiguousarray(w, dtype=np.float64),
            int(r), float(prune))
    if r < 1 or not coldstart.kernel_ready(product_nodes, args,
                                           lambda: product_nodes(x[:1], w[:1], r, prune)):
        return None
    return product_nodes(*args)


#: relu's closed forms on many nodes: Phi(x) = ndtr(x) as scipy computes it, 0.5 + 0.5 erf(x /
#: sqrt 2) for |x / sqrt 2| < 1 / sqrt 2, else from erfc(|x| / sqrt 2) / 2; it is exactly 1
#: from X_ONE on and exactly 0 up to X_ZERO (erfc below 2^-53 there, resp. underflowing: tests)
SQRT1_2 = 0.70710678118654752440
INV_SQRT_2PI = 1.0 / np.sqrt(2.0 * np.pi)
X_ONE, X_ZERO = 8.5, -38.5


@kernel(cache=True, error_model="numpy")
def _relu_args(M: np.ndarray, rep: np.ndarray, x: np.ndarray, t: np.ndarray, za: np.ndarray
               ) -> int:
    """Kernel: per node i and column g, ``x = M / rep_g``, ``t = (x (-0.5)) x`` (phi's exponent,
    as numpy forms it) and ``za = |x / sqrt 2|`` where ndtr takes erfc (0 elsewhere: on its erf
    branch ``za < 1 / sqrt 2`` and at the saturated ends); returns the count on the erf branch."""
    n, K = M.shape
    ns = 0
    for i in range(n):
        for g in range(K):
            xi = M[i, g] / rep[g]
            x[i, g] = xi
            t[i, g] = (xi * -0.5) * xi
            z = abs(xi * SQRT1_2)
            small = z < SQRT1_2
            ns += small
            za[i, g] = 0.0 if small or xi >= X_ONE or xi <= X_ZERO else z
    return ns


@kernel(cache=True, error_model="numpy")
def _relu_small(x: np.ndarray, ns: int) -> tuple:
    """Kernel: the flat indices (ns) on ndtr's erf branch and their ``x / sqrt 2``."""
    xf = x.ravel()
    idx, z = np.empty(ns, dtype=np.int64), np.empty(ns)
    j = 0
    for i in range(xf.shape[0]):
        zi = xf[i] * SQRT1_2
        if abs(zi) < SQRT1_2:
            idx[j] = i
            z[j] = zi
            j += 1
    return idx, z


@kernel(cache=True, error_model="numpy")
def _relu_phi(x: np.ndarray, small: np.ndarray, erf_small: np.ndarray, Y: np.ndarray) -> None:
    """Kernel: ``Y = erfc(za)`` -> ndtr(x) in place (flat): erf on ``small``, ``erfc / 2`` (or 1
    minus it) on the erfc branch, 1 from X_ONE on and 0 up to X_ZERO."""
    xf, P = x.ravel(), Y.ravel()
    for i in range(xf.shape[0]):
        xi = xf[i]
        y = 0.5 * P[i]
        P[i] = 1.0 if xi >= X_ONE else (0.0 if xi <= X_ZERO else (
            1.0 - y if xi * SQRT1_2 > 0 else y))
    for s in range(small.shape[0]):
        P[small[s]] = 0.5 + 0.5 * erf_small[s]


@kernel(cache=True, error_model="numpy")
def _relu_moments_finish(M: np.ndarray, rep: np.ndarray, Phi: np.ndarray, E: np.ndarray,
                         F: np.ndarray, v: np.ndarray) -> None:
    """Kernel: ``E = exp(t)`` -> phi (in place), ``F = M Phi + rep phi``, ``v = max(Phi - Phi Phi,
    0)``, term by term as ``step_quadrature.relu_moments`` forms them."""
    n, K = M.shape
    for i in range(n):
        for g in range(K):
            P = Phi[i, g]
            p = E[i, g] * INV_SQRT_2PI
            E[i, g] = p
            F[i, g] = M[i, g] * P + rep[g] * p
            d = P - P * P
            v[i, g] = d if not d < 0.0 else 0.0


@kernel(cache=True, error_model="numpy")
def _relu_rest_finish(a: np.ndarray, b: float, f: np.ndarray, delta: float, Phi: np.ndarray,
                      E: np.ndarray, e0: np.ndarray, e2: np.ndarray) -> None:
    """Kernel: ``e0 = a Phi + phi b - f`` and ``e2 = (a a + b b) Phi + (a b) phi - (2 f) G0 + f f
    + delta`` (phi = E / sqrt(2 pi)) term by term as ``step_quadrature.relu_rest_sums`` forms
    them."""
    for i in range(a.shape[0]):
        P, ai, fi = Phi[i, 0], a[i], f[i]
        p = E[i, 0] * INV_SQRT_2PI
        G0 = ai * P + p * b
        s2 = (ai * ai + b * b) * P
        s2 += (ai * b) * p
        s2 -= (fi * 2.0) * G0
        s2 += fi * fi
        e2[i] = s2 + delta
        e0[i] = G0 - fi


def _ready(disp, args: tuple, rows: tuple) -> bool:
    """``coldstart.kernel_ready`` with a call on copies of the first row of the arguments
    ``rows`` (their positions; the others as given); ready in compile mode (it compiles on its
    first call)."""
    tiny = tuple(x[:1].copy() if i in rows else x for i, x in enumerate(args))
    return coldstart.kernel_ready(disp, args, lambda: disp(*tiny), compile_mode_ready=True)


def relu_phi(M: np.ndarray, rep: np.ndarray) -> tuple | None:
    """``(x, Phi, E)`` at the shifts ``M`` (n, K) and scales ``rep`` (K): x = M / rep, Phi =
    ndtr(x) (scipy's erf and erfc on its branches, as scipy's ndtr takes them) and E =
    exp((x (-0.5)) x) by numpy on the whole array; None before the kernels are compiled."""
    from scipy.special import erf, erfc

    M = np.ascontiguousarray(M, dtype=np.float64)
    rep = np.ascontiguousarray(rep, dtype=np.float64)
    x, t, Y = np.empty_like(M), np.empty_like(M), np.empty_like(M)
    i0 = np.empty(0, dtype=np.int64)
    if M.size == 0 or not _ready(_relu_args, (M, rep, x, t, Y), (0, 2, 3, 4)) or not _ready(
            _relu_small, (x, 0), (0,)) or not _ready(_relu_phi, (x, i0, np.empty(0), Y), (0, 3)):
        return None
    ns = _relu_args(M, rep, x, t, Y)
    np.exp(t, out=t)
    erfc(Y, out=Y)
    small, zs = _relu_small(x, ns)
    _relu_phi(x, small, erf(zs, out=zs), Y)
    return x, Y, t


def relu_moments(M: np.ndarray, rep: np.ndarray) -> tuple | None:
    """``(F, Phi, phi, v)`` of ``step_quadrature.relu_moments`` at the shifts ``M`` (n, K) and
    scales ``rep`` (K) by the kernels above (the same numbers: ndtr from scipy's erf and erfc as
    scipy's ndtr takes them, numpy's exp); None before they are compiled."""
    M = np.ascontiguousarray(M, dtype=np.float64)
    rep = np.ascontiguousarray(rep, dtype=np.float64)
    args = relu_phi(M, rep)
    if args is None or not _ready(_relu_moments_finish, (M, rep, args[1], args[2], M, M),
                                  (0, 2, 3, 4, 5)):
        return None
    x, Phi, E = args
    F = np.empty_like(M)
    _relu_moments_finish(M, rep, Phi, E, F, x)
    return F, Phi, E, x


def relu_rest(a: np.ndarray, b: float, f: np.ndarray, delta: float) -> tuple | None:
    """``(e0, Phi, e2)`` of ``step_quadrature.relu_rest_sums`` by the kernels above (the same
    numbers); None before they are compiled."""
    a = np.ascontiguousarray(a, dtype=np.float64)
    f = np.ascontiguousarray(f, dtype=np.float64)
    args = relu_phi(a[:, None], np.array([b], dtype=np.float64))
    e0, e2 = np.empty_like(a), np.empty_like(a)
    if args is None:
        return None
    fargs = (a, float(b), f, float(delta), args[1], args[2], e0, e2)
    if not _ready(_relu_rest_finish, fargs, (0, 2, 4, 5, 6, 7)):
        return None
    _relu_rest_finish(*fargs)
    return e0, args[1][:, 0], e2


KINK_T = (-4.0, 2.5)  # t range of kink_rule: |u| from 1e-19 (t = -4) to past 10 (t = 2.5)
KINK_TOL = 1e-7  # kink_split: the agreement of the rule with its sub-rule (twice the step)
KINK_H = (0.25, 1.0 / 64)  # kink_split: the first and the least step in t


def kink_rule(h: float, u_max: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Nodes ``u`` (n, 1), weights and the sub-rule's nodes (even indices: the rule of step
    ``2 h``) of ``E F(u)``, u ~ N(0, 1), for F analytic on each side of a kink at u = 0
    (docs/THEORY.md §12.4): per side the trapezoid rule of step ``h`` in t,
    ``|u| = exp(t - exp(-t))`` (double-exponential at the kink: geometric convergence)."""
    j = np.arange(2 * int(np.floor(KINK_T[0] / (2 * h))), int(np.ceil(KINK_T[1] / h)) + 1)
    u = np.exp((t := j * h) - np.exp(-t))
    w = h * u * (1.0 + np.exp(-t)) * np.exp(-0.5 * u * u) / np.sqrt(2.0 * np.pi)
    u, w, even = u[keep := (u <= u_max) & (w > 0)], w[keep], j[keep] % 2 == 0
    return (np.concatenate([-u[::-1], u])[:, None], np.concatenate([w[::-1], w]),
            np.concatenate([even[::-1], even]))


def kink_split(terms: Callable, update: Callable, diff: Callable, u_max: float,
               fallback: Callable | None = None) -> tuple[np.ndarray, ...]:
    """``update(U, w, *terms(U))`` by :func:`kink_rule`, its step halved from ``KINK_H[0]`` to
    ``KINK_H[1]`` until the rule of twice the step agrees to :data:`KINK_TOL` (``diff``; then
    off by about its square), else a ValueError; ``fallback`` (relu's own xi rule, kinked in the
    shift: algebraic on any lattice) is refused with a ValueError: never an unsettled state."""
    if fallback is not None:  # never a number that is not settled: refuse in one line
        raise ValueError("a relu target with sigma = relu at alpha0 = inf and one or two groups "
                         "is not computed: the steps' quadrature does not settle across the "
                         "target's kink (errors up to ~1e-2, docs/THEORY.md §12.4); pass a "
                         "finite alpha0")
    h = KINK_H[0]
    while True:
        U, w, even = kink_rule(h, u_max)
        new = update(U, w, *(t := terms(U)))
        two = update(U[even], 2.0 * w[even], *(x[even] for x in t))  # outside: its Gram
        d = diff(*((x[0], x[1] @ x[1].T, x[2]) for x in (new, two)))
        if d <= KINK_TOL:
            return new
        if h <= KINK_H[1]:
            raise ValueError(f"steps_mapping: the rule across the relu target's kink did not "
                             f"settle (its sub-rule differs by {d:.1e} > {KINK_TOL:.0e} at the "
                             f"least step); not computed")
        h /= 2.0
