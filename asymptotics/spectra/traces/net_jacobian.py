"""The analytic Jacobian of the commuting V-part residual of :mod:`asymptotics.spectra.netbulk`
(docs/THEORY.md §16.8, docs/DERIVATIONS.md §9.8), instead of finite differences.

Unknowns ``x = (tau (K), V1 (K^2))``. The node sums ``M = A sum_j w_j o_j/(1 + V_j)`` (and
``v2``) with ``V_j = V1 . outer_j + (pi tau) . ms2_j`` have ``dM/dx_l = -A sum_j w_j o_j f_jl
/(1 + V_j)^2`` (``f_j = (pi ms2_j, outer_j)``); the commuting traces
``T_ag = sum_i ws_ig N_i[a, g]``, ``N_i = (I + diag(D s_i) M)^-1``, have

    dT_ag/dM_cd = -sum_i ws_ig N_i[a, c] D_c s_ic N_i[d, g],
    dT_ag/dD_c  = -sum_i ws_ig N_i[a, c] s_ic (M N_i)[c, g]

(:func:`traces0_jacobian`, by the symmetric ``S_i = N_i diag(D s_i)``), and the residual
``(tau (lam + v2 + e) - 1, V1 - Vb)`` follows by
the chain rule (:func:`vpart_jacobian`). Exact up to rounding: the tests compare it with the
difference quotients."""

from __future__ import annotations

import numpy as np

from asymptotics.core.coldstart import kernel
from asymptotics.spectra.traces.outside_kernels import compiled, ninv
from asymptotics.spectra.traces.outside_scalar import rcp

#: fast math (as :data:`asymptotics.spectra.traces.outside_kernels.FAST`)
FAST = True
_QUEUED: list = []


@kernel(cache=True, error_model="numpy", fastmath=FAST)
def traces0_products(vh: np.ndarray, D: np.ndarray, sf: np.ndarray, wt: np.ndarray,
                     ia: np.ndarray, ib: np.ndarray) -> tuple:
    """Kernel: per point ``(sum_i wt_i S_i, sum_i wt_i S_i (x) S_i)`` on the unordered pairs
    ``(ia[p], ib[p])`` (P of them) of the symmetric ``S_i = N_i diag(D s_i)``: ``Ssum``
    (N, P), ``Y`` (N, P, P) (upper triangle), over the directions ``sf`` (K x n), weights ``wt``."""
    Np, K = D.shape
    nd = sf.shape[1]
    P = ia.shape[0]
    Ss = np.zeros((Np, P), dtype=np.complex128)
    Y = np.zeros((Np, P, P), dtype=np.complex128)
    A = np.empty((K, K), dtype=np.complex128)
    N = np.empty((K, K), dtype=np.complex128)
    S = np.empty(P, dtype=np.complex128)
    Sl = np.empty(P, dtype=np.complex128)
    Yl = np.empty((P, P), dtype=np.complex128)
    for x in range(Np):
        Sl[:] = 0.0
        Yl[:, :] = 0.0
        for j in range(nd):
            ninv(vh[x], D[x], sf, j, A, N)
            w = wt[j]
            for p in range(P):
                S[p] = N[ia[p], ib[p]] * (D[x, ib[p]] * sf[ib[p], j])
            for p in range(P):
                Sl[p] += w * S[p]
                ws = w * S[p]
                for q in range(p, P):
                    Yl[p, q] += ws * S[q]
        for p in range(P):
            Ss[x, p] = Sl[p]
            for q in range(p, P):
                Y[x, p, q] = Yl[p, q]
    return Ss, Y


