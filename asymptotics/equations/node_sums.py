"""The K-group equations' sums over the kappa nodes (docs/THEORY.md §10.3-§10.5), each group of
sums in one pass over the nodes: the closed (V1, V2) map's conjugates, the exact completion's
Q-system and the literal map's check. Every sum runs in node order and every term is formed as
``spiked.kernels`` forms it (``channel_v``, ``vhats``, ``pair_gram``), so the sums are those
kernels' numbers bit for bit; the per-node mean prediction (``kernels.mean_parts``) is formed by
plain loops instead of a matrix product (equal to round-off). For one or two groups (K = 1, 2:
the sums held in registers, written out per K; :func:`v_sums` also for K = 3, 4); other K: the
callers use those kernels (empty or NaN results here). With two groups the per-node terms
(the weights w / (1 + V), the check's E) are formed first in a loop of their own (vectorised),
then the sums run over them in node order (35% faster at 3000-11000 nodes, the same numbers)."""

from __future__ import annotations

import numpy as np

from asymptotics.core.coldstart import kernel
from asymptotics.equations.node_sums_k import v_sums3, v_sums4


@kernel(cache=True, error_model="numpy")
def mirrored_rows(w, mb1, ms2):
    """Kernel: whether the node tables are centrally symmetric bit for bit (n even, row
    n - 1 - j of ``w``, ``mb1`` and ``ms2`` equal to row j): the sums of :func:`v_sums` are then
    twice those over the first half (``spiked.coefficients.odd_sigma``'s tables)."""
    n, K = mb1.shape
    if n % 2 != 0 or n == 0:
        return False
    for j in range(n // 2):
        if w[j] != w[n - 1 - j]:
            return False
        for g in range(K):
            if mb1[j, g] != mb1[n - 1 - j, g] or ms2[j, g] != ms2[n - 1 - j, g]:
                return False
    return True


@kernel(cache=True, error_model="numpy")
def v_sums(x, w, mb1, ms2, n=-1):
    """Kernel: (M, v2) = ``kernels.vhats`` at 1/(1 + ``kernels.channel_v``) of x = (V1 flat, V2),
    before the factor A; ``n`` >= 0: over the first n nodes only."""
    n = mb1.shape[0] if n < 0 else n
    K = mb1.shape[1]
    if K == 1:
        m00 = s0 = 0.0
        for j in range(n):
            b0 = mb1[j, 0]
            V = 0.0
            V += ms2[j, 0] * x[1]
            V += b0 * x[0] * b0
            a = w[j] * (1.0 / (1.0 + V))
            m00 += a * b0 * b0
            s0 += a * ms2[j, 0]
        return np.array([[m00]]), np.array([s0])
    if K == 2:  # (the weights first, then the sums in registers: the same numbers)
        a = np.empty(n)
        x0, x1, x2, x3, x4, x5 = x[0], x[1], x[2], x[3], x[4], x[5]
        for j in range(n):
            b0 = mb1[j, 0]
            b1 = mb1[j, 1]
            V = (0.0 + ms2[j, 0] * x4 + b0 * x0 * b0 + b0 * x1 * b1 + ms2[j, 1] * x5
                 + b1 * x2 * b0 + b1 * x3 * b1)
            a[j] = w[j] * (1.0 / (1.0 + V))
        m00 = m01 = m10 = m11 = s0 = s1 = 0.0
        for j in range(n):
            b0 = mb1[j, 0]
            b1 = mb1[j, 1]
            aj = a[j]
            ag = aj * b0
            m00, m01, s0 = m00 + ag * b0, m01 + ag * b1, s0 + aj * ms2[j, 0]
            ag = aj * b1
            m10, m11, s1 = m10 + ag * b0, m11 + ag * b1, s1 + aj * ms2[j, 1]
        return np.array([[m00, m01], [m10, m11]]), np.array([s0, s1])
    if K == 3:  # (node_sums_k: a block of nodes at a time, the same numbers)
        return v_sums3(x, w, mb1, ms2, n)
    if K == 4:
        return v_sums4(x, w, mb1, ms2, n)
    return np.zeros((K, K)) * np.nan, np.zeros(K) * np.nan


@kernel(cache=True, error_model="numpy")
def v_parts(x, w, kap, mu0, mb1, ms2, h, h1):
    """Kernel: the completion's first pass at x = (V1 flat, V2): (iv, M, v2, ph, Phi, Psi, ht)
    with iv = 1/(1 + ``channel_v``), (M, v2) as :func:`v_sums`, ph = E[w iv mub1_g h1] and the
    node rows of ``kernels.mean_design`` (its last K rows, the ridge's, left zero); M, v2 and ph
    before the factor A."""
    n, K = mb1.shape
    r = kap.shape[1]
    k = h1.shape[1]
    iv = np.empty(n)
    ph = np.zeros((K, k))
    Phi = np.empty((n + K, K))
    Psi = np.empty((n + K, K * r))
    ht = np.empty(n + K)
    Phi[n:] = 0.0
    Psi[n:] = 0.0
    ht[n:] = 0.0
    if K == 1:
        m00 = s0 = 0.0
        for j in range(n):
            b0 = mb1[j, 0]
            V = 0.0
            V += ms2[j, 0] * x[1]
            V += b0 * x[0] * b0
            ivj = 1.0 / (1.0 + V)
            iv[j] = ivj
            a = w[j] * ivj
            ag = a * b0
            m00 += ag * b0
            s0 += a * ms2[j, 0]
            for i in range(k):
                ph[0, i] += a * b0 * h1[j, i]
            sq = np.sqrt(w[j] * ivj)
            ht[j] = sq * h[j]
            Phi[j, 0] = sq * mu0[j, 0]
            for i in range(r):
                Psi[j, i] = sq * b0 * kap[j, i]
        return iv, np.array([[m00]]), np.array([s0]), ph, Phi, Psi, ht
    if K == 2:  # (the per-node terms first, then the sums in registers: the same numbers)
        a = np.empty(n)
        x0, x1, x2, x3, x4, x5 = x[0], x[1], x[2], x[3], x[4], x[5]
        for j in range(n):
            b0 = mb1[j, 0]
            b1 = mb1[j, 1]
            V = (0.0 + ms2[j, 0] * x4 + b0 * x0 * b0 + b0 * x1 * b1 + ms2[j, 1] * x5
                 + b1 * x2 * b0 + b1 * x3 * b1)
            ivj = 1.0 / (1.0 + V)
            iv[j] = ivj
            a[j] = w[j] * ivj
        m00 = m01 = m10 = m11 = s0 = s1 = p00 = p01 = p10 = p11 = 0.0
        for j in range(n):
            b0 = mb1[j, 0]
            b1 = mb1[j, 1]
            aj = a[j]
            ag = aj * b0
            m00, m01, s0 = m00 + ag * b0, m01 + ag * b1, s0 + aj * ms2[j, 0]
            ag = aj * b1
            m10, m11, s1 = m10 + ag * b0, m11 + ag * b1, s1 + aj * ms2[j, 1]
            if k == 2:
                p00, p01 = p00 + aj * b0 * h1[j, 0], p01 + aj * b0 * h1[j, 1]
                p10, p11 = p10 + aj * b1 * h1[j, 0], p11 + aj * b1 * h1[j, 1]
            else:
                for i in range(k):
                    ph[0, i] += aj * b0 * h1[j, i]
                for i in range(k):
                    ph[1, i] += aj * b1 * h1[j, i]
        if k == 2:
            ph[0, 0], ph[0, 1], ph[1, 0], ph[1, 1] = p00, p01, p10, p11
        for j in range(n):
            sq = np.sqrt(a[j])
            b0 = mb1[j, 0]
            b1 = mb1[j, 1]
            ht[j] = sq * h[j]
            Phi[j, 0] = sq * mu0[j, 0]
            Phi[j, 1] = sq * mu0[j, 1]
            for i in range(r):
                Psi[j, i] = sq * b0 * kap[j, i]
            for i in range(r):
                Psi[j, r + i] = sq * b1 * kap[j, i]
        return iv, np.array([[m00, m01], [m10, m11]]), np.array([s0, s1]), ph, Phi, Psi, ht
    iv[:] = np.nan
    Phi[:] = np.nan
    return iv, np.zeros((K, K)) * np.nan, np.zeros(K) * np.nan, ph, Phi, Psi, ht


@kernel(cache=True, error_model="numpy")
def q_sums(Z, P, m, iv, delta, w, kap, mu0, mb1, ms2, h, h1, h2):
    """Kernel: the completion's Q-system sums at the mean state (zeta Z (K x r), psi P (K x k),
    m): per node (b, E0) of ``kernels.mean_parts``; (R1, R2) = ``vhats`` of iv^2 (E0 + delta)
    and the weighted Gram G of ``small_dense.pair_gram`` with weights w iv^2 (its column index
    as ``pair_gram``'s: the products b_a b_b, a <= b, then ms2), before the factor A.
    Returns (b, E0, R1, R2, G)."""
    n, K = mb1.shape
    r = kap.shape[1]
    k = h1.shape[1]
    b = np.empty(n)
    E0 = np.empty(n)
    if K == 1:
        r00 = t0 = g0_0 = g0_1 = g1_1 = 0.0
        for j in range(n):
            b0 = mb1[j, 0]
            bj = 0.0
            c = 0.0
            zk = 0.0
            for i in range(r):
                zk += kap[j, i] * Z[0, i]
            pk = 0.0
            for i in range(k):
                pk += h1[j, i] * P[0, i]
            bj += mu0[j, 0] * m[0] + b0 * zk
            c += b0 * pk
            b[j] = bj
            e0 = h2[j] - 2.0 * bj * h[j] + bj * bj - 2.0 * c
            E0[j] = e0
            iv2 = iv[j] * iv[j]
            a = w[j] * (iv2 * (e0 + delta))
            ag = a * b0
            r00 += ag * b0
            t0 += a * ms2[j, 0]
            ap = w[j] * iv2
            y0 = b0 * b0
            y1 = ms2[j, 0]
            ay = ap * y0
            g0_0 += ay * y0
            g0_1 += ay * y1
            ay = ap * y1
            g1_1 += ay * y1
        return b, E0, np.array([[r00]]), np.array([t0]), np.array([[g0_0, g0_1], [g0_1, g1_1]])
    if K == 2:
        r00 = r01 = r10 = r11 = t0 = t1 = 0.0
        g0_0 = g0_1 = g0_2 = g0_3 = g0_4 = g1_1 = 0.0
        g1_2 = g1_3 = g1_4 = g2_2 = g2_3 = g2_4 = 0.0
        g3_3 = g3_4 = g4_4 = 0.0
        for j in range(n):
            b0 = mb1[j, 0]
            b1 = mb1[j, 1]
            bj = 0.0
            c = 0.0
            zk = 0.0
            for i in range(r):
                zk += kap[j, i] * Z[0, i]
            pk = 0.0
            for i in range(k):
                pk += h1[j, i] * P[0, i]
            bj += mu0[j, 0] * m[0] + b0 * zk
            c += b0 * pk
            zk = 0.0
            for i in range(r):
                zk += kap[j, i] * Z[1, i]
            pk = 0.0
            for i in range(k):
                pk += h1[j, i] * P[1, i]
            bj += mu0[j, 1] * m[1] + b1 * zk
            c += b1 * pk
            b[j] = bj
            e0 = h2[j] - 2.0 * bj * h[j] + bj * bj - 2.0 * c
            E0[j] = e0
            iv2 = iv[j] * iv[j]
            a = w[j] * (iv2 * (e0 + delta))
            ag = a * b0
            r00 += ag * b0
            r01 += ag * b1
            t0 += a * ms2[j, 0]
            ag = a * b1
            r10 += ag * b0
            r11 += ag * b1
            t1 += a * ms2[j, 1]
            ap = w[j] * iv2
            y0 = b0 * b0
            y1 = b0 * b1
            y2 = b1 * b1
            y3 = ms2[j, 0]
            y4 = ms2[j, 1]
            ay = ap * y0
            g0_0 += ay * y0
            g0_1 += ay * y1
            g0_2 += ay * y2
            g0_3 += ay * y3
            g0_4 += ay * y4
            ay = ap * y1
            g1_1 += ay * y1
            g1_2 += ay * y2
            g1_3 += ay * y3
            g1_4 += ay * y4
            ay = ap * y2
            g2_2 += ay * y2
            g2_3 += ay * y3
            g2_4 += ay * y4
            ay = ap * y3
            g3_3 += ay * y3
            g3_4 += ay * y4
            ay = ap * y4
            g4_4 += ay * y4
        G = np.array([
            [g0_0, g0_1, g0_2, g0_3, g0_4],
            [g0_1, g1_1, g1_2, g1_3, g1_4],
            [g0_2, g1_2, g2_2, g2_3, g2_4],
            [g0_3, g1_3, g2_3, g3_3, g3_4],
            [g0_4, g1_4, g2_4, g3_4, g4_4],
        ])
        return b, E0, np.array([[r00, r01], [r10, r11]]), np.array([t0, t1]), G
    nan = np.zeros(0) * np.nan
    return b, E0, nan.reshape((0, 0)), nan, nan.reshape((0, 0))


@kernel(cache=True, error_model="numpy")
def check_sums(Q1, Q2, iv, b, E0, delta, w, kap, mb1, ms2, h):
    """Kernel: the literal map's sums at a completed state (Q1, Q2) whose mean parts (b, E0) and
    1/(1+V) are known: E = E0 + ``channel_v``(Q1, Q2) per node, (Q1hat, Q2hat) = ``vhats`` of
    iv^2 (E + delta) and zetahat_g = E[w iv mub1_g kappa (h - b)], before the factor A.
    Returns (E, Q1hat, Q2hat, zetahat)."""
    n, K = mb1.shape
    r = kap.shape[1]
    E = np.empty(n)
    zh = np.zeros((K, r))
    if K == 1:
        x00 = t0 = 0.0
        for j in range(n):
            b0 = mb1[j, 0]
            q = 0.0
            q += ms2[j, 0] * Q2[0]
            q += b0 * Q1[0, 0] * b0
            e = E0[j] + q
            E[j] = e
            a = w[j] * (iv[j] * iv[j] * (e + delta))
            ag = a * b0
            x00 += ag * b0
            t0 += a * ms2[j, 0]
            a = w[j] * iv[j]
            res = h[j] - b[j]
            for i in range(r):
                zh[0, i] += a * b0 * kap[j, i] * res
        return E, np.array([[x00]]), np.array([t0]), zh
    if K == 2:  # (the per-node terms first, then the sums in registers: the same numbers)
        ae = np.empty(n)
        ar = np.empty(n)
        q0, q1, q00, q01, q10, q11 = Q2[0], Q2[1], Q1[0, 0], Q1[0, 1], Q1[1, 0], Q1[1, 1]
        for j in range(n):
            b0 = mb1[j, 0]
            b1 = mb1[j, 1]
            q = (0.0 + ms2[j, 0] * q0 + b0 * q00 * b0 + b0 * q01 * b1 + ms2[j, 1] * q1
                 + b1 * q10 * b0 + b1 * q11 * b1)
            e = E0[j] + q
            E[j] = e
            ae[j] = w[j] * (iv[j] * iv[j] * (e + delta))
            ar[j] = w[j] * iv[j]
        x00 = x01 = x10 = x11 = t0 = t1 = z00 = z01 = z10 = z11 = 0.0
        for j in range(n):
            b0 = mb1[j, 0]
            b1 = mb1[j, 1]
            a = ae[j]
            ag = a * b0
            x00, x01, t0 = x00 + ag * b0, x01 + ag * b1, t0 + a * ms2[j, 0]
            ag = a * b1
            x10, x11, t1 = x10 + ag * b0, x11 + ag * b1, t1 + a * ms2[j, 1]
            a = ar[j]
            res = h[j] - b[j]
            if r == 2:
                z00, z01 = z00 + a * b0 * kap[j, 0] * res, z01 + a * b0 * kap[j, 1] * res
                z10, z11 = z10 + a * b1 * kap[j, 0] * res, z11 + a * b1 * kap[j, 1] * res
            else:
                for i in range(r):
                    zh[0, i] += a * b0 * kap[j, i] * res
                for i in range(r):
                    zh[1, i] += a * b1 * kap[j, i] * res
        if r == 2:
            zh[0, 0], zh[0, 1], zh[1, 0], zh[1, 1] = z00, z01, z10, z11
        return E, np.array([[x00, x01], [x10, x11]]), np.array([t0, t1]), zh
    return E, np.zeros((0, 0)), np.zeros(0), zh
