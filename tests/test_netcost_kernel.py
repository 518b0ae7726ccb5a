"""The compiled Schur inverse and the per-setting reuse of the network route's warm point
(asymptotics/network/schur.py, coupling.py, channels.py; docs/DERIVATIONS.md §9.7): the kernel's
inverse (diagonal and whole) against numpy's dense inverse, its refusal of a matrix that is not
positive definite, the Schur route through it against the LAPACK route, the coupled field parts
read from the derivative matrix against the unit derivatives through ``dresolvent`` (bit for
bit), and the kept scale mean table against a fresh one."""

from __future__ import annotations

import numpy as np
import pytest

from asymptotics.network import schur
from tests.test_netcost_schur import _case


def _blocks(B: int = 3, n: int = 9, seed: int = 0) -> tuple:
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((B, n, 2 * n))
    rest = np.einsum("bik,bjk->bij", X, X) / (2 * n) + 0.1 * np.eye(n)
    corr = rng.uniform(-0.05, 0.5, (B, n))
    return rest, 1.7, corr


def _dense(rest, scale, corr) -> np.ndarray:
    S = rest * scale + np.einsum("bi,ij->bij", corr, np.eye(rest.shape[1]))
    return np.linalg.inv(S)


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 15, 16, 17, 40, 98, 100,
                               101])
def test_kernel_inverse_is_the_dense_inverse(n: int) -> None:
    rest, scale, corr = _blocks(n=n, seed=n)
    ref = _dense(rest, scale, corr)
    B = rest.shape[0]
    diag = np.empty((B, 1, n))
    assert schur.chol_inverse(rest, scale, corr, diag, False)
    dref = np.diagonal(ref, axis1=1, axis2=2)
    assert np.max(np.abs(diag[:, 0] - dref)) <= 1e-12 * np.max(np.abs(dref))
    full = np.empty((B, n, n))
    assert schur.chol_inverse(rest, scale, corr, full, True)
    assert np.max(np.abs(full - ref)) <= 1e-12 * np.max(np.abs(ref))
    assert np.array_equal(full, np.swapaxes(full, 1, 2))  # symmetric exactly (one triangle)


def test_kernel_blocks_do_not_leak_into_each_other() -> None:
    """The blocked kernel reuses its scratch across blocks (zero below X's diagonal, a zero row
    past an odd n): each block's inverse is its own, whatever the block before it."""
    for n in (7, 10):
        rest, scale, corr = _blocks(B=4, n=n, seed=11)
        rest[1] *= 40.0  # (a block of a very different scale between two ordinary ones)
        corr[2] += 3.0
        ref = _dense(rest, scale, corr)
        for b in range(4):
            one = np.empty((1, n, n))
            assert schur.chol_inverse(rest[b:b + 1], scale, corr[b:b + 1], one, True)
            assert np.max(np.abs(one[0] - ref[b])) <= 1e-12 * np.max(np.abs(ref[b]))
        full = np.empty((4, n, n))
        assert schur.chol_inverse(rest, scale, corr, full, True)
        assert np.max(np.abs(full - ref)) <= 1e-12 * np.max(np.abs(ref))
        diag = np.empty((4, 1, n))
        assert schur.chol_inverse(rest[::-1].copy(), scale, corr[::-1].copy(), diag, False)
        dref = np.diagonal(ref[::-1], axis1=1, axis2=2)
        assert np.max(np.abs(diag[:, 0] - dref)) <= 1e-12 * np.max(np.abs(dref))


def test_kernel_refuses_a_matrix_not_positive_definite() -> None:
    rest, scale, corr = _blocks()
    bad = corr.copy()
    bad[1, 4] = -50.0  # block 1 indefinite
    assert not schur.chol_inverse(rest, scale, bad, np.empty((3, 1, 9)), False)
    bad[1, 4] = np.nan
    assert not schur.chol_inverse(rest, scale, bad, np.empty((3, 9, 9)), True)
    bad[1, 4] = corr[1, 4]
    bad[2, 8] = -50.0  # (the last row of an odd n: the second of a pair that is not there)
    assert not schur.chol_inverse(rest, scale, bad, np.empty((3, 1, 9)), False)
    bad[2, 8], bad[0, 5] = corr[2, 8], -50.0  # (the second row of a pair)
    assert not schur.chol_inverse(rest, scale, bad, np.empty((3, 9, 9)), True)


@pytest.mark.parametrize("where", ["offdiag", "diag", "corr", "inf"])
@pytest.mark.parametrize("full", [False, True])
def test_kernel_refuses_a_block_that_is_not_finite(where: str, full: bool) -> None:
    """A NaN (or an infinity) anywhere in a block reaches a pivot's ``not d > 0`` test: the kernel
    is compiled without fast-math's no-NaN / no-infinity assumptions, so it cannot be assumed
    away."""
    for n in (7, 10):
        rest, scale, corr = _blocks(B=3, n=n, seed=5)
        if where == "offdiag":
            rest[1, n - 1, 2] = rest[1, 2, n - 1] = np.nan
        elif where == "diag":
            rest[2, 3, 3] = np.nan
        elif where == "corr":
            corr[0, n - 2] = np.nan
        else:
            rest[1, 4, 4] = np.inf
        out = np.empty((3, n, n)) if full else np.empty((3, 1, n))
        assert not schur.chol_inverse(rest, scale, corr, out, full)


