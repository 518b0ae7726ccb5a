"""The row-variance MP law's solver (docs/THEORY.md §16.6,
:func:`asymptotics.spectra.weights.rowvar_solver`) with the path's Broyden steps compiled point
by point: the unknowns ``x = (m_t, m)`` of

    e0 = m_t (-z + beta sum_k w_k c_k/(1 + c_k m_t)) - 1,   e1 = z m + sum_k w_k/(1 + c_k m_t),

whose Jacobian is lower triangular (``de0/dm = 0``), exact here (``J00 = -z + beta S1 - m_t
beta sum_k w_k c_k^2/q_k^2``, ``J10 = -sum_k w_k c_k/q_k^2``, ``J11 = z``; ``q_k = 1 + c_k
m_t``) where the numpy path takes forward differences. While the kernel is not compiled (a cold
cache) the numpy steps run, and one tiny call queues its compilation."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from asymptotics.core.coldstart import kernel
from asymptotics.spectra import law
from asymptotics.spectra.traces.srf_solver import compiled

#: the path's Broyden steps compiled (False: the numpy steps, the former path)
KERNELS = True
#: the real branch's Jacobian (spectra/branch.py) exact (False: forward differences, the former
#: path)
EXACT_BRANCH = True


@kernel(cache=True, error_model="numpy")
def _row(mt: complex, m: complex, z: complex, c: np.ndarray, w: np.ndarray, wc: np.ndarray,
         beta: float, H: np.ndarray, jac: bool) -> tuple:
    """Kernel: ``(e0, e1)`` at one point and, with ``jac``, the inverse of the exact (lower
    triangular) Jacobian in ``H``."""
    s1, s0, d1, d0 = 0j, 0j, 0j, 0j
    for k in range(c.shape[0]):
        q = 1.0 + c[k] * mt
        s1 += wc[k] / q
        s0 += w[k] / q
        if jac:
            d1 += wc[k] * c[k] / (q * q)
            d0 += wc[k] / (q * q)
    e0 = mt * (-z + beta * s1) - 1.0
    e1 = z * m + s0
    if jac:
        j00 = -z + beta * s1 - mt * beta * d1
        h00 = 1.0 / j00
        h11 = 1.0 / z
        H[0, 0] = h00
        H[0, 1] = 0j
        H[1, 0] = d0 * h00 * h11  # -J10 / (J00 J11), J10 = -sum w c/q^2 (wc = w c)
        H[1, 1] = h11
    return e0, e1


@kernel(cache=True, error_model="numpy")
def rowvar_broyden(x: np.ndarray, z: np.ndarray, tol: float, steps: int, c: np.ndarray,
                   w: np.ndarray, wc: np.ndarray, beta: float) -> tuple:
    """Kernel: :meth:`asymptotics.spectra.law.Solver._broyden` point by point for the
    row-variance law (the same steps: the inverse Jacobian at ``x``, here exact, then at most
    ``steps`` rank-one updates of it, one residual a step, until the relative step
    ``max|dx|/(1 + max|x|) < tol``; a step not finite stops the point unconverged):
    ``(x, ok, H)``."""
    Np = x.shape[0]
    xo = x.copy()
    ok = np.zeros(Np, dtype=np.bool_)
    Hall = np.empty((Np, 2, 2), dtype=np.complex128)
    H = np.empty((2, 2), dtype=np.complex128)
    F = np.empty(2, dtype=np.complex128)
    dx = np.empty(2, dtype=np.complex128)
    Hy = np.empty(2, dtype=np.complex128)
    sH = np.empty(2, dtype=np.complex128)
    for p in range(Np):
        x0, x1, zp = x[p, 0], x[p, 1], z[p]
        F[0], F[1] = _row(x0, x1, zp, c, w, wc, beta, H, np.bool_(True))  # (one signature)
        for _ in range(steps):
            bad = False
            for i in range(2):
                s = -(H[i, 0] * F[0] + H[i, 1] * F[1])
                dx[i] = s
                if not (np.isfinite(s.real) and np.isfinite(s.imag)):
                    bad = True
            big_dx, big_x = 0.0, 0.0
            if not bad:
                x0 += dx[0]
                x1 += dx[1]
                big_dx = max(abs(dx[0]), abs(dx[1]))
                big_x = max(abs(x0), abs(x1))
            for i in range(2):
                for j in range(2):
                    Hall[p, i, j] = H[i, j]
            if bad:
                break
            if big_dx / (1.0 + big_x) < tol:
                ok[p] = True
                break
            f0, f1 = _row(x0, x1, zp, c, w, wc, beta, H, np.bool_(False))
            y0, y1 = f0 - F[0], f1 - F[1]
            den = 0j
            for i in range(2):
                Hy[i] = H[i, 0] * y0 + H[i, 1] * y1
                den += dx[i] * Hy[i]
            fin = (np.isfinite(f0.real) and np.isfinite(f0.imag) and np.isfinite(f1.real)
                   and np.isfinite(f1.imag))
            if fin and np.isfinite(den.real) and np.isfinite(den.imag) and abs(den) > 1e-300:
                for j in range(2):
                    sH[j] = dx[0] * H[0, j] + dx[1] * H[1, j]
                for i in range(2):
                    f = (dx[i] - Hy[i]) / den
                    for j in range(2):
                        H[i, j] += f * sH[j]
            F[0], F[1] = f0, f1
        xo[p, 0], xo[p, 1] = x0, x1
    return xo, ok, Hall


@kernel(cache=True, error_model="numpy")
def rowvar_real(U: np.ndarray, c: np.ndarray, w: np.ndarray, wc: np.ndarray, beta: float
                ) -> tuple:
    """Kernel: ``(G, dG/du)`` of :func:`asymptotics.spectra.branch._eval` at each real row
    ``u = (m_t, m, lam)`` of ``U`` exactly: ``G = (e0, e1, m)`` at z = lam, the Jacobian's rows
    ``(J00, 0, -m_t)``, ``(J10, lam, m)``, ``(0, 1, 0)``."""
    n = U.shape[0]
    G = np.empty((n, 3))
    D = np.zeros((n, 3, 3))
    for r in range(n):
        mt, m, lam = U[r, 0], U[r, 1], U[r, 2]
        s1, s0, d1, d0 = 0.0, 0.0, 0.0, 0.0
        for k in range(c.shape[0]):
            q = 1.0 + c[k] * mt
            s1 += wc[k] / q
            s0 += w[k] / q
            d1 += wc[k] * c[k] / (q * q)
            d0 += wc[k] / (q * q)
        G[r, 0] = mt * (-lam + beta * s1) - 1.0
        G[r, 1] = lam * m + s0
        G[r, 2] = m
        D[r, 0, 0] = -lam + beta * s1 - mt * beta * d1
        D[r, 0, 2] = -mt
        D[r, 1, 0] = -d0
        D[r, 1, 1] = lam
        D[r, 1, 2] = m
        D[r, 2, 1] = 1.0
    return G, D


class RowvarSolver(law.Solver):
    """:class:`~asymptotics.spectra.law.Solver` of the row-variance law with the path's
    Broyden steps compiled (:func:`rowvar_broyden`; the numpy ``residual`` for the rest)."""

    def __init__(self, residual: Callable, start: Callable, stieltjes: Callable, scale: float,
                 *, c: np.ndarray, w: np.ndarray, beta: float) -> None:
        super().__init__(residual, start, stieltjes, scale)
        # writable C arrays (a read-only c, e.g. a cached one, is copied): one compiled signature
        c = np.require(c, np.float64, "CW")
        w = np.require(w, np.float64, "CW")
        self._args = (c, w, np.ascontiguousarray(w * c), float(beta))

    def _broyden(self, x: np.ndarray, z: np.ndarray, H0: np.ndarray | None = None
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """:meth:`~asymptotics.spectra.law.Solver._broyden` compiled point by point
        (:func:`rowvar_broyden`) when it starts from the Jacobian at ``x`` (``H0`` None)."""
        if H0 is not None or x.shape[0] == 0 or not KERNELS:
            return super()._broyden(x, z, H0)
        x = np.ascontiguousarray(x, dtype=np.complex128)
        z = np.ascontiguousarray(z, dtype=np.complex128)
        args = (x, z, float(self.tol), int(law.QUASI_MAX), *self._args)
        if not compiled(rowvar_broyden, args, args[:3] + (0,) + args[4:]):
            return super()._broyden(x, z, self.inverse_jacobian(x, z))
        return rowvar_broyden(*args)

    def inverse_jacobian(self, x: np.ndarray, z: np.ndarray) -> np.ndarray:
        """The inverse of the exact (lower triangular) Jacobian at each row of ``x`` (n, 2,
        2), as :func:`_row` gives it: the numpy steps start where the kernel's do (forward
        differences there moved densities by ~1e-12 and overlaps by ~1e-10; THEORY §16.8)."""
        c, w, wc, beta = self._args
        mt, z = x[:, 0], np.asarray(z, dtype=np.complex128)
        q = 1.0 + c[None, :] * mt[:, None]
        s1 = (wc[None, :] / q).sum(axis=1)
        d1 = (wc[None, :] * c[None, :] / (q * q)).sum(axis=1)
        d0 = (wc[None, :] / (q * q)).sum(axis=1)
        h00 = 1.0 / (-z + beta * s1 - mt * beta * d1)
        h11 = 1.0 / z
        H = np.zeros((x.shape[0], 2, 2), dtype=np.complex128)
        H[:, 0, 0], H[:, 1, 0], H[:, 1, 1] = h00, d0 * h00 * h11, h11
        return H

    def real_jacobian(self, u: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
        """``(G, dG/du)`` of :func:`asymptotics.spectra.branch._eval` at real ``u = (m_t, m,
        lam)`` exactly (:func:`rowvar_real`, interpreted while not compiled; None: the
        exact branch off, forward differences)."""
        out = self.real_jacobians(u[None])
        return None if out is None else (out[0][0], out[1][0])

    def real_jacobians(self, U: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
        """:meth:`real_jacobian` at the rows of ``U`` (n, 3) in one kernel call; while the
        kernel is not compiled, its source run interpreted (the same exact Jacobian: forward
        differences there made the lower edge's fold fail and the grid passes give it, 1.3%
        off, in a process with a cold kernel; THEORY §16.8)."""
        if not (KERNELS and EXACT_BRANCH):
            return None
        U = np.ascontiguousarray(U, dtype=np.float64)
        args = (U, *self._args)
        if not compiled(rowvar_real, args):
            return rowvar_real.py_func(*args)
        return rowvar_real(*args)
