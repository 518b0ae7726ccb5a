"""The chord to the full model along a line of Re z with the two models' Jacobian difference
(docs/THEORY.md §16.8; ``asymptotics/spectra/traces/net_line.py``): the interpolation of rows,
and against the chord with the commuting model's Jacobian alone (``JAC_DIFF = False``) the same
densities to the solver's tolerance in fewer evaluations of the full model, its Jacobian better
than the commuting model's at the points it is interpolated to."""

from __future__ import annotations

import numpy as np

from asymptotics.spectra.traces import net_line
from asymptotics.spectra.traces.net_chord import sym_jacobian
from asymptotics.spectra.traces.net_line import interp_rows
from tests.test_spectra_netchord import _counted, law  # noqa: F401 (the fixture)


def test_interp_rows_is_linear_and_held_past_the_ends() -> None:
    """Rows of any trailing shape: exact on a linear function inside, constant outside."""
    xk = np.array([0.0, 1.0, 3.0])
    Yk = np.stack([np.full((2, 2), 2.0 * x + 1.0) for x in xk]).astype(complex)
    out = interp_rows(np.array([-1.0, 0.5, 2.0, 3.0, 4.0]), xk, Yk)
    assert out.shape == (5, 2, 2)
    assert np.allclose(out[:, 0, 0], [1.0, 2.0, 5.0, 7.0, 7.0], rtol=0, atol=1e-15)


def test_line_chord_same_densities_fewer_evaluations(monkeypatch, law) -> None:  # noqa: F811
    """On a line of JAC_MIN points or more: densities within 1e-11 of their maximum of the
    former chord's (both to the solver's tolerance) with fewer evaluations of the full
    model."""
    z = np.linspace(0.02, 1.2, 200) * 4.0 * law.scale + 1e-10j * law.scale
    assert z.size >= net_line.JAC_MIN
    out = {}
    for on in (False, True):
        seen = _counted(monkeypatch, law)
        monkeypatch.setattr(net_line, "JAC_DIFF", on)
        out[on] = law.m(z), sum(seen)
        monkeypatch.undo()
    (m0, n0), (m1, n1) = out[False], out[True]
    assert np.all(np.isfinite(m0)) and np.all(np.isfinite(m1))
    assert np.max(np.abs(m1.imag - m0.imag)) < 1e-11 * np.max(np.abs(m0.imag))
    assert n1 < n0, (n1, n0)


def test_interpolated_difference_beats_the_commuting_jacobian(law) -> None:  # noqa: F811
    """At the points between those where it is measured, the commuting model's Jacobian plus
    the interpolated difference is closer to the full model's than the commuting one's: the
    chord's contraction ``rho(I - J^-1 Jf)`` at least ten times smaller (median)."""
    z = np.linspace(0.3, 0.9, 33) * 4.0 * law.scale + 1e-10j * law.scale
    x, ok = law.solve(z)
    assert np.all(ok)
    Jf = sym_jacobian(law.residual, x, z, law.residual(x, z))
    Jc = law.medium.jacobian(x, z)
    k = np.arange(0, 33, 8)
    mid = np.setdiff1d(np.arange(33), k)
    Ji = Jc[mid] + interp_rows(z.real[mid], z.real[k], Jf[k] - Jc[k])

    def rho(J: np.ndarray) -> np.ndarray:
        M = np.eye(J.shape[1]) - np.linalg.solve(J, Jf[mid])
        return np.max(np.abs(np.linalg.eigvals(M)), axis=1)

    assert np.median(rho(Ji)) < 0.1 * np.median(rho(Jc[mid]))


def test_full_jacobian_in_one_call(monkeypatch, law) -> None:  # noqa: F811
    """The batched difference quotients: ``sym_jacobian``'s to rounding over the step (1e-8 of
    the largest entry: the residual's rounding over h = 1e-7), in one call of the residual."""
    z = np.linspace(0.3, 0.9, 5) * 4.0 * law.scale + 1e-10j * law.scale
    x, ok = law.solve(z)
    assert np.all(ok)
    ref = sym_jacobian(law.residual, x, z, law.residual(x, z))
    seen = _counted(monkeypatch, law)
    J = net_line.full_jacobian(law.residual, x, z)
    assert len(seen) == 1
    assert np.max(np.abs(J - ref)) < 1e-8 * np.max(np.abs(ref))


def test_close_models_take_the_former_chord(monkeypatch, law) -> None:  # noqa: F811
    """Where the first points' chord converges within JAC_PAYS evaluations a point (here: made
    so by an infinite JAC_PAYS), no difference quotients: the former chord's evaluations and
    densities exactly."""
    z = np.linspace(0.02, 1.2, 200) * 4.0 * law.scale + 1e-10j * law.scale
    out = {}
    for on in (False, True):
        seen = _counted(monkeypatch, law)
        monkeypatch.setattr(net_line, "JAC_DIFF", on)
        monkeypatch.setattr(net_line, "JAC_PAYS", np.inf)
        out[on] = law.m(z), sum(seen)
        monkeypatch.undo()
    (m0, n0), (m1, n1) = out[False], out[True]
    assert n1 == n0
    assert np.max(np.abs(m1 - m0)) < 1e-14 * np.max(np.abs(m0))


