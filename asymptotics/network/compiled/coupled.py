"""The coupling's Gram of the special columns (:class:`asymptotics.network.coupling.
CoupledChannels`, docs/DERIVATIONS.md §9.7, THEORY.md §15) as numba kernels where every group is
in the base class of :mod:`asymptotics.network.schur` (K = 1, or K = 2 groups with equal
covariances outside E): W is diagonal per direction (``W[b, i, x, y]``, B x n x K x K, the form
:func:`asymptotics.network.schur.wform` gives), so ``Acal`` and the quadratic forms of its
derivative are sums over the d directions of products of W's entries and the coupling vectors
``a`` (B x K x (r+k) x n), without forming ``W a`` (B x K x n x K x (r+k)) or the derivative's
coefficients ``P1``, ``P2`` (:meth:`~asymptotics.network.coupling.CoupledChannels._d_parts`).
Also the rest of :meth:`~asymptotics.network.coupling.CoupledChannels.field_q` there
(:func:`field_q_diag`) and the bulk's derivative matrix from W's Gram
(:func:`dmap_diag`, :meth:`asymptotics.network.bulk.GroupBulk.dlin`). The same sums as the numpy
path in another order: the numbers agree to rounding (about 1e-16 relative), not bit for bit."""

from __future__ import annotations

import numpy as np

from asymptotics.core import coldstart
from asymptotics.core.coldstart import kernel
from asymptotics.network.compiled.diagonal import ed_of_gram

#: ``Acal`` and ``field_q``'s forms by these kernels where W is diagonal (False: numpy's path)
COMPILED = True
#: the sums' fast-math flags: reassociation (vectorised sums) and contraction, never the
#: no-NaN / no-infinity assumptions (a NaN from an unconverged input stays a NaN)
FAST = {"reassoc", "contract", "nsz", "arcp", "afn"}
#: the ``Wa`` argument of :func:`field_q_diag` where W is diagonal (zero-size, read-only)
NO_WA = np.zeros((0, 1, 1, 1, 1))
NO_WA.flags.writeable = False


@kernel(cache=True, error_model="numpy", fastmath=FAST)
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


@kernel(cache=True, error_model="numpy", fastmath=FAST)
def gram_row(c1: np.ndarray, u: np.ndarray, x: int) -> None:
    """Kernel: ``c1[x K + y] += sum_i u_x,i u_y,i`` for every y (row x of the Gram of ``u``,
    K x n), shared by :func:`field_forms` and :func:`forms_wa`."""
    K, n = u.shape[0], u.shape[1]
    for y in range(K):
        acc = 0.0
        for i in range(n):
            acc += u[x, i] * u[y, i]
        c1[x * K + y] += acc


@kernel(cache=True, error_model="numpy", fastmath=FAST)
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
            gram_row(c1, u, x)
            acc = 0.0
            for i in range(n):
                kt = s[x, i]
                for z in range(K):
                    kt -= vhat1[z, x] * u[z, i]
                acc += kt * u[x, i]
            c2[x] += acc / D[x]
    return c1 / B, c2 / B


@kernel(cache=True, error_model="numpy", fastmath=FAST)
def forms_wa(Wa: np.ndarray, a: np.ndarray, wa: np.ndarray, vhat1: np.ndarray,
             D: np.ndarray) -> tuple:
    """:func:`forms_from_wa` (``Wa``: B x K x n x K x m, W in any form; ``a``: the coupling
    vectors B x K x m x n): the same sums, in loops."""
    B, K, n, m = Wa.shape[0], Wa.shape[1], Wa.shape[2], Wa.shape[4]
    c1 = np.zeros(K * K)
    c2 = np.zeros(K)
    u = np.empty((K, n))
    for b in range(B):
        for x in range(K):
            for i in range(n):
                acc = 0.0
                for y in range(K):
                    for f in range(m):
                        acc += Wa[b, x, i, y, f] * wa[y, f]
                u[x, i] = acc
        for x in range(K):
            gram_row(c1, u, x)
            acc = 0.0
            for i in range(n):
                t = 0.0
                for f in range(m):
                    t += a[b, x, f, i] * wa[x, f]
                for z in range(K):
                    t -= vhat1[z, x] * u[z, i]
                acc += t * u[x, i]
            c2[x] += acc
    return c1 / B, c2 / (D * B)


