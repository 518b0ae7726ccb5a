"""The block inverse ``W = (Dc^-1 + Vhat1 (x) I)^-1`` of the K-group bulk (:class:`asymptotics.
network.bulk.GroupBulk`, docs/DERIVATIONS.md §9.7) by the Schur complement of a base class.

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

from typing import NamedTuple

import numpy as np
from scipy.linalg.lapack import dpotrf as _potrf
from scipy.linalg.lapack import dpotri as _potri
from scipy.linalg.lapack import dtrtri as _trtri

from asymptotics.core import coldstart
from asymptotics.core.meta import blas_limit
from asymptotics.network.compiled import lowrank
from asymptotics.network.compiled.cholesky import chol_inverse

#: a network point's BLAS products (the coupling's and the Gram's, about K^2 (r+k) rows by d
#: columns; the blocks' n x n products) on this many BLAS threads (None: the process's): too small
#: to gain from more, and threads spinning idle on a shared machine cost CPU time (every product
#: is split by rows and columns, not along its sums: the same numbers)
BLAS_THREADS: int | None = 1


def blas_threads():
    """A context in which BLAS runs on :data:`BLAS_THREADS` threads (no-op when None)."""
    return blas_limit(BLAS_THREADS)


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


def _pinv(vp: np.ndarray, Dp: np.ndarray, s: np.ndarray, c: int, spd: bool = True
          ) -> np.ndarray | None:
    """``P_i^-1`` (B x n x c x c), None where some ``P_i`` is not positive definite (``spd``)
    or, with ``spd=False``, singular."""
    if c == 1:
        p = 1.0 / (Dp[0] * s) + vp[0, 0]
        if not (np.all(p > 0.0) if spd else np.all(p != 0.0)):
            return None
        return (1.0 / p)[:, :, None, None]
    if c == 2:  # (closed form)
        a = 1.0 / (Dp[0] * s) + vp[0, 0]
        d = 1.0 / (Dp[1] * s) + vp[1, 1]
        det = a * d - vp[0, 1] * vp[0, 1]
        if not ((np.all(a > 0.0) and np.all(det > 0.0)) if spd else np.all(det != 0.0)):
            return None
        Pi = np.empty(s.shape + (2, 2))
        Pi[..., 0, 0] = d / det
        Pi[..., 1, 1] = a / det
        Pi[..., 0, 1] = Pi[..., 1, 0] = -vp[0, 1] / det
        return Pi
    P = np.broadcast_to(vp[:c, :c], s.shape + (c, c)).copy()
    idx = np.arange(c)
    P[..., idx, idx] += 1.0 / (s[..., None] * Dp[None, None, :c])
    if spd and not np.all(np.linalg.eigvalsh(P) > 0.0):
        return None
    try:
        Pi = np.linalg.inv(P)
    except np.linalg.LinAlgError:
        return None
    return 0.5 * (Pi + np.swapaxes(Pi, 2, 3))


#: the base class's ``P_i^-1`` (public: the coupling's solves, :mod:`asymptotics.network.coupling`)
p_inverse = _pinv


def schur(vp: np.ndarray, Dp: np.ndarray, s: np.ndarray, rest: np.ndarray, c: int,
          full: bool, spd: bool = True, work: np.ndarray | None = None) -> tuple | None:
    """``(P^-1, Y, G)`` in the permuted group order (base class first): ``G`` the blocks of
    ``S^-1`` (B x m x n x m x n, m = K - c) or with ``full=False`` their diagonals
    (B x m x m x n, from ``L^-1``: ``S = L L^T``); ``Y``, ``G`` None when m = 0. None where a
    factorisation fails (not positive definite). ``rest``: ``U^T Sig_h^-1 U`` for h in R.
    ``spd=False`` (some ``D_g < 0``: W symmetric, indefinite; ``full`` only): ``S^-1`` by LU
    per block, None where singular. ``work``: a B x n x n scratch array for ``S`` when m = 1
    (a caller's, reused: no fresh pages per call; its content is overwritten)."""
    Pi = _pinv(vp, Dp, s, c, spd)
    if Pi is None:
        return None
    B, n = s.shape
    m = vp.shape[0] - c
    if m == 0:
        return Pi, None, None
    Y = (Pi.reshape(-1, c) @ vp[:c, c:]).reshape(B, n, c, m)  # P_i^-1 Vhat1_FR (one product)
    corr = vp[c:, c:] - np.matmul(vp[c:, :c], Y)  # (B, n, m, m)
    idx = np.arange(n)
    if m == 1 and spd and _compiled(rest, full):  # (one compiled pass over the blocks)
        G = np.empty((B, n if full else 1, n))
        if not chol_inverse(rest[:, 0], 1.0 / Dp[c], np.ascontiguousarray(corr[:, :, 0, 0]),
                            G, full):
            return None
        return Pi, Y, G.reshape(B, 1, n, 1, n) if full else G[:, None, :, :]
    if m == 1:
        if work is not None and work.shape == (B, n, n) and work.flags.c_contiguous:
            S = np.divide(rest[:, 0], Dp[c], out=work)
        else:
            S = rest[:, 0] / Dp[c]
        S[:, idx, idx] += corr[:, :, 0, 0]
    else:
        S = np.zeros((B, m, n, m, n))
        S[:, :, idx, :, idx] = corr.transpose(1, 0, 2, 3)  # (n, B, m, m) -> S[b, g, i, h, i]
        for g in range(m):
            S[:, g, :, g, :] += rest[:, g] / Dp[c + g]
        S = S.reshape(B, m * n, m * n)
    if not spd:
        try:
            G = np.linalg.inv(S)
        except np.linalg.LinAlgError:
            return None
        if not np.all(np.isfinite(G)):
            return None
        return Pi, Y, (0.5 * (G + np.swapaxes(G, 1, 2))).reshape(B, m, n, m, n)
    if full:  # S^-1 by potri (trtri, then lauum: L^-T L^-1 on the lower triangle)
        for b in range(B):  # S[b] is symmetric: its transpose is the same matrix in Fortran
            L, info = _potrf(S[b].T, lower=True, overwrite_a=True)  # order (no copy)
            if info != 0:
                return None
            _, info = _potri(L, lower=True, overwrite_c=True)
            if info != 0:
                return None
        G = np.triu(S)  # (the Fortran lower triangle of each block: its C upper triangle)
        G += np.swapaxes(np.triu(S, 1), 1, 2)
        return Pi, Y, G.reshape(B, m, n, m, n)
    G = np.empty((B, m, m, n))
    for b in range(B):  # (LAPACK per block: faster than numpy's batched routines here)
        L, info = _potrf(S[b].T, lower=True, overwrite_a=True)
        if info != 0:
            return None
        Li, info = _trtri(L, lower=True, overwrite_c=True)
        if info != 0:
            return None
        G[b] = _diag_inv(Li, m, n)  # diag(S^-1)_(g,h) = sum_k Linv[k, g i] Linv[k, h i]
    return Pi, Y, G


def _compiled(rest: np.ndarray, full: bool) -> bool:
    """Whether :func:`chol_inverse` runs compiled (else LAPACK per block: the kernel's Python
    source would take minutes while it compiles, :mod:`asymptotics.core.coldstart`)."""
    if rest.dtype != np.float64 or not rest[:, 0].flags.c_contiguous:
        return False
    args = (rest[:1, 0], 1.0, np.ones((1, rest.shape[2])), np.empty((1, 1, rest.shape[2])),
            full)
    return coldstart.kernel_ready(chol_inverse, args,
                                  lambda: chol_inverse(np.eye(1)[None], 1.0, np.ones((1, 1)),
                                                       np.empty((1, 1, 1)), False),
                                  compile_mode_ready=True)


def _diag_inv(Li: np.ndarray, m: int, n: int) -> np.ndarray:
    """The diagonals ``diag(S^-1)_(g,h)`` (m x m x n) of the blocks of ``S^-1 = Li^T Li``."""
    if m == 1:
        return np.einsum("ki,ki->i", Li, Li)[None, None, :]
    Lr = Li.reshape(m * n, m, n)
    return np.einsum("kgi,khi->ghi", Lr, Lr)


def traces(vp: np.ndarray, Dp: np.ndarray, s: np.ndarray, rest: np.ndarray, c: int,
           work: np.ndarray | None = None) -> np.ndarray | None:
    """``sum_b tr W_b,ag`` (K x K, permuted order), None where :func:`schur` fails
    (``work``: its scratch array)."""
    f = schur(vp, Dp, s, rest, c, full=False, work=work)
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
          perm: np.ndarray | None = None, spd: bool = True, work: np.ndarray | None = None
          ) -> np.ndarray | None:
    """``W`` per block (B x K x n x K x n), group ``perm[x]`` at the x-th of the permuted order
    (default: the permuted order itself); None where :func:`schur` fails."""
    f = schur(vp, Dp, s, rest, c, full=True, spd=spd, work=work)
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


