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


def _top(phis: Phis, lam: float) -> np.ndarray:
    A, B = phis(lam)
    P = A @ B
    if not np.all(np.isfinite(P)):
        return np.full(P.shape[0], np.nan)
    ev = np.linalg.eigvals(P).real
    return np.sort(ev)[::-1]


def outlier_locations(phis: Phis, edge: float, k: int) -> list[float]:
    """Roots lam > edge of det(I - Phi1 Phi2), descending (the eigenvalues of Phi1 Phi2 are real,
    >= 0 and decrease in lam above the bulk)."""
    for eps in (1e-7, 1e-5, 1e-3, 1e-2):  # just above the edge, where the forms are finite
        lo = edge * (1.0 + eps) + 1e-12
        ev_lo = _top(phis, lo)
        if np.all(np.isfinite(ev_lo)):
            break
    else:
        return []
    n_out = int(np.sum(ev_lo > 1.0))
    if n_out == 0:
        return []
    hi = max(2.0 * edge, edge + 1.0)
    for _ in range(200):
        if _top(phis, hi)[0] < 1.0:
            break
        hi *= 2.0
    else:
        return [math.inf] * n_out
    out = []
    for i in range(n_out):
        f = lambda lam, i=i: _top(phis, lam)[i] - 1.0  # noqa: E731
        if f(lo) <= 0.0:
            continue
        out.append(float(brentq(f, lo, hi, xtol=1e-12 * hi, rtol=1e-12)))
    return sorted(out, reverse=True)


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

    A, B = blocks(s)
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
