"""The component search's coarse first pass (docs/THEORY.md §16.10), for
:func:`asymptotics.spectra.law.bulk_support` (``solver.scan``, set by the sRF features'
solver): every :data:`COARSE`-th point of its grid (``solver.coarse`` if set), then the grid's
points only in the intervals where an edge, a hidden mass or a hidden gap is not excluded, from
m and m' at the points."""

from __future__ import annotations

import math

import numpy as np

from asymptotics.spectra import law

COARSE = 8  # the first pass: every COARSE-th grid point (1: the full grid, the former search)
MASS_TOL = 1e-9  # a bulk mass that may hide between two grid points outside the support
#: inside the support at two grid points L apart: a gap may hide between them where |m'| L
#: exceeds GAP_SLOPE pi rho at one, or m' changes by GAP_SLOPE of itself (a square-root edge
#: within L of a point: |rho'| L >= rho/2)
GAP_SLOPE = 0.5
ABOVE = True  # the tests above the top edge too (off: the former scan)


def scan(solver: law.Solver, x: np.ndarray, edge: float = math.inf) -> tuple:
    """The grid ``x``'s points that decide the components, with their densities, solutions and
    the detection threshold (docs/THEORY.md §16.10): every :data:`COARSE`-th point first
    (1: all), then, level by level, the middle grid point of each interval between evaluated
    points below the top edge ``edge`` where a component's edge, a hidden component or a
    hidden gap is not excluded (:func:`_hidden`), down to neighbouring grid points, and about
    the largest density (the detection threshold's maximum, as on the full grid). A point's
    density is the same number as in the full grid (each point's path is its own)."""
    step = int(getattr(solver, "coarse", COARSE))
    n = len(x)
    if step <= 1 or n <= 2 * step:
        d, X = law._density_solutions(solver, x)
        return x, d, X, 1e-7 * max(float(np.nanmax(d)), 1e-300)
    new = np.unique(np.concatenate([np.arange(0, n, step), [n - 1]]))
    d = np.full(n, np.nan)
    done = np.zeros(n, dtype=bool)  # evaluated (a point whose path fails has d NaN: off)
    X = m = dm = None
    while new.size:
        dn, Xn = law._density_solutions(solver, x[new])
        if X is None:
            X = np.full((n, Xn.shape[1]), np.nan + 0j)
            m, dm = np.full(n, np.nan + 0j), np.full(n, np.nan + 0j)
        d[new], X[new], done[new] = dn, Xn, True
        m[new], dm[new] = _slopes(solver, Xn, x[new])
        tol = 1e-7 * max(float(np.nanmax(d)), 1e-300)
        ev = np.nonzero(done)[0]
        # above the top edge too (the guard of the walk down to it, law.bulk_support, leaves
        # the first grid spacing of the former coarse pass above the edge to this grid)
        a, b = ev[:-1], ev[1:]
        flag = (b > a + 1) & (ABOVE | ~(x[a] > edge)) & _hidden(x[ev], d[ev], m[ev], dm[ev], tol)
        new = (a[flag] + b[flag]) // 2
        # the threshold's maximum as on the full grid: the grid's neighbours of the largest
        # density found (level by level, as a local search)
        k = int(np.argmax(np.where(np.isnan(d[ev]), -np.inf, d[ev])))
        near = [(ev[j] + ev[j + 1]) // 2 for j in (k - 1, k)
                if 0 <= j < len(ev) - 1 and ev[j + 1] > ev[j] + 1]
        new = np.unique(np.concatenate([new, np.array(near, dtype=np.int64)]))
    return x[done], d[done], X[done], tol


def _slopes(solver: law.Solver, X: np.ndarray, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The bulk's m and m' = dm/dz (the atom's share removed) at the points x + i0 from their
    solutions X: dX/dz = -J^-1 dF/dz (the solver's Jacobian in X; dF/dz by a difference, F is
    linear in z for the V-parts), m' = stieltjes(dX/dz) (``solver.linear``) or a difference of
    ``stieltjes`` along dX/dz (NaN where J is singular)."""
    z = x + 1j * law.Y_END * solver.scale
    F = solver.residual(X, z)
    J = solver._jacobian_fd(X, z, F)
    h = 1e-6 * solver.scale
    Fz = (solver.residual(X, z + h) - F) / h
    with np.errstate(all="ignore"):
        try:
            dX = -np.linalg.solve(J, Fz[..., None])[..., 0]
        except np.linalg.LinAlgError:
            dX = np.full_like(X, np.nan)
        m = solver.stieltjes(X)
        if getattr(solver, "linear", False):  # stieltjes linear in X: m' = stieltjes(dX/dz)
            dm = solver.stieltjes(dX) - solver.stieltjes(np.zeros_like(dX))
        else:
            t = 1e-7 * (1.0 + np.max(np.abs(X), axis=1)) / np.maximum(
                np.max(np.abs(dX), axis=1), 1e-300)
            dm = (solver.stieltjes(X + t[:, None] * dX) - m) / t
    # the bulk's share (the atom's term -atom/z removed)
    return m + solver.atom / z, dm - solver.atom / (z * z)


def _hidden(x: np.ndarray, d: np.ndarray, m: np.ndarray, dm: np.ndarray, tol: float
            ) -> np.ndarray:
    """Per interval between consecutive points ``x`` (with their densities ``d``, the bulk's m
    and m'), whether it may hold what its end points do not show (docs/THEORY.md §16.10): an
    edge (one end in the support, one outside); outside at both ends, a bulk mass above
    :data:`MASS_TOL` (the bound L^2/8 (mean of m' - divided difference of m), exact for any
    measure); inside at both, a gap (|m'| L above GAP_SLOPE pi rho at an end, or m' changing
    by GAP_SLOPE of itself). Not finite: True."""
    L = np.diff(x)
    on = d > tol
    fin = np.isfinite(m) & np.isfinite(dm)
    with np.errstate(all="ignore"):
        mass = L * L / 8.0 * (0.5 * (dm[:-1].real + dm[1:].real) - np.diff(m.real) / L)
        adm = np.abs(dm)
        steep = adm * np.append(L, 0.0) > GAP_SLOPE * math.pi * d  # at the left ends
        steep_r = adm * np.append(0.0, L) > GAP_SLOPE * math.pi * d  # at the right ends
        gap = (steep[:-1] | steep_r[1:]
               | (np.abs(np.diff(dm)) > GAP_SLOPE * np.maximum(adm[:-1], adm[1:])))
    out = np.where(on[:-1], gap, mass > MASS_TOL)
    return out | (on[:-1] != on[1:]) | ~(fin[:-1] & fin[1:])
