"""The K-group completion and literal map over pairs of mirrored nodes
(asymptotics/equations/paired/half_sums.py, docs/THEORY.md §10.5): on tables even (w, mub1,
mus2) and odd (kappa, mu0) in the pairing of node j with node n - 1 - j, the paired sums and the
mean design on the first half's rows against the passes over every node
(``spiked.kernels.complete_parts`` and ``spiked.anderson.literal_map`` with ``half`` False),
within 1e-12; ``solve_point`` takes the paired path on an odd sigma's tables."""

from __future__ import annotations

import numpy as np
import pytest

from asymptotics.equations.paired.half_sums import odd_rows
from asymptotics.spiked import anderson, kernels
from asymptotics.spiked.problem import spiked_builder
from asymptotics.spiked.solve import _nonneg


def _paired_tables(K: int, r: int, k: int, n: int, seed: int) -> tuple:
    """(w, kap, mu0, mb1, ms2, h, h1, h2): w, mb1, ms2 even and kap, mu0 odd in the pairing;
    the target's tables without parity."""
    rng = np.random.default_rng([seed, K, r, k, n])
    m = n // 2
    kap = rng.standard_normal((m, r))
    w = np.exp(-0.5 * np.sum(kap**2, axis=1))
    mb1 = 0.3 + 0.4 * rng.random((m, K))
    ms2 = 0.2 + 0.3 * rng.random((m, K))
    mu0 = rng.normal(0.0, 0.5, (m, K))  # (any rows: the algebra, not a sigma's smoothness)
    both = np.vstack([kap, -kap[::-1]])
    w = np.concatenate([w, w[::-1]])
    even = [np.ascontiguousarray(np.vstack([a, a[::-1]])) for a in (mb1, ms2)]
    t = both @ rng.normal(0.0, 0.5, r)
    h = np.tanh(t) + 0.3 * t * t
    h1 = np.ascontiguousarray(np.column_stack([1.0 - np.tanh(t + 0.2 * i) ** 2
                                               for i in range(k)]))
    h2 = h * h + 0.5
    return (w / w.sum(), both, np.ascontiguousarray(np.vstack([mu0, -mu0[::-1]])), *even, h,
            h1, h2)


def _close(a: np.ndarray, b: np.ndarray, tol: float = 1e-12) -> bool:
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return a.shape == b.shape and bool(np.max(np.abs(a - b), initial=0.0)
                                       <= tol * max(np.max(np.abs(b), initial=0.0), 1e-300))


def _strided(a: np.ndarray) -> np.ndarray:
    """``a``'s values in a strided (neither C- nor F-contiguous) array: numba's layout 'A'."""
    out = np.empty((a.shape[0], 2 * a.shape[1]))[:, ::2]
    out[...] = a
    return out


def _both(v, tables, A, lam, delta, beta, pi, p_inv) -> list:
    """(complete_parts, literal_map) over every node and over the pairs. The design's (U, Vt)
    go to literal_map strided, the layout 'A' they have inside ``solve_point`` (where the SVD's
    and mean_elimination2's meet): this call and solve_point's compile one literal_map, not one
    each (the same values; but K = 1's Vt, 1 x 1, which numpy calls contiguous whatever it is)."""
    out = []
    for half in (False, True):
        cp = kernels.complete_parts(v, *tables, A, lam, delta, beta, pi, p_inv, half)
        parts = tuple(_strided(a) if i in (10, 12) else a for i, a in enumerate(cp[5:]))
        fx, E = anderson.literal_map(cp[0], parts, *tables, A, delta, beta, pi, p_inv, half)
        out.append((cp, fx, E))
    return out


