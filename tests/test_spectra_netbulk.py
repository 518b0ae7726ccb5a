"""The network's features beyond one step on the route's bulk outside E (docs/THEORY.md §16.8,
docs/DERIVATIONS.md §9.8; ``asymptotics/spectra/netbulk.py``).

Independent checks: the traces of the expansion against the exact dK-square inverse of each
block (commuting covariances: exact; non-commuting: the second order's remainder, against the
zeroth order's error); identity covariances give the isotropic V-part of
:func:`asymptotics.spectra.features.features_solver` (a different code: closed K x K formulas)
to 1e-10; and, slow, the Stieltjes transform against the resolvent of sampled features whose
first layer has the device's covariances outside E (the isotropic law is off there)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from asymptotics.network.bulk import GroupBulk
from asymptotics.spectra.features import features_solver
from asymptotics.spectra.netbulk import OutsideTraces, outside_solver
from asymptotics.spiked.problem import build_spiked_problem


def _wishart(rng, n: int, m: int) -> np.ndarray:
    G = rng.standard_normal((n, m))
    S = G @ G.T / m
    return S * (n / np.trace(S))


def _pair(rng, B: int, n: int, eps: float) -> np.ndarray:
    """B blocks of two covariances: Sig_2 a function of Sig_1 plus ``eps`` of a symmetric
    perturbation (commuting for eps = 0), each normalised to trace n."""
    out = np.empty((B, 2, n, n))
    for b in range(B):
        S1 = _wishart(rng, n, 3 * n)
        ev, U = np.linalg.eigh(S1)
        S2 = (U * (0.5 + ev ** 2)) @ U.T
        H = rng.standard_normal((n, n))
        S2 = S2 + eps * (H + H.T) / math.sqrt(2 * n)
        S2 = S2 * (n / np.trace(S2))
        out[b] = S1, S2
    return out


POINTS = [(np.array([[0.9, 0.3], [0.3, 0.6]]) + 0.2j, np.array([0.7 + 0.3j, 0.4 + 0.2j])),
          (np.array([[1.4, -0.2], [-0.2, 0.8]]) - 0.1j, np.array([0.3 + 0.6j, 0.9 + 0.1j]))]


def test_commuting_traces_are_exact() -> None:
    tr = OutsideTraces(GroupBulk(_pair(np.random.default_rng(0), 2, 40, 0.0)))
    assert tr.exact
    for vh, D in POINTS:
        T = tr.traces(vh[None], D[None])[0]
        assert np.max(np.abs(T - tr.dense(vh, D))) < 1e-12 * np.max(np.abs(T))


@pytest.mark.parametrize("eps", [0.05, 0.1])
def test_second_order_traces(eps: float) -> None:
    """The second order removes most of the zeroth order's error (which is of order eps^2)."""
    tr = OutsideTraces(GroupBulk(_pair(np.random.default_rng(1), 2, 40, eps)))
    assert not tr.exact
    groups = tr.groups
    for vh, D in POINTS:
        ex = tr.dense(vh, D)
        err2 = np.max(np.abs(tr.traces(vh[None], D[None])[0] - ex)) / np.max(np.abs(ex))
        tr.groups = []
        err0 = np.max(np.abs(tr.traces(vh[None], D[None])[0] - ex)) / np.max(np.abs(ex))
        tr.groups = groups
        assert err0 > 1e-4
        assert err2 < 0.1 * err0


@pytest.mark.parametrize("K", [1, 2])
def test_identity_bulk_is_the_isotropic_law(K: int) -> None:
    kw = dict(loadings=[[0.8, 0.1], [-0.6, 0.3]][:K], bulk=[1.1, 0.9][:K],
              fractions=[0.6, 0.4][:K] if K == 2 else [1.0], overlaps=[[0.7], [0.2]][:2],
              target="tanh(z1)")
    prob = build_spiked_problem(sigma="tanh", lam=0.01, beta=0.5, delta=0.0, **kw)
    sig = np.broadcast_to(np.eye(30), (3, K, 30, 30)).copy()
    new = outside_solver(prob, 2.0, GroupBulk(sig))
    old = features_solver(prob, 2.0)
    z = np.array([0.3 + 1e-3j, 1.0 + 0.5j, 2.5 + 1e-9j, 4.0 + 0.01j, 30.0 + 0j])
    mn, mo = new.m(z), old.m(z)
    assert np.all(np.isfinite(mo))
    assert np.max(np.abs(mn - mo) / np.abs(mo)) < 1e-10