@pytest.mark.parametrize("K,c", [(2, 1), (3, 2)])
def test_schur_by_the_kernel_is_the_lapack_route(K: int, c: int, monkeypatch) -> None:
    vp, Dp, s, rest, c = _case(K, c, seed=K)
    monkeypatch.setattr(schur, "_compiled", lambda *a: True)
    T = schur.traces(vp, Dp, s, rest, c)
    W = schur.wform(vp, Dp, s, rest, c, np.arange(K), np.arange(K), True)
    monkeypatch.setattr(schur, "_compiled", lambda *a: False)
    T0 = schur.traces(vp, Dp, s, rest, c)
    W0 = schur.wform(vp, Dp, s, rest, c, np.arange(K), np.arange(K), True)
    assert np.max(np.abs(T - T0)) <= 1e-13 * np.max(np.abs(T0))
    assert np.max(np.abs(W.G - W0.G)) <= 1e-13 * np.max(np.abs(W0.G))
    assert np.array_equal(W.Pf, W0.Pf) and np.array_equal(W.z, W0.z)


def _coupled(K: int = 3, r: int = 2, k: int = 1, B: int = 2, n: int = 6, seed: int = 3):
    from asymptotics.network.bulk import GroupBulk
    from asymptotics.network.coupling import CoupledChannels

    rng = np.random.default_rng(seed)
    X = rng.standard_normal((B, K, n, 3 * n))
    sig = np.einsum("bgik,bgjk->bgij", X, X) / (3 * n) + 0.3 * np.eye(n)
    sig *= n / np.trace(sig, axis1=2, axis2=3).sum(axis=0)[None, :, None, None] * B
    bulk = GroupBulk(sig)
    a = 0.3 * rng.standard_normal((B, K, r + k, n))
    E = rng.standard_normal((K, r + k, r + k))
    ecov = np.einsum("gij,gkj->gik", E, E) / (r + k) + 0.1 * np.eye(r + k)
    C = rng.standard_normal((K, K))
    return CoupledChannels(bulk, a, ecov, r, k), C @ C.T / K + 0.2 * np.eye(K), rng


class _NoFinite:
    """numpy, but every entry counts as not finite (:meth:`field_q` then takes the general
    way: ``dresolvent`` per unit direction)."""

    def __getattr__(self, name):
        return getattr(np, name)

    @staticmethod
    def isfinite(x):
        return np.zeros(np.shape(x), dtype=bool)


def test_field_q_from_the_derivative_matrix_is_the_unit_derivatives(monkeypatch) -> None:
    from asymptotics.network import coupling

    ch, vhat1, rng = _coupled()
    K = 3
    beta, pi = 0.8, np.array([0.25, 0.5, 0.25])
    tau, _, _ = ch.bulk.resolvent(vhat1, np.full(K, 0.3), beta, pi)
    assert np.all(np.isfinite(tau))
    zh, ph = rng.standard_normal((K, ch.r)), rng.standard_normal((K, ch.k))
    q1, q2 = ch.field_q(vhat1, tau, beta, pi, zh, ph)
    calls = []
    real = type(ch.bulk).dresolvent
    monkeypatch.setattr(type(ch.bulk), "dresolvent",
                        lambda self, *a: calls.append(1) or real(self, *a))
    monkeypatch.setattr(coupling, "np", _NoFinite())
    g1, g2 = ch.field_q(vhat1, tau, beta, pi, zh, ph)
    assert len(calls) == K * K + K  # (the general way was taken)
    assert np.all(np.isfinite(q1)) and np.all(np.isfinite(q2))
    assert np.array_equal(q1, g1) and np.array_equal(q2, g2)


def test_kept_mean_table_is_the_fresh_one() -> None:
    from asymptotics.network import channels
    from asymptotics.network.channels import _mean_table, mean_table, spiked_problem

    params = dict(sigma="tanh", target="z1 + z1*z2", loadings=[[0.6, 0.2], [0.3, -0.5]],
                  bulk=[0.8, 1.1], fractions=[0.5, 0.5], overlaps=[[1.0, 0.0], [0.0, 1.0]],
                  lam=0.01, beta=1.0)
    channels.MEANS.clear()
    prob = spiked_problem(params, 10, None)
    first = mean_table(prob, True)
    again = mean_table(prob, True)
    assert again is first and not first.flags.writeable
    assert np.array_equal(first, _mean_table(prob))
    assert mean_table(prob, False) is prob.tables.kappa


def test_kept_acal_and_gram_are_the_fresh_ones() -> None:
    """Acal (every D_g > 0) and the Gram of W are kept for the last arguments: asked again,
    the same read-only arrays, equal bit for bit to a fresh computation; with some D_g < 0
    Acal is not kept; :meth:`forget` drops both."""
    from asymptotics.network.coupling import CoupledChannels

    ch, vhat1, _ = _coupled()
    D = np.array([0.4, 0.7, 0.5])
    first = ch.acal(vhat1, D)
    assert ch.acal(vhat1, D) is first and not first.flags.writeable
    fresh = CoupledChannels(ch.bulk, ch.a, ch.ecov, ch.r, ch.k)
    ch.bulk.forget()
    assert np.array_equal(fresh.acal(vhat1, D), first)
    other = ch.acal(vhat1, D * 1.1)
    assert other is not first and not np.array_equal(other, first)
    neg = D * np.array([1.0, -1.0, 1.0])
    a1 = ch.acal(vhat1, neg)
    assert a1.flags.writeable and ch.acal(vhat1, neg) is not a1
    W = ch.bulk.wkc(vhat1, D)[0]
    H = ch.bulk._gram(W)
    assert ch.bulk._gram(W) is H and not H.flags.writeable
    ch.bulk._gram_last = None
    assert np.array_equal(ch.bulk._gram(W), H)
    ch.forget()
    assert ch._acal is None and ch.bulk._gram_last is None
