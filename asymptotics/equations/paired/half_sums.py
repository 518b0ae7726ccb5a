"""The exact completion's and the literal map's node sums of the K-group equations over pairs
of mirrored nodes (docs/THEORY.md §10.2, §10.5), for tables whose rows n - 1 - j are those of
row j with w, mub1, mus2 equal and kappa, mu0 negated (:func:`odd_rows` with
``node_sums.mirrored_rows``: an odd sigma on a centrally symmetric rule,
``spiked.coefficients.odd_sigma``). Then 1/(1 + V) is even, the mean design's rows
(sqrt(w/(1+V)) mu0, sqrt(w/(1+V)) mub1_g kappa) odd and the mean prediction b odd, so

- a sum of an even term times an even table is the sum over the first half of the pair's
  terms added (j and n - 1 - j), with the target's tables (no parity) read at both nodes;
- the mean channel's least squares (design [Phi, Psi], target ht, ridge rows below) is that of
  the first half's rows times sqrt(2) against ht's odd part, (ht_j - ht_{n-1-j}) / sqrt(2): the
  pairs' even parts are orthogonal to every column of the design (an orthogonal change of the
  rows), so the normal equations, the singular values and the target's power along the left
  singular vectors are those of every node; its total power ht . ht is summed over every node.

The numbers are those of ``node_sums_k``'s passes over every node to round-off (the sums pair
the nodes before adding them), not bit for bit."""

from __future__ import annotations

import numpy as np

from asymptotics.core.coldstart import kernel
from asymptotics.equations.node_sums_k import (
    channel_nodes,
    feature_column,
    feature_column34,
    weighted_sums,
)
from asymptotics.equations.small_dense import gram_t