@pytest.mark.slow
def test_against_sampled_features() -> None:
    """relu, +-1 readout, two steps (the non-commuting groups): the features of a first layer
    whose rows have the route's loadings on V and the device's covariances outside E (each
    block used twice, d = 786, p = 393, n = 1572, 4 draws) against m(z) at Im z = 0.1; the
    isotropic V-part misses the same draws."""
    from asymptotics.coefficients.functions import get_function
    from asymptotics.spectra.netsteps import network_steps_outside, network_steps_params

    s = get_function("relu")
    step = dict(steps=2, alpha0=1.0, eta=1.0, delta=0.0, readout="pm1")
    gp, _, _ = network_steps_params(s, "relu(z1)", **step)
    prob = build_spiked_problem(sigma=s, lam=0.01, beta=0.5, delta=0.0, **gp)
    cc = network_steps_outside(s, "relu(z1)", **step)
    S = np.asarray(cc.bulk.sig)
    B, K, n = S.shape[:3]
    L, c, pi = (np.asarray(gp[k], float) for k in ("loadings", "bulk", "fractions"))
    r, reps = L.shape[1], 2
    d = reps * B * n + r
    p, N = round(0.5 * d), round(2.0 * d)
    z = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 7.8]) + 0.1j
    m_new = outside_solver(prob, 2.0, cc.bulk).m(z)
    m_old = features_solver(prob, 2.0).m(z)
    chol = np.linalg.cholesky(S + 1e-12 * np.eye(n))
    rng = np.random.default_rng(1)
    grp = np.minimum(np.repeat(np.arange(K), np.ceil(pi * p).astype(int))[:p], K - 1)
    ms = []
    for _ in range(4):
        W = np.empty((p, d))
        for i, g in enumerate(grp):
            W[i, :r] = L[g] + math.sqrt(c[g] / d) * rng.standard_normal(r)
            G = np.einsum("bij,rbj->rbi", chol[:, g], rng.standard_normal((reps, B, n)))
            W[i, r:] = math.sqrt(c[g] / d) * G.ravel()
        F = s(rng.standard_normal((N, d)) @ W.T) / math.sqrt(p)
        ev = np.linalg.eigvalsh(F.T @ F)
        ev = ev[ev < 50.0]  # the means' outliers (weight 1/p each) out
        ms.append(np.array([np.sum(1.0 / (ev - zz)) / p for zz in z]))
    ms = np.array(ms)
    sim = ms.mean(axis=0)
    se = np.abs(ms.std(axis=0, ddof=1)) / 2.0 + 2e-3
    z_new = np.abs(m_new - sim) / se
    assert np.max(z_new) < 4.0
    assert np.mean(np.abs(m_new - sim)) < 0.5 * np.mean(np.abs(m_old - sim))


def _triple(rng, B: int, n: int, eps: float) -> np.ndarray:
    """B blocks of three covariances (two of them non-commuting with the first)."""
    two = _pair(rng, B, n, eps)
    third = _pair(rng, B, n, eps)[:, 1]
    return np.concatenate([two, third[:, None]], axis=1)


@pytest.mark.parametrize("K", [1, 2, 3])
def test_kernel_traces_are_the_numpy_sums(K: int) -> None:
    """The kernels' loops (compiled or interpreted; the O-products by BLAS) against the
    vectorised numpy sums of the same expansion, at a batch of complex points."""
    rng = np.random.default_rng(5)
    sig = _triple(rng, 3, 20, 0.1)[:, :K]
    tr = OutsideTraces(GroupBulk(sig))
    assert tr.exact == (K == 1)
    N = 7
    vh = rng.standard_normal((N, K, K)) + 1j * rng.standard_normal((N, K, K))
    vh = 0.3 * (vh + np.swapaxes(vh, 1, 2))
    D = 0.5 + rng.random((N, K)) + 1j * rng.random((N, K))
    T = tr.traces_kernels(vh, D)
    Tn = tr.traces_numpy(vh, D)
    assert np.max(np.abs(T - Tn)) < 1e-12 * np.max(np.abs(Tn))
    assert np.max(np.abs(tr.traces(vh, D) - Tn)) < 1e-12 * np.max(np.abs(Tn))
    # the commuting model keeps T0 only
    T0 = tr.commuting().traces_kernels(vh, D)
    if K > 1:
        assert np.max(np.abs(T0 - Tn)) > 1e-6 * np.max(np.abs(Tn))


