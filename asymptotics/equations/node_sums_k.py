"""The K-group equations' node sums for any number of groups (docs/THEORY.md §10.3-§10.5), each
group of sums in one pass over the kappa nodes: the exact completion's first pass and its
Q-system, and the literal map's check, as ``equations.node_sums`` does them for one or two
groups. Every sum runs in node order and every term is formed as ``spiked.kernels`` forms it
(``channel_v``, ``vhats``, ``mean_design``, ``mean_parts``' loop, ``pair_gram``), so the results
are those kernels' numbers bit for bit (the per-node products zeta_g . kappa and psi_g . h1 are
the callers', by ``mean_parts``' matrix products). The sums are held in small arrays (K x K),
not in registers as for K <= 2; the Q-system's Gram (L x L, L = K (K + 1) / 2 + K) is summed by
``small_dense``'s own passes over its rows (``pair_gram``'s kernel)."""

from __future__ import annotations

import numpy as np

from asymptotics.core.coldstart import kernel
from asymptotics.equations.small_dense import gram_t


@kernel(cache=True, error_model="numpy")
def _channel(x, mb1, ms2, j, K):
    """Kernel: ``kernels.channel_v`` of x = (V1 flat, V2) at node j (its order of +=)."""
    V = 0.0
    for g in range(K):
        V += ms2[j, g] * x[K * K + g]
        bg = mb1[j, g]
        for h in range(K):
            V += bg * x[g * K + h] * mb1[j, h]
    return V


@kernel(cache=True, error_model="numpy")
def channel_nodes(x, mb1, ms2, n=-1):
    """Kernel: ``kernels.channel_v`` of x = (V1 flat, V2) on every node, each node's sum in its
    order of += (:func:`_channel`'s), written out for three and four groups as
    :func:`v_sums3` and :func:`v_sums4` form V (the same numbers, without the loops over the
    groups per node); ``n`` >= 0: on the first n nodes only."""
    K = mb1.shape[1]
    n = mb1.shape[0] if n < 0 else n
    out = np.empty(n)
    if K == 3:
        x0, x1, x2, x3, x4, x5, x6, x7, x8 = x[0], x[1], x[2], x[3], x[4], x[5], x[6], x[7], x[8]
        x9, x10, x11 = x[9], x[10], x[11]
        for j in range(n):
            b0, b1, b2 = mb1[j, 0], mb1[j, 1], mb1[j, 2]
            out[j] = (0.0 + ms2[j, 0] * x9 + b0 * x0 * b0 + b0 * x1 * b1 + b0 * x2 * b2
                      + ms2[j, 1] * x10 + b1 * x3 * b0 + b1 * x4 * b1 + b1 * x5 * b2
                      + ms2[j, 2] * x11 + b2 * x6 * b0 + b2 * x7 * b1 + b2 * x8 * b2)
    elif K == 4:
        y0, y1, y2, y3, y4, y5, y6, y7 = x[0], x[1], x[2], x[3], x[4], x[5], x[6], x[7]
        y8, y9, y10, y11, y12, y13, y14, y15 = (x[8], x[9], x[10], x[11], x[12], x[13], x[14],
                                                x[15])
        y16, y17, y18, y19 = x[16], x[17], x[18], x[19]
        for j in range(n):
            b0, b1, b2, b3 = mb1[j, 0], mb1[j, 1], mb1[j, 2], mb1[j, 3]
            out[j] = (0.0 + ms2[j, 0] * y16 + b0 * y0 * b0 + b0 * y1 * b1 + b0 * y2 * b2
                      + b0 * y3 * b3 + ms2[j, 1] * y17 + b1 * y4 * b0 + b1 * y5 * b1
                      + b1 * y6 * b2 + b1 * y7 * b3 + ms2[j, 2] * y18 + b2 * y8 * b0
                      + b2 * y9 * b1 + b2 * y10 * b2 + b2 * y11 * b3 + ms2[j, 3] * y19
                      + b3 * y12 * b0 + b3 * y13 * b1 + b3 * y14 * b2 + b3 * y15 * b3)
    else:
        for j in range(n):
            out[j] = _channel(x, mb1, ms2, j, K)
    return out