@kernel(cache=True, error_model="numpy")
def odd_rows(kap, mu0):
    """Kernel: whether row n - 1 - j of ``kap`` and ``mu0`` is minus row j bit for bit (n even;
    with ``node_sums.mirrored_rows`` the completion's sums run over pairs of nodes)."""
    n = kap.shape[0]
    if n % 2 != 0 or n == 0 or mu0.shape[0] != n:
        return False
    for j in range(n // 2):
        for i in range(kap.shape[1]):
            if kap[n - 1 - j, i] != -kap[j, i]:
                return False
        for g in range(mu0.shape[1]):
            if mu0[n - 1 - j, g] != -mu0[j, g]:
                return False
    return True


@kernel(cache=True, error_model="numpy")
def v_parts_half(x, w, kap, mu0, mb1, ms2, h, h1):
    """Kernel: ``node_sums_k.v_parts_k`` over pairs of nodes: (iv on every node, M, v2, ph, the
    mean design's rows of the first half times sqrt(2) (Phi, Psi; n / 2 + K rows, the last K
    the ridge's, left zero) and ht's odd part ((ht_j - ht_{n-1-j}) / sqrt(2)), and the target's
    total power ht . ht over every node); (M, v2, ph) are the sums over every node, before A."""
    n, K = mb1.shape
    nh = n // 2
    r = kap.shape[1]
    k = h1.shape[1]
    iv = np.empty(n)
    a2 = np.empty(nh)  # (the pair's weight 2 w / (1 + V))
    hp = np.empty((nh, k))  # (the pair's mean of h1: with a2, the pair's sum)
    Phi = np.zeros((nh + K, K))
    Psi = np.zeros((nh + K, K * r))
    ht = np.zeros(nh + K)
    V = channel_nodes(x, mb1, ms2, nh)
    total = 0.0
    for j in range(nh):
        jm = n - 1 - j
        ivj = 1.0 / (1.0 + V[j])
        iv[j] = ivj
        iv[jm] = ivj
        aj = w[j] * ivj
        a2[j] = 2.0 * aj
        total += aj * (h[j] * h[j] + h[jm] * h[jm])
        for i in range(k):
            hp[j, i] = 0.5 * (h1[j, i] + h1[jm, i])
        sq = np.sqrt(2.0 * aj)
        ht[j] = sq * (0.5 * (h[j] - h[jm]))
        for g in range(K):
            Phi[j, g] = sq * mu0[j, g]
            sb = sq * mb1[j, g]
            for i in range(r):
                Psi[j, g * r + i] = sb * kap[j, i]
    M, v2, ph = weighted_sums(a2, mb1, ms2, hp, nh)
    return iv, M, v2, ph, Phi, Psi, ht, total


@kernel(cache=True, error_model="numpy")
def q_sums_half(zk, pk, m, iv, delta, w, mu0, mb1, ms2, h, h2):
    """Kernel: ``node_sums_k.q_sums_k`` over pairs of nodes from zk = kappa Z^T on the first
    half (the other half's is -zk) and pk = h1 P^T on every node: (b, E0) on every node (b odd:
    -b_j at node n - 1 - j), (R1, R2) and the Gram G, the sums over every node, before A."""
    n, K = mb1.shape
    nh = n // 2
    L = K * (K + 1) // 2
    b = np.empty(n)
    E0 = np.empty(n)
    a = np.empty(nh)
    ap = np.empty(nh)
    Yt = np.empty((L + K, nh))
    if K == 3 or K == 4:  # (the same terms and order, the loops over the groups written out)
        _q_rows_half34(zk, pk, m, iv, delta, w, mu0, mb1, ms2, h, h2, b, E0, a, ap, Yt)
    for j in range(nh if K != 3 and K != 4 else 0):
        jm = n - 1 - j
        bj = 0.0
        c = 0.0
        cm = 0.0
        for g in range(K):
            bj += mu0[j, g] * m[g] + mb1[j, g] * zk[j, g]
            c += mb1[j, g] * pk[j, g]
            cm += mb1[j, g] * pk[jm, g]
        _pair_terms(j, jm, bj, c, cm, h, h2, iv, w, delta, b, E0, a, ap)
        feature_column(Yt, j, mb1, ms2, K, L)
    R1, R2, _ = weighted_sums(a, mb1, ms2, np.zeros((nh, 0)), nh)
    return b, E0, R1, R2, gram_t(Yt, ap)


@kernel(cache=True, error_model="numpy")
def _pair_terms(j, jm, bj, c, cm, h, h2, iv, w, delta, b, E0, a, ap):
    """Kernel: the pair (j, jm)'s mean b (odd), residual energies E0 and weights a, ap of
    :func:`q_sums_half` from its sums bj, c (node j) and cm (node jm)."""
    b[j] = bj
    b[jm] = -bj
    e0 = h2[j] - 2.0 * bj * h[j] + bj * bj - 2.0 * c
    em = h2[jm] - 2.0 * -bj * h[jm] + bj * bj - 2.0 * cm
    E0[j] = e0
    E0[jm] = em
    iv2 = iv[j] * iv[j]
    a[j] = w[j] * (iv2 * (e0 + delta)) + w[j] * (iv2 * (em + delta))
    ap[j] = 2.0 * (w[j] * iv2)


@kernel(cache=True, error_model="numpy")
def _q_rows_half34(zk, pk, m, iv, delta, w, mu0, mb1, ms2, h, h2, b, E0, a, ap, Yt):
    """Kernel: :func:`q_sums_half`'s pass over the pairs for three or four groups into its
    arrays (b, E0, a, ap, the rows Yt): each sum in the order of the general loop (``bj += ...``
    from 0.0), the loops over the groups written out (the same numbers, bit for bit; as
    ``node_sums_k._q_rows34``)."""
    n, K = mb1.shape
    nh = n // 2
    m0, m1, m2 = m[0], m[1], m[2]
    m3 = m[3] if K == 4 else 0.0
    for j in range(nh):
        jm = n - 1 - j
        b0, b1, b2 = mb1[j, 0], mb1[j, 1], mb1[j, 2]
        bj = 0.0 + (mu0[j, 0] * m0 + b0 * zk[j, 0])
        bj = bj + (mu0[j, 1] * m1 + b1 * zk[j, 1])
        bj = bj + (mu0[j, 2] * m2 + b2 * zk[j, 2])
        c = 0.0 + b0 * pk[j, 0]
        c = c + b1 * pk[j, 1]
        c = c + b2 * pk[j, 2]
        cm = 0.0 + b0 * pk[jm, 0]
        cm = cm + b1 * pk[jm, 1]
        cm = cm + b2 * pk[jm, 2]
        if K == 4:
            b3 = mb1[j, 3]
            bj = bj + (mu0[j, 3] * m3 + b3 * zk[j, 3])
            c = c + b3 * pk[j, 3]
            cm = cm + b3 * pk[jm, 3]
        _pair_terms(j, jm, bj, c, cm, h, h2, iv, w, delta, b, E0, a, ap)
        feature_column34(Yt, j, mb1, ms2, K)


@kernel(cache=True, error_model="numpy")
def check_sums_half(Q1, Q2, iv, b, E0, delta, w, kap, mb1, ms2, h):
    """Kernel: ``node_sums_k.check_sums_k`` over pairs of nodes: (E on every node, Q1hat, Q2hat,
    zetahat), the sums over every node, before A (zetahat's term is odd times the residual
    h - b: the pair's difference of residuals)."""
    n, K = mb1.shape
    nh = n // 2
    r = kap.shape[1]
    x = np.empty(K * K + K)
    for g in range(K):
        x[K * K + g] = Q2[g]
        for p in range(K):
            x[g * K + p] = Q1[g, p]
    q = channel_nodes(x, mb1, ms2, nh)
    E = np.empty(n)
    a = np.empty(nh)
    cd = np.empty(nh)
    for j in range(nh):
        jm = n - 1 - j
        e = E0[j] + q[j]
        em = E0[jm] + q[j]
        E[j] = e
        E[jm] = em
        iv2 = iv[j] * iv[j]
        a[j] = w[j] * (iv2 * (e + delta)) + w[j] * (iv2 * (em + delta))
        cd[j] = w[j] * iv[j] * ((h[j] - b[j]) - (h[jm] - b[jm]))
    X1, X2, _ = weighted_sums(a, mb1, ms2, np.zeros((nh, 0)), nh)
    zh = np.zeros((K, r))
    for g in range(K):
        for i in range(r):
            s = 0.0
            for j in range(nh):
                s += cd[j] * mb1[j, g] * kap[j, i]
            zh[g, i] = s
    return E, X1, X2, zh
