"""The K-group tables and sums on half a centrally symmetric kappa rule (docs/THEORY.md §10.2,
§10.5): an odd sigma's feature tables from the first half of the nodes by parity
(``spiked.coefficients.odd_sigma``, ``coefficients.quadrature.mirror_rows``) against every
node's own moments; the (V1, V2) map's sums over half the nodes, doubled
(``equations.node_sums.v_sums`` with ``n``, ``spiked.anderson.v_pass`` with ``half``) against
the sums over every node; a polynomial one-variable target's tables by degree + 1 nodes against
its closed-form Gaussian moments."""

from __future__ import annotations

import numpy as np
import pytest

from asymptotics.coefficients import line_moments as L
from asymptotics.coefficients.functions import get_function
from asymptotics.coefficients.quadrature import gauss_hermite, mirror_rows
from asymptotics.equations.node_sums import mirrored_rows, v_sums
from asymptotics.spiked import anderson
from asymptotics.spiked import coefficients as C
from asymptotics.spiked.problem import kappa_nodes


def _symmetric_tables(rng: np.random.Generator, n: int, K: int) -> tuple:
    """(w, mb1, ms2) with row n - 1 - j equal to row j."""
    h = n // 2
    w = rng.uniform(0.1, 1.0, h)
    mb1 = rng.normal(0.0, 0.5, (h, K))
    ms2 = rng.uniform(0.0, 0.4, (h, K))
    w = np.concatenate([w, w[::-1]])
    w /= w.sum()
    return (w, np.ascontiguousarray(np.concatenate([mb1, mb1[::-1]])),
            np.ascontiguousarray(np.concatenate([ms2, ms2[::-1]])))


@pytest.mark.parametrize("K", [1, 2, 3, 4])
def test_half_sums_are_the_full_sums(K: int) -> None:
    rng = np.random.default_rng(K)
    for n in (2, 10, 258, 1000):
        w, mb1, ms2 = _symmetric_tables(rng, n, K)
        assert mirrored_rows(w, mb1, ms2)
        V1 = rng.normal(0.0, 0.3, (K, K))
        x = np.concatenate([(V1 @ V1.T).ravel(), rng.uniform(0.1, 1.0, K)])
        M, v2 = v_sums(x, w, mb1, ms2)
        Mh, v2h = v_sums(x, w, mb1, ms2, n // 2)
        assert np.max(np.abs(2.0 * Mh - M)) <= 1e-13 * np.max(np.abs(M))
        assert np.max(np.abs(2.0 * v2h - v2)) <= 1e-13 * np.max(np.abs(v2))
        pi = rng.dirichlet([2.0] * K)
        mbf = np.asfortranarray(mb1) if K == 2 else mb1  # (node_args' layout for two groups)
        msf = np.asfortranarray(ms2) if K == 2 else ms2
        full = anderson.v_pass(x, w, mbf, msf, 1.3, 0.01, 1.0, pi, False)  # (the solver's call)
        half = anderson.v_pass(x, w, mbf, msf, 1.3, 0.01, 1.0, pi, True)
        assert np.max(np.abs(half - full)) <= 1e-13 * np.max(np.abs(full))


def test_only_symmetric_tables_are_halved() -> None:
    rng = np.random.default_rng(7)
    w, mb1, ms2 = _symmetric_tables(rng, 100, 3)
    for arr, at in ((w, (3,)), (mb1, (5, 1)), (ms2, (97, 2))):
        bad = arr.copy()
        bad[at] = np.nextafter(bad[at], np.inf)
        args = [bad if a is arr else a for a in (w, mb1, ms2)]
        assert not mirrored_rows(*args)
    assert not mirrored_rows(w[:99], mb1[:99], ms2[:99])  # (an odd number of nodes)


def test_mirror_rows_is_parity() -> None:
    rng = np.random.default_rng(3)
    raw = rng.normal(size=(12, 3))
    got = raw.copy()
    mirror_rows(got)
    assert np.array_equal(got[:6], raw[:6])
    assert np.array_equal(got[6:, 0], -raw[5::-1, 0])
    assert np.array_equal(got[6:, 1:], raw[5::-1, 1:])


@pytest.mark.parametrize("name", ["tanh", "erf"])
def test_odd_sigma_tables_on_half_the_rule(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The tables by parity against every node's own moments (the interpolated line's own
    tolerance, ~1e-13 of each column's scale), and exactly symmetric."""
    sigma = get_function(name)
    assert C.odd_sigma(sigma)
    assert not C.odd_sigma(get_function("softplus")) and not C.odd_sigma(get_function("relu"))
    rng = np.random.default_rng(len(name))
    U = rng.normal(0.0, 0.6, (3, 3))
    c = rng.uniform(0.6, 1.4, 3)
    for n in (10, 16):
        kap = kappa_nodes(3, n, (), np.eye(3)[:, :1])[0]
        assert np.array_equal(kap[::-1], -kap)
        L.clear_cache()
        half = C.feature_tables(sigma, kap, U, c, 5.0)
        L.clear_cache()
        monkeypatch.setattr(C, "MIRROR_TABLES", False)
        full = C.feature_tables(sigma, kap, U, c, 5.0)
        monkeypatch.setattr(C, "MIRROR_TABLES", True)
        for a, b in zip(half, full, strict=True):
            assert np.max(np.abs(a - b)) <= 1e-12 * max(np.max(np.abs(b)), 1e-300)
        mu0, mb1, ms2 = half
        assert np.array_equal(mu0, -mu0[::-1]) and np.array_equal(mb1, mb1[::-1])
        assert np.array_equal(ms2, ms2[::-1])


def test_polynomial_target_by_its_degree() -> None:
    """g = z + 0.5 z^2 at t + rho Z: E g = t + (t^2 + rho^2) / 2, E[g Z] = rho (1 + t),
    E g^2 by a 60-node Gauss-Hermite sum; the line's tables (no degrees) agree too."""
    g = get_function("z1 + 0.5*z1**2")
    kap = kappa_nodes(3, 10, (), np.eye(3)[:, :1])[0]
    G = np.array([[0.5], [0.3], [-0.4]])
    h, h1, h2 = C.target_tables(g, 1, kap, G, degrees=(2,))
    t = kap @ G[:, 0]
    rho = float(np.sqrt(1.0 - np.sum(G**2)))
    assert np.max(np.abs(h - (t + 0.5 * (t * t + rho * rho)))) <= 1e-13 * np.max(np.abs(h))
    assert np.max(np.abs(h1[:, 0] - rho * (1.0 + t))) <= 1e-13 * np.max(np.abs(h1))
    x, wx = gauss_hermite(60)
    z = t[:, None] + rho * x[None, :]
    want = (z + 0.5 * z * z) ** 2 @ wx
    assert np.max(np.abs(h2 - want)) <= 1e-13 * np.max(h2)
    line = C.target_tables(g, 1, kap, G, gain=5.0)
    for a, b in zip((h, h1, h2), line, strict=True):
        assert np.max(np.abs(a - b)) <= 1e-12 * np.max(np.abs(b))