@kernel(cache=True, error_model="numpy")
def weighted_sums(a, mb1, ms2, z, n=-1):
    """Kernel: M[g, q] = sum_j (a_j mub1_jg) mub1_jq, v2[g] = sum_j a_j mus2_jg and
    P[g, i] = sum_j (a_j mub1_jg) z_ji, each summed over the nodes in order (the terms of
    ``kernels.vhats``), up to four entries a pass in independent chains held in registers;
    ``n`` >= 0: over the first n nodes only."""
    K = mb1.shape[1]
    n = mb1.shape[0] if n < 0 else n
    k = z.shape[1]
    M = np.zeros((K, K))
    v2 = np.zeros(K)
    P = np.zeros((K, k))
    for g in range(K):
        for q0 in range(0, K, 4):
            nq = min(4, K - q0)
            q1 = q0 + 1 if nq > 1 else q0
            q2 = q0 + 2 if nq > 2 else q0
            q3 = q0 + 3 if nq > 3 else q0
            s0, s1, s2, s3, sv = 0.0, 0.0, 0.0, 0.0, 0.0
            for j in range(n):
                ag = a[j] * mb1[j, g]
                s0 += ag * mb1[j, q0]
                s1 += ag * mb1[j, q1]
                s2 += ag * mb1[j, q2]
                s3 += ag * mb1[j, q3]
                sv += a[j] * ms2[j, g]
            for i, sm in enumerate((s0, s1, s2, s3)):
                if i < nq:
                    M[g, q0 + i] = sm
            if q0 == 0:
                v2[g] = sv
        for i in range(k):
            sp = 0.0
            for j in range(n):
                sp += a[j] * mb1[j, g] * z[j, i]
            P[g, i] = sp
    return M, v2, P


@kernel(cache=True, error_model="numpy")
def v_parts_k(x, w, kap, mu0, mb1, ms2, h, h1):
    """Kernel: ``node_sums.v_parts`` for any K: (iv, M, v2, ph, Phi, Psi, ht) at x = (V1 flat,
    V2), iv = 1/(1 + V), (M, v2) the sums of ``vhats`` at iv, ph = E[w iv mub1_g h1], the node
    rows of ``mean_design`` (its last K rows, the ridge's, left zero); M, v2, ph before the
    factor A. The rows first, then the sums (:func:`weighted_sums`)."""
    n, K = mb1.shape
    r = kap.shape[1]
    iv = np.empty(n)
    a = np.empty(n)
    Phi = np.zeros((n + K, K))
    Psi = np.zeros((n + K, K * r))
    ht = np.zeros(n + K)
    V = channel_nodes(x, mb1, ms2, n)
    sqs = np.empty(n)
    for j in range(n):
        ivj = 1.0 / (1.0 + V[j])
        iv[j] = ivj
        aj = w[j] * ivj
        a[j] = aj
        sq = np.sqrt(aj)
        sqs[j] = sq
        ht[j] = sq * h[j]
    for j in range(n):  # (the rows of Phi and Psi from sq: the same products)
        sq = sqs[j]
        for g in range(K):
            Phi[j, g] = sq * mu0[j, g]
    if r == 2 or r == 3:  # (the loop over kappa's axes written out)
        for j in range(n):
            sq = sqs[j]
            k0, k1 = kap[j, 0], kap[j, 1]
            k2 = kap[j, 2] if r == 3 else 0.0
            for g in range(K):
                sb = sq * mb1[j, g]
                Psi[j, g * r] = sb * k0
                Psi[j, g * r + 1] = sb * k1
                if r == 3:
                    Psi[j, g * r + 2] = sb * k2
    else:
        for j in range(n):
            sq = sqs[j]
            for g in range(K):
                sb = sq * mb1[j, g]
                for i in range(r):
                    Psi[j, g * r + i] = sb * kap[j, i]
    M, v2, ph = weighted_sums(a, mb1, ms2, h1, n)
    return iv, M, v2, ph, Phi, Psi, ht


@kernel(cache=True, error_model="numpy")
def feature_column(Yt, j, mb1, ms2, K, L):
    """Kernel: node j's column of the Q-system's features: ``mub1_g mub1_q`` (g <= q, row by
    row), then ``mu*2_g`` from row ``L``."""
    p = 0
    for g in range(K):
        for q in range(g, K):
            Yt[p, j] = mb1[j, g] * mb1[j, q]
            p += 1
    for g in range(K):
        Yt[L + g, j] = ms2[j, g]