class LowRankW(NamedTuple):
    """W with one group outside the base class, per block: ``W_xy = diag(Pf[:, :, x, y]) +
    diag(z[:, :, x]) G diag(z[:, :, y])`` (Pf: B x n x K x K, zero outside the base class; z:
    B x n x K, ``-Y`` on the base class and 1 on the other group; G: B x n x n, ``S^-1``)."""

    Pf: np.ndarray
    z: np.ndarray
    G: np.ndarray


def wform(vp: np.ndarray, Dp: np.ndarray, s: np.ndarray, rest: np.ndarray, c: int,
          perm: np.ndarray, inv: np.ndarray, ident: bool, spd: bool = True,
          work: np.ndarray | None = None):
    """W in the most compact exact form its classes allow, in the groups' own order: every
    group in the base class: its blocks are diagonal, B x n x K x K (``W_xy =
    diag(W[:, :, x, y])``); one group outside it: a :class:`LowRankW`; else the dense
    :func:`wfull`. None where :func:`schur` fails. Read through :func:`wtrace`, :func:`wgram`,
    :func:`wa`. ``spd=False``: some ``D_g < 0`` (:func:`schur`; ``work``: its scratch)."""
    K = vp.shape[0]
    if c < K - 1:
        return wfull(vp, Dp, s, rest, c, None if ident else perm, spd, work)
    f = schur(vp, Dp, s, rest, c, full=c < K or not spd, spd=spd, work=work)
    if f is None:
        return None
    Pi, Y, G = f
    if c == K:
        return Pi if ident else Pi[:, :, inv[:, None], inv[None, :]]
    B, n = s.shape
    Pf = np.zeros((B, n, K, K))
    Pf[:, :, perm[:c, None], perm[None, :c]] = Pi
    z = np.empty((B, n, K))
    z[:, :, perm[:c]] = -Y[..., 0]
    z[:, :, perm[c]] = 1.0
    return LowRankW(Pf, z, np.ascontiguousarray(G[:, 0, :, 0, :]))


