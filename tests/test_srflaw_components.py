"""The component search of ``law.bulk_support`` on a coarse grid first (``solver.scan``,
docs/THEORY.md §16.10) against closed forms: the generalised Marchenko-Pastur law of a
two-point population (Silverstein and Choi 1995), whose edges are the critical values of the
inverse x(m) = -1/m + c sum_i w_i t_i/(1 + t_i m) (the real roots of a quartic), with a narrow
second component (small mass) below or above the main one and with a narrow gap."""

from __future__ import annotations

import numpy as np
import pytest

from asymptotics.spectra import law, topguard
from asymptotics.spectra.traces import srf_scan

C = 0.3  # p/n


def _solver(t: np.ndarray, w: np.ndarray, coarse: int) -> law.Solver:
    """The companion law (n x n, atom 1 - c at 0): m = -1/(z - c sum w t/(1 + t m))."""

    def residual(x: np.ndarray, z: np.ndarray) -> np.ndarray:
        s = (C * w * t / (1.0 + t * x)).sum(axis=1, keepdims=True)
        return x * (z[:, None] - s) + 1.0

    def start(z: np.ndarray) -> np.ndarray:
        return (-1.0 / z)[:, None]

    sol = law.Solver(residual, start, lambda x: x[:, 0], scale=C * float(w @ t))
    sol.atom = 1.0 - C
    sol.scan, sol.coarse = srf_scan.scan, coarse
    return sol


def _edges(t: np.ndarray, w: np.ndarray) -> np.ndarray:
    """The support's edges in closed form: x(m) at the real roots of x'(m) = 0, i.e. of
    (1 + t1 m)^2 (1 + t2 m)^2 - c m^2 (w1 t1^2 (1 + t2 m)^2 + w2 t2^2 (1 + t1 m)^2)."""
    P = np.polynomial.Polynomial
    a, b = P([1.0, t[0]]) ** 2, P([1.0, t[1]]) ** 2
    q = a * b - C * P([0, 0, 1.0]) * (w[0] * t[0] ** 2 * b + w[1] * t[1] ** 2 * a)
    r = q.roots()
    m = np.sort(r[np.abs(r.imag) < 1e-9].real)
    x = -1.0 / m + C * (w * t / (1.0 + np.outer(m, t))).sum(axis=1)
    return np.sort(x[x > 0.0])


def _support(t, w, coarse):
    sol = _solver(np.asarray(t), np.asarray(w), coarse)
    hi = 4.0 * float(np.max(t)) * (1.0 + np.sqrt(C)) ** 2
    return law.bulk_support(sol, hi)


@pytest.mark.parametrize("t2, w2", [(0.15, 1e-2), (0.15, 1e-3), (0.15, 3e-4), (0.1, 1e-3),
                                    (0.3, 1e-3), (0.05, 1e-3)])
def test_narrow_lower_component_is_found(t2, w2):
    """A small population mass w2 at t2 < 1: a component of width 0.002-0.03 (1/4 to 3 grid
    spacings) below the main one; the coarse search finds it, with the full grid's edges."""
    t, w = np.array([1.0, t2]), np.array([1.0 - w2, w2])
    edges = _edges(t, w)
    assert len(edges) == 4  # two components in closed form
    coarse = _support(t, w, srf_scan.COARSE)
    dense = _support(t, w, 1)
    assert len(coarse) == len(dense) == 2
    got = np.array([e for comp in coarse for e in comp])
    np.testing.assert_allclose(got, edges, rtol=1e-9)
    np.testing.assert_array_equal(got, np.array([e for comp in dense for e in comp]))


@pytest.mark.parametrize("t2", [3.0, 3.5, 4.0])
def test_narrow_gap_is_found(t2):
    """Two equal population masses: one component (t2 = 3) or two with a gap of 0.045
    (t2 = 3.5, 0.006 of the top edge) or 0.17 (t2 = 4)."""
    t, w = np.array([1.0, t2]), np.array([0.5, 0.5])
    edges = _edges(t, w)
    coarse = _support(t, w, srf_scan.COARSE)
    dense = _support(t, w, 1)
    assert len(coarse) == len(dense) == len(edges) // 2
    got = np.array([e for comp in coarse for e in comp])
    np.testing.assert_allclose(got, edges, rtol=1e-9)


@pytest.mark.parametrize("t2, w2", [(6.0, 1e-3), (4.0, 1e-4), (3.0, 1e-7)])
def test_narrow_top_component(t2, w2):
    """A small population mass w2 at t2 > 1: a narrow component above the main one (width
    0.41, 0.086 and 0.002: the last narrower than the grid's spacing) that the walk down from
    hi steps over; the guard above the top edge finds it, with the closed form's edges, on the
    coarse search and on the full grid."""
    t, w = np.array([1.0, t2]), np.array([1.0 - w2, w2])
    edges = _edges(t, w)
    assert len(edges) == 4
    for coarse in (srf_scan.COARSE, 1):
        got = np.array([e for comp in _support(t, w, coarse) for e in comp])
        assert got.size == 4
        np.testing.assert_allclose(got, edges, rtol=1e-9)