@kernel(cache=True, error_model="numpy")
def field_q_diag(Ac, order, nv, k, z, p, W, Wa, a, vhat1, D, ecov, lin, beta) -> tuple:
    """``(Q1 field part, Q2 field part, ok)`` of :meth:`CoupledChannels.field_q` with W diagonal
    (``Ac``: its Acal, ``order``: the (V, T) order, ``nv = K r``, ``(z, p)``: the conjugates
    ``(zetahat, psihat)`` raveled, ``lin``: the bulk's derivative matrix
    :meth:`~asymptotics.network.bulk.GroupBulk.dlin`): ``w = (I + N A)^-1 u``, the forms of
    :func:`field_forms`, the unit derivatives from ``lin``; W in any form where ``Wa`` (``W a``,
    B x K x n x K x m, zero-size where W is diagonal) is given: the forms of :func:`forms_wa`.
    ``ok`` False where ``lin`` or the forms are not finite (the caller's general way)."""
    K = vhat1.shape[0]
    nA = Ac.shape[0]
    m = nA // K
    A = np.empty((nA, nA))
    for x in range(nA):
        for y in range(nA):
            A[x, y] = Ac[order[x], order[y]]
    u = np.concatenate((z, p))
    S = np.eye(nA)  # I + N A, N = 0 (+) (Vhat1 (x) I_k) on the T block
    for g in range(K):
        for j in range(k):
            for y in range(nA):
                acc = 0.0
                for h in range(K):
                    acc += vhat1[g, h] * A[nv + h * k + j, y]
                S[nv + g * k + j, y] += acc
    w = np.linalg.solve(S, u)
    wa = np.zeros((K, m))
    for x in range(nA):
        wa[order[x] // m, order[x] % m] = w[x]
    if Wa.shape[0] > 0:
        c1, c2 = forms_wa(Wa, a, wa, vhat1, D)
    else:
        c1, c2 = field_forms(W, a, vhat1, D, wa)
    for g in range(K):
        acc = 0.0
        for e in range(m):
            for f in range(m):
                acc += ecov[g, e, f] * wa[g, e] * wa[g, f]
        c2[g] += acc
    yt = np.empty(nA - nv)
    for x in range(nv, nA):
        acc = 0.0
        for y in range(nA):
            acc += A[x, y] * w[y]
        yt[x - nv] = acc
    cm = np.empty((K, K))
    for g in range(K):
        for h in range(K):
            acc = 0.0
            for j in range(k):
                acc += yt[g * k + j] * yt[h * k + j]
            cm[g, h] = c1[g * K + h] + acc
    nq = K * K
    q1, q2 = np.zeros((K, K)), np.zeros(K)
    if not (np.all(np.isfinite(lin)) and np.all(np.isfinite(cm))):
        return q1, q2, False
    for g in range(K):
        acc = 0.0
        for j in range(K):
            acc += beta * lin[nq + j, nq + g] * c2[j]
        q2[g] = -acc
        for h in range(K):
            acc = 0.0
            for j in range(K):
                acc += beta * lin[nq + j, g * K + h] * c2[j]
            q1[g, h] = -(acc - cm[g, h])
    return 0.5 * (q1 + q1.T), q2, True


def field_q_fast(ch, vhat1: np.ndarray, tau: np.ndarray, beta: float, pi: np.ndarray,
                 zh: np.ndarray, ph: np.ndarray) -> tuple | None:
    """:meth:`CoupledChannels.field_q` (``ch``) by :func:`field_q_diag` where W is diagonal
    (:func:`diag_w`); None elsewhere or where it is not finite (the numpy path)."""
    D = beta * pi * tau
    if diag_w(ch.bulk, vhat1, D) is None:
        return None
    Ac = ch.acal(vhat1, D)
    Wd = ch.bulk.wkc(vhat1, D)[0]
    lin = ch.bulk.dlin(vhat1, tau, beta, pi)
    q1, q2, ok = field_q_diag(Ac, ch._ord, ch.K * ch.r, ch.k, np.ravel(zh), np.ravel(ph), Wd,
                              NO_WA, ch.a_w, vhat1, D, ch.ecov, lin, float(beta))
    return (q1, q2) if ok else None


@kernel(cache=True, error_model="numpy")
def dmap_diag(H, tw, vhat1, D, tau, beta, pi, d) -> tuple:
    """``(HVV, HVD, ED, lin)``: :meth:`~asymptotics.network.bulk.GroupBulk.parts` from the Gram
    ``H`` of W and its trace ``tw`` (W diagonal: ``Kc = I - W Vc``) and the derivative matrix of
    :meth:`~asymptotics.network.bulk.GroupBulk._dmap` from them (DERIVATIONS.md §9.7)."""
    K = vhat1.shape[0]
    bd = beta * d
    HVV = np.empty((K, K, K, K))
    HVD = np.empty((K, K, K))
    ED = np.empty((K, K))
    for p in range(K):
        for q in range(K):
            for r in range(K):
                for t in range(K):
                    HVV[p, q, r, t] = -H[q, r, p, t] / bd
    for c in range(K):
        for e in range(K):
            for g in range(K):
                acc = 0.0
                for z in range(K):
                    acc += vhat1[z, g] * H[c, z, e, g]
                HVD[c, e, g] = -acc
                if c == g:
                    HVD[c, e, g] += tw[e, g]
                HVD[c, e, g] /= bd * D[g]
    ed_of_gram(vhat1, H, D, d, ED)
    bp = beta * pi
    t2 = tau * tau
    Jm = np.eye(K)
    for g in range(K):
        for h in range(K):
            Jm[g, h] += t2[g] * ED[g, h] * bp[h]
    At = -np.linalg.inv(Jm)
    for g in range(K):
        for h in range(K):
            At[g, h] *= t2[h]
    nq = K * K
    Hd = HVD.reshape(nq, K)
    Mt = np.empty((K, nq + K))
    for g in range(K):
        for j in range(nq):
            acc = 0.0
            for h in range(K):
                acc += At[g, h] * (beta * Hd[j, h])
            Mt[g, j] = acc
        for h in range(K):
            Mt[g, nq + h] = At[g, h]
    lin = np.empty((nq + K, nq + K))
    for j in range(nq):
        for col in range(nq + K):
            acc = 0.0
            for g in range(K):
                acc += Hd[j, g] * (bp[g] * Mt[g, col])
            lin[j, col] = acc + (HVV.reshape(nq, nq)[j, col] if col < nq else 0.0)
    for g in range(K):
        for col in range(nq + K):
            lin[nq + g, col] = pi[g] * Mt[g, col]
    return HVV, HVD, ED, lin


def dmap_fast(bulk, vhat1: np.ndarray, tau: np.ndarray, beta: float, pi: np.ndarray):
    """:meth:`GroupBulk._dmap` by :func:`dmap_diag` where W is diagonal (:func:`diag_w`), the
    Hessian parts kept as :meth:`GroupBulk.parts` keeps them; None elsewhere (numpy's path)."""
    D = beta * pi * tau
    key = ("parts", vhat1.tobytes(), tau.tobytes(), float(beta), pi.tobytes())
    if key in bulk._memo or diag_w(bulk, vhat1, D) is None:
        return None
    W = bulk.wkc(vhat1, D)[0]
    HVV, HVD, ED, lin = dmap_diag(bulk._gram(W), bulk.wtrace(W), vhat1, D, tau, float(beta),
                                  np.asarray(pi, dtype=np.float64), float(bulk.d))
    bulk._keep(key, (HVV, HVD, ED))
    return lin


def diag_w(bulk, vhat1: np.ndarray, D: np.ndarray) -> np.ndarray | None:
    """W (B x n x K x K, :meth:`asymptotics.network.bulk.GroupBulk.wkc`'s, kept by the bulk)
    where every group is in the base class, every ``D_g > 0`` and the kernels run compiled
    (:func:`asymptotics.core.coldstart.kernel_ready`); else None (the numpy path)."""
    eig = bulk._eig
    if (not COMPILED or eig is None or eig[3] != bulk.K or np.iscomplexobj(D)
            or np.iscomplexobj(vhat1) or not bool(np.all(D > 0.0))):
        return None
    if not _ready():
        return None
    W = bulk.wkc(vhat1, D)[0]
    return W if isinstance(W, np.ndarray) and W.ndim == 4 else None


def _ready() -> bool:
    if _READY:
        return True
    K = 1
    W, a, one = np.ones((1, 1, K, K)), np.ones((1, K, 1, 1)), np.ones(K)
    args = (W, a, one, np.ones((K, 1, 1)))
    ok = coldstart.kernel_ready(acal_diag, args, lambda: acal_diag(*args),
                                compile_mode_ready=True)
    fargs = (W, a, np.eye(K), one, np.ones((K, 1)))
    ok = ok and coldstart.kernel_ready(field_forms, fargs, lambda: field_forms(*fargs),
                                       compile_mode_ready=True)
    o, one1 = np.zeros(1, dtype=np.int64), np.ones(1)
    Ac, H = np.ones((1, 1)), np.ones((K, K, K, K))
    Ac.flags.writeable = H.flags.writeable = False  # (as the kept Acal and Gram)
    qargs = (Ac, o, 0, 1, one1[:0], one1, W, NO_WA, a, np.eye(K), one, np.ones((K, 1, 1)),
             np.ones((2, 2)), 1.0)
    ok = ok and coldstart.kernel_ready(field_q_diag, qargs, lambda: field_q_diag(*qargs),
                                       compile_mode_ready=True)
    dargs = (H, np.ones((K, K)), np.eye(K), one, one, 1.0, one, 1.0)
    ok = ok and coldstart.kernel_ready(dmap_diag, dargs, lambda: dmap_diag(*dargs),
                                       compile_mode_ready=True)
    if ok:
        _READY.append(True)
    return ok


_READY: list = []  # (both kernels compiled: not asked again)


def forms_from_wa(Wa: np.ndarray, aT: np.ndarray, wa: np.ndarray, vhat1: np.ndarray,
                  D: np.ndarray) -> tuple:
    """``(c1, c2)`` of :func:`field_forms` from ``W a`` (B x K x n x K x m, :meth:`~asymptotics.
    network.coupling.CoupledChannels._w_parts`; any form of W, ``Kc = I - W Vc`` not formed):
    ``u_x = (W a)_x . wa`` per direction, ``c1 = B^-1 sum u_x u_y``, ``c2_c = B^-1 sum (a_c .
    wa_c - sum_z Vhat1_zc u_z) u_c / D_c``: the forms ``w^T P1 w``, ``w^T P2 w`` without ``P1``,
    ``P2`` (:meth:`~asymptotics.network.coupling.CoupledChannels._d_parts`; numpy, to rounding)."""
    B, K, n = Wa.shape[:3]
    u = Wa.reshape(B, K, n, -1) @ wa.ravel()  # (b, x, i)
    t = np.einsum("bgif,gf->bgi", aT, wa) - np.einsum("zc,bzi->bci", vhat1, u)
    c1 = np.einsum("bxi,byi->xy", u, u).ravel() / B
    return c1, np.einsum("bci,bci->c", t, u) / (D * B)