#: the last :class:`LowRankW` read by :func:`wtrace` and its traces (the solver's map, its Jacobian
#: and the Hessian parts read the same W: its diagonal, scattered over G's rows, read once)
_TRACE_LAST: list = [None]
#: False: every :func:`wtrace` of a LowRankW read afresh
TRACE_KEEP = True


def wtrace(W) -> np.ndarray:
    """``sum_b tr W_b,xy`` (K x K) of W in any form of :func:`wform`."""
    if isinstance(W, LowRankW):  # (compiled: asymptotics.network.compiled.lowrank)
        last = _TRACE_LAST[0]
        if last is not None and last[0] is W and TRACE_KEEP:
            return last[1].copy()
        T = lowrank.trace(W)
        _TRACE_LAST[0] = (W, T.copy()) if TRACE_KEEP else None
        return T
    return W.sum(axis=(0, 1)) if W.ndim == 4 else np.einsum("baici->ac", W)


def wgram(W) -> np.ndarray:
    """``H[x,y,c,e] = sum_b <W_b,xy, W_b,ce>_F`` (K x K x K x K) of W in any form of
    :func:`wform`: with a :class:`LowRankW` from ``G o G`` and the vectors ``z_x z_c`` (no
    dense block)."""
    if isinstance(W, LowRankW):  # W_xy = diag(Pf_xy) + diag(z_x) G diag(z_y)
        return lowrank.gram(W)
    if W.ndim == 4:  # diagonal blocks
        K = W.shape[2]
        Wr = W.reshape(-1, K * K)
        return (Wr.T @ Wr).reshape(K, K, K, K)
    K = W.shape[1]
    Wr = W.transpose(1, 3, 0, 2, 4).reshape(K * K, -1)
    return (Wr @ Wr.T).reshape(K, K, K, K)


def wa(W, aT: np.ndarray) -> np.ndarray:
    """``(W_xy a_(y,f))_i`` (B x K x n x K x m) for vectors ``aT`` (B x K x n x m) of W in any
    form of :func:`wform`."""
    if isinstance(W, LowRankW):  # Pf_i[x,y] a_i + z_ix (G (z_y a))_i
        return lowrank.wa(W, aT)
    if W.ndim == 4:  # diagonal blocks: (W_xy a)_i = W[b, i, x, y] a_i
        return np.einsum("bixy,byif->bxiyf", W, aT)
    return right_blocks(W, aT)


def right_blocks(X: np.ndarray, M: np.ndarray) -> np.ndarray:
    """``(X M)_xy = X_xy M_y`` per block: X is B x K x n x K x n, M is B x K x n x c."""
    B, K, n = X.shape[:3]
    XT = np.ascontiguousarray(X.transpose(0, 3, 1, 2, 4)).reshape(B, K, K * n, n)
    return np.matmul(XT, M).reshape(B, K, K, n, -1).transpose(0, 2, 3, 1, 4)