@kernel(cache=True, error_model="numpy", fastmath=FAST)
def products3(vh: np.ndarray, D: np.ndarray, sf: np.ndarray, wt: np.ndarray, Ss: np.ndarray,
              Y: np.ndarray) -> None:
    """Kernel: :func:`traces0_products` for K = 3 in scalars (``N`` by cofactors, the pairs
    (0,0), (0,1), (0,2), (1,1), (1,2), (2,2)), into ``Ss`` (N, 6) and ``Y`` (N, 6, 6)."""
    for x in range(D.shape[0]):
        v00, v01, v02 = vh[x, 0, 0], vh[x, 0, 1], vh[x, 0, 2]
        v10, v11, v12 = vh[x, 1, 0], vh[x, 1, 1], vh[x, 1, 2]
        v20, v21, v22 = vh[x, 2, 0], vh[x, 2, 1], vh[x, 2, 2]
        D0, D1, D2 = D[x, 0], D[x, 1], D[x, 2]
        a0, a1, a2, a3, a4, a5 = 0j, 0j, 0j, 0j, 0j, 0j
        y00, y01, y02, y03, y04, y05 = 0j, 0j, 0j, 0j, 0j, 0j
        y11, y12, y13, y14, y15 = 0j, 0j, 0j, 0j, 0j
        y22, y23, y24, y25 = 0j, 0j, 0j, 0j
        y33, y34, y35, y44, y45, y55 = 0j, 0j, 0j, 0j, 0j, 0j
        for j in range(sf.shape[1]):
            u0, u1, u2 = D0 * sf[0, j], D1 * sf[1, j], D2 * sf[2, j]
            b00, b01, b02 = 1.0 + u0 * v00, u0 * v01, u0 * v02
            b10, b11, b12 = u1 * v10, 1.0 + u1 * v11, u1 * v12
            b20, b21, b22 = u2 * v20, u2 * v21, 1.0 + u2 * v22
            c00 = b11 * b22 - b12 * b21
            c01 = b12 * b20 - b10 * b22
            c02 = b10 * b21 - b11 * b20
            idet = rcp(b00 * c00 + b01 * c01 + b02 * c02)
            s0 = c00 * idet * u0
            s1 = (b02 * b21 - b01 * b22) * idet * u1
            s2 = (b01 * b12 - b02 * b11) * idet * u2
            s3 = (b00 * b22 - b02 * b20) * idet * u1
            s4 = (b02 * b10 - b00 * b12) * idet * u2
            s5 = (b00 * b11 - b01 * b10) * idet * u2
            w = wt[j]
            t0, t1, t2, t3, t4, t5 = w * s0, w * s1, w * s2, w * s3, w * s4, w * s5
            a0 += t0
            a1 += t1
            a2 += t2
            a3 += t3
            a4 += t4
            a5 += t5
            y00 += t0 * s0
            y01 += t0 * s1
            y02 += t0 * s2
            y03 += t0 * s3
            y04 += t0 * s4
            y05 += t0 * s5
            y11 += t1 * s1
            y12 += t1 * s2
            y13 += t1 * s3
            y14 += t1 * s4
            y15 += t1 * s5
            y22 += t2 * s2
            y23 += t2 * s3
            y24 += t2 * s4
            y25 += t2 * s5
            y33 += t3 * s3
            y34 += t3 * s4
            y35 += t3 * s5
            y44 += t4 * s4
            y45 += t4 * s5
            y55 += t5 * s5
        Ss[x, 0], Ss[x, 1], Ss[x, 2], Ss[x, 3], Ss[x, 4], Ss[x, 5] = a0, a1, a2, a3, a4, a5
        Y[x, 0, 0], Y[x, 0, 1], Y[x, 0, 2], Y[x, 0, 3], Y[x, 0, 4] = y00, y01, y02, y03, y04
        Y[x, 0, 5], Y[x, 1, 1], Y[x, 1, 2], Y[x, 1, 3], Y[x, 1, 4] = y05, y11, y12, y13, y14
        Y[x, 1, 5], Y[x, 2, 2], Y[x, 2, 3], Y[x, 2, 4], Y[x, 2, 5] = y15, y22, y23, y24, y25
        Y[x, 3, 3], Y[x, 3, 4], Y[x, 3, 5], Y[x, 4, 4], Y[x, 4, 5] = y33, y34, y35, y44, y45
        Y[x, 5, 5] = y55


@kernel(cache=True, error_model="numpy", fastmath=FAST)
def products2(vh: np.ndarray, D: np.ndarray, sf: np.ndarray, wt: np.ndarray, Ss: np.ndarray,
              Y: np.ndarray) -> None:
    """Kernel: :func:`traces0_products` for K = 2 in scalars (the pairs (0,0), (0,1), (1,1)),
    into ``Ss`` (N, 3) and ``Y`` (N, 3, 3)."""
    for x in range(D.shape[0]):
        v00, v01, v10, v11 = vh[x, 0, 0], vh[x, 0, 1], vh[x, 1, 0], vh[x, 1, 1]
        D0, D1 = D[x, 0], D[x, 1]
        a0, a1, a2 = 0j, 0j, 0j
        y00, y01, y02, y11, y12, y22 = 0j, 0j, 0j, 0j, 0j, 0j
        for j in range(sf.shape[1]):
            u0, u1 = D0 * sf[0, j], D1 * sf[1, j]
            b00, b11 = 1.0 + u0 * v00, 1.0 + u1 * v11
            idet = rcp(b00 * b11 - (u0 * v01) * (u1 * v10))
            s0 = b11 * u0 * idet
            s1 = -(u0 * v01) * u1 * idet
            s2 = b00 * u1 * idet
            w = wt[j]
            t0, t1, t2 = w * s0, w * s1, w * s2
            a0 += t0
            a1 += t1
            a2 += t2
            y00 += t0 * s0
            y01 += t0 * s1
            y02 += t0 * s2
            y11 += t1 * s1
            y12 += t1 * s2
            y22 += t2 * s2
        Ss[x, 0], Ss[x, 1], Ss[x, 2] = a0, a1, a2
        Y[x, 0, 0], Y[x, 0, 1], Y[x, 0, 2] = y00, y01, y02
        Y[x, 1, 1], Y[x, 1, 2], Y[x, 2, 2] = y11, y12, y22