@pytest.mark.parametrize("K", [1, 2, 3, 4, 5])
@pytest.mark.parametrize("r,k", [(1, 1), (2, 2), (3, 1)])
@pytest.mark.parametrize("p_inv", [0.0, 0.01])
def test_paired_completion_is_the_full_one(K: int, r: int, k: int, p_inv: float) -> None:
    tables = _paired_tables(K, r, k, 400, 1)
    if K == 2:  # (node_args' layout of two groups' tables)
        tables = tuple(np.asfortranarray(a) if i in (2, 3, 4) else a
                       for i, a in enumerate(tables))
    w, kap, mu0, mb1, ms2 = tables[:5]
    assert anderson.mirrored_rows(w, mb1, ms2) and odd_rows(kap, mu0)
    rng = np.random.default_rng([K, r, k])
    pi = rng.dirichlet([2.0] * K)
    v = np.concatenate([(0.4 * np.diag(pi)).ravel(), 0.4 * pi])
    (cf, ff, Ef), (ch, fh, Eh) = _both(v, tables, 1.3, 0.05, 0.2, 1.0, pi, p_inv)
    assert cf[1] == ch[1]
    assert _close(ch[0], cf[0])  # the state
    assert _close(ch[2], cf[2]) and _close(ch[3], cf[3]) and _close(ch[4], cf[4])  # contrast
    for i in (5, 6, 7, 8, 9, 10, 11, 19, 20):  # iv, Vhat1, Vhat2, tau, V1, V2, psihat, b, E0
        assert _close(ch[i], cf[i]), i
    assert ch[13].shape[0] == 200 + K and ch[18] == cf[18]  # (the first half's rows; the rank)
    assert _close(fh, ff) and _close(Eh, Ef)


def test_odd_rows_only_where_odd() -> None:
    w, kap, mu0 = _paired_tables(3, 2, 1, 100, 2)[:3]
    assert odd_rows(kap, mu0)
    for arr, at in ((kap, (3, 1)), (mu0, (97, 2))):
        bad = arr.copy()
        bad[at] = np.nextafter(bad[at], np.inf)
        assert not odd_rows(*[bad if a is arr else a for a in (kap, mu0)])
    assert not odd_rows(kap[:99], mu0[:99]) and not odd_rows(kap[:0], mu0[:0])


@pytest.mark.parametrize("sigma,K", [("tanh", 2), ("erf", 3), ("tanh", 4)])
def test_solve_point_pairs_an_odd_sigma(sigma: str, K: int) -> None:
    """The point's state is the paired completion's at the (V1, V2) it ended on, bit for bit,
    and within 1e-12 of the completion over every node; its risk likewise."""
    rng = np.random.default_rng(K)
    G = rng.normal(size=(3, 1))
    build = spiked_builder(sigma=sigma, target="tanh", loadings=rng.normal(0.0, 0.6, (K, 3)),
                           bulk=rng.uniform(0.6, 1.4, K), fractions=rng.dirichlet([2.0] * K),
                           overlaps=0.8 * G / np.linalg.norm(G), lam=0.05, beta=1.0,
                           delta=0.0, p=None)
    prob = build(10, None)
    tables = anderson.node_args(prob)
    w, kap, mu0, mb1, ms2 = tables[:5]
    assert anderson.mirrored_rows(w, mb1, ms2) and odd_rows(kap, mu0)
    A = 1.5 / prob.beta
    args = (A, prob.lam, prob.delta, prob.beta, prob.fractions, prob.p_inv)
    out = anderson.solve_point(np.zeros(K * K + K), False, _nonneg(K), *tables, *args,
                               1e-10, 1e-8, 500, 0.5, 5)
    assert out[1] == anderson.CONVERGED
    v = out[4]
    for _ in range(3):
        v = anderson.v_pass(v, w, mb1, ms2, A, prob.lam, prob.beta, prob.fractions, True)
    (cf, _, Ef), (ch, _, Eh) = _both(v, tables, *args)
    assert np.array_equal(out[0], ch[0])  # (the risk: numba's sum against numpy's pairwise)
    assert abs(out[6] - np.sum(w * Eh)) <= 1e-14 * abs(out[6])
    assert _close(out[0], cf[0]) and abs(out[6] - np.sum(w * Ef)) <= 1e-12 * abs(out[6])


