"""The block inverse ``W = (Dc^-1 + Vhat1 (x) I)^-1`` of the K-group bulk
(:class:`asymptotics.network.bulk.GroupBulk`, docs/DERIVATIONS.md §9.7) by the Schur complement
of a base class of groups.

Groups whose covariances outside E are equal (``sigma'`` even: the readout values ``eps`` and
``-eps`` give the same covariance) commute with each other. Working in the eigenbasis of the base
class's covariance (``Sig_F = U diag(s) U^T``), ``W^-1`` restricted to the base class F (c groups)
is, per eigendirection i, the c x c matrix ``P_i = diag_f(1/(D_f s_i)) + Vhat1_FF``; the other
groups R enter through the Schur complement

    S = blockdiag_h(U^T Sig_h^-1 U / D_h) + [Vhat1_RR - Vhat1_RF P_i^-1 Vhat1_FR]_ii,

of size (K - c) n per block: one Cholesky per block (none when every group is in the base class),
and ``W_RR = S^-1``, ``W_FR = -Y S^-1`` (``Y_i = P_i^-1 Vhat1_FR``),
``W_FF = P^-1 + Y S^-1 Y^T``. The base class is the largest set of groups with equal
covariances (the first group's where none are equal).
"""

from __future__ import annotations

import numpy as np
from scipy.linalg.lapack import dpotrf as _potrf
from scipy.linalg.lapack import dpotri as _potri
from scipy.linalg.lapack import dtrtri as _trtri

#: covariances equal to this relative tolerance (max over the blocks' entries) are one class
CLASS_RTOL = 1e-12


def base_class(sig: np.ndarray, rtol: float = CLASS_RTOL) -> list[int]:
    """The largest class of groups with equal covariances (``sig``: B x K x n x n); ties go to
    the class of the lowest group."""
    scale = max(float(np.max(np.abs(sig))), 1e-300)
    classes: list[list[int]] = []
    for g in range(sig.shape[1]):
        for c in classes:
            if float(np.max(np.abs(sig[:, g] - sig[:, c[0]]))) <= rtol * scale:
                c.append(g)
                break
        else:
            classes.append([g])
    return max(classes, key=len)


def _pinv(vp: np.ndarray, Dp: np.ndarray, s: np.ndarray, c: int) -> np.ndarray | None:
    """``P_i^-1`` (B x n x c x c), None where some ``P_i`` is not positive definite."""
    if c == 1:
        p = 1.0 / (Dp[0] * s) + vp[0, 0]
        if not np.all(p > 0.0):
            return None
        return (1.0 / p)[:, :, None, None]
    if c == 2:  # (closed form)
        a = 1.0 / (Dp[0] * s) + vp[0, 0]
        d = 1.0 / (Dp[1] * s) + vp[1, 1]
        det = a * d - vp[0, 1] * vp[0, 1]
        if not (np.all(a > 0.0) and np.all(det > 0.0)):
            return None
        Pi = np.empty(s.shape + (2, 2))
        Pi[..., 0, 0] = d / det
        Pi[..., 1, 1] = a / det
        Pi[..., 0, 1] = Pi[..., 1, 0] = -vp[0, 1] / det
        return Pi
    P = np.broadcast_to(vp[:c, :c], s.shape + (c, c)).copy()
    idx = np.arange(c)
    P[..., idx, idx] += 1.0 / (s[..., None] * Dp[None, None, :c])
    if not np.all(np.linalg.eigvalsh(P) > 0.0):
        return None
    Pi = np.linalg.inv(P)
    return 0.5 * (Pi + np.swapaxes(Pi, 2, 3))