@pytest.mark.parametrize("K", [2, 3, 4])
def test_kernel_traces_without_symmetry_and_generic_k(K: int) -> None:
    """A non-symmetric Vhat1 (every ordered pair of groups: the kernels' general loops) and
    K = 4 (Gauss-Jordan per direction) against the numpy sums."""
    rng = np.random.default_rng(11)
    sig = np.concatenate([_triple(rng, 2, 12, 0.1), _pair(rng, 2, 12, 0.1)], axis=1)[:, :K]
    tr = OutsideTraces(GroupBulk(sig))
    N = 5
    vh = 0.3 * (rng.standard_normal((N, K, K)) + 1j * rng.standard_normal((N, K, K)))
    D = 0.5 + rng.random((N, K)) + 1j * rng.random((N, K))
    for v in (vh, vh + np.swapaxes(vh, 1, 2)):
        T, Tn = tr.traces_kernels(v, D), tr.traces_numpy(v, D)
        assert np.max(np.abs(T - Tn)) < 1e-12 * np.max(np.abs(Tn))


def test_sym_jacobian_is_the_plain_difference_quotient() -> None:
    """One evaluation for the columns of V1_ab and V1_ba (:func:`sym_jacobian`) against the
    difference quotient of every column."""
    from asymptotics.spectra.netbulk import sym_jacobian

    kw = dict(loadings=[[0.8, 0.1], [-0.6, 0.3]], bulk=[1.1, 0.9], fractions=[0.6, 0.4],
              overlaps=[[0.7], [0.2]], target="tanh(z1)")
    prob = build_spiked_problem(sigma="tanh", lam=0.01, beta=0.5, delta=0.0, **kw)
    sol = outside_solver(prob, 2.0, GroupBulk(_pair(np.random.default_rng(3), 3, 30, 0.1)))
    z = np.array([1.0 + 0.5j, 3.0 + 0.01j]) * sol.scale
    x, ok = sol.solve(z)
    assert np.all(ok)
    F = sol.residual(x, z)
    J = sym_jacobian(sol.residual, x, z, F)
    plain = np.empty_like(J)
    for j in range(x.shape[1]):
        h = 1e-7 * (1.0 + np.abs(x[:, j]))
        xp = x.copy()
        xp[:, j] += h
        plain[:, :, j] = (sol.residual(xp, z) - F) / h[:, None]
    assert np.max(np.abs(J - plain)) < 1e-5 * np.max(np.abs(plain))


def test_chord_through_the_commuting_model_is_the_full_path() -> None:
    """The chord (coarse path -> commuting model -> full model, the commuting model's path
    where the chord fails) against Newton along the whole path on the full model."""
    from asymptotics.spectra.law import Solver

    kw = dict(loadings=[[0.8, 0.1], [-0.6, 0.3]], bulk=[1.1, 0.9], fractions=[0.6, 0.4],
              overlaps=[[0.7], [0.2]], target="tanh(z1)")
    prob = build_spiked_problem(sigma="tanh", lam=0.01, beta=0.5, delta=0.0, **kw)
    sol = outside_solver(prob, 2.0, GroupBulk(_pair(np.random.default_rng(3), 3, 30, 0.1)))
    assert sol.medium is not None
    x = np.linspace(0.05, 1.2, 40) * 4.0 * sol.scale
    z = np.concatenate([x + 1e-10j * sol.scale, [1.0 + 0.5j, 3.0 + 0.01j]])
    fast = sol.m(z)
    xs, ok = Solver.solve(sol, z)
    full = np.where(ok, sol.stieltjes(xs), np.nan)
    assert np.all(np.isfinite(full))
    assert np.max(np.abs(fast - full)) < 1e-10 * np.max(np.abs(full))


