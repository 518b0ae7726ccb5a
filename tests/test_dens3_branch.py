"""The network features' law beyond one step, made cheaper (docs/THEORY.md §16.8, §16.10;
``asymptotics/spectra/netbulk.py``, ``asymptotics/spectra/traces/net_branch.py``).

Independent checks: the real branch's complex-step Jacobian against a Richardson-extrapolated
central difference of the real residual (a different formula, error ~1e-12) and the former
forward differences (error ~1e-8); the law's edges against the forward-difference branch; the
traces' rotation into Sig_1's eigenbasis against the three-operand einsum it replaces; the BLAS
threads left as they were; and (slow) a three-step three-value density on the chord's fast
path (no point falls back to a model's whole path)."""

from __future__ import annotations

import numpy as np
import pytest

from asymptotics.network.bulk import GroupBulk
from asymptotics.spectra import branch, netbulk
from asymptotics.spectra.features import features_bulk
from asymptotics.spectra.netbulk import OutsideTraces, outside_solver
from asymptotics.spectra.traces import net_branch
from asymptotics.spiked.problem import build_spiked_problem
from tests.test_spectra_netjac import _covs


def _solver(K: int):
    kw = dict(loadings=[[0.8, 0.1], [-0.6, 0.3], [0.4, -0.5]][:K], bulk=[1.1, 0.9, 1.0][:K],
              fractions=[[0.6, 0.4], [0.5, 0.3, 0.2]][K - 2], overlaps=[[0.7], [0.2]],
              target="tanh(z1)")
    prob = build_spiked_problem(sigma="tanh", lam=0.01, beta=0.5, delta=0.0, **kw)
    sig = _covs(np.random.default_rng(7 + K), 4, 24, K, 0.1)
    return prob, outside_solver(prob, 2.0, GroupBulk(sig))


def _real_point(sol, lam: float) -> np.ndarray:
    X, ok = sol.solve(np.array([lam + 0j]))
    assert ok[0]
    p = branch.polish(sol, X[0], lam)
    assert p is not None
    return p.u


def _G(sol, u: np.ndarray) -> np.ndarray:
    """``(Re F(x, lam), stieltjes(x))`` at real ``u`` (the branch's function)."""
    q = u.size - 1
    x = u[None, :q].astype(np.complex128)
    F = sol.residual(x, np.array([u[q] + 0j]))
    return np.concatenate([F[0].real, sol.stieltjes(x).real])


@pytest.mark.parametrize("K", [2, 3])
def test_exact_branch_jacobian(K: int) -> None:
    prob, sol = _solver(K)
    assert sol.traces.groups  # (non-commuting: the traces' second order and its products)
    u = _real_point(sol, 20.0 * sol.scale)
    G, J = sol.real_jacobian(u)
    assert np.max(np.abs(G - _G(sol, u))) < 1e-13
    # Richardson on central differences: error ~h^4 + rounding/h ~ 1e-12
    R = np.empty_like(J)
    for j in range(u.size):
        h = 1e-3 * (1.0 + abs(u[j]))

        def cd(s, j=j):
            e = np.zeros(u.size)
            e[j] = s
            return (_G(sol, u + e) - _G(sol, u - e)) / (2.0 * s)
        R[:, j] = (4.0 * cd(0.5 * h) - cd(h)) / 3.0
    scale = np.max(np.abs(R))
    err = np.max(np.abs(J - R)) / scale
    assert err < 1e-9
    # the former forward differences are further off
    Jfd = branch._eval(_plain(sol), u)[1]
    assert np.max(np.abs(Jfd - R)) / scale > 10.0 * err
    # a batch: each row's numbers as alone
    U = np.array([u, _real_point(sol, 30.0 * sol.scale), u])
    Gs, Js = sol.real_jacobians(U)
    for i in range(3):
        g1, j1 = sol.real_jacobian(U[i])
        assert np.array_equal(Gs[i], g1) and np.array_equal(Js[i], j1)


class _plain:
    """The solver's residual and stieltjes without its exact Jacobian (forward differences)."""

    def __init__(self, sol) -> None:
        self.residual, self.stieltjes = sol.residual, sol.stieltjes


