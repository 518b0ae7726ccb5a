"""The one Anderson iteration (asymptotics.equations.mixing) against the Python reference solver
(asymptotics.equations.solver.solve, an independent implementation of the same algorithm), and
the compiled solvers' use of it (no Anderson loop of their own)."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

from asymptotics.equations import mixing, solver_kernels
from asymptotics.equations.solver import SolverConfig, Status, solve
from asymptotics.spiked import anderson as spiked_anderson


def _kernel_solve(fmap, x0, cfg: SolverConfig, nonneg=(), blowup=1e12):
    """Drive mixing.anderson_next from Python with ``fmap`` (reverse communication)."""
    work, meta = mixing.anderson_start(len(x0), cfg.anderson)
    nn = np.array(nonneg, dtype=np.int64)
    x = np.array(x0, dtype=np.float64)
    while True:
        fx = np.asarray(fmap(x), dtype=np.float64)
        x, code = mixing.anderson_next(x, fx, work, meta, nn, cfg.rtol, cfg.scale_floor,
                                       cfg.max_iter, cfg.damping, cfg.anderson, blowup)
        if code != mixing.CONTINUE:
            return x, Status(int(code)), int(meta[mixing.IT]), float(meta[mixing.RES])


def _coupled(x):  # a contraction whose plain iteration is slow (Anderson helps)
    return np.array([0.9 * np.cos(x[1]) + 0.05 * x[0], 0.95 * np.sin(x[0]) + 0.3 * x[2],
                     0.5 * np.tanh(x[0] + x[1]) + 0.45 * x[2] + 0.1])


def _twisted(a, th):  # a rotated tanh map: accelerated steps get rejected (checked below)
    c, s = np.cos(th), np.sin(th)

    def f(x):
        return a * np.array([np.tanh(c * x[0] - s * x[1]), np.tanh(s * x[0] + c * x[1])]) + \
            np.array([0.3, -0.2])
    return f


def _blows_up(x):  # no fixed point: F(x) > x, and the iterates overflow
    return np.exp(5.0 * x)


CASES = [
    (_coupled, [0.0, 0.0, 0.0], SolverConfig(), ()),
    (_coupled, [0.3, -0.2, 1.0], SolverConfig(anderson=0), ()),
    (_coupled, [0.3, -0.2, 1.0], SolverConfig(anderson=2, damping=1.0), ()),
    (_coupled, [0.0, 0.0, 0.0], SolverConfig(max_iter=4), ()),
    (_twisted(2.0, 1.0), [0.5, 0.5], SolverConfig(max_iter=80), (0, 1)),  # 15 rejections
    (_twisted(3.0, 2.0), [0.5, 0.5], SolverConfig(max_iter=80), ()),  # 1 rejection
    (_twisted(2.5, 2.5), [0.5, 0.5], SolverConfig(max_iter=80), (0, 1)),  # stalls at V = 0
    (_blows_up, [1.0, 2.0], SolverConfig(), ()),
]


@pytest.mark.parametrize("fmap,x0,cfg,nonneg", CASES)
def test_kernel_is_the_reference_algorithm(fmap, x0, cfg, nonneg):
    """Same verdict, iteration count and answer (to round-off) as solver.solve, on a converging
    map (with and without mixing), an exhausted iteration budget, a map where accelerated steps
    leave the domain or are rejected, and a divergent map."""
    ref = solve(fmap, np.array(x0, dtype=np.float64), cfg, nonneg=nonneg)
    x, status, n_iter, res = _kernel_solve(fmap, x0, cfg, nonneg)
    assert status == ref.status
    assert n_iter == ref.n_iter
    if status == Status.NON_FINITE:
        assert res == np.inf == ref.residual
    else:
        np.testing.assert_allclose(x, ref.x, rtol=1e-12, atol=1e-14)
        assert res == pytest.approx(ref.residual, rel=1e-9, abs=1e-15)
    assert np.all(x[list(nonneg)] >= 0.0)


def test_statuses_cover_the_cases():
    """The cases above exercise convergence, the iteration limit and divergence."""
    seen = {solve(f, np.array(x0, dtype=np.float64), cfg, nonneg=nn).status
            for f, x0, cfg, nn in CASES}
    assert {Status.CONVERGED, Status.MAX_ITER, Status.NON_FINITE} <= seen


@pytest.mark.parametrize("module", [solver_kernels, spiked_anderson])
def test_compiled_solvers_share_the_one_kernel(module):
    """The one-spike and the K-group solvers iterate through mixing.anderson_next and keep no
    mixing of their own."""
    src = inspect.getsource(module)
    assert "anderson_next(" in src
    assert "lstsq" not in src