@kernel(cache=True, error_model="numpy")
def feature_column34(Yt, j, mb1, ms2, K):
    """Kernel: :func:`feature_column` for three or four groups, the loops written out (the
    same values, faster in the K = 3, 4 passes)."""
    b0, b1, b2 = mb1[j, 0], mb1[j, 1], mb1[j, 2]
    if K == 3:
        Yt[0, j] = b0 * b0
        Yt[1, j] = b0 * b1
        Yt[2, j] = b0 * b2
        Yt[3, j] = b1 * b1
        Yt[4, j] = b1 * b2
        Yt[5, j] = b2 * b2
        Yt[6, j] = ms2[j, 0]
        Yt[7, j] = ms2[j, 1]
        Yt[8, j] = ms2[j, 2]
    else:
        b3 = mb1[j, 3]
        Yt[0, j] = b0 * b0
        Yt[1, j] = b0 * b1
        Yt[2, j] = b0 * b2
        Yt[3, j] = b0 * b3
        Yt[4, j] = b1 * b1
        Yt[5, j] = b1 * b2
        Yt[6, j] = b1 * b3
        Yt[7, j] = b2 * b2
        Yt[8, j] = b2 * b3
        Yt[9, j] = b3 * b3
        Yt[10, j] = ms2[j, 0]
        Yt[11, j] = ms2[j, 1]
        Yt[12, j] = ms2[j, 2]
        Yt[13, j] = ms2[j, 3]


@kernel(cache=True, error_model="numpy")
def q_sums_k(zk, pk, m, iv, delta, w, mu0, mb1, ms2, h, h2):
    """Kernel: ``node_sums.q_sums`` for any K from the per-node products zk = kappa Z^T and
    pk = h1 P^T (n x K): (b, E0) of ``kernels.mean_parts``, (R1, R2) the sums of ``vhats`` at
    iv^2 (E0 + delta) and the weighted Gram G of ``small_dense.pair_gram`` with weights
    w iv^2 (columns b_a b_b, a <= b, then ms2), before the factor A."""
    n, K = mb1.shape
    L = K * (K + 1) // 2
    nc = L + K
    b = np.empty(n)
    E0 = np.empty(n)
    a = np.empty(n)
    Yt = np.empty((nc, n))  # pair_gram's rows, then its sums (the Gram's own passes)
    ap = np.empty(n)
    if K == 3 or K == 4:  # (the same terms and order, the loops over the groups written out)
        _q_rows34(zk, pk, m, iv, delta, w, mu0, mb1, ms2, h, h2, b, E0, a, ap, Yt)
    for j in range(n if K != 3 and K != 4 else 0):
        bj = 0.0
        c = 0.0
        for g in range(K):
            bj += mu0[j, g] * m[g] + mb1[j, g] * zk[j, g]
            c += mb1[j, g] * pk[j, g]
        b[j] = bj
        e0 = h2[j] - 2.0 * bj * h[j] + bj * bj - 2.0 * c
        E0[j] = e0
        iv2 = iv[j] * iv[j]
        a[j] = w[j] * (iv2 * (e0 + delta))
        ap[j] = w[j] * iv2
        feature_column(Yt, j, mb1, ms2, K, L)
    R1, R2, _ = weighted_sums(a, mb1, ms2, np.zeros((n, 0)), n)
    return b, E0, R1, R2, gram_t(Yt, ap)


@kernel(cache=True, error_model="numpy")
def _q_rows34(zk, pk, m, iv, delta, w, mu0, mb1, ms2, h, h2, b, E0, a, ap, Yt):
    """Kernel: :func:`q_sums_k`'s per-node pass for three or four groups into its arrays (b, E0,
    a, ap, the rows Yt): each sum in the order of the general loop (``bj += ...`` from 0.0),
    the loops over the groups written out (the same numbers, bit for bit)."""
    n, K = mb1.shape
    m0, m1, m2 = m[0], m[1], m[2]
    m3 = m[3] if K == 4 else 0.0
    for j in range(n):
        b0, b1, b2 = mb1[j, 0], mb1[j, 1], mb1[j, 2]
        bj = 0.0 + (mu0[j, 0] * m0 + b0 * zk[j, 0])
        bj = bj + (mu0[j, 1] * m1 + b1 * zk[j, 1])
        bj = bj + (mu0[j, 2] * m2 + b2 * zk[j, 2])
        c = 0.0 + b0 * pk[j, 0]
        c = c + b1 * pk[j, 1]
        c = c + b2 * pk[j, 2]
        if K == 4:
            b3 = mb1[j, 3]
            bj = bj + (mu0[j, 3] * m3 + b3 * zk[j, 3])
            c = c + b3 * pk[j, 3]
        b[j] = bj
        e0 = h2[j] - 2.0 * bj * h[j] + bj * bj - 2.0 * c
        E0[j] = e0
        iv2 = iv[j] * iv[j]
        a[j] = w[j] * (iv2 * (e0 + delta))
        ap[j] = w[j] * iv2
        feature_column34(Yt, j, mb1, ms2, K)


