"""A limiting spectral law from its Stieltjes transform (docs/THEORY.md §16): the complex
fixed point solved by Newton along a path z = x + i y, y from large to ~0 (the physical branch
is the continuation of the large-|z| one), the density (1/pi) Im m(x + i0), the bulk's edges,
its cdf with the atom at 0, and the result records (:class:`SpectralLaw`, :class:`Outlier`).

A solver is a pair (``residual(x, z) -> F``, ``start(z) -> x``) on arrays of shape (N, q)
complex; m(z) is read from the solution by ``stieltjes(x)``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

Y_START = 5.0  # the path starts at Im z = Y_START * scale
Y_END = 1e-10  # and ends at Im z = Y_END * scale (density at x + i0)
SHRINK = 0.04  # Im z shrinks by this factor per stage
NEWTON_TOL = 1e-12
NEWTON_MAX = 40
QUASI = True  # Broyden's method before Newton in each stage (Solver._newton)
#: carry Broyden's inverse Jacobian from stage to stage: off (with STAGE_TOL it converged to
#: another root on some points: densities 0.04 off on an sRF three-value relu law)
CARRY = False
STAGE_TOL = 1e-8  # Newton's tolerance in the path's stages before the last
QUASI_MAX = 30  # its steps before the points left restart with Newton
GAP_MIN = 1e-3  # gaps narrower than this fraction of the top edge are not reported
SIDE_POINTS = 4  # grid points of a component past which an edge's fold is sought
TOP_GUARD = True  # the top edge checked for a component above it (off: the former law)


def broyden_inverse(H: np.ndarray, dx: np.ndarray, y: np.ndarray, finite: np.ndarray,
                    floor: float = 1e-300) -> np.ndarray:
    """Broyden's ("good") rank-one update of a stack of inverse Jacobians, row by row:
    ``H + (dx - H y) dx^T H / (dx^T H y)`` for the step ``dx`` and the residual's change ``y``;
    a row whose denominator is not finite or not above ``floor`` in modulus, or whose ``finite``
    is False, keeps its ``H``."""
    Hy = np.einsum("xij,xj->xi", H, y)
    den = np.einsum("xi,xi->x", dx, Hy)
    use = np.isfinite(den) & (np.abs(den) > floor) & finite
    den = np.where(use, den, 1.0)
    sH = np.einsum("xi,xij->xj", dx, H)
    return H + np.where(use[:, None, None],
                        (dx - Hy)[:, :, None] * sH[:, None, :] / den[:, None, None], 0.0)

class Solver:
    """Continuation-Newton for a complex fixed point F(x, z) = 0, vectorised over z."""

    def __init__(self, residual: Callable, start: Callable, stieltjes: Callable,
                 scale: float) -> None:
        self.residual, self.start, self.stieltjes, self.scale = residual, start, stieltjes, scale
        self.atom = 0.0  # the mass at 0, once known (removed from the density)
        self.tol = NEWTON_TOL  # Newton's relative step at convergence
        self.quasi = QUASI  # Broyden's steps first (:meth:`_newton`)

    def _newton(self, x: np.ndarray, z: np.ndarray, carry: dict | None = None
                ) -> tuple[np.ndarray, np.ndarray]:
        """Newton on the points not yet converged (a finite-difference Jacobian: F is
        analytic in x). With ``quasi`` (default): the Jacobian once at the start, then Broyden's
        rank-one updates of its inverse (one evaluation a step); the points where that does not
        converge in :data:`QUASI_MAX` steps restart with Newton. ``carry``: the inverse
        Jacobians of the path's last stage (``carry["H"]``, updated here; NaN rows: none)."""
        x = x.copy()
        ok = np.zeros(z.shape[0], dtype=bool)
        act = np.arange(z.shape[0])
        if self.quasi and z.shape[0]:
            H0 = None if carry is None else carry.get("H")
            xq, okq, H = self._broyden(x, z, H0)
            x[okq] = xq[okq]
            ok |= okq
            act = act[~okq]
            if carry is not None:
                H[act] = np.nan
                carry["H"] = H
        for _ in range(NEWTON_MAX if act.size else 0):  # a non-finite step keeps x: it repeats
            xa, ok_a = self._newton_step(x[act], z[act])
            stuck = ~ok_a & np.all(xa == x[act], axis=1)  # (the same NaN again): given up
            x[act] = xa
            ok[act] = ok_a
            act = act[~ok_a & ~stuck]
            if act.size == 0:
                break
        return x, ok

    def _jacobian_fd(self, x: np.ndarray, z: np.ndarray, F: np.ndarray) -> np.ndarray:
        q = x.shape[1]
        J = np.empty(x.shape + (q,), dtype=np.complex128)
        for j in range(q):
            h = 1e-7 * (1.0 + np.abs(x[:, j]))
            xp = x.copy()
            xp[:, j] += h
            J[:, :, j] = (self.residual(xp, z) - F) / h[:, None]
        return J

    def _broyden(self, x: np.ndarray, z: np.ndarray, H0: np.ndarray | None = None
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Broyden's method (the inverse Jacobian updated by rank one a step) from ``H0``
        (rows with NaN, or None: the inverse of the finite-difference Jacobian at ``x``); the
        solutions, the converged points and each point's last inverse Jacobian."""
        x = x.copy()
        n, q = x.shape
        ok = np.zeros(n, dtype=bool)
        F = self.residual(x, z)
        H = np.full((n, q, q), np.nan + 0j) if H0 is None else H0.copy()
        new = np.nonzero(~np.isfinite(H).all(axis=(1, 2)))[0]
        if new.size:
            try:
                H[new] = np.linalg.inv(self._jacobian_fd(x[new], z[new], F[new]))
            except np.linalg.LinAlgError:
                return x, ok, np.full((n, q, q), np.nan + 0j)
        H_all = H.copy()
        act = np.arange(n)
        for _ in range(QUASI_MAX):
            dx = -np.einsum("xij,xj->xi", H, F)
            bad = ~np.isfinite(dx).all(axis=1)
            dx[bad] = 0.0
            x[act] += dx
            size = np.abs(dx).max(axis=1) / (1.0 + np.abs(x[act]).max(axis=1))
            done = (size < self.tol) & ~bad
            ok[act[done]] = True
            H_all[act] = H
            keep = ~done & ~bad
            act, H, F, dx = act[keep], H[keep], F[keep], dx[keep]
            if act.size == 0:
                break
            Fn = self.residual(x[act], z[act])
            H = broyden_inverse(H, dx, Fn - F, np.isfinite(Fn).all(axis=1))
            F = Fn
        return x, ok, H_all

    def _newton_step(self, x: np.ndarray, z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        F = self.residual(x, z)
        J = self._jacobian_fd(x, z, F)
        try:
            dx = np.linalg.solve(J, -F[..., None])[..., 0]
        except np.linalg.LinAlgError:
            dx = np.full_like(x, np.nan)
        bad = ~np.isfinite(dx).all(axis=1)
        dx[bad] = 0.0
        x = x + dx
        size = np.abs(dx).max(axis=1) / (1.0 + np.abs(x).max(axis=1))
        return x, (size < self.tol) & ~bad

    def solve(self, z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The solution at the points z (Im z >= 0; real z means z + i Y_END scale) and a
        converged flag per point: Newton at Im z = Y_START scale, then at Im z shrunk by
        SHRINK per stage, each stage started from the previous one."""
        z = np.atleast_1d(np.asarray(z, dtype=np.complex128))
        xr, yt = z.real, np.maximum(z.imag, Y_END * self.scale)
        y = max(Y_START * self.scale, float(np.max(yt)))
        x = self.start(xr + 1j * y)
        ok = np.ones(z.shape[0], dtype=bool)
        carry: dict | None = {} if CARRY else None
        tol = self.tol
        try:
            while True:
                last = y <= float(np.min(yt))
                # the stages before the last only start the next one: a looser tolerance
                self.tol = tol if last else max(tol, STAGE_TOL)
                x, ok_s = self._newton(x, xr + 1j * np.maximum(y, yt), carry)
                ok &= ok_s
                if last:
                    break
                y *= SHRINK
        finally:
            self.tol = tol
        m = self.stieltjes(x)
        ok &= np.isfinite(m) & (m.imag >= -1e-9 * np.abs(m))
        return x, ok

    def m(self, z: np.ndarray) -> np.ndarray:
        x, ok = self.solve(z)
        out = self.stieltjes(x)
        return np.where(ok, out, np.nan + 0j)


def density_of(solver: Solver, x: np.ndarray) -> np.ndarray:
    """(1/pi) Im m(x + i0): the bulk density (the atom at 0 excluded)."""
    x = np.asarray(x, dtype=np.float64)
    z = x.ravel() + 1j * Y_END * solver.scale
    m = solver.m(z) + solver.atom / z  # the atom's Lorentzian tail removed
    d = np.maximum(m.imag / math.pi, 0.0)
    d[np.abs(x.ravel()) < 1e-12 * solver.scale] = 0.0
    return d.reshape(x.shape)


def _density_solutions(solver: Solver, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`density_of` at the points x with the solutions there (rows of the path's
    solution at x + i0)."""
    z = x + 1j * Y_END * solver.scale
    X, ok = solver.solve(z)
    m = np.where(ok, solver.stieltjes(X), np.nan + 0j) + solver.atom / z
    d = np.maximum(m.imag / math.pi, 0.0)
    d[np.abs(x) < 1e-12 * solver.scale] = 0.0
    return d, X


def bulk_support(solver: Solver, hi: float, n_grid: int = 240) -> list[tuple[float, float]]:
    """The intervals where the density is positive (docs/THEORY.md §16.10): the top edge is the
    fold of the real branch continued down from ``hi`` (doubled while inside the support),
    checked for a component it stepped over (:func:`asymptotics.spectra.topguard.guard`); the
    components are found on a linear grid below it (with its spacing, and its extent, as the
    former coarse pass on [0, hi] gave it) joined with a geometric one near 0 (small components
    beside an atom), and each edge is the fold of the real branch from the grid point outside
    (:func:`asymptotics.spectra.branch.fold`; where it fails, three vectorised grid passes).
    The top edge's branch is kept as ``solver.branch`` (the outliers' real solutions)."""
    from asymptotics.spectra.branch import Branch, fold, polish
    from asymptotics.spectra.topguard import guard

    solver.branch = None
    if not getattr(solver, "real_branch", True):
        return _bulk_support_grid(solver, hi, n_grid)
    top_fold = None
    for _ in range(8):
        X, ok = solver.solve(np.array([hi + 1j * Y_END * solver.scale]))
        if not ok[0]:
            break
        if np.any(np.abs(X[0].imag) > 1e-6 * (1.0 + np.abs(X[0]))):
            hi *= 2.0  # inside the support: the density at hi is positive
            continue
        p = polish(solver, X[0], hi)
        top_fold = fold(solver, p, 0.0, monotone=True) if p is not None else None
        break
    if top_fold is None or not top_fold.ok:
        return _bulk_support_grid(solver, hi, n_grid)
    inner: list[float] = []  # points inside components the guard met (on the grid too)
    if TOP_GUARD:
        def inside(lam: float) -> np.ndarray | None:  # the path's solution at lam if real
            X, ok = solver.solve(np.array([lam + 1j * Y_END * solver.scale]))
            real = ok[0] and not np.any(np.abs(X[0].imag) > 1e-6 * (1.0 + np.abs(X[0])))
            return X[0] if real else None

        def refine(a: float, b: float) -> float:  # the upper edge in [a, b] by grid passes
            tol = 1e-7 * max(float(density_of(solver, np.array([a]))[0]), 1e-300)
            return _refine(solver, a, b, tol, rising=False)

        top_fold = guard(solver, top_fold, hi / n_grid, inner, inside, refine)
    edge = top_fold.edge
    x = np.linspace(0.0, hi, n_grid + 1)[1:]
    below = x[x < edge]
    top = min(hi, 1.1 * ((below[-1] if below.size else hi) + hi / n_grid))
    x = np.unique(np.concatenate([np.linspace(0.0, top, n_grid + 1)[1:],
                                  np.geomspace(1e-4 * top, top / n_grid, 30), inner]))
    scan = getattr(solver, "scan", None)  # a coarse first pass (the sRF features' solver)
    if scan is None:
        d, X = _density_solutions(solver, x)
        tol = 1e-7 * max(float(np.nanmax(d)), 1e-300)
    else:
        x, d, X, tol = scan(solver, x, edge)
    on = d > tol

    def side(i_out: int, i_in: int) -> float:
        """The edge past grid point i_out (outside) toward i_in (inside): the fold before x[i_in]
        or the next points of the component, or past one (the density's tail at Im z = Y_END
        scale can exceed tol just outside an edge, e.g. beside the atom); else grid passes."""
        a, b = x[i_out], x[i_in]
        if i_out == i_in + 1 and b < edge < a and not np.any(on[i_out:]):
            return edge  # the top edge
        p = polish(solver, X[i_out], a)
        k, step = i_in, i_in - i_out
        beyond = []  # folds past a bound (that grid point outside; from the fold the walk stalls)
        while p is not None and 0 <= k < len(x) and on[k] and abs(k - i_in) < SIDE_POINTS:
            f = fold(solver, p, x[k])
            if f.ok and min(a, x[k]) < f.edge < max(a, x[k]):
                return f.edge
            p, k = f.points[-1], k + step
            beyond.append((f.beyond, x[k] if 0 <= k < len(x) and on[k] else a))
        e = next((e for e, far in beyond if min(a, far) < e < max(a, far)), None)
        return e if e is not None else _refine(solver, min(a, b), max(a, b), tol, rising=b > a)

    out = []
    for i, j in _runs(on):
        lo = side(i - 1, i) if i else _refine(solver, 0.0, x[i], tol, True)
        up = (side(j + 1, j) if j + 1 < len(x)
              else _refine(solver, x[j], 2 * x[j] - x[j - 1], tol, False))
        if not lo < up:  # (folds of a component not ordered: the grid passes)
            lo = _refine(solver, x[i - 1] if i else 0.0, x[i], tol, True)
            up = _refine(solver, x[j], x[j + 1] if j + 1 < len(x) else 2 * x[j] - x[j - 1],
                         tol, False)
        _append(out, lo, up, top)
    if out and out[-1][1] == edge:
        solver.branch = Branch(top_fold)
    return out


def _refine(solver: Solver, a: float, b: float, tol: float, rising: bool) -> float:
    """An edge in [a, b] (where the density crosses ``tol``) by three vectorised grid passes of
    16 intervals: the interval of width (b - a)/4096 of the former two passes of 64, with a
    third of the points."""
    for _ in range(3):
        g = np.linspace(a, b, 17)
        dg = density_of(solver, g) > tol
        idx = np.argmax(dg) if rising else len(g) - 1 - np.argmax(dg[::-1])
        if rising:
            a, b = (g[max(idx - 1, 0)], g[idx])
        else:
            a, b = (g[idx], g[min(idx + 1, len(g) - 1)])
    return 0.5 * (a + b)


def _bulk_support_grid(solver: Solver, hi: float, n_grid: int = 240
                       ) -> list[tuple[float, float]]:
    """:func:`bulk_support` by grids only (where the real branch is not found): a coarse pass
    on [0, hi] for the top, then the components' edges refined by grid passes."""
    for _ in range(8):
        x = np.linspace(0.0, hi, n_grid + 1)[1:]
        d = density_of(solver, x)
        if not d[-1] > 1e-7 * max(float(np.nanmax(d)), 1e-300):
            break
        hi *= 2.0
    top = x[np.nonzero(d > 1e-7 * max(float(np.nanmax(d)), 1e-300))[0][-1]] if np.any(d > 0) else hi
    top = min(hi, 1.1 * (top + hi / n_grid))
    x = np.unique(np.concatenate([np.linspace(0.0, top, n_grid + 1)[1:],
                                  np.geomspace(1e-4 * top, top / n_grid, 30)]))
    d = density_of(solver, x)
    tol = 1e-7 * max(float(np.nanmax(d)), 1e-300)
    on = d > tol
    out = []
    for i, j in _runs(on):
        lo = _refine(solver, x[i - 1] if i else 0.0, x[i], tol, True)
        up = _refine(solver, x[j], x[j + 1] if j + 1 < len(x) else 2 * x[j] - x[j - 1], tol,
                     False)
        _append(out, lo, up, top)
    return out


def _runs(on: np.ndarray):
    """The maximal runs ``(i, j)`` (first, last index) of True in ``on``."""
    i, n = 0, len(on)
    while i < n:
        if on[i]:
            j = i
            while j + 1 < n and on[j + 1]:
                j += 1
            yield i, j
            i = j + 1
        else:
            i += 1


def _append(out: list, lo: float, up: float, top: float) -> None:
    """A bulk component ``(lo, up)``, merged with the previous one across a gap < GAP_MIN top."""
    if out and lo - out[-1][1] < GAP_MIN * top:
        lo = out.pop()[0]
    out.append((float(max(lo, 0.0)), float(up)))


@dataclass(frozen=True)
class Outlier:
    """One eigenvalue outside the bulk: ``location`` (an eigenvalue of the matrix of the law;
    inf: it diverges with d, e.g. the features' mean at d = None), the ``channel`` it comes from
    ('mean', 'learned j', 'spike'), and the squared overlaps of its eigen/singular vectors with
    the named directions (``overlaps``; NaN where not derived)."""

    location: float
    channel: str
    overlaps: dict


@dataclass(frozen=True)
class SpectralLaw:
    """The limiting law of the eigenvalues of ``matrix`` (docs/THEORY.md §16) with its atom at
    0, bulk ``support`` (intervals), ``outliers`` (descending) and every parameter.
    ``density(x)``, ``cdf(x)`` (atom included), ``stieltjes(z)``."""

    of: str
    matrix: str
    model: str
    params: dict
    support: tuple
    atom: float
    outliers: tuple
    d: float | None
    status: str
    message: str
    _solver: Solver = field(repr=False, compare=False)

    def stieltjes(self, z: object) -> np.ndarray:
        """m(z) = int dmu(x)/(x - z) of the bulk plus atom (Im z >= 0)."""
        z = np.atleast_1d(np.asarray(z, dtype=np.complex128))
        return self._solver.m(z)

    def density(self, x: object) -> np.ndarray:
        """The bulk density (1/pi) Im m(x + i0) (the atom at 0 is in :meth:`cdf`)."""
        return density_of(self._solver, np.atleast_1d(np.asarray(x, dtype=np.float64)))

    @cached_property
    def _cdf_table(self) -> tuple[np.ndarray, np.ndarray]:
        xs, cs = [np.array([-np.inf, 0.0])], [np.array([0.0, self.atom])]
        acc = self.atom
        for lo, hi in self.support:
            th = np.linspace(0.0, math.pi, 801)
            x = lo + (hi - lo) * 0.5 * (1.0 - np.cos(th))
            f = self.density(x) * (hi - lo) * 0.5 * np.sin(th)  # density dx/dtheta
            c = acc + np.concatenate([[0.0], np.cumsum(0.5 * (f[1:] + f[:-1]) * np.diff(th))])
            xs.append(x)
            cs.append(c)
            acc = float(c[-1])
        return np.concatenate(xs), np.concatenate(cs)

    @property
    def mass(self) -> float:
        """Atom + integral of the density: 1 up to the quadrature (a check of the solution)."""
        return float(self._cdf_table[1][-1])

    def cdf(self, x: object) -> np.ndarray:
        """P(eigenvalue <= x) of the limiting law (atom at 0 included; outliers have zero mass)."""
        xs, cs = self._cdf_table
        x = np.atleast_1d(np.asarray(x, dtype=np.float64))
        out = np.interp(x, xs[1:], cs[1:], left=0.0, right=float(cs[-1]))
        out[x < 0.0] = 0.0
        return out

    @property
    def edge(self) -> float:
        """The bulk's upper edge."""
        return float(self.support[-1][1]) if self.support else math.nan
