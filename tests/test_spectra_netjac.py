"""The speed-ups of the network's features beyond one step (docs/THEORY.md §16.8;
``asymptotics/spectra/traces/net_jacobian.py``, the block kernels of
``asymptotics/spectra/traces/outside_scalar.py``): each against the path it replaces.

The analytic Jacobian of the commuting models against difference quotients of the residual (an
error in a formula is of order one; the quotients' own error ~1e-7); the scalar product kernels
against the general loop; and the solver with the analytic Jacobians against the same solver
with difference quotients and against Newton along the whole path on the full model (the
converged fixed point: the Jacobian changes the iteration, never the root)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from asymptotics.network.bulk import GroupBulk
from asymptotics.spectra import netbulk
from asymptotics.spectra.netbulk import OutsideTraces, outside_solver, sym_jacobian
from asymptotics.spectra.traces.net_jacobian import products2, products3, traces0_products
from asymptotics.spiked.problem import build_spiked_problem


def _covs(rng, B: int, n: int, K: int, eps: float) -> np.ndarray:
    """B blocks of K covariances: functions of the first plus ``eps`` of a symmetric
    perturbation each (non-commuting for eps > 0), normalised to trace n."""
    out = np.empty((B, K, n, n))
    for b in range(B):
        G = rng.standard_normal((n, 3 * n))
        S1 = G @ G.T / (3 * n)
        ev, U = np.linalg.eigh(S1)
        out[b, 0] = S1 * (n / np.trace(S1))
        for g in range(1, K):
            S = (U * (0.5 + ev ** (1 + g))) @ U.T
            H = rng.standard_normal((n, n))
            S = S + eps * (H + H.T) / math.sqrt(2 * n)
            out[b, g] = S * (n / np.trace(S))
    return out


def _problem(K: int):
    kw = dict(loadings=[[0.8, 0.1], [-0.6, 0.3], [0.4, -0.5]][:K], bulk=[1.1, 0.9, 1.3][:K],
              fractions=[0.25, 0.5, 0.25] if K == 3 else [0.6, 0.4],
              overlaps=[[0.7], [0.2]], target="tanh(z1)")
    return build_spiked_problem(sigma="tanh", lam=0.01, beta=0.5, delta=0.0, **kw)


@pytest.mark.parametrize("K", [2, 3])
def test_analytic_jacobian_is_the_difference_quotient(K: int) -> None:
    """The coarse and the commuting models' analytic Jacobians against
    :func:`sym_jacobian` at points off the solution (every term of the chain rule acts)."""
    rng = np.random.default_rng(7)
    sol = outside_solver(_problem(K), 2.0, GroupBulk(_covs(rng, 3, 30, K, 0.1)))
    z = np.array([0.4 + 0.3j, 1.0 + 1e-3j, 2.0 + 0.5j, 3.5 + 1e-8j]) * sol.scale
    for model in (sol.approx, sol.medium):
        assert model.jac is not None
        x, ok = model.solve(z)
        assert np.all(ok)
        x = x * (1.0 + 0.05 * rng.standard_normal(x.shape))
        Ja = model.jacobian(x, z)
        Jf = sym_jacobian(model.residual, x, z, model.residual(x, z))
        err = np.max(np.abs(Ja - Jf), axis=(1, 2)) / np.max(np.abs(Jf), axis=(1, 2))
        assert np.max(err) < 1e-5


@pytest.mark.parametrize("K", [2, 3])
def test_scalar_products_are_the_general_loop(K: int) -> None:
    rng = np.random.default_rng(K)
    N, n = 6, 40
    vh = 0.4 * (rng.standard_normal((N, K, K)) + 1j * rng.standard_normal((N, K, K)))
    vh = vh + np.swapaxes(vh, 1, 2)
    D = 0.5 + rng.random((N, K)) + 1j * rng.random((N, K))
    sf = np.ascontiguousarray(0.2 + rng.random((K, n)))
    wt = 1.0 + rng.random(n)
    ia, ib = np.triu_indices(K)
    Ss_r, Y_r = traces0_products(vh, D, sf, wt, ia.astype(np.int64), ib.astype(np.int64))
    P = ia.size
    Ss, Y = np.empty((N, P), dtype=np.complex128), np.zeros((N, P, P), dtype=np.complex128)
    (products2 if K == 2 else products3)(vh, D, sf, wt, Ss, Y)
    assert np.max(np.abs(Ss - Ss_r)) < 1e-12 * np.max(np.abs(Ss_r))
    assert np.max(np.abs(Y - Y_r)) < 1e-12 * np.max(np.abs(Y_r))


@pytest.mark.parametrize("K", [2, 3])
def test_fast_path_is_the_reference_path(K: int, monkeypatch) -> None:
    """m(z) on a density grid and off the axis: the solver with the analytic Jacobians against
    the same with difference quotients (``ANALYTIC = False``), both against Newton on the full
    model along the whole path (the fixed point, solved to the same tolerance)."""
    from asymptotics.spectra.law import Solver

    bulk = GroupBulk(_covs(np.random.default_rng(3), 3, 30, K, 0.1))
    fast = outside_solver(_problem(K), 2.0, bulk)
    monkeypatch.setattr(netbulk, "ANALYTIC", False)
    ref = outside_solver(_problem(K), 2.0, bulk)
    assert fast.approx.jac is not None and ref.approx.jac is None
    x = np.linspace(0.05, 1.2, 40) * 4.0 * fast.scale
    z = np.concatenate([x + 1e-10j * fast.scale, [1.0 + 0.5j, 3.0 + 0.01j]])
    m_fast, m_ref = fast.m(z), ref.m(z)
    xs, ok = Solver.solve(ref, z)
    full = np.where(ok, ref.stieltjes(xs), np.nan)
    assert np.all(np.isfinite(full))
    top = np.max(np.abs(full))
    assert np.max(np.abs(m_fast - m_ref)) < 1e-11 * top
    assert np.max(np.abs(m_fast - full)) < 1e-10 * top


def test_block_traces_are_the_numpy_sums() -> None:
    """K = 3 with both non-commuting groups (the block kernels) and a single one (the general
    kernels a block at a time) against the vectorised numpy sums."""
    rng = np.random.default_rng(13)
    sig = _covs(rng, 4, 16, 3, 0.1)
    N = 9
    vh = 0.3 * (rng.standard_normal((N, 3, 3)) + 1j * rng.standard_normal((N, 3, 3)))
    vh = vh + np.swapaxes(vh, 1, 2)
    D = 0.5 + rng.random((N, 3)) + 1j * rng.random((N, 3))
    for s in (sig, np.concatenate([sig[:, :2], sig[:, :1] * 1.3], axis=1)):
        tr = OutsideTraces(GroupBulk(s))
        T, Tn = tr.traces_kernels(vh, D), tr.traces_numpy(vh, D)
        assert np.max(np.abs(T - Tn)) < 1e-12 * np.max(np.abs(Tn))
