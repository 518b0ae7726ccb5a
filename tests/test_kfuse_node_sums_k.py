"""The one-pass node sums of three or more groups (asymptotics/equations/node_sums_k.py) against
the kernels they stand in for in the K-group completion and the literal map's check
(``spiked.kernels.channel_v``, ``vhats``, ``mean_design``, ``mean_parts``,
``small_dense.pair_gram`` and plain loops): the same numbers bit for bit."""

from __future__ import annotations

import numba
import numpy as np
import pytest

from asymptotics.equations import node_sums_k, small_dense
from asymptotics.spiked import kernels
from tests.test_node_sums import _tables


@numba.njit(error_model="numpy")
def _products(state, kap, h1, K, r, k, o_z, o_p, o_m):
    """``kernels.mean_parts``' two matrix products (compiled as there)."""
    return kap @ state[o_z:o_p].reshape((K, r)).T, h1 @ state[o_p:o_m].reshape((K, k)).T


@pytest.mark.parametrize("K", [3, 4, 5])
@pytest.mark.parametrize("r,k", [(1, 1), (2, 2), (3, 1), (4, 2)])
def test_node_sums_k_match_kernels(K: int, r: int, k: int) -> None:
    w, kap, mu0, mb1, ms2, h, h1, h2, x, rng = _tables(K, r, k)
    n = w.shape[0]
    V1, V2 = x[:K * K].reshape((K, K)), x[K * K:]
    iv = 1.0 / (1.0 + kernels.channel_v(V1, V2, mb1, ms2))
    M, v2 = kernels.vhats(iv, w, mb1, ms2, 1.0)
    Phi0, Psi0, ht0 = kernels.mean_design(iv, w, kap, mu0, mb1, h, np.zeros(K))
    ph = np.zeros((K, k))
    for j in range(n):
        a = w[j] * iv[j]
        for g in range(K):
            for i in range(k):
                ph[g, i] += a * mb1[j, g] * h1[j, i]
    got = node_sums_k.v_parts_k(x, w, kap, mu0, mb1, ms2, h, h1)
    for a, b in zip(got, (iv, M, v2, ph, Phi0, Psi0, ht0), strict=True):
        assert a.shape == b.shape and np.array_equal(a, b)
    # the completion's Q-system sums at a mean state (zeta, psi, m)
    o = kernels.sizes(K, r, k)
    state = np.zeros(o[7])
    state[o[4]:] = rng.standard_normal(o[7] - o[4])
    zk, pk = _products(state, kap, h1, K, r, k, o[4], o[5], o[6])
    delta = 0.3
    b, E0, R1, R2, G = node_sums_k.q_sums_k(zk, pk, state[o[6]:].copy(), iv, delta, w, mu0,
                                            mb1, ms2, h, h2)
    b0, E00 = kernels.mean_parts(state, kap, mu0, mb1, h, h1, h2)
    assert np.array_equal(b, b0) and np.array_equal(E0, E00)
    iv2 = iv * iv
    R10, R20 = kernels.vhats(iv2 * (E00 + delta), w, mb1, ms2, 1.0)
    assert np.array_equal(R1, R10) and np.array_equal(R2, R20)
    assert np.array_equal(G, small_dense.pair_gram(mb1, ms2, w * iv2)[0])
    # the literal map's check sums at a completed state
    Q1 = rng.standard_normal((K, K))
    Q2 = rng.random(K)
    E, X1, X2, zh = node_sums_k.check_sums_k(Q1, Q2, iv, b, E0, delta, w, kap, mb1, ms2, h)
    Ew = E0 + kernels.channel_v(Q1, Q2, mb1, ms2)
    X10, X20 = kernels.vhats(iv * iv * (Ew + delta), w, mb1, ms2, 1.0)
    zh0 = np.zeros((K, r))
    for j in range(n):
        a = w[j] * iv[j]
        res = h[j] - b[j]
        for g in range(K):
            for i in range(r):
                zh0[g, i] += a * mb1[j, g] * kap[j, i] * res
    for a, c in ((E, Ew), (X1, X10), (X2, X20), (zh, zh0)):
        assert np.array_equal(a, c)


@pytest.mark.parametrize("K", [1, 2, 3, 4, 5])
def test_channel_nodes_is_channel_v(K: int) -> None:
    """The per-node channel written out for three and four groups: channel_v's numbers."""
    w, kap, mu0, mb1, ms2, h, h1, h2, x, rng = _tables(K, 2, 1)
    V1, V2 = x[:K * K].reshape((K, K)), x[K * K:]
    assert np.array_equal(node_sums_k.channel_nodes(x, mb1, ms2),
                          kernels.channel_v(V1, V2, mb1, ms2))


@pytest.mark.parametrize("K", [3, 4])
@pytest.mark.parametrize("r", [1, 2, 3, 4])
def test_written_out_rows_keep_signed_zeros(K: int, r: int) -> None:
    """The per-node passes written out for three and four groups (``_q_rows34``, ``v_parts_k``'s
    rows for r = 2, 3) on tables with exact and negative zeros: every output the general
    loops' (``mean_parts``, ``mean_design``), sign bits included."""
    w, kap, mu0, mb1, ms2, h, h1, h2, x, rng = _tables(K, r, 1, n=64, seed=5)
    mb1[:8, 0] = -0.0
    mu0[4:12, :] = 0.0
    kap[::5, 0] = -0.0
    h[::7] = -0.0
    V1, V2 = x[:K * K].reshape((K, K)), x[K * K:]
    iv = 1.0 / (1.0 + kernels.channel_v(V1, V2, mb1, ms2))
    want = kernels.mean_design(iv, w, kap, mu0, mb1, h, np.zeros(K))
    got = node_sums_k.v_parts_k(x, w, kap, mu0, mb1, ms2, h, h1)[4:]
    for a, b in zip(got, want, strict=True):
        assert np.array_equal(a, b) and np.array_equal(np.signbit(a), np.signbit(b))
    o = kernels.sizes(K, r, 1)
    state = np.zeros(o[7])
    state[o[4]:] = rng.standard_normal(o[7] - o[4])
    state[o[6]] = -0.0
    zk, pk = _products(state, kap, h1, K, r, 1, o[4], o[5], o[6])
    b, E0 = node_sums_k.q_sums_k(zk, pk, state[o[6]:].copy(), iv, 0.0, w, mu0, mb1, ms2, h,
                                 h2)[:2]
    b0, E00 = kernels.mean_parts(state, kap, mu0, mb1, h, h1, h2)
    for a, c in ((b, b0), (E0, E00)):
        assert np.array_equal(a, c) and np.array_equal(np.signbit(a), np.signbit(c))