def _q_sums_half_loop(zk, pk, m, iv, delta, w, mu0, mb1, ms2, h, h2) -> tuple:
    """``half_sums.q_sums_half``'s general per-pair loop in Python floats (each operation that
    of the compiled loop, in its order): (b, E0, a, ap, Yt)."""
    n, K = mb1.shape
    nh, L = n // 2, K * (K + 1) // 2
    b, E0, a, ap, Yt = np.empty(n), np.empty(n), np.empty(nh), np.empty(nh), np.empty((L + K, nh))
    for j in range(nh):
        jm = n - 1 - j
        bj = c = cm = 0.0
        for g in range(K):
            bj += float(mu0[j, g]) * float(m[g]) + float(mb1[j, g]) * float(zk[j, g])
            c += float(mb1[j, g]) * float(pk[j, g])
            cm += float(mb1[j, g]) * float(pk[jm, g])
        b[j], b[jm] = bj, -bj
        E0[j] = float(h2[j]) - 2.0 * bj * float(h[j]) + bj * bj - 2.0 * c
        E0[jm] = float(h2[jm]) - 2.0 * -bj * float(h[jm]) + bj * bj - 2.0 * cm
        iv2 = float(iv[j]) * float(iv[j])
        a[j] = float(w[j]) * (iv2 * (E0[j] + delta)) + float(w[j]) * (iv2 * (E0[jm] + delta))
        ap[j] = 2.0 * (float(w[j]) * iv2)
        p = 0
        for g in range(K):
            for q in range(g, K):
                Yt[p, j] = float(mb1[j, g]) * float(mb1[j, q])
                p += 1
        Yt[L:, j] = ms2[j]
    return b, E0, a, ap, Yt


@pytest.mark.parametrize("K", [3, 4])
def test_q_sums_half_rows_written_out_are_the_general_loop_bit_for_bit(K: int) -> None:
    """``q_sums_half``'s per-pair rows of three and four groups (``_q_rows_half34``, the loops over
    the groups written out) are the general loop's numbers bit for bit, and so are its sums."""
    from asymptotics.equations.node_sums_k import weighted_sums
    from asymptotics.equations.paired.half_sums import _q_rows_half34, q_sums_half
    from asymptotics.equations.small_dense import gram_t

    w, kap, mu0, mb1, ms2, h, h1, h2 = _paired_tables(K, 3, 2, 96, 7)
    rng = np.random.default_rng(K)
    zk, pk = rng.standard_normal((48, K)), rng.standard_normal((96, K))
    m, iv, delta = rng.standard_normal(K), 1.0 / (1.0 + rng.random(96)), 0.1
    ref = _q_sums_half_loop(zk, pk, m, iv, delta, w, mu0, mb1, ms2, h, h2)
    got = [np.empty(96), np.empty(96), np.empty(48), np.empty(48), np.empty_like(ref[4])]
    _q_rows_half34(zk, pk, m, iv, delta, w, mu0, mb1, ms2, h, h2, *got)
    for x, y in zip(got, ref, strict=True):
        assert np.array_equal(x, y)
    R1, R2, _ = weighted_sums(ref[2], mb1, ms2, np.zeros((48, 0)), 48)
    out = q_sums_half(zk, pk, m, iv, delta, w, mu0, mb1, ms2, h, h2)
    for x, y in zip(out, (ref[0], ref[1], R1, R2, gram_t(ref[4], ref[3])), strict=True):
        assert np.array_equal(x, y)


def test_antisymmetric_is_array_equal_of_the_reversed_negation() -> None:
    """``quadrature.antisymmetric(t)`` is ``np.array_equal(t[::-1], -t)`` (NaN unequal, -0.0
    equal to 0.0; ``spiked.coefficients.feature_tables``' test of a group's shifts)."""
    from asymptotics.coefficients.quadrature import antisymmetric

    t = np.linspace(-3.0, 3.0, 10)
    cases = [t, np.linspace(-3.0, 3.0, 11), t + 1e-16, np.array([0.0, -0.0]), np.zeros(0),
             np.array([np.nan, np.nan]), np.array([-1.0, 0.0, 1.0]), np.array([2.0])]
    for x in cases:
        assert antisymmetric(np.ascontiguousarray(x)) == np.array_equal(x[::-1], -x)