def traces0_jacobian(vh: np.ndarray, D: np.ndarray, sf: np.ndarray, wt: np.ndarray,
                     dvh: np.ndarray, dD: np.ndarray) -> tuple:
    """``(T, dT)`` of the commuting traces (module docstring) at the points ``(vh (N x K x K)
    symmetric, D (N x K))`` on the directions ``sf`` (K x n, weights ``wt``), with ``dT`` (N, K,
    K, q) along the derivatives ``dvh`` (N, K, K, q) and ``dD`` (N, K, q). With ``S_i = N_i
    diag(u_i) = (diag(u_i)^-1 + M)^-1`` symmetric (u_i = D s_i): ``T_ag = sum_i wt_i
    S_i[a, g]/D_g`` and ``dT_ag = -sum_cd sum_i wt_i S_i[a, c] S_i[d, g] H_cd/D_g``,
    ``H = dM + diag(dD/D) M``: K(K+1)/2 sums and their products (:func:`traces0_products`)."""
    Np, K = D.shape
    ia, ib = np.triu_indices(K)
    if K in (2, 3):
        P = ia.size
        Ss = np.empty((Np, P), dtype=np.complex128)
        Yu = np.zeros((Np, P, P), dtype=np.complex128)
        (products2 if K == 2 else products3)(vh, D, sf, wt, Ss, Yu)
    else:
        Ss, Yu = traces0_products(vh, D, sf, wt, ia.astype(np.int64), ib.astype(np.int64))
    pos = np.empty((K, K), dtype=np.int64)  # the packed slot of (a, c) and (c, a)
    pos[ia, ib] = np.arange(ia.size)
    pos[ib, ia] = np.arange(ia.size)
    Y = Yu + np.swapaxes(np.triu(Yu, 1), 1, 2)  # symmetric in the two slots
    # rows (a, g), columns (c, d): sum_i wt_i S_i[a, c] S_i[d, g]
    Yr = Y[:, pos.reshape(K, 1, K, 1), pos.T.reshape(1, K, 1, K)].reshape(Np, K * K, K * K)
    iD = 1.0 / D
    T = Ss[:, pos] * iD[:, None, :]
    H = dvh + vh[..., None] * iD[:, :, None, None] * dD[:, :, None, :]
    q = H.shape[3]
    dT = (Yr @ H.reshape(Np, K * K, q)).reshape(Np, K, K, q) * (-iD)[:, None, :, None]
    return T, dT


def ready(sf: np.ndarray, wt: np.ndarray) -> bool:
    """Whether the products' kernel for ``K = sf.shape[0]`` runs compiled (numba has it, or its
    on-disk cache does); else it is queued once (interpreted on one point)."""
    K = sf.shape[0]
    vh = np.zeros((1, K, K), dtype=np.complex128)
    D = np.ones((1, K), dtype=np.complex128)
    if K in (2, 3):
        P = K * (K + 1) // 2
        args = (vh, D, sf, wt, np.empty((1, P), dtype=np.complex128),
                np.empty((1, P, P), dtype=np.complex128))
        disp = products2 if K == 2 else products3
    else:
        ia = np.zeros(1, dtype=np.int64)
        args, disp = (vh, D, sf, wt, ia, ia), traces0_products
    if compiled(disp, args):
        return True
    if K not in _QUEUED:
        _QUEUED.append(K)
        disp(*(np.ascontiguousarray(a[:, :1]) if a is sf else a[:1] if a is wt else a
               for a in args))
    return False


