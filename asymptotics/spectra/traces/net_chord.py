"""The chord polish of :mod:`asymptotics.spectra.netbulk` (docs/THEORY.md §16.8): the V-part's
Jacobian with one difference quotient for the columns of ``V1_ab`` and ``V1_ba``
(:func:`sym_jacobian`), the solver using it (:class:`SymSolver`) and :class:`ChordPolish`, the full
model started from a cheap model's path and polished by chord steps with Broyden's updates."""

from __future__ import annotations

import numpy as np

from asymptotics.spectra.law import NEWTON_MAX, NEWTON_TOL, Y_END, Solver

#: the chord's inverse Jacobian takes Broyden's rank-one updates (superlinear instead of linear)
BROYDEN = True
#: the chord's tolerance on the commuting model with every direction (its solution only starts
#: the chord to the full model, which converges from ~1e-4 away in a few steps)
MEDIUM_TOL = 1e-8


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
        a, b = divmod(j - K, K)
        if j >= K and a != b:
            jt = K + b * K + a
            J[:, :, jt] = J[:, :, j]
            J[:, j, jt] -= 1.0
            J[:, jt, jt] += 1.0
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
               tol: float = NEWTON_TOL) -> tuple[np.ndarray, np.ndarray]:
        """The chord iteration on ``residual`` (default: the full model) with the Jacobian of
        the solver ``model`` (default: ``approx``) at the start ``x``, to the relative
        tolerance ``tol``."""
        residual = self.residual if residual is None else residual
        model = self.approx if model is None else model
        x = x.copy()
        ok = np.zeros(z.shape[0], dtype=bool)
        try:
            Jinv = np.linalg.inv(model.jacobian(x, z))
        except np.linalg.LinAlgError:
            return x, ok
        act = np.arange(z.shape[0])
        F_old = dx_old = size_old = None
        for _ in range(NEWTON_MAX):
            F = residual(x[act], z[act])
            if self.broyden and F_old is not None:  # Broyden's update of the inverse
                H = Jinv[act]
                y = F - F_old
                Hy = np.einsum("xij,xj->xi", H, y)
                sH = np.einsum("xi,xij->xj", dx_old, H)
                den = np.einsum("xi,xi->x", dx_old, Hy)
                use = np.isfinite(den) & (np.abs(den) > 1e-30) & np.all(np.isfinite(y), axis=1)
                den = np.where(use, den, 1.0)
                upd = (dx_old - Hy)[:, :, None] * sH[:, None, :] / den[:, None, None]
                Jinv[act] = H + np.where(use[:, None, None], upd, 0.0)
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
            keep = ~done & ~bad
            if size_old is None:
                size_old = np.full(z.shape[0], np.inf)
            size_old[act] = size
            act, F_old, dx_old = act[keep], F[keep], dx[keep]
            if act.size == 0:
                break
        return x, ok

    def solve(self, z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        z = np.atleast_1d(np.asarray(z, dtype=np.complex128))
        zt = z.real + 1j * np.maximum(z.imag, Y_END * self.scale)
        x0, ok0 = self.approx.solve(z)
        if self.medium is None:
            x, ok = self._chord(x0, zt)
        else:
            x, ok = self._chord(x0, zt, self.medium.residual, tol=MEDIUM_TOL)
            go = np.nonzero(ok)[0]
            if go.size:
                x[go], ok[go] = self._chord(x[go], zt[go], self.residual, self.medium)
        m, m0 = self.stieltjes(x), self.stieltjes(x0)
        ok &= ok0 & np.isfinite(m) & (m.imag >= -1e-9 * np.abs(m))
        ok &= np.abs(m - m0) <= 0.1 * np.abs(m0)
        bad = np.nonzero(~ok)[0]
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
            xb, okb = Solver.solve(self, z[bad])
            x[bad], ok[bad] = xb, okb
        return x, ok
