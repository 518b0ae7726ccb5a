"""The chord polish of :mod:`asymptotics.spectra.netbulk` (docs/THEORY.md §16.8): the V-part's
Jacobian with one difference quotient for the columns of ``V1_ab`` and ``V1_ba``
(:func:`sym_jacobian`), the solver using it (:class:`SymSolver`), the path of the cheap model
with subsets of the points at the stages of large Im z and the inverse Jacobian carried from
stage to stage (:class:`PathSolver`), and :class:`ChordPolish`, the full model started from a
cheap model's path and polished by chord steps with Broyden's updates."""

from __future__ import annotations

import numpy as np

from asymptotics.spectra.law import (
    NEWTON_MAX,
    NEWTON_TOL,
    SHRINK,
    STAGE_TOL,
    Y_END,
    Y_START,
    Solver,
    broyden_inverse,
)
from asymptotics.spectra.traces import net_line

#: the chord's inverse Jacobian takes Broyden's rank-one updates (superlinear instead of linear)
BROYDEN = True
#: the chord's tolerance on the commuting model with every direction (its solution only starts
#: the chord to the full model, which converges from ~1e-4 away in a few steps)
MEDIUM_TOL = 1e-8
#: the path's stages at Im z = y solve only a subset of the points, spaced by at most
#: SUBSET_SPACING * y along Re z (the others' start for the next stage is interpolated
#: linearly: on that scale the solution is smooth); the stages where the subset would hold
#: more than half the points, and the last, solve every point
SUBSET_SPACING = 0.5
#: the subsets from this many points on (fewer: every point at every stage)
SUBSET_MIN = 16
#: the stages after the first that solves every point start from the previous stage's inverse
#: Jacobian (Broyden-updated) instead of a new one, for the points where that converges in at
#: most CARRY_STEPS steps, its first step at most CARRY_MOVE (relative) and every later one at
#: most CARRY_RATE times the one before (the root is then the one next to the previous
#: stage's); the other points redo the stage with a new Jacobian (as the plain path)
CARRY = True
#: the chord from the path's end to the commuting model starts from the path's last inverse
#: Jacobians (Broyden-updated) instead of the inverse of a new one (not the chord straight to
#: the full model, without a commuting model between: its end point would move within the
#: tolerance, densities by up to 4e-12 of their maximum)
REUSE_INVERSE = True
CARRY_STEPS = 4
CARRY_MOVE = 1e-3
CARRY_RATE = 0.2
#: the chord gives up on a point whose step, above STALL_FLOOR (relative), has not shrunk at
#: STALL_GROWTHS steps: it wanders (started on the other side of an edge the models place
#: apart) and goes to the fallback (False: every point runs NEWTON_MAX steps)
STALL = True
STALL_GROWTHS = 2
STALL_FLOOR = 1e-8
#: the full model's whole path (:class:`ChordPolish`'s last fallback) starts each stage's
#: Broyden steps from the commuting model's analytic Jacobian, not from the full model's
#: difference quotients (Newton's restarts keep those)
STAGE_MEDIUM = True
#: the chord to the full model (from SUBSET_MIN points on a line of Re z) runs first on every
#: CHORD_EVERY-th point; the others start from the commuting model's solution plus the
#: correction (full minus commuting) interpolated linearly from those, with the commuting
#: model's Jacobian there (the subset's Broyden-updated inverses interpolated instead: more
#: steps); where that fails, the plain chord (False: every point the plain chord)
CHORD_SUBSET = True
CHORD_EVERY = 8
#: the chord to the full model skips the points of the line's last pass (and of its redo)
#: whose cheap path did not converge on the physical branch: they are left to the fallbacks
#: whatever it gives (False: every point; the subset's points keep it either way, as the
#: others' starts)
CHORD_OK0 = True


