"""Outliers of a finite-rank perturbation F = B + P Q^T of a matrix with a known limiting law
(docs/THEORY.md §16.3; Benaych-Georges and Nadakuditi 2012, arXiv:0910.2120).

With Phi1(lam) = lam P^T (lam - B B^T)^-1 P and Phi2(lam) = Q^T (lam - B^T B)^-1 Q (k x k,
deterministic equivalents supplied by the caller), an eigenvalue lam of F^T F outside the bulk
is a root of det(I - Phi1 Phi2) (the cross forms P^T (.)^-1 B Q vanish); the projections of
its singular vectors on the columns of P and Q are the residue of the dilation's resolvent
(:func:`overlap_vectors`).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from scipy.optimize import brentq

Phis = Callable[[float], tuple[np.ndarray, np.ndarray]]
SECANT_MAX = 12  # secant steps of a root before Brent's method on its bracket


class Cached:
    """``phis`` with its values kept by lam (the root search and the overlaps evaluate the
    same points; each evaluation solves the fixed point and forms the channels' Gram)."""

    def __init__(self, phis: Phis) -> None:
        self.phis = phis.phis if isinstance(phis, Cached) else phis
        self.memo: dict[float, tuple[np.ndarray, np.ndarray]] = (
            phis.memo if isinstance(phis, Cached) else {})
        self.tops: dict[float, np.ndarray] = phis.tops if isinstance(phis, Cached) else {}

    def __call__(self, lam: float) -> tuple[np.ndarray, np.ndarray]:
        lam = float(lam)
        v = self.memo.get(lam)
        if v is None:
            v = self.memo[lam] = self.phis(lam)
        return v

    def top(self, lam: float) -> np.ndarray:
        """The eigenvalues of Phi1 Phi2 at lam, descending (NaN where a form is not finite)."""
        lam = float(lam)
        v = self.tops.get(lam)
        if v is None:
            A, B = self(lam)
            P = A @ B
            v = (np.full(P.shape[0], np.nan) if not np.all(np.isfinite(P))
                 else np.sort(np.linalg.eigvals(P).real)[::-1])
            self.tops[lam] = v
        return v


def outlier_locations(phis: Phis, edge: float, k: int) -> list[float]:
    """Roots lam > edge of det(I - Phi1 Phi2), descending (the eigenvalues of Phi1 Phi2 are real,
    >= 0 and decrease in lam above the bulk). Root i solves lam ev_i(lam) = lam, where
    c_i(lam) = lam ev_i(lam) varies slowly (it tends to a constant far above the bulk): from the
    tightest bracket of the values met so far, a secant on c_i(lam) - lam started at c_i of the
    bracket's upper end (:func:`_secant`). ``phis`` is wrapped in :class:`Cached` (pass a
    :class:`Cached` to share its values with the overlaps)."""
    f = phis if isinstance(phis, Cached) else Cached(phis)
    for eps in (1e-7, 1e-5, 1e-3, 1e-2):  # just above the edge, where the forms are finite
        lo = edge * (1.0 + eps) + 1e-12
        ev_lo = f.top(lo)
        if np.all(np.isfinite(ev_lo)):
            break
    else:
        return []
    n_out = int(np.sum(ev_lo > 1.0))
    if n_out == 0:
        return []
    try:
        return _locations(f, edge, lo, ev_lo, n_out)
    except ValueError:  # a form not finite inside the bracket: the former search
        return _brent_locations(f, edge, lo, n_out)


def _doubled(f: Cached, edge: float) -> float | None:
    """A bound above every root: 2 edge doubled until every eigenvalue is below 1 (None: none
    within 200 doublings)."""
    hi = max(2.0 * edge, edge + 1.0)
    for _ in range(200):
        if f.top(hi)[0] < 1.0:
            return hi
        hi *= 2.0
    return None


def _brent_locations(f: Cached, edge: float, lo: float, n_out: int) -> list[float]:
    """The roots by Brent's method on ev_i(lam) - 1 in [lo, hi], hi doubled from 2 edge."""
    hi = _doubled(f, edge)
    if hi is None:
        return [math.inf] * n_out
    out = []
    for i in range(n_out):
        out.append(float(brentq(lambda lam, i=i: f.top(lam)[i] - 1.0, lo, hi,
                                xtol=1e-12 * hi, rtol=1e-12)))
    return sorted(out, reverse=True)


def _locations(f: Cached, edge: float, lo: float, ev_lo: np.ndarray, n_out: int
               ) -> list[float]:
    """:func:`outlier_locations` by secants (ValueError where a value is not finite)."""
    # a first bound of the top root, c_1(lo) (exact if c_1 were constant), doubled until every
    # eigenvalue is below 1
    hi = 1.01 * lo * float(ev_lo[0])
    if not (hi > max(2.0 * edge, edge + 1.0) and f.top(hi)[0] < 1.0):
        hi = _doubled(f, edge)  # (else the former doubling from 2 edge)
        if hi is None:
            return [math.inf] * n_out
    out = []
    for i in range(n_out):
        a, b = lo, hi
        for lam, ev in f.tops.items():  # the tightest bracket met so far
            if lo <= lam <= hi and np.isfinite(ev[i]):
                if ev[i] > 1.0 and lam > a:
                    a = lam
                elif ev[i] < 1.0 and lam < b:
                    b = lam
        if not a < b:  # (eigenvalues not monotone in lam: the whole bracket)
            a, b = lo, hi

        def h(lam: float, i: int = i) -> float:
            return lam * (float(f.top(lam)[i]) - 1.0)

        # start: c_i at the value met whose c_i is nearest its lam (one fixed-point step)
        near = min((lam for lam, ev in f.tops.items() if np.isfinite(ev[i]) and lam > 0.0),
                   key=lambda lam: abs(f.tops[lam][i] - 1.0))
        out.append(_secant(h, a, b, near * float(f.top(near)[i]), 1e-12, near))
    return sorted(out, reverse=True)


def _secant(h: Callable[[float], float], a: float, b: float, x: float, tol: float,
            prev: float) -> float:
    """A root of h in [a, b] (h(a) > 0 > h(b)) from ``x``: secant steps through the last two
    points (the first through ``prev``), kept in the bracket (else regula falsi, or bisection);
    ends at an evaluated point whose secant correction |h/h'| is at most ``tol`` |x| (Brent's
    method when h is not finite or after :data:`SECANT_MAX` steps)."""
    fa, fb = h(a), h(b)
    if not (math.isfinite(fa) and math.isfinite(fb)):
        raise ValueError("a form is not finite")
    if not a < x < b:
        x = (a * fb - b * fa) / (fb - fa)
    px, pf = prev, h(prev)
    for _ in range(SECANT_MAX):
        fx = h(x)
        if not math.isfinite(fx):
            raise ValueError("a form is not finite")
        if fx == 0.0:
            return x
        if fx > 0.0:
            a, fa = x, fx
        else:
            b, fb = x, fx
        slope = (fx - pf) / (x - px) if x != px else 0.0
        if slope < 0.0 and abs(fx / slope) <= tol * abs(x):
            return x
        if b - a <= tol * abs(x):
            return x
        xn = x - fx / slope if slope != 0.0 else math.nan
        if not a < xn < b:
            xn = (a * fb - b * fa) / (fb - fa)
            if not a < xn < b:
                xn = 0.5 * (a + b)
        px, pf, x = x, fx, xn
    return float(brentq(h, a, b, xtol=tol * b, rtol=tol))


def overlap_vectors(phis: Phis, lam: float) -> tuple[np.ndarray, np.ndarray]:
    """(Q^T v)^2 and (P^T u)^2 (componentwise) at an outlier lam, v, u the unit eigenvector of
    F^T F and of F F^T (the squares of :func:`signed_overlaps`)."""
    qv, pu = signed_overlaps(phis, lam)
    return qv ** 2, pu ** 2


def signed_overlaps(phis: Phis, lam: float) -> tuple[np.ndarray, np.ndarray]:
    """Q^T v and P^T u at an outlier lam (one common sign left free), v, u the unit eigenvector
    of F^T F and of F F^T. Residue of the resolvent of the dilation [[0, F], [F^T, 0]] at
    s = sqrt(lam): with M(s) = -diag(s P^T R1 P, s Q^T R2 Q), R1 = (s^2 - B B^T)^-1, the null
    vector (x_P, x_Q) of C + M (C the block swap), x_Q = Phi1/s x_P, x_P = s Phi2 x_Q, gives
    P^T u = sqrt 2 x_Q / sqrt(n'), Q^T v = sqrt 2 x_P / sqrt(n'), n' = x^T M'(s) x."""
    s = math.sqrt(lam)

    def blocks(s_: float) -> tuple[np.ndarray, np.ndarray]:
        A, B = phis(s_ * s_)
        return A / s_, s_ * B  # s P^T R1 P and s Q^T R2 Q

    A, B = phis(lam)  # blocks(s) (at s^2 = lam: the value the root search left)
    A, B = A / s, s * B
    w, V = np.linalg.eig(B @ A)  # x_P: (s Q R2 Q)(s P R1 P) x_P = x_P
    i = int(np.argmin(np.abs(w - 1.0)))
    vec = V[:, i]
    xp = np.real(vec / (vec[np.argmax(np.abs(vec))] / np.abs(vec[np.argmax(np.abs(vec))])))
    xq = A @ xp
    h = 1e-5 * s
    Ap, Bp = blocks(s + h)
    Am, Bm = blocks(s - h)
    dA, dB = (Ap - Am) / (2 * h), (Bp - Bm) / (2 * h)
    nrm = -(xp @ dA @ xp + xq @ dB @ xq)  # M' = -diag(dA, dB)
    f = math.sqrt(2.0 / nrm) if nrm > 0.0 else math.nan
    return f * xp, f * xq
