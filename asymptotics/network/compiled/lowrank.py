"""The readings of W with one group outside the base class (:class:`asymptotics.network.schur.
LowRankW`, docs/DERIVATIONS.md §9.7, THEORY.md §15) as numba kernels: per block
``W_xy = diag(Pf_xy) + diag(z_x) G diag(z_y)`` (``G = S^-1``, the Schur complement's inverse),
so its trace, the Gram of its blocks and its products with the coupling vectors are sums over
the directions of ``Pf``, ``z`` and ``G`` (one block of ``G`` at a time, cache-hot) without the
stacked temporaries of the numpy forms (:func:`trace_np`, :func:`gram_np`, :func:`wa_np`, the
reference and the path until the kernels are compiled). The products with ``G`` are BLAS's, the
sums over the directions in another order than numpy's: the numbers agree to rounding."""

from __future__ import annotations

import numpy as np

from asymptotics.core import coldstart
from asymptotics.core.coldstart import kernel

#: W's readings by these kernels where they run compiled (False: numpy's, :func:`trace_np`...)
COMPILED = True


def trace_np(Pf: np.ndarray, z: np.ndarray, G: np.ndarray) -> np.ndarray:
    """``sum_b tr W_b,xy`` (K x K) (numpy)."""
    dG = np.diagonal(G, axis1=1, axis2=2)
    return Pf.sum(axis=(0, 1)) + np.einsum("bix,biy,bi->xy", z, z, dG)


def gram_np(Pf: np.ndarray, z: np.ndarray, G: np.ndarray) -> np.ndarray:
    """``H[x,y,c,e] = sum_b <W_b,xy, W_b,ce>_F`` (K x K x K x K) from ``G o G`` and the
    vectors ``z_x z_c`` (no dense block; numpy)."""
    K = z.shape[2]
    Pr = Pf.reshape(-1, K * K)
    dG = np.diagonal(G, axis1=1, axis2=2)
    u = (z[:, :, :, None] * z[:, :, None, :]).reshape(z.shape[0], -1, K * K)
    t2 = Pr.T @ (u * dG[:, :, None]).reshape(-1, K * K)  # [(x,y), (c,e)]
    Gu = np.matmul(G * G, u)  # (G o G) u
    t4 = np.einsum("bia,bic->ac", u, Gu).reshape(K, K, K, K)  # [x,c,y,e]
    return (Pr.T @ Pr + t2 + t2.T).reshape(K, K, K, K) + t4.transpose(0, 2, 1, 3)


def wa_np(Pf: np.ndarray, z: np.ndarray, G: np.ndarray, aT: np.ndarray) -> np.ndarray:
    """``(W_xy a_(y,f))_i`` (B x K x n x K x m) for ``aT`` (B x K x n x m): ``Pf_i[x,y] a_i +
    z_ix (G (z_y a))_i`` (numpy)."""
    at = aT.transpose(0, 2, 1, 3)  # (b, j, y, f)
    za = z[:, :, :, None] * at
    B, n, K, m = za.shape
    Gza = np.matmul(G, za.reshape(B, n, K * m)).reshape(B, n, K, m)
    return np.einsum("bixy,biyf->bxiyf", Pf, at) + \
        z.transpose(0, 2, 1)[:, :, :, None, None] * Gza[:, None]


@kernel(cache=True, error_model="numpy")
def lr_trace(Pf: np.ndarray, z: np.ndarray, G: np.ndarray) -> np.ndarray:
    """Kernel: :func:`trace_np`."""
    B, n, K = z.shape
    T = np.zeros((K, K))
    for b in range(B):
        for i in range(n):
            gi = G[b, i, i]
            for x in range(K):
                zx = z[b, i, x] * gi
                for y in range(K):
                    T[x, y] += Pf[b, i, x, y] + zx * z[b, i, y]
    return T