def sym_jacobian(residual, x: np.ndarray, z: np.ndarray, F0: np.ndarray) -> np.ndarray:
    """The finite-difference Jacobian of a V-part residual at ``x = (tau (K), V1 (K^2))``: it
    sees ``V1`` through ``V1 . mub1 mub1^T`` and in ``e2 = V1 - Vb``, so the columns of
    ``V1_ab`` and ``V1_ba`` differ by that identity only (K + K(K+1)/2 evaluations)."""
    q = x.shape[1]
    K = int(round((-1.0 + (1.0 + 4.0 * q) ** 0.5) / 2.0))
    J = np.empty(x.shape + (q,), dtype=np.complex128)
    cols = list(range(K)) + [K + a * K + b for a in range(K) for b in range(a, K)]
    for j in cols:
        h = 1e-7 * (1.0 + np.abs(x[:, j]))
        J[:, :, j] = (residual(x + h[:, None] * (np.arange(q) == j), z) - F0) / h[:, None]
        net_line.mirror_column(J, j, K)
    return J


class SymSolver(Solver):
    """:class:`~asymptotics.spectra.law.Solver` with the Jacobian ``jac(x, z)`` (analytic) when
    given, else of :func:`sym_jacobian`."""

    jac = None

    def _jacobian_fd(self, x: np.ndarray, z: np.ndarray, F: np.ndarray) -> np.ndarray:
        if self.jac is not None:
            return self.jac(x, z)
        return sym_jacobian(self.residual, x, z, F)

    def jacobian(self, x: np.ndarray, z: np.ndarray) -> np.ndarray:
        """The residual's Jacobian at the rows of ``x``."""
        if self.jac is not None:
            return self.jac(x, z)
        return sym_jacobian(self.residual, x, z, self.residual(x, z))


def _subset(xs: np.ndarray, h: float) -> np.ndarray:
    """Indices into the sorted ``xs``: the first, the last, and in between a point whenever the
    next one would be more than ``h`` past the last kept (every gap between kept points is at
    most ``h``, or one step of ``xs``)."""
    keep = [0]
    last = xs[0]
    for i in range(1, xs.size - 1):
        if xs[i + 1] - last > h:
            keep.append(i)
            last = xs[i]
    keep.append(xs.size - 1)
    return np.unique(np.array(keep, dtype=np.int64))


def _interp(xs: np.ndarray, xk: np.ndarray, Xk: np.ndarray) -> np.ndarray:
    """The rows ``Xk`` (at the sorted points ``xk``) interpolated linearly to ``xs``."""
    if xk.size == 1:
        return np.repeat(Xk, xs.size, axis=0)
    j = np.clip(np.searchsorted(xk, xs) - 1, 0, xk.size - 2)
    w = ((xs - xk[j]) / (xk[j + 1] - xk[j]))[:, None]
    return Xk[j] * (1.0 - w) + Xk[j + 1] * w