@pytest.mark.parametrize("K", [2, 3])
def test_edges_match_the_forward_difference_branch(K: int) -> None:
    prob, sol = _solver(K)
    _, sup, _ = features_bulk(prob, 2.0, sol)
    net_branch.EXACT_BRANCH = False
    try:
        _, sol_fd = _solver(K)
        assert not hasattr(sol_fd, "real_jacobian")
        _, sup_fd, _ = features_bulk(prob, 2.0, sol_fd)
    finally:
        net_branch.EXACT_BRANCH = True
    assert len(sup) == len(sup_fd)
    a, b = np.array(sup), np.array(sup_fd)
    assert np.max(np.abs(a - b) / np.maximum(np.abs(b), 1e-300)) < 1e-9


def test_rotation_is_the_einsum() -> None:
    """``s`` and the pairs ``O_b o O_e`` from two matmuls against the three-operand einsum."""
    sig = _covs(np.random.default_rng(2), 2, 16, 3, 0.1)
    tr = OutsideTraces(GroupBulk(sig))
    _, U = np.linalg.eigh(sig[:, 0])
    X = np.einsum("bij,bgjk,bkl->bgil", np.swapaxes(U, 1, 2), sig, U)
    X = 0.5 * (X + np.swapaxes(X, 2, 3))
    s = np.diagonal(X, axis1=2, axis2=3).transpose(0, 2, 1)
    assert np.max(np.abs(tr.s - s)) < 1e-13 * np.max(np.abs(s))
    O = X.copy()
    O[:, :, np.arange(16), np.arange(16)] = 0.0
    assert tr.groups == [1, 2]
    for (b, e), P in tr.pairs.items():
        assert np.max(np.abs(P - O[:, b] * O[:, e])) < 1e-13 * np.max(np.abs(P))


def test_blas_threads_left_as_they_were(blas_two_threads) -> None:
    from threadpoolctl import threadpool_info

    def blas() -> list:
        return [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]

    before = blas()
    sig = _covs(np.random.default_rng(4), 3, 20, 3, 0.1)
    tr = OutsideTraces(GroupBulk(sig))
    rng = np.random.default_rng(5)
    N = 12  # (at least BLOCK_MIN: the block kernels and one product a block)
    vh = 0.3 * (rng.standard_normal((N, 3, 3)) + 1j * rng.standard_normal((N, 3, 3)))
    vh = vh + np.swapaxes(vh, 1, 2)
    D = 0.5 + rng.random((N, 3)) + 1j * rng.random((N, 3))
    T1 = tr.traces_kernels(vh, D)
    assert blas() == before
    old = netbulk.BLAS_THREADS
    netbulk.BLAS_THREADS = None
    try:
        T = tr.traces_kernels(vh, D)
    finally:
        netbulk.BLAS_THREADS = old
    assert np.max(np.abs(T1 - T)) <= 1e-14 * np.max(np.abs(T))


@pytest.mark.slow
def test_three_step_three_value_density_on_the_fast_path(monkeypatch) -> None:
    """erf, three-value readout, three steps (the drawn benchmark's setting #12): the law's
    solver is the chord on the K = 3 block kernels, and a 300-point density has no point that
    falls back to the commuting model's or the full model's whole path."""
    import asymptotics as A
    from asymptotics.spectra import law as L
    from asymptotics.spectra.traces.net_chord import ChordPolish

    law = A.spectrum("features", 2.3700195795182717, sigma="erf", target="tanh(z1)",
                     alpha0=1.5731925327991416, eta=1.0, beta=1.2962325460544644,
                     readout={1.0: 0.25, -1.0: 0.5, 2.0: 0.25}, steps=3, d=1000.0)
    sol = law._solver
    assert law.model == "network" and isinstance(sol, ChordPolish)
    assert sol.traces.K == 3 and sol.traces.groups == [1, 2]
    assert sol.real_jacobian is not None
    calls = []
    whole = L.Solver.solve  # a model's whole path (the medium's, the full model's, a subset's)

    def counted(self, z):
        calls.append(np.size(z))
        return whole(self, z)
    monkeypatch.setattr(L.Solver, "solve", counted)
    x = np.linspace(0.0, 1.05 * law.edge, 300)
    d = law.density(x)
    assert not calls
    assert np.all(np.isfinite(d)) and np.max(d) > 0.0
