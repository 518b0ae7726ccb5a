"""The chord polish of the network features' bulk (docs/THEORY.md §16.8;
``asymptotics/spectra/traces/net_chord.py``): a wandering chord gives up (``STALL``), the full
model's whole path started from the commuting model's Jacobian (``STAGE_MEDIUM``) and the chord
on a subset first (``CHORD_SUBSET``) against the plain solves, with fewer evaluations."""

from __future__ import annotations

import numpy as np
import pytest

from asymptotics.network.bulk import GroupBulk
from asymptotics.spectra.law import Solver
from asymptotics.spectra.netbulk import outside_solver
from asymptotics.spectra.traces import net_chord
from asymptotics.spectra.traces.net_chord import ChordPolish, SymSolver
from asymptotics.spiked.problem import build_spiked_problem
from tests.test_spectra_netbulk import _pair


def _counted(monkeypatch, sol) -> list:
    """Count the points of every evaluation of ``sol``'s full model (its ``residual``; put
    back by ``monkeypatch.undo``)."""
    seen: list = []
    real = sol.residual

    def residual(x, z):
        seen.append(x.shape[0])
        return real(x, z)

    monkeypatch.setattr(sol, "residual", residual)
    return seen


@pytest.fixture(scope="module")
def law():
    kw = dict(loadings=[[0.8, 0.1], [-0.6, 0.3]], bulk=[1.1, 0.9], fractions=[0.6, 0.4],
              overlaps=[[0.7], [0.2]], target="tanh(z1)")
    prob = build_spiked_problem(sigma="tanh", lam=0.01, beta=0.5, delta=0.0, **kw)
    sol = outside_solver(prob, 2.0, GroupBulk(_pair(np.random.default_rng(3), 3, 30, 0.1)))
    assert isinstance(sol, ChordPolish) and sol.medium is not None
    return sol


@pytest.mark.parametrize("stall", [True, False])
def test_wandering_chord_gives_up(monkeypatch, stall: bool) -> None:
    """``x^2 + 1 = 0`` from a real start with a real Jacobian: the chord stays real and never
    converges; with ``STALL`` it gives up within a few evaluations, without it runs them all.
    Not reported converged either way."""
    monkeypatch.setattr(net_chord, "STALL", stall)
    model = SymSolver(lambda x, z: x * x + 1.0, None, lambda x: x[:, 0], 1.0)
    model.jac = lambda x, z: np.full((x.shape[0], 1, 1), -1.0 + 0j)
    sol = ChordPolish(model, model)
    seen = _counted(monkeypatch, sol)
    x, ok = sol._chord(np.array([[0.3 + 0j]]), np.array([1.0 + 0j]), sol.residual)
    assert not ok[0]
    assert len(seen) <= 8 if stall else len(seen) == net_chord.NEWTON_MAX


def test_whole_path_from_the_commuting_jacobian(monkeypatch, law) -> None:
    """The full model's whole path with each stage's Broyden steps from the commuting model's
    Jacobian: the plain path's solutions (difference quotients) to 1e-12, in fewer
    evaluations."""
    z = np.linspace(0.1, 1.1, 6) * 4.0 * law.scale + 1e-10j * law.scale
    seen = _counted(monkeypatch, law)
    plain, ok = Solver.solve(law, z)
    n_plain = sum(seen)
    seen.clear()
    law._staged = True
    try:
        staged, ok2 = Solver.solve(law, z)
    finally:
        law._staged = False
        monkeypatch.undo()
    assert np.all(ok) and np.all(ok2)
    m, m2 = law.stieltjes(plain), law.stieltjes(staged)
    assert np.max(np.abs(m - m2)) < 1e-12 * np.max(np.abs(m))
    assert sum(seen) < 0.6 * n_plain


def test_chord_on_a_subset_first(monkeypatch, law) -> None:
    """The chord on every eighth point first, the others from the interpolated corrections:
    the plain chord's densities to 1e-11 of their maximum (both to the
    solver's tolerance), in fewer evaluations of the full model."""
    z = np.linspace(0.02, 1.2, 60) * 4.0 * law.scale + 1e-10j * law.scale
    out = {}
    for subset in (False, True):
        seen = _counted(monkeypatch, law)
        monkeypatch.setattr(net_chord, "CHORD_SUBSET", subset)
        out[subset] = law.m(z), sum(seen)
        monkeypatch.undo()
    (m0, n0), (m1, n1) = out[False], out[True]
    assert np.all(np.isfinite(m0)) and np.all(np.isfinite(m1))
    assert np.max(np.abs(m1.imag - m0.imag)) < 1e-11 * np.max(np.abs(m0.imag))
    assert n1 < n0


def test_chord_skips_the_points_left_anyway(monkeypatch, law) -> None:
    """``skip`` (the points whose cheap path failed, ``CHORD_OK0``): outside the subset they
    take no chord step and are not converged; every other point's solution is the one without
    ``skip`` (to rounding), in fewer evaluations of the full model."""
    z = np.linspace(0.02, 1.2, 200) * 4.0 * law.scale + 1e-10j * law.scale
    x0, ok0 = law.approx.solve(z)
    x, okm = law._chord(x0, z, law.medium.residual, tol=net_chord.MEDIUM_TOL)
    assert np.all(ok0) and np.all(okm)
    skip = np.zeros(z.size, dtype=bool)
    skip[[41, 42, 43, 44, 45, 46, 47, 121]] = True  # (none of them every eighth point)
    out = {}
    for mask in (None, skip):
        seen = _counted(monkeypatch, law)
        out[mask is None] = law._chord_full(x, z, mask), sum(seen)
        monkeypatch.undo()
    ((xa, oka), na), ((xs, oks), ns) = out[True], out[False]
    assert np.all(oka) and not np.any(oks[skip]) and np.all(oks[~skip])
    assert np.max(np.abs(xs[~skip] - xa[~skip])) <= 1e-14 * np.max(np.abs(xa))
    assert ns < na, (ns, na)