def test_mass_bound_is_an_upper_bound():
    """The guard's bound on windows of 2 and 5 points against a discrete measure: at least the
    mass in the window (a point mass of 1e-6 added in it), the two-point case the closed
    form L^2/8 ((m'(a) + m'(b))/2 - (m(b) - m(a))/L)."""
    rng = np.random.default_rng(3)
    xs, ws = rng.uniform(0.0, 2.4, 500), np.full(500, 1.0 / 500)

    class P:
        def __init__(self, lam, x, w):
            self.lam, self.m, self.g = lam, np.sum(w / (x - lam)), 1.0 / np.sum(w / (x - lam) ** 2)

    for a, b in [(2.5, 2.6), (3.0, 4.0), (5.0, 8.0)]:
        for n in (2, 5):
            lam = np.linspace(a, b, n)
            x, wt = np.append(xs, 0.5 * (a + b) + 0.01), np.append(ws, 1e-6)
            assert topguard.mass_bound([P(v, x, wt) for v in lam]) >= 1e-6
        pa, pb = P(a, xs, ws), P(b, xs, ws)
        L = b - a
        exact = L * L / 8 * (0.5 * (1 / pa.g + 1 / pb.g) - (pb.m - pa.m) / L)
        assert topguard.mass_bound([pa, pb]) == pytest.approx(exact, rel=1e-6)


def _sequential(solver, top, lo, inside):
    """The guard's search one point at a time, in its order (the form before the batches): an
    independent re-implementation of ``topguard.top_guard``, with each point by ``_newton``
    from the Hermite start; (its result, the points in the order computed)."""
    from asymptotics.spectra import branch

    pts = sorted((p for p in top.points if p.lam > lo and p.g > 0.0), key=lambda p: -p.lam)
    low = branch.at_lam(solver, pts[-1], lo)
    if low is not None and low.g > 0.0 and low.m < pts[-1].m:
        pts.append(low)
    seen = []

    def node(lam, a, b):
        h, s = b.lam - a.lam, (lam - a.lam) / (b.lam - a.lam)
        u0 = ((1 + 2 * s) * (1 - s) ** 2 * a.u + s * (1 - s) ** 2 * h * a.t / a.g
              + s * s * (3 - 2 * s) * b.u + s * s * (s - 1) * h * b.t / b.g)
        u0[-1] = lam
        u, J, ok = branch._newton(solver, u0)
        c = branch.Point(solver, u, J) if ok else None
        if c is not None and c.g > 0.0 and a.m < c.m < b.m:
            seen.append(c)
            return c
        x = inside(lam)
        if x is None:
            return (lam, b)
        c = branch.polish(solver, x, lam)
        return c if c is not None and a.m < c.m < b.m else None

    stack, budget = topguard._windows(pts[::-1]), topguard.GUARD_POINTS
    while stack and budget > 0:
        w = stack.pop()
        if len(w) > 2 and not topguard.mass_bound(w) > topguard.MASS_TOL:
            continue
        finer = [w[-1]]
        for a in w[-2::-1]:
            b = finer[-1]
            if b.lam - a.lam > topguard.GUARD_FLOOR * pts[0].lam:
                c = node(0.5 * (a.lam + b.lam), a, b)
                budget -= 1
                if isinstance(c, tuple):
                    return c, seen
                if c is not None:
                    finer.append(c)
            finer.append(a)
        if len(finer) > len(w):
            stack.extend(topguard._windows(finer[::-1]))
    return None, seen


@pytest.mark.parametrize("t2, w2", [(6.0, 1e-3), (4.0, 1e-4), (1.0, 0.5)])
def test_batched_guard_is_the_sequential_search(t2, w2, monkeypatch):
    """The guard's batched rounds (topguard.top_guard) return what the search one point at a
    time does, with bitwise the same points (a component above the edge, and none)."""
    t, w = np.array([1.0, t2]), np.array([1.0 - w2, w2])
    calls = []
    inner = topguard.guard

    def spy(solver, top, width, found, inside, refine):
        calls.append((solver, top, max(top.edge + width, 1.1 * top.edge), inside))
        return inner(solver, top, width, found, inside, refine)

    monkeypatch.setattr(topguard, "guard", spy)
    _support(t, w, srf_scan.COARSE)
    solver, top, lo, inside = calls[0]
    made = []
    between = topguard.between

    def record(solver, reqs):
        out = between(solver, reqs)
        made.extend(c for c in out if c is not None)
        return out

    monkeypatch.setattr(topguard, "between", record)
    got = topguard.top_guard(solver, top, lo, inside)
    ref, seen = _sequential(solver, top, lo, inside)
    assert (got is None) == (ref is None) == (t2 == 1.0)
    if ref is not None:
        assert got[0] == ref[0]
        np.testing.assert_array_equal(got[1].u, ref[1].u)
    assert len(seen) >= 4
    by_lam = {c.lam: c for c in made}
    for c in seen:  # every point of the sequential search, bitwise
        d = by_lam[c.lam]
        np.testing.assert_array_equal(d.u, c.u)
        np.testing.assert_array_equal(d.t, c.t)