@kernel(cache=True, error_model="numpy")
def check_sums_k(Q1, Q2, iv, b, E0, delta, w, kap, mb1, ms2, h):
    """Kernel: ``node_sums.check_sums`` for any K: E = E0 + ``channel_v``(Q1, Q2) per node,
    (Q1hat, Q2hat) the sums of ``vhats`` at iv^2 (E + delta) and
    zetahat_g = E[w iv mub1_g kappa (h - b)], before the factor A. Returns (E, Q1hat, Q2hat,
    zetahat)."""
    n, K = mb1.shape
    r = kap.shape[1]
    E = np.empty(n)
    a = np.empty(n)
    c = np.empty(n)
    x = np.empty(K * K + K)  # (Q1 flat, Q2): channel_v's sum of Q per node
    for g in range(K):
        x[K * K + g] = Q2[g]
        for p in range(K):
            x[g * K + p] = Q1[g, p]
    q = channel_nodes(x, mb1, ms2, n)
    d = np.empty(n)
    for j in range(n):
        e = E0[j] + q[j]
        E[j] = e
        a[j] = w[j] * (iv[j] * iv[j] * (e + delta))
        c[j] = w[j] * iv[j]
        d[j] = h[j] - b[j]
    X1, X2, _ = weighted_sums(a, mb1, ms2, np.zeros((n, 0)), n)
    zh = np.zeros((K, r))
    for g in range(K):  # (up to four entries a pass, each summed in node order)
        for i0 in range(0, r, 4):
            ni = min(4, r - i0)
            i1 = i0 + 1 if ni > 1 else i0
            i2 = i0 + 2 if ni > 2 else i0
            i3 = i0 + 3 if ni > 3 else i0
            s0, s1, s2, s3 = 0.0, 0.0, 0.0, 0.0
            for j in range(n):
                cg = c[j] * mb1[j, g]
                s0 += cg * kap[j, i0] * d[j]
                s1 += cg * kap[j, i1] * d[j]
                s2 += cg * kap[j, i2] * d[j]
                s3 += cg * kap[j, i3] * d[j]
            for i, sm in enumerate((s0, s1, s2, s3)):
                if i < ni:
                    zh[g, i0 + i] = sm
    return E, X1, X2, zh


#: the nodes of a block of :func:`v_sums4` (their weights w / (1 + V) in a buffer)
BLOCK = 128


