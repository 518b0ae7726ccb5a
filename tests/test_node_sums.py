"""The one-pass node sums of one or two groups (asymptotics/equations/node_sums.py) and the
two-group tau (equations/two_groups.py) against the kernels they stand in for: the same numbers
bit for bit (the per-node mean prediction, formed by loops instead of a matrix product, to
round-off)."""

from __future__ import annotations

import inspect

import numba
import numpy as np
import pytest

from asymptotics.equations import node_sums, small_dense
from asymptotics.equations.two_groups import tau_solve2
from asymptotics.spiked import kernels


def _tables(K: int, r: int, k: int, n: int = 257, seed: int = 0):
    rng = np.random.default_rng([seed, K, r, k])
    w = rng.random(n)
    w /= w.sum()
    kap = rng.standard_normal((n, r))
    mu0 = rng.standard_normal((n, K))
    mb1 = rng.standard_normal((n, K))
    ms2 = rng.random((n, K)) + 0.2
    h = rng.standard_normal(n)
    h1 = rng.standard_normal((n, k))
    h2 = h * h + rng.random(n)
    V1 = 0.3 * rng.standard_normal((K, K))
    x = np.concatenate([(0.5 * (V1 + V1.T) + np.eye(K)).ravel(), rng.random(K) + 0.3])
    return w, kap, mu0, mb1, ms2, h, h1, h2, x, rng


@pytest.mark.parametrize("K", [1, 2])
@pytest.mark.parametrize("r,k", [(1, 1), (2, 2), (3, 1)])
def test_node_sums_match_kernels(K: int, r: int, k: int) -> None:
    w, kap, mu0, mb1, ms2, h, h1, h2, x, rng = _tables(K, r, k)
    V1, V2 = x[:K * K].reshape((K, K)), x[K * K:]
    iv = 1.0 / (1.0 + kernels.channel_v(V1, V2, mb1, ms2))
    M, v2 = kernels.vhats(iv, w, mb1, ms2, 1.0)
    Ms, v2s = node_sums.v_sums(x, w, mb1, ms2)
    assert np.array_equal(M, Ms) and np.array_equal(v2, v2s)
    ivp, Mp, v2p, php, Phi, Psi, ht = node_sums.v_parts(x, w, kap, mu0, mb1, ms2, h, h1)
    Phi0, Psi0, ht0 = kernels.mean_design(iv, w, kap, mu0, mb1, h, np.zeros(K))
    ph = np.zeros((K, k))
    for j in range(w.shape[0]):
        a = w[j] * iv[j]
        for g in range(K):
            for i in range(k):
                ph[g, i] += a * mb1[j, g] * h1[j, i]
    for got, want in ((ivp, iv), (Mp, M), (v2p, v2), (php, ph), (Phi, Phi0), (Psi, Psi0),
                      (ht, ht0)):
        assert np.array_equal(got, want)
    # the completion's Q-system sums at a mean state (zeta, psi, m)
    sizes = kernels.sizes(K, r, k)
    state = np.zeros(sizes[7])
    state[sizes[4]:] = rng.standard_normal(sizes[7] - sizes[4])
    Z = state[sizes[4]:sizes[5]].reshape((K, r))
    P = state[sizes[5]:sizes[6]].reshape((K, k))
    m = state[sizes[6]:]
    delta = 0.3
    b, E0, R1, R2, G = node_sums.q_sums(Z.copy(), P.copy(), m.copy(), iv, delta, w, kap, mu0,
                                        mb1, ms2, h, h1, h2)
    b0, E00 = kernels.mean_parts(state, kap, mu0, mb1, h, h1, h2)
    assert np.allclose(b, b0, rtol=1e-14, atol=1e-14)
    assert np.allclose(E0, E00, rtol=1e-14, atol=1e-14)
    R10, R20 = kernels.vhats(iv * iv * (E0 + delta), w, mb1, ms2, 1.0)
    assert np.array_equal(R1, R10) and np.array_equal(R2, R20)
    assert np.array_equal(G, small_dense.pair_gram(mb1, ms2, w * (iv * iv))[0])
    # the literal map's check sums at a completed state
    Q1 = rng.standard_normal((K, K))
    Q2 = rng.random(K)
    E, X1, X2, zh = node_sums.check_sums(Q1, Q2, iv, b, E0, delta, w, kap, mb1, ms2, h)
    Ew = E0 + kernels.channel_v(Q1, Q2, mb1, ms2)
    X10, X20 = kernels.vhats(iv * iv * (Ew + delta), w, mb1, ms2, 1.0)
    zh0 = np.zeros((K, r))
    for j in range(w.shape[0]):
        a = w[j] * iv[j]
        res = h[j] - b[j]
        for g in range(K):
            for i in range(r):
                zh0[g, i] += a * mb1[j, g] * kap[j, i] * res
    for got, want in ((E, Ew), (X1, X10), (X2, X20), (zh, zh0)):
        assert np.array_equal(got, want)


def _generic_tau():
    """``small_dense.tau_solve``'s loops without its two-group branch, compiled."""
    src = inspect.getsource(small_dense.tau_solve.py_func).split("\n", 1)[1]
    a = src.index("    if K == 2:")
    src = src[:a] + src[src.index("return tau\n", a) + len("return tau\n"):]
    ns = dict(vars(small_dense))
    exec(src.replace("def tau_solve(", "def tau_generic("), ns)  # noqa: S102
    return numba.njit(error_model="numpy")(ns["tau_generic"])


def test_two_group_tau_is_the_loops_bit_for_bit() -> None:
    gen = _generic_tau()
    rng = np.random.default_rng(7)
    out = np.empty(2)
    failed = 0
    for t in range(4000):
        B = rng.standard_normal((2, 2)) * 10.0 ** rng.uniform(-3, 2)
        M = B @ B.T if t % 5 else rng.standard_normal((2, 2)) * 10.0 ** rng.uniform(-3, 2)
        lamg = 10.0 ** rng.uniform(-6, 1, 2) * (1 if t % 11 else rng.choice([-1, 1], 2))
        pi = rng.dirichlet([1.0, 1.0])
        beta = 10.0 ** rng.uniform(-1, 1)
        want = gen(M, lamg, beta, pi)
        tau_solve2(M, lamg, beta, pi, small_dense.TAU_TOL, out)
        failed += bool(np.isnan(want).any())
        assert np.array_equal(out, want, equal_nan=True), (M, lamg, beta, pi)
        assert np.array_equal(small_dense.tau_solve(M, lamg, beta, pi), want, equal_nan=True)
    assert 0 < failed < 4000  # both the solved and the failing cases were compared
