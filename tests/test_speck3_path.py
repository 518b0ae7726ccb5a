"""The path of the network features' cheap model (docs/THEORY.md §16.8;
``asymptotics/spectra/traces/net_chord.py``): subsets of the points at the stages of large Im z,
the inverse Jacobian carried from stage to stage, and the chord started from the path's last
inverse Jacobian, each against the plain path it replaces (the same fixed point: the start and
the iteration change, never the root) and against Newton along the whole path on the full
model."""

from __future__ import annotations

import numpy as np
import pytest

from asymptotics.network.bulk import GroupBulk
from asymptotics.spectra import netbulk
from asymptotics.spectra.law import Solver
from asymptotics.spectra.netbulk import outside_solver
from asymptotics.spectra.traces import net_chord
from asymptotics.spectra.traces.net_chord import PathSolver, _interp, _subset
from tests.test_spectra_netjac import _covs, _problem


def test_subset_gaps_and_interpolation() -> None:
    rng = np.random.default_rng(5)
    xs = np.sort(rng.random(200) * 10.0)
    for h in (0.05, 0.5, 3.0, 50.0):
        k = _subset(xs, h)
        assert k[0] == 0 and k[-1] == xs.size - 1 and np.all(np.diff(k) > 0)
        gaps = xs[k[1:]] - xs[k[:-1]]
        # every gap within h, or a single step of xs wider than h
        assert np.all((gaps <= h) | (np.diff(k) == 1))
    # linear rows are interpolated exactly, also past the ends (extrapolated linearly)
    xk = np.array([0.0, 1.0, 2.5, 4.0])
    X = np.stack([2.0 + 3.0j * xk, -xk + 1j], axis=1)
    xq = np.array([-0.5, 0.3, 2.0, 3.99, 4.5])
    Y = _interp(xq, xk, X)
    assert np.max(np.abs(Y - np.stack([2.0 + 3.0j * xq, -xq + 1j], axis=1))) < 1e-14


def _grid(sol, n: int = 60) -> np.ndarray:
    x = np.linspace(0.0, 1.3, n) * 4.0 * sol.scale
    return x + 1e-10j * sol.scale


@pytest.mark.parametrize("K", [2, 3])
def test_path_with_subsets_is_the_plain_path(K: int, monkeypatch) -> None:
    """m on a density grid: the solver with subsets, carried inverses and the chord from the
    path's inverse (the default) against the plain path of the cheap model
    (``PATH_SUBSETS = False``) and against Newton along the whole path on the full model."""
    bulk = GroupBulk(_covs(np.random.default_rng(3), 3, 30, K, 0.1))
    fast = outside_solver(_problem(K), 2.0, bulk)
    assert isinstance(fast.approx, PathSolver)
    monkeypatch.setattr(netbulk, "PATH_SUBSETS", False)
    ref = outside_solver(_problem(K), 2.0, bulk)
    assert not isinstance(ref.approx, PathSolver)
    z = _grid(fast)
    m_fast, m_ref = fast.m(z), ref.m(z)
    assert fast.approx.last_inverse is not None  # the chord started from the path's inverses
    xs, ok = Solver.solve(ref, z)
    full = np.where(ok, ref.stieltjes(xs), np.nan)
    assert np.all(np.isfinite(full)) and np.all(np.isfinite(m_fast))
    top = np.max(np.abs(full))
    assert np.max(np.abs(m_fast - m_ref)) < 1e-11 * top
    assert np.max(np.abs(m_fast - full)) < 1e-10 * top
    # the cheap model alone: the same roots as its plain path (to its tolerance)
    xa, oka = fast.approx.solve(z)
    xb, okb = Solver.solve(fast.approx, z)
    assert np.all(oka) and np.all(okb)
    assert np.max(np.abs(xa - xb)) < 1e-7 * np.max(np.abs(xb))


@pytest.mark.parametrize("carry", [True, False])
def test_carried_inverse_is_checked(carry: bool, monkeypatch) -> None:
    """A stage from wrong inverse Jacobians (ten times the right ones) fails the checks at the
    points where it moves far and redoes them: the stage's roots are the plain stage's."""
    monkeypatch.setattr(net_chord, "CARRY", carry)
    bulk = GroupBulk(_covs(np.random.default_rng(4), 3, 30, 3, 0.1))
    sol = outside_solver(_problem(3), 2.0, bulk)
    ap = sol.approx
    z = _grid(sol, 40)
    x_prev, ok = Solver.solve(ap, z * 0 + z.real + 1e-3j * sol.scale)
    assert np.all(ok)
    H = np.linalg.inv(ap.jacobian(x_prev, z))
    for scale in (1.0, 10.0):
        x, ok, _ = ap._carried(x_prev, z, H * scale)
        xr, okr = ap._newton(x_prev, z)
        assert np.all(ok) and np.all(okr)
        assert np.max(np.abs(x - xr)) < 1e-8 * np.max(np.abs(xr))
    # whole solves with and without the carried inverses: the same roots
    xa, oka = ap.solve(z)
    xb, okb = Solver.solve(ap, z)
    assert np.all(oka) and np.max(np.abs(xa - xb)) < 1e-7 * np.max(np.abs(xb))


@pytest.mark.parametrize("K", [2, 3])
def test_node_sums_by_feature_are_the_row_sums(K: int) -> None:
    """The node sums laid out by feature (real arithmetic) against :func:`vpart_sums` and the
    numpy parts of :func:`asymptotics.spectra.features.vpart_parts`."""
    from asymptotics.spectra.features import vpart_parts
    from asymptotics.spectra.traces.net_jacobian import node_tables
    from asymptotics.spectra.traces.outside_kernels import vpart_sums, vpart_sums_t

    rng = np.random.default_rng(11 + K)
    nodes, N = 57, 7
    w = rng.random(nodes) / nodes
    mb1 = rng.standard_normal((nodes, K))
    ms2 = rng.random((nodes, K))
    pi = rng.random(K)
    pi /= pi.sum()
    A = 1.7
    outer = np.ascontiguousarray((mb1[:, :, None] * mb1[:, None, :]).reshape(-1, K * K))
    sums = (pi, outer, np.ascontiguousarray(w[:, None] * outer), ms2,
            np.ascontiguousarray(w[:, None] * ms2), A)
    x = 0.3 * (rng.standard_normal((N, K + K * K)) + 1j * rng.random((N, K + K * K)))
    x[:, K:] = (x[:, K:].reshape(N, K, K) + np.swapaxes(x[:, K:].reshape(N, K, K), 1, 2)
                ).reshape(N, K * K) / 2
    x[:, 0] += 0.01j  # not symmetric in V1 either way: the kernel reads V1_ab + V1_ba
    t = node_tables(*sums)
    M, v2 = vpart_sums_t(x, pi, np.ascontiguousarray(t[3].T), np.ascontiguousarray(t[4].T), A)
    Mr, v2r = vpart_sums(x, *sums)
    _, _, _, Mp, v2p, _ = vpart_parts(w, mb1, ms2, pi, 0.5, A)(x)
    top = max(np.max(np.abs(Mr)), np.max(np.abs(v2r)))
    for a, b in ((M, Mr), (v2, v2r), (M, Mp), (v2, v2p)):
        assert np.max(np.abs(a - b)) < 1e-13 * top