@kernel(cache=True, error_model="numpy")
def v_sums4(x, w, mb1, ms2, n=-1):
    """Kernel: ``node_sums.v_sums`` for four groups, a block of nodes at a time: their weights
    w / (1 + V) first (V as ``channel_v`` sums it), then the sums of the rows g = 0, 1 and of
    the rows g = 2, 3 in two loops over the block (ten running sums each: they stay in
    registers), each sum in node order: the same numbers bit for bit; ``n`` >= 0: over the
    first n nodes only."""
    n = mb1.shape[0] if n < 0 else n
    a = np.empty(BLOCK)
    m00 = m01 = m02 = m03 = m10 = m11 = m12 = m13 = 0.0
    m20 = m21 = m22 = m23 = m30 = m31 = m32 = m33 = s0 = s1 = s2 = s3 = 0.0
    for j0 in range(0, n, BLOCK):
        j1 = min(n, j0 + BLOCK)
        for j in range(j0, j1):
            b0, b1, b2, b3 = mb1[j, 0], mb1[j, 1], mb1[j, 2], mb1[j, 3]
            V = (0.0 + ms2[j, 0] * x[16] + b0 * x[0] * b0 + b0 * x[1] * b1 + b0 * x[2] * b2
                 + b0 * x[3] * b3 + ms2[j, 1] * x[17] + b1 * x[4] * b0 + b1 * x[5] * b1
                 + b1 * x[6] * b2 + b1 * x[7] * b3 + ms2[j, 2] * x[18] + b2 * x[8] * b0
                 + b2 * x[9] * b1 + b2 * x[10] * b2 + b2 * x[11] * b3 + ms2[j, 3] * x[19]
                 + b3 * x[12] * b0 + b3 * x[13] * b1 + b3 * x[14] * b2 + b3 * x[15] * b3)
            a[j - j0] = w[j] * (1.0 / (1.0 + V))
        for j in range(j0, j1):
            b0, b1, b2, b3 = mb1[j, 0], mb1[j, 1], mb1[j, 2], mb1[j, 3]
            aj = a[j - j0]
            ag = aj * b0
            m00, m01, m02, m03 = m00 + ag * b0, m01 + ag * b1, m02 + ag * b2, m03 + ag * b3
            s0 += aj * ms2[j, 0]
            ag = aj * b1
            m10, m11, m12, m13 = m10 + ag * b0, m11 + ag * b1, m12 + ag * b2, m13 + ag * b3
            s1 += aj * ms2[j, 1]
        for j in range(j0, j1):
            b0, b1, b2, b3 = mb1[j, 0], mb1[j, 1], mb1[j, 2], mb1[j, 3]
            aj = a[j - j0]
            ag = aj * b2
            m20, m21, m22, m23 = m20 + ag * b0, m21 + ag * b1, m22 + ag * b2, m23 + ag * b3
            s2 += aj * ms2[j, 2]
            ag = aj * b3
            m30, m31, m32, m33 = m30 + ag * b0, m31 + ag * b1, m32 + ag * b2, m33 + ag * b3
            s3 += aj * ms2[j, 3]
    return (np.array([[m00, m01, m02, m03], [m10, m11, m12, m13], [m20, m21, m22, m23],
                      [m30, m31, m32, m33]]), np.array([s0, s1, s2, s3]))


@kernel(cache=True, error_model="numpy")
def v_sums3(x, w, mb1, ms2, n=-1):
    """Kernel: ``node_sums.v_sums`` for three groups as :func:`v_sums4` (the rows g = 0, 1,
    then g = 2)."""
    n = mb1.shape[0] if n < 0 else n
    a = np.empty(BLOCK)
    m00 = m01 = m02 = m10 = m11 = m12 = m20 = m21 = m22 = s0 = s1 = s2 = 0.0
    for j0 in range(0, n, BLOCK):
        j1 = min(n, j0 + BLOCK)
        for j in range(j0, j1):
            b0, b1, b2 = mb1[j, 0], mb1[j, 1], mb1[j, 2]
            V = (0.0 + ms2[j, 0] * x[9] + b0 * x[0] * b0 + b0 * x[1] * b1 + b0 * x[2] * b2
                 + ms2[j, 1] * x[10] + b1 * x[3] * b0 + b1 * x[4] * b1 + b1 * x[5] * b2
                 + ms2[j, 2] * x[11] + b2 * x[6] * b0 + b2 * x[7] * b1 + b2 * x[8] * b2)
            a[j - j0] = w[j] * (1.0 / (1.0 + V))
        for j in range(j0, j1):
            b0, b1, b2 = mb1[j, 0], mb1[j, 1], mb1[j, 2]
            aj = a[j - j0]
            ag = aj * b0
            m00, m01, m02, s0 = m00 + ag * b0, m01 + ag * b1, m02 + ag * b2, s0 + aj * ms2[j, 0]
            ag = aj * b1
            m10, m11, m12, s1 = m10 + ag * b0, m11 + ag * b1, m12 + ag * b2, s1 + aj * ms2[j, 1]
        for j in range(j0, j1):
            b0, b1, b2 = mb1[j, 0], mb1[j, 1], mb1[j, 2]
            ag = a[j - j0] * b2
            m20, m21, m22, s2 = m20 + ag * b0, m21 + ag * b1, m22 + ag * b2, \
                s2 + a[j - j0] * ms2[j, 2]
    return (np.array([[m00, m01, m02], [m10, m11, m12], [m20, m21, m22]]),
            np.array([s0, s1, s2]))