def schur(vp: np.ndarray, Dp: np.ndarray, s: np.ndarray, rest: np.ndarray, c: int,
          full: bool) -> tuple | None:
    """``(P^-1, Y, G)`` in the permuted group order (base class first): ``G`` the blocks of
    ``S^-1`` (B x m x n x m x n, m = K - c) or with ``full=False`` their diagonals
    (B x m x m x n, from ``L^-1``: ``S = L L^T``); ``Y``, ``G`` None when m = 0. None where a
    factorisation fails (not positive definite). ``rest``: ``U^T Sig_h^-1 U`` for h in R."""
    Pi = _pinv(vp, Dp, s, c)
    if Pi is None:
        return None
    B, n = s.shape
    m = vp.shape[0] - c
    if m == 0:
        return Pi, None, None
    Y = np.matmul(Pi, vp[:c, c:])  # (B, n, c, m)
    corr = vp[c:, c:] - np.matmul(vp[c:, :c], Y)  # (B, n, m, m)
    idx = np.arange(n)
    if m == 1:
        S = rest[:, 0] / Dp[c]
        S[:, idx, idx] += corr[:, :, 0, 0]
    else:
        S = np.zeros((B, m, n, m, n))
        S[:, :, idx, :, idx] = corr.transpose(1, 0, 2, 3)  # (n, B, m, m) -> S[b, g, i, h, i]
        for g in range(m):
            S[:, g, :, g, :] += rest[:, g] / Dp[c + g]
        S = S.reshape(B, m * n, m * n)
    G = np.empty((B, m, m, n)) if not full else np.empty_like(S)
    for b in range(B):  # (LAPACK per block: faster than numpy's batched routines here)
        L, info = _potrf(S[b], lower=True, overwrite_a=True)
        if info != 0:
            return None
        if full:
            Gb, info = _potri(L, lower=True, overwrite_c=True)
            G[b] = Gb
        else:  # diag(S^-1)_(g,h) = sum_k Linv[k, g i] Linv[k, h i]
            Li, info = _trtri(L, lower=True, overwrite_c=True)
            Lr = Li.reshape(m * n, m, n)
            G[b] = np.einsum("kgi,khi->ghi", Lr, Lr)
        if info != 0:
            return None
    if not full:
        return Pi, Y, G
    low = np.tril(G)  # (potri fills the lower triangle)
    G = low + np.swapaxes(low, 1, 2) - np.diagonal(G, axis1=1, axis2=2)[:, :, None] * np.eye(
        m * n)
    return Pi, Y, G.reshape(B, m, n, m, n)


def traces(vp: np.ndarray, Dp: np.ndarray, s: np.ndarray, rest: np.ndarray, c: int
           ) -> np.ndarray | None:
    """``sum_b tr W_b,ag`` (K x K, permuted order), None where :func:`schur` fails."""
    f = schur(vp, Dp, s, rest, c, full=False)
    if f is None:
        return None
    Pi, Y, dg = f
    K = vp.shape[0]
    T = np.empty((K, K))
    if Y is None:
        T[:] = Pi.sum(axis=(0, 1))
        return T
    WFR = -np.matmul(Y, dg.transpose(0, 3, 1, 2))  # (B, n, c, m): -Y_i G_i
    T[c:, c:] = dg.sum(axis=(0, 3))
    T[:c, c:] = WFR.sum(axis=(0, 1))
    T[c:, :c] = T[:c, c:].T
    T[:c, :c] = (Pi - np.matmul(WFR, np.swapaxes(Y, 2, 3))).sum(axis=(0, 1))
    return T


def wfull(vp: np.ndarray, Dp: np.ndarray, s: np.ndarray, rest: np.ndarray, c: int,
          perm: np.ndarray | None = None) -> np.ndarray | None:
    """``W`` per block (B x K x n x K x n), group ``perm[x]`` at the x-th of the permuted order
    (default: the permuted order itself); None where :func:`schur` fails."""
    f = schur(vp, Dp, s, rest, c, full=True)
    if f is None:
        return None
    Pi, Y, G = f
    B, n = s.shape
    K = vp.shape[0]
    p = np.arange(K) if perm is None else perm
    idx = np.arange(n)
    if Y is None:
        out = np.zeros((B, K, n, K, n))
        for x in range(c):
            for y in range(c):
                out[:, p[x], idx, p[y], idx] = Pi[:, :, x, y]  # (B, n)
        return out
    m = K - c
    out = np.empty((B, K, n, K, n))
    WFR = -np.einsum("bifg,bgihj->bfihj", Y, G)
    for x in range(c):
        for y in range(c):  # W_FF = P^-1 + Y G Y^T = P^-1 - WFR Y^T, written in place
            o = out[:, p[x], :, p[y], :]
            np.multiply(WFR[:, x, :, 0, :], Y[:, None, :, y, 0], out=o)
            for h in range(1, m):
                o += WFR[:, x, :, h, :] * Y[:, None, :, y, h]
            np.negative(o, out=o)
            o[:, idx, idx] += Pi[:, :, x, y]
        for y in range(m):
            out[:, p[x], :, p[c + y], :] = WFR[:, x, :, y, :]
            out[:, p[c + y], :, p[x], :] = np.swapaxes(WFR[:, x, :, y, :], 1, 2)
    for x in range(m):
        for y in range(m):
            out[:, p[c + x], :, p[c + y], :] = G[:, x, :, y, :]
    return out