class PathSolver(SymSolver):
    last_inverse = None  # (z, H) of the last solve: its last stage's inverse Jacobians

    """:class:`SymSolver` whose path (as :meth:`asymptotics.spectra.law.Solver.solve`) solves,
    at the stages of large Im z, only a subset of the points (:data:`SUBSET_SPACING`): there
    the solution is smooth along Re z on the points' spacing, so the skipped points start the
    next stage from the linear interpolation of the subset's solutions. The last stages solve
    every point as the plain path does; a stage whose subset does not converge everywhere
    falls back to the plain path."""

    def solve(self, z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        z = np.atleast_1d(np.asarray(z, dtype=np.complex128))
        n = z.shape[0]
        self.last_inverse = None
        xr, yt = z.real, np.maximum(z.imag, Y_END * self.scale)
        if n < SUBSET_MIN or float(np.ptp(yt)) > 0.0 or not np.all(np.isfinite(z)):
            return Solver.solve(self, z)
        order = np.argsort(xr, kind="stable")
        xs, y_end = xr[order], float(yt[0])
        y = max(Y_START * self.scale, y_end)
        sub = None  # the previous stage's subset (sorted indices) and its solutions
        X = H = None
        ok = np.ones(n, dtype=bool)
        tol = self.tol
        try:
            while True:
                last = y <= y_end
                self.tol = tol if last else max(tol, STAGE_TOL)
                # (once a stage solves every point, so do the later ones: y only shrinks)
                pick = (None if last or (X is not None and sub is None)
                        else _subset(xs, SUBSET_SPACING * y))
                if pick is not None and (2 * pick.size > n
                                         or not np.all(np.diff(xs[pick]) > 0.0)):
                    pick = None
                pts = xs if pick is None else xs[pick]
                zs = pts + 1j * max(y, y_end)
                if sub is None and X is None:
                    x0 = self.start(zs)
                elif sub is None:
                    x0 = X
                else:
                    x0 = _interp(pts, xs[sub[0]], sub[1])
                if pick is None and X is not None and H is not None and CARRY:
                    Xs, ok_s, H = self._carried(x0, zs, H)
                elif pick is None:
                    carry: dict = {}
                    Xs, ok_s = self._newton(x0, zs, carry)
                    H = carry.get("H")
                else:
                    Xs, ok_s = self._newton(x0, zs)
                if pick is not None:
                    if not np.all(ok_s):
                        self.tol = tol
                        return Solver.solve(self, z)
                    sub = (pick, Xs)
                else:
                    sub, X = None, Xs
                    ok &= ok_s
                if last:
                    break
                y *= SHRINK
        finally:
            self.tol = tol
        x = np.empty_like(X)
        x[order] = X
        okr = np.empty_like(ok)
        okr[order] = ok
        if H is not None:  # the last stage's inverse Jacobians (the chord's start)
            self.last_inverse = (z.copy(), np.empty_like(H))
            self.last_inverse[1][order] = H
        m = self.stieltjes(x)
        okr &= np.isfinite(m) & (m.imag >= -1e-9 * np.abs(m))
        return x, okr


    def _carried(self, x0: np.ndarray, z: np.ndarray, H: np.ndarray) -> tuple:
        """One stage from the inverse Jacobians ``H`` (NaN rows: none) by Broyden's steps, with
        the checks of :data:`CARRY`; the points that fail them redo the stage from ``x0`` with
        a new Jacobian. The solutions, converged flags and the inverse Jacobians after it."""
        n = x0.shape[0]
        x, H = x0.copy(), H.copy()
        ok = np.zeros(n, dtype=bool)
        act = np.nonzero(np.all(np.isfinite(H), axis=(1, 2)))[0]
        fail = np.ones(n, dtype=bool)
        fail[act] = False
        F = self.residual(x[act], z[act]) if act.size else None
        size_old = None
        for k in range(CARRY_STEPS):
            if act.size == 0:
                break
            Ha = H[act]
            dx = -np.einsum("xij,xj->xi", Ha, F)
            bad = ~np.all(np.isfinite(dx), axis=1)
            dx[bad] = 0.0
            x[act] += dx
            size = np.max(np.abs(dx), axis=1) / (1.0 + np.max(np.abs(x[act]), axis=1))
            lim = CARRY_MOVE if size_old is None else CARRY_RATE * size_old
            bad |= ~(size <= lim)
            done = (size < self.tol) & ~bad
            ok[act[done]] = True
            fail[act[bad]] = True
            keep = ~done & ~bad
            if k == CARRY_STEPS - 1:
                fail[act[keep]] = True
                break
            act, Ha, F, dx, size_old = act[keep], Ha[keep], F[keep], dx[keep], size[keep]
            if act.size == 0:
                break
            Fn = self.residual(x[act], z[act])
            H[act] = broyden_inverse(Ha, dx, Fn - F, np.all(np.isfinite(Fn), axis=1))
            F = Fn
        redo = np.nonzero(fail)[0]
        if redo.size:
            carry: dict = {}
            x[redo], ok[redo] = self._newton(x0[redo], z[redo], carry)
            H[redo] = carry.get("H", np.full((redo.size,) + H.shape[1:], np.nan + 0j))
        return x, ok, H


class ChordPolish(SymSolver):
    """The full model ``exact`` started from the cheap model ``approx`` at the final z (as
    :class:`asymptotics.spectra.weights.PolishedSolver`), polished by a chord iteration: the
    Jacobian of the cheap model at its own end point, factored once, and one evaluation of the
    full model per step (the two Jacobians are close, so it converges linearly and fast); the
    points where it fails (not converged, or m moved by more than 10%) take the full model's
    whole path (Newton). ``medium`` (optional): a model between the two (the same directions
    without the off-diagonal parts), reached by the chord from ``approx`` first; its Jacobian
    then drives the chord to ``exact``, which converges in a few steps."""

    def __init__(self, exact: Solver, approx: Solver, medium: Solver | None = None) -> None:
        super().__init__(exact.residual, exact.start, exact.stieltjes, exact.scale)
        self.approx, self.medium = approx, medium
        self.jac = getattr(exact, "jac", None)
        self.broyden = BROYDEN

    def _chord(self, x: np.ndarray, z: np.ndarray, residual=None, model=None,
               tol: float = NEWTON_TOL, Jinv: np.ndarray | None = None
               ) -> tuple[np.ndarray, np.ndarray]:
        """The chord iteration on ``residual`` (default: the full model) with the Jacobian of
        the solver ``model`` (default: ``approx``) at the start ``x``, to the relative
        tolerance ``tol``; ``Jinv``: its inverse given (rows with NaN: computed)."""
        residual = self.residual if residual is None else residual
        model = self.approx if model is None else model
        x = x.copy()
        ok = np.zeros(z.shape[0], dtype=bool)
        Jinv = None if Jinv is None else Jinv.copy()
        new = (np.arange(z.shape[0]) if Jinv is None
               else np.nonzero(~np.all(np.isfinite(Jinv), axis=(1, 2)))[0])
        try:
            if Jinv is None:
                Jinv = np.linalg.inv(model.jacobian(x, z))
            elif new.size:
                Jinv[new] = np.linalg.inv(model.jacobian(x[new], z[new]))
        except np.linalg.LinAlgError:
            return x, ok
        act = np.arange(z.shape[0])
        F_old = dx_old = size_old = None
        grown = np.zeros(z.shape[0], dtype=np.int64)  # the steps that did not shrink (STALL)
        for _ in range(NEWTON_MAX):
            F = residual(x[act], z[act])
            if self.broyden and F_old is not None:  # Broyden's update of the inverse
                y = F - F_old
                Jinv[act] = broyden_inverse(Jinv[act], dx_old, y, np.all(np.isfinite(y), axis=1),
                                            floor=1e-30)
            dx = -np.einsum("xij,xj->xi", Jinv[act], F)
            bad = ~np.all(np.isfinite(dx), axis=1)
            dx[bad] = 0.0
            x[act] += dx
            size = np.max(np.abs(dx), axis=1) / (1.0 + np.max(np.abs(x[act]), axis=1))
            # done: the step, or the error left after it (the step times q/(1 - q), q the
            # contraction measured from the last two steps, when below 1/2), under the tol
            q = size / size_old[act] if size_old is not None else np.ones_like(size)
            left = np.where(q < 0.5, size * q / np.maximum(1.0 - q, 0.5), size)
            done = ((size < tol) | (left < tol)) & ~bad
            ok[act[done]] = True
            if STALL and size_old is not None:
                grown[act] += (size >= size_old[act]) & (size > STALL_FLOOR)
            keep = ~done & ~bad & (grown[act] < STALL_GROWTHS if STALL else True)
            if size_old is None:
                size_old = np.full(z.shape[0], np.inf)
            size_old[act] = size
            act, F_old, dx_old = act[keep], F[keep], dx[keep]
            if act.size == 0:
                break
        return x, ok

    def _chord_full(self, x: np.ndarray, z: np.ndarray, skip: np.ndarray | None = None
                    ) -> tuple[np.ndarray, np.ndarray]:
        """The chord from the commuting model's solutions ``x`` to the full model with its
        Jacobian (:data:`CHORD_SUBSET`: on a subset first, the others from the subset's
        corrections interpolated along Re z); ``skip``: the points (a mask) left out of the
        last pass and the redo (:data:`CHORD_OK0`), not converged."""
        n = z.shape[0]
        if not CHORD_SUBSET or n < SUBSET_MIN or float(np.ptp(z.imag)) > 0.0:
            return self._chord(x, z, self.residual, self.medium)
        order = np.argsort(z.real, kind="stable")
        pick = np.zeros(n, dtype=bool)
        pick[::CHORD_EVERY] = True
        pick[-1] = True
        sub, rest = order[pick], order[~pick]
        skip = np.zeros(n, dtype=bool) if skip is None else skip
        rest = rest[~skip[rest]]
        done = (net_line.line_chord(self, x, z, sub, rest)
                if net_line.JAC_DIFF and n >= net_line.JAC_MIN else None)
        if done is not None:  # (the Jacobian difference carried along the line)
            out, ok = done
        else:
            out, ok = x.copy(), np.zeros(n, dtype=bool)
            out[sub], ok[sub] = self._chord(x[sub], z[sub], self.residual, self.medium)
        good = sub[ok[sub]]
        if done is None and good.size >= 2 and np.all(np.diff(z.real[good]) > 0.0):
            xr, xk = z.real[rest], z.real[good]
            j = np.clip(np.searchsorted(xk, xr) - 1, 0, xk.size - 2)
            w = np.clip((xr - xk[j]) / (xk[j + 1] - xk[j]), 0.0, 1.0)
            corr = out[good] - x[good]
            x0 = x[rest] + corr[j] * (1.0 - w[:, None]) + corr[j + 1] * w[:, None]
            out[rest], ok[rest] = self._chord(x0, z[rest], self.residual, self.medium)
        redo = np.nonzero(~ok & ~skip)[0]
        if redo.size:  # (the plain chord from the commuting model's solutions)
            out[redo], ok[redo] = self._chord(x[redo], z[redo], self.residual, self.medium)
        return out, ok

    def solve(self, z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        z = np.atleast_1d(np.asarray(z, dtype=np.complex128))
        zt = z.real + 1j * np.maximum(z.imag, Y_END * self.scale)
        x0, ok0 = self.approx.solve(z)
        H0 = None  # the path's last inverse Jacobians, when it kept them for these z
        last = getattr(self.approx, "last_inverse", None)
        if REUSE_INVERSE and self.medium is not None and last is not None and \
                last[0].shape == z.shape and np.array_equal(last[0], z):
            H0 = last[1]
        if self.medium is None:
            x, ok = self._chord(x0, zt, Jinv=H0)
        else:
            x, ok = self._chord(x0, zt, self.medium.residual, tol=MEDIUM_TOL, Jinv=H0)
            go = np.nonzero(ok)[0]
            if go.size:
                x[go], ok[go] = self._chord_full(x[go], zt[go], ~ok0[go] if CHORD_OK0 else None)
        m, m0 = self.stieltjes(x), self.stieltjes(x0)
        ok &= ok0 & np.isfinite(m) & (m.imag >= -1e-9 * np.abs(m))
        ok &= np.abs(m - m0) <= 0.1 * np.abs(m0)
        bad = np.nonzero(~ok)[0]
        if bad.size and self.medium is not None:  # (from the converged neighbours first)
            bad = net_line.neighbour_chord(self, x, ok, zt, bad)
        if bad.size and self.medium is not None:  # the medium model's path, then the chord
            xb, okb = self.medium.solve(z[bad])
            go = bad[okb]
            if go.size:
                x[go], ok[go] = self._chord(xb[okb], zt[go], self.residual,
                                            self.medium)
                m = self.stieltjes(x[go])
                ok[go] &= np.isfinite(m) & (m.imag >= -1e-9 * np.abs(m))
                ok[go] &= np.abs(m - self.stieltjes(xb[okb])) <= 0.1 * np.abs(m)
            bad = np.nonzero(~ok)[0]
        if bad.size:
            self._staged = STAGE_MEDIUM and self.medium is not None
            try:
                xb, okb = Solver.solve(self, z[bad])
            finally:
                self._staged = False
            x[bad], ok[bad] = xb, okb
        return x, ok

    _staged = False  # in the full model's whole path (STAGE_MEDIUM)

    def _broyden(self, x: np.ndarray, z: np.ndarray, H0: np.ndarray | None = None) -> tuple:
        """:meth:`~asymptotics.spectra.law.Solver._broyden`; in the whole path of
        :data:`STAGE_MEDIUM`, from the inverse of the commuting model's Jacobian at ``x``."""
        if self._staged and H0 is None and x.shape[0]:
            try:
                H0 = np.linalg.inv(self.medium.jacobian(x, z))
            except np.linalg.LinAlgError:
                H0 = None
        return super()._broyden(x, z, H0)