@pytest.mark.parametrize("K", [1, 2, 3, 4])
def test_vpart_sums_are_the_numpy_parts(K: int) -> None:
    """The compiled node sums (for K = 2, 3 over the unordered pairs: ``mub1 mub1^T`` is
    symmetric) against :func:`asymptotics.spectra.features.vpart_parts` (numpy products), at
    rows whose ``V1`` is not symmetric."""
    from asymptotics.spectra.features import vpart_parts
    from asymptotics.spectra.traces.outside_kernels import vpart_sums

    rng = np.random.default_rng(K)
    w = rng.random(50)
    w /= w.sum()
    mb1, ms2 = rng.standard_normal((50, K)), rng.random((50, K))
    pi = rng.random(K)
    pi /= pi.sum()
    x = 0.3 * (rng.standard_normal((20, K + K * K)) + 1j * rng.standard_normal((20, K + K * K)))
    outer = np.ascontiguousarray((mb1[:, :, None] * mb1[:, None, :]).reshape(-1, K * K))
    M, v2 = vpart_sums(x, pi, outer, np.ascontiguousarray(w[:, None] * outer), ms2,
                       np.ascontiguousarray(w[:, None] * ms2), 1.3)
    _, _, _, Mr, v2r, _ = vpart_parts(w, mb1, ms2, pi, 0.7, 1.3)(x)
    assert np.max(np.abs(M - Mr)) < 1e-13 * np.max(np.abs(Mr))
    assert np.max(np.abs(v2 - v2r)) < 1e-13 * np.max(np.abs(v2r))


def test_block_sums_by_the_identity_are_the_rows(monkeypatch) -> None:
    """K = 3 on the block path (BLOCK_MIN points or more, Vhat1 symmetric): the second-order
    sums with ``D_e s_g Q[e, g] = (s_g/s_e) (delta_eg - N[e, g])`` (``Q_IDENTITY``) against
    the rows ``Vhat1[e] . N[:, g]`` and the numpy sums, on the second-order part itself."""
    import asymptotics.spectra.netbulk as nb

    rng = np.random.default_rng(17)
    tr = OutsideTraces(GroupBulk(_triple(rng, 3, 20, 0.1)))
    assert all(b[3] for b in tr._blocks(True))  # every s > 0: the identity applies
    N = max(nb.BLOCK_MIN, 12)
    vh = rng.standard_normal((N, 3, 3)) + 1j * rng.standard_normal((N, 3, 3))
    vh = 0.3 * (vh + np.swapaxes(vh, 1, 2))
    D = 0.5 + rng.random((N, 3)) + 1j * rng.random((N, 3))
    T0 = tr.commuting().traces_kernels(vh, D)
    out = {}
    for flag in (False, True):
        monkeypatch.setattr(nb, "Q_IDENTITY", flag)
        out[flag] = tr.traces_kernels(vh, D) - T0
    Tn = tr.traces_numpy(vh, D) - T0
    size = np.max(np.abs(Tn))
    assert size > 1e-6 * np.max(np.abs(T0))  # (a second-order part to compare)
    assert np.max(np.abs(out[True] - out[False])) < 1e-12 * size
    assert np.max(np.abs(out[True] - Tn)) < 1e-11 * size


def test_block_kernels_are_queued_after_another_law_queued_the_traces(monkeypatch) -> None:
    """On a cold cache (default mode) a process whose first network features law had no K = 3
    block path queued the traces kernels only; a later K = 3 law must still queue the block
    kernels (else it runs the numpy sums for the rest of the process)."""
    import asymptotics.spectra.netbulk as nb

    rng = np.random.default_rng(17)
    tr = OutsideTraces(GroupBulk(_triple(rng, 3, 20, 0.1)))
    calls = []
    monkeypatch.setattr(nb, "compiled", lambda disp, args: False)  # (nothing compiled yet)
    monkeypatch.setattr(nb, "first3_block", lambda *a: calls.append("first3"))
    monkeypatch.setattr(nb, "second3_block", lambda *a: calls.append("second3"))
    monkeypatch.setattr(nb, "_QUEUED", ["traces"])  # (a K = 2 law came first)
    vh = 0.3 * np.eye(3)[None].astype(np.complex128)
    D = np.ones((1, 3), dtype=np.complex128)
    T = tr.traces(vh, D)
    assert calls == ["first3", "second3"]
    assert np.allclose(T, tr.traces_numpy(vh, D))
    tr.traces(vh, D)
    assert calls == ["first3", "second3"]  # (once a process)
