"""The K-group engine's faster passes against the ones they replace, bit for bit: the V-map's
node sums of three and four groups a block of nodes at a time
(``equations.node_sums_k.v_sums3``, ``v_sums4``) against ``spiked.kernels.channel_v`` and
``vhats``, and a lambdified multi-index target's tables on the omega grid by broadcasting
(``spiked.coefficients._on_grid``) against the target evaluated on the full (n, m) arrays; the
tables' one-pass rule sums (``coefficients.quadrature.grid_moments``) against numpy's."""

from __future__ import annotations

import numpy as np
import pytest

from asymptotics.coefficients.quadrature import grid_moments
from asymptotics.coefficients.targets import target_callable
from asymptotics.equations import node_sums_k
from asymptotics.spiked import kernels
from asymptotics.spiked.coefficients import target_tables, tensor_rule
from asymptotics.spiked.problem import target_degrees
from tests.test_node_sums import _tables


@pytest.mark.parametrize("K", [3, 4])
@pytest.mark.parametrize("n", [0, 1, 127, 128, 129, 257, 1000])
def test_block_v_sums_match_kernels(K: int, n: int) -> None:
    w, kap, mu0, mb1, ms2, h, h1, h2, x, rng = _tables(K, 1, 1, n=max(n, 1), seed=n)
    w, mb1, ms2 = w[:n], mb1[:n], ms2[:n]
    V1, V2 = x[:K * K].reshape((K, K)), x[K * K:]
    iv = 1.0 / (1.0 + kernels.channel_v(V1, V2, mb1, ms2))
    M, v2 = kernels.vhats(iv, w, mb1, ms2, 1.0)
    Mb, v2b = (node_sums_k.v_sums3 if K == 3 else node_sums_k.v_sums4)(x, w, mb1, ms2)
    assert np.array_equal(M, Mb) and np.array_equal(v2, v2b)
    # and the map itself: the resolvent of those sums
    lam, beta, pi = 0.05, 1.5, rng.dirichlet([2.0] * K)
    tau, nV1, nV2 = kernels.resolvent(M, lam + v2, beta, pi)
    assert np.array_equal(kernels.v_map(x, w, mb1, ms2, 1.0, lam, beta, pi),
                          np.concatenate([nV1.ravel(), nV2]))


TARGETS = ("z1*z2 + tanh(z1)", "z1 + z1*z2", "tanh(z1)*z2**2 + relu(z2 - 0.3)",
           "z1*z2*z3 + sin(z2)", "exp(-z1**2) + erf(z2)", "3.0 + 0*z1*z2")


@pytest.mark.parametrize("text", TARGETS)
@pytest.mark.parametrize("r", [2, 3])
def test_grid_target_tables_bit_for_bit(text: str, r: int) -> None:
    g, k = target_callable(text)
    assert hasattr(g, "raw")

    def plain(Z: np.ndarray) -> np.ndarray:  # (no raw: the (n, m) arrays' path)
        return g(Z)

    rng = np.random.default_rng([r, len(text)])
    kap, _ = tensor_rule(r, 12)
    for case in range(4):
        G = rng.standard_normal((r, k))
        G /= np.linalg.norm(G, axis=0)
        if case < 3:
            G *= rng.uniform(0.3, 0.95, k)
        if case == 2:  # a learned target direction: no omega axis for z1
            G[:, 0] /= np.linalg.norm(G[:, 0])
        for n_omega in (None, 7):
            got = target_tables(g, k, kap, G, n_omega, target_degrees(text))
            ref = target_tables(plain, k, kap, G, n_omega, target_degrees(text))
            for a, b in zip(got, ref, strict=True):
                assert a.shape == b.shape and np.array_equal(a, b)


def test_grid_target_refuses_non_finite() -> None:
    g, k = target_callable("log(z1) + z2")
    kap, _ = tensor_rule(2, 8)
    G = np.array([[0.5, 0.1], [0.2, 0.6]])
    with pytest.raises(ValueError, match="non-finite"):
        target_tables(g, k, kap, G)


def test_grid_moments_are_the_rule_sums() -> None:
    """``coefficients.quadrature.grid_moments`` (the target's tables from its values on the omega
    rule, one pass) against numpy's products of the same values, within 1e-14."""
    rng = np.random.default_rng(5)
    om, wo = tensor_rule(2, (16, 2))
    vals = np.tanh(rng.normal(0.0, 2.0, (om.shape[0], 300))) + rng.normal(size=(1, 300))
    for free in ([0, 1], [1], []):
        wom = wo[:, None] * om[:, :len(free)]
        finite, h, h2, h1t = grid_moments(vals, wo, wom)
        assert finite and h1t.shape == (len(free), 300)
        for a, b in ((h, wo @ vals), (h2, wo @ vals**2), (h1t, wom.T @ vals)):
            assert np.max(np.abs(a - b), initial=0.0) <= 1e-14 * max(np.max(np.abs(b),
                                                                           initial=0.0), 1.0)
    vals[3, 7] = np.nan
    assert not grid_moments(vals, wo, wo[:, None] * om)[0]