@kernel(cache=True, error_model="numpy")
def lr_gram(Pf: np.ndarray, z: np.ndarray, G: np.ndarray) -> np.ndarray:
    """Kernel: :func:`gram_np` (per block ``(G o G) u`` by BLAS on the distinct products
    ``u = z_x z_y``, x <= y: ``z_x z_y = z_y z_x`` exactly)."""
    B, n, K = z.shape
    K2 = K * K
    npair = K * (K + 1) // 2
    pair = np.empty(K2, dtype=np.int64)  # (x, y) -> its distinct pair
    q = 0
    for x in range(K):
        for y in range(x, K):
            pair[x * K + y] = pair[y * K + x] = q
            q += 1
    PP = np.zeros((K2, K2))
    t2 = np.zeros((K2, K2))
    t4 = np.zeros((npair, npair))
    GG = np.empty((n, n))
    u = np.empty((n, npair))
    pf = np.empty(K2)
    for b in range(B):
        for i in range(n):
            for j in range(n):
                g = G[b, i, j]
                GG[i, j] = g * g
            q = 0
            for x in range(K):
                for y in range(x, K):
                    u[i, q] = z[b, i, x] * z[b, i, y]
                    q += 1
        Gu = GG @ u
        for i in range(n):
            gi = G[b, i, i]
            for a in range(K2):
                pf[a] = Pf[b, i, a // K, a % K]
            for a in range(K2):
                pa = pf[a]
                if pa != 0.0:
                    for c in range(K2):
                        PP[a, c] += pa * pf[c]
                        t2[a, c] += pa * (u[i, pair[c]] * gi)
            for a in range(npair):
                ua = u[i, a]
                for c in range(npair):
                    t4[a, c] += ua * Gu[i, c]
    H = np.empty((K, K, K, K))
    for x in range(K):
        for y in range(K):
            for c in range(K):
                for e in range(K):
                    p, q = x * K + y, c * K + e
                    H[x, y, c, e] = PP[p, q] + t2[p, q] + t2[q, p] + \
                        t4[pair[x * K + c], pair[y * K + e]]
    return H


@kernel(cache=True, error_model="numpy")
def lr_wa(Pf: np.ndarray, z: np.ndarray, G: np.ndarray, aT: np.ndarray) -> np.ndarray:
    """Kernel: :func:`wa_np` (per block ``G (z a)`` by BLAS)."""
    B, n, K = z.shape
    m = aT.shape[3]
    out = np.empty((B, K, n, K, m))
    za = np.empty((n, K * m))
    for b in range(B):
        for j in range(n):
            for y in range(K):
                for f in range(m):
                    za[j, y * m + f] = z[b, j, y] * aT[b, y, j, f]
        Gza = np.ascontiguousarray(G[b]) @ za
        for x in range(K):
            for i in range(n):
                zx = z[b, i, x]
                for y in range(K):
                    p = Pf[b, i, x, y]
                    for f in range(m):
                        out[b, x, i, y, f] = p * aT[b, y, i, f] + zx * Gza[i, y * m + f]
    return out


def _c(x: np.ndarray) -> np.ndarray:
    """A read-only C-contiguous float64 view (one kernel signature whatever the flags)."""
    y = np.ascontiguousarray(x, dtype=np.float64).view()
    y.flags.writeable = False
    return y


def trace(W) -> np.ndarray:
    """``sum_b tr W_b,xy`` of a :class:`~asymptotics.network.schur.LowRankW`."""
    if _ready():
        return lr_trace(_c(W.Pf), _c(W.z), _c(W.G))
    return trace_np(W.Pf, W.z, W.G)


def gram(W) -> np.ndarray:
    """The Gram of W's blocks (:func:`gram_np`) of a :class:`~asymptotics.network.schur.
    LowRankW`."""
    if _ready():
        return lr_gram(_c(W.Pf), _c(W.z), _c(W.G))
    return gram_np(W.Pf, W.z, W.G)


def wa(W, aT: np.ndarray) -> np.ndarray:
    """``(W_xy a_(y,f))_i`` (:func:`wa_np`) of a :class:`~asymptotics.network.schur.
    LowRankW`."""
    if _ready():
        return lr_wa(_c(W.Pf), _c(W.z), _c(W.G), _c(aT))
    return wa_np(W.Pf, W.z, W.G, aT)


def _ready() -> bool:
    """Whether the kernels run compiled (:func:`asymptotics.core.coldstart.kernel_ready`)."""
    if _READY:
        return COMPILED
    if not COMPILED:
        return False
    Pf, z, G = _c(np.ones((1, 1, 1, 1))), _c(np.ones((1, 1, 1))), _c(np.ones((1, 1, 1)))
    aT = _c(np.ones((1, 1, 1, 1)))
    ok = all(coldstart.kernel_ready(f, args, lambda f=f, args=args: f(*args),
                                    compile_mode_ready=True)
             for f, args in ((lr_trace, (Pf, z, G)), (lr_gram, (Pf, z, G)),
                             (lr_wa, (Pf, z, G, aT))))
    if ok:
        _READY.append(True)
    return ok


_READY: list = []  # (every kernel compiled: not asked again)