def test_neighbour_chord_solves_a_left_point(monkeypatch, law) -> None:  # noqa: F811
    """A point left by the chord between converged points of its line: the full model's solution
    (to the solver's tolerance: 1e-11 of the unknowns' size) by Newton's steps from its
    neighbours' in fewer evaluations of the full model than its whole path; a point past the
    line's last converged one is left; ``NEIGHBOURS = False`` leaves every point."""
    from asymptotics.spectra.law import Solver

    z = np.linspace(0.3, 0.9, 33) * 4.0 * law.scale + 1e-10j * law.scale
    ref, ok = law.solve(z)
    assert np.all(ok)
    bad = np.array([7, 8, 20, 32])
    x, ok = ref.copy(), np.ones(z.size, dtype=bool)
    x[bad], ok[bad] = 0.0, False
    monkeypatch.setattr(net_line, "NEIGHBOURS", False)
    assert np.array_equal(net_line.neighbour_chord(law, x, ok, z, bad), bad)
    monkeypatch.undo()
    seen = _counted(monkeypatch, law)
    left = net_line.neighbour_chord(law, x, ok, z, bad)
    n_line = sum(seen)
    assert left.tolist() == [32] and np.all(ok[bad[:3]])
    err = np.max(np.abs(x[bad[:3]] - ref[bad[:3]])) / np.max(np.abs(ref[bad[:3]]))
    assert err < 1e-11, err
    seen.clear()
    xp, okp = Solver.solve(law, z[bad[:3]])
    assert np.all(okp) and n_line < sum(seen), (n_line, sum(seen))


def test_neighbour_chord_fixed_jacobian_is_newtons_root(monkeypatch, law) -> None:  # noqa: F811
    """``NEIGHBOUR_FIXED``: the left points by chord steps from the start's Jacobian reach
    Newton's root (``NEIGHBOUR_FIXED = False``: Newton's steps, a fresh Jacobian each) to
    1e-13 of the unknowns' size, in fewer evaluations of the full model (one a step, not
    K + K(K+1)/2 + 1)."""
    z = np.linspace(0.3, 0.9, 33) * 4.0 * law.scale + 1e-10j * law.scale
    ref, ok = law.solve(z)
    assert np.all(ok)
    bad = np.array([5, 13, 14, 21])
    out = {}
    for fixed in (False, True):
        x, okx = ref.copy(), np.ones(z.size, dtype=bool)
        x[bad], okx[bad] = 0.0, False
        monkeypatch.setattr(net_line, "NEIGHBOUR_FIXED", fixed)
        seen = _counted(monkeypatch, law)
        left = net_line.neighbour_chord(law, x, okx, z, bad)
        monkeypatch.undo()
        assert left.size == 0 and np.all(okx)
        out[fixed] = x[bad], sum(seen)
    (x0, n0), (x1, n1) = out[False], out[True]
    assert np.max(np.abs(x1 - x0)) < 1e-13 * np.max(np.abs(x0))
    assert n1 < n0, (n1, n0)


def test_neighbour_broyden_where_the_chord_fails(monkeypatch, law) -> None:  # noqa: F811
    """``NEIGHBOUR_QUASI``: a run of left points whose chord steps fail (here made to by one
    chord step) reach Newton's root (``NEIGHBOUR_QUASI = False``: Newton's steps, a fresh
    Jacobian each) to 1e-13 of the unknowns' size by Broyden's steps from the same start and
    inverse Jacobian, in fewer evaluations of the full model."""
    z = np.linspace(0.3, 0.9, 33) * 4.0 * law.scale + 1e-10j * law.scale
    ref, ok = law.solve(z)
    assert np.all(ok)
    bad = np.array([10, 11, 12, 13, 14, 15, 16, 17, 25])
    out = {}
    for quasi in (False, True):
        x, okx = ref.copy(), np.ones(z.size, dtype=bool)
        x[bad], okx[bad] = 0.0, False
        monkeypatch.setattr(net_line, "NEIGHBOUR_QUASI", quasi)
        monkeypatch.setattr(net_line, "NEIGHBOUR_CHORD", 1)
        seen = _counted(monkeypatch, law)
        left = net_line.neighbour_chord(law, x, okx, z, bad)
        monkeypatch.undo()
        assert left.size == 0 and np.all(okx)
        out[quasi] = x[bad], sum(seen)
    (x0, n0), (x1, n1) = out[False], out[True]
    assert np.max(np.abs(x1 - x0)) < 1e-13 * np.max(np.abs(x0))
    assert np.max(np.abs(x1 - ref[bad])) < 1e-11 * np.max(np.abs(ref[bad]))
    assert n1 < n0, (n1, n0)


def test_broyden_chord_converges_or_gives_up() -> None:
    """From the exact inverse Jacobian of ``A x - b`` one step (and one to confirm) to the
    root; on ``x^2 + 1`` from a real start with a real inverse (the secant method: it stays
    real, no root there) the steps stop shrinking and the point is given up within a few
    evaluations, not reported converged."""
    A = np.array([[2.0, 0.5], [0.3, 1.5]], dtype=complex)
    b = np.array([1.0, 2.0j])
    seen: list = []

    def linear(x, z):
        seen.append(x.shape[0])
        return x @ A.T - b

    x = np.zeros((1, 2), dtype=complex)
    z = np.ones(1, dtype=complex)
    ok = net_line.broyden_chord(linear, x, z, 1e-12, np.linalg.inv(A)[None], linear(x, z))
    assert ok.tolist() == [True] and len(seen) <= 3, seen
    assert np.allclose(x[0], np.linalg.solve(A, b), rtol=0, atol=1e-15)
    seen.clear()

    def square(x, z):
        seen.append(x.shape[0])
        return x * x + 1.0

    x = np.array([[0.3 + 0j]])
    ok = net_line.broyden_chord(square, x, z, 1e-12, np.array([[[1.0 / 0.6 + 0j]]]),
                                square(x, z))
    assert ok.tolist() == [False] and np.all(x.imag == 0.0)
    assert len(seen) < net_line.NEIGHBOUR_BROYDEN, seen