def node_tables(pi: np.ndarray, outer: np.ndarray, outer_w: np.ndarray, ms2: np.ndarray,
                ms2_w: np.ndarray, A: float) -> tuple:
    """The node sums' tables for :func:`node_jacobian` (``outer`` symmetric in its two group
    indices: its unordered pairs only): ``(pi, A, K, g, Cw, o_of, f_of, fac)``, ``g`` (nodes,
    K + P) the distinct features ``(ms2, outer_u)``, ``gw`` times the weights, ``Cw`` the
    weighted products ``w g_k g_l`` (k <= l, packed as ``packed[k, l]``), ``feat`` the feature
    of each sum / unknown, ``fac`` its factor (pi on tau): ``(pi, A, K, g, gw, Cw, feat, fac,
    packed)``."""
    K = pi.shape[0]
    ia, ib = np.triu_indices(K)
    g = np.concatenate([ms2, outer[:, ia * K + ib]], axis=1)
    gw = np.concatenate([ms2_w.real, outer_w.real[:, ia * K + ib]], axis=1)
    ku, lu = np.triu_indices(g.shape[1])
    Cw = np.ascontiguousarray(gw[:, ku] * g[:, lu])
    pos = np.empty((K, K), dtype=np.int64)
    pos[ia, ib] = K + np.arange(ia.size)
    pos[ib, ia] = K + np.arange(ia.size)
    feat = np.concatenate([np.arange(K), pos.ravel()])  # the feature of each sum / unknown
    fac = np.concatenate([pi, np.ones(K * K)])
    packed = np.zeros((g.shape[1], g.shape[1]), dtype=np.int64)
    packed[ku, lu] = np.arange(ku.size)
    packed[lu, ku] = np.arange(ku.size)
    return pi, float(A), K, np.ascontiguousarray(g), np.ascontiguousarray(gw), Cw, feat, fac, packed


def node_jacobian(x: np.ndarray, tables: tuple) -> tuple:
    """``(M, v2, dM, dv2)`` of the node sums at the rows of ``x``: ``M`` (N, K, K), ``v2``
    (N, K), ``dM`` (N, K, K, q), ``dv2`` (N, K, q), q = K + K^2 (module docstring; the
    products of the distinct features only, :func:`node_tables`)."""
    pi, A, K, g, gw, Cw, feat, fac, packed = tables
    Np = x.shape[0]
    # V_j = V1 . outer_j + (pi tau) . ms2_j = (pi tau, V1_aa, V1_ab + V1_ba) . g_j
    ia, ib = np.triu_indices(K)
    V1 = x[:, K:].reshape(Np, K, K)
    cu = V1[:, ia, ib] + np.where(ia != ib, V1[:, ib, ia], 0.0)
    V = np.concatenate([pi * x[:, :K], cu], axis=1) @ g.T
    iv = 1.0 / (1.0 + V)
    val = A * (iv.real @ gw + 1j * (iv.imag @ gw))
    iv2 = iv * iv
    G = -A * (iv2.real @ Cw + 1j * (iv2.imag @ Cw))
    d = G[:, packed[feat][:, feat]] * fac  # d sum_k / d x_l (N, q, q)
    out = val[:, feat]
    return (out[:, K:].reshape(Np, K, K), out[:, :K], d[:, K:].reshape(Np, K, K, d.shape[2]),
            d[:, :K])


def vpart_jacobian(x: np.ndarray, z: np.ndarray, tables: tuple, trc, beta: float) -> np.ndarray:
    """The Jacobian (N, q, q) of the commuting residual of
    :func:`asymptotics.spectra.netbulk.outside_solver` at the rows of ``x`` (``tables``: its
    node sums' :func:`node_tables`; ``trc`` an
    :class:`~asymptotics.spectra.netbulk.OutsideTraces` without pairs)."""
    pi = tables[0]
    K = pi.shape[0]
    Np, q = x.shape
    x = np.ascontiguousarray(x, dtype=np.complex128)
    M, v2, dM, dv2 = node_jacobian(x, tables)
    tau = x[:, :K]
    Dv = beta * pi * tau
    dD = np.zeros((Np, K, q), dtype=np.complex128)  # dDv_c/dx_l
    dD[:, np.arange(K), np.arange(K)] = beta * pi
    T, dT = traces0_jacobian(np.ascontiguousarray(M), np.ascontiguousarray(Dv),
                             trc._flat()[0], trc.weights_flat(), dM, dD)
    d = trc.d
    Tt = np.swapaxes(T, 1, 2)  # Tt[x, g, a] = T[x, a, g]
    e = np.sum(M * Tt, axis=2) / d
    de = (np.sum(dM * Tt[..., None], axis=2)
          + np.sum(M[..., None] * np.swapaxes(dT, 1, 2), axis=2)) / d
    J = np.zeros((Np, q, q), dtype=np.complex128)
    eye = np.eye(K)
    J[:, :K, :K] = (-z[:, None] + v2 + e)[:, :, None] * eye[None]
    J[:, :K, :] += tau[:, :, None] * (dv2 + de)
    # Vb_gh = (Dv_g T_hg + Dv_h T_gh)/(2 beta d)
    a = dD[:, :, None, :] * Tt[..., None] + Dv[:, :, None, None] * np.swapaxes(dT, 1, 2)
    dVb = 0.5 * (a + np.swapaxes(a, 1, 2)) / (beta * d)
    J[:, K:, :] = -dVb.reshape(Np, K * K, q)
    J[:, K:, K:] += np.eye(K * K)[None]
    return J
