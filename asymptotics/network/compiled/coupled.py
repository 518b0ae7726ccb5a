"""The coupling's Gram of the special columns (:class:`asymptotics.network.coupling.
CoupledChannels`, docs/DERIVATIONS.md §9.7, THEORY.md §15) as numba kernels where every group is
in the base class of :mod:`asymptotics.network.schur` (K = 1, or K = 2 groups with equal
covariances outside E): W is diagonal per direction (``W[b, i, x, y]``, B x n x K x K, the form
:func:`asymptotics.network.schur.wform` gives), so ``Acal`` and the quadratic forms of its
derivative are sums over the d directions of products of W's entries and the coupling vectors
``a`` (B x K x (r+k) x n), without forming ``W a`` (B x K x n x K x (r+k)) or the derivative's
coefficients ``P1``, ``P2`` (:meth:`~asymptotics.network.coupling.CoupledChannels._d_parts`).
The same sums as the numpy path in another order: the numbers agree to rounding (about 1e-16
relative), not bit for bit."""

from __future__ import annotations

import numpy as np

from asymptotics.core import coldstart
from asymptotics.core.coldstart import kernel

#: ``Acal`` and ``field_q``'s forms by these kernels where W is diagonal (False: numpy's path)
COMPILED = True


@kernel(cache=True, error_model="numpy", fastmath=True)
def acal_diag(W: np.ndarray, a: np.ndarray, D: np.ndarray, ecov: np.ndarray) -> np.ndarray:
    """``Acal`` (K (r+k) square, index ``g (r+k) + e``): ``B^-1 sum_(b,i) a_(g,e) W_gh
    a_(h,f) + delta_gh D_g Ecov_g`` symmetrised (:meth:`CoupledChannels.acal`; the sums over
    the directions vectorised)."""
    B, n, K = W.shape[0], W.shape[1], W.shape[2]
    m = a.shape[2]
    S = np.zeros((K * m, K * m))
    wv = np.empty((B, n))
    t = np.empty((B, n))
    for g in range(K):
        for h in range(g, K):
            for b in range(B):
                for i in range(n):
                    wv[b, i] = W[b, i, g, h]
            for f in range(m):
                for b in range(B):
                    for i in range(n):
                        t[b, i] = wv[b, i] * a[b, h, f, i]
                for e in range(m):
                    acc = 0.0
                    for b in range(B):
                        for i in range(n):
                            acc += a[b, g, e, i] * t[b, i]
                    S[g * m + e, h * m + f] = S[h * m + f, g * m + e] = acc / B
    for g in range(K):
        for e in range(m):
            for f in range(m):
                S[g * m + e, g * m + f] += D[g] * ecov[g, e, f]
    out = np.empty((K * m, K * m))
    for x in range(K * m):
        for y in range(K * m):
            out[x, y] = 0.5 * (S[x, y] + S[y, x])
    return out


@kernel(cache=True, error_model="numpy", fastmath=True)
def field_forms(W: np.ndarray, a: np.ndarray, vhat1: np.ndarray, D: np.ndarray,
                wa: np.ndarray) -> tuple:
    """``(c1, c2)`` of :meth:`CoupledChannels.field_q`: ``c1[x K + y] = B^-1 sum_(b,i) u_x
    u_y`` and ``c2[c] = B^-1 sum_(b,i) (a_c . wa_c - sum_z Vhat1_zc u_z) u_c / D_c`` (without
    the residual covariance's term), ``u_x = sum_g W_xg (a_g . wa_g)`` per direction: the
    forms ``w^T P1 w``, ``w^T P2 w`` of :meth:`CoupledChannels._d_parts`."""
    B, n, K = W.shape[0], W.shape[1], W.shape[2]
    m = a.shape[2]
    c1 = np.zeros(K * K)
    c2 = np.zeros(K)
    s = np.zeros((K, n))
    u = np.zeros((K, n))
    for b in range(B):
        for g in range(K):
            for i in range(n):
                s[g, i] = 0.0
            for e in range(m):
                c = wa[g, e]
                for i in range(n):
                    s[g, i] += a[b, g, e, i] * c
        for x in range(K):
            for i in range(n):
                acc = 0.0
                for g in range(K):
                    acc += W[b, i, x, g] * s[g, i]
                u[x, i] = acc
        for x in range(K):
            for y in range(K):
                acc = 0.0
                for i in range(n):
                    acc += u[x, i] * u[y, i]
                c1[x * K + y] += acc
            acc = 0.0
            for i in range(n):
                kt = s[x, i]
                for z in range(K):
                    kt -= vhat1[z, x] * u[z, i]
                acc += kt * u[x, i]
            c2[x] += acc / D[x]
    return c1 / B, c2 / B


def diag_w(bulk, vhat1: np.ndarray, D: np.ndarray) -> np.ndarray | None:
    """W (B x n x K x K, :meth:`asymptotics.network.bulk.GroupBulk.wkc`'s, kept by the bulk)
    where every group is in the base class, every ``D_g > 0`` and the kernels run compiled
    (:func:`asymptotics.core.coldstart.kernel_ready`); else None (the numpy path)."""
    eig = bulk._eig
    if (not COMPILED or eig is None or eig[3] != bulk.K or np.iscomplexobj(D)
            or not bool(np.all(D > 0.0))):
        return None
    if not _ready():
        return None
    W = bulk.wkc(vhat1, D)[0]
    return W if isinstance(W, np.ndarray) and W.ndim == 4 else None


def _ready() -> bool:
    K = 1
    W, a, one = np.ones((1, 1, K, K)), np.ones((1, K, 1, 1)), np.ones(K)
    args = (W, a, one, np.ones((K, 1, 1)))
    ok = coldstart.kernel_ready(acal_diag, args, lambda: acal_diag(*args),
                                compile_mode_ready=True)
    fargs = (W, a, np.eye(K), one, np.ones((K, 1)))
    return ok and coldstart.kernel_ready(field_forms, fargs, lambda: field_forms(*fargs),
                                         compile_mode_ready=True)
