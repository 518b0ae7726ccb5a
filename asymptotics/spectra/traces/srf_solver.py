"""The sRF features' V-part solver (docs/THEORY.md §16.1) on the compiled kernels of
:mod:`asymptotics.spectra.traces.srf_kernels`: the residual in one pass over the nodes a point
and the path's Jacobians exact (one pass with the second-order node sums) instead of q + 1
residuals by forward differences. While the kernels are not compiled (a cold cache), the numpy
residual and its forward-difference Jacobian run, and one tiny call queues the compilation."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from asymptotics.core import coldstart
from asymptotics.spectra import law
from asymptotics.spectra.traces import srf_scan
from asymptotics.spectra.traces.srf_kernels import srf_broyden, srf_jacobian, srf_residual

#: use the kernels once they are compiled (False: the numpy residual and the forward-difference
#: Jacobian, the former path; the benchmark compares both in one run)
KERNELS = True
#: the real branch's Jacobian (spectra/branch.py) exact from the kernel (False: its forward
#: differences, the former path)
EXACT_BRANCH = True

def compiled(disp, args: tuple, tiny: tuple | None = None) -> bool:
    """Whether ``disp(*args)`` runs compiled (here or in numba's cache); otherwise one call on
    the first row (or ``tiny``) queues its compilation (:mod:`asymptotics.core.coldstart`)."""
    small = tiny or args
    return coldstart.kernel_ready(
        disp, args, lambda: disp(np.ascontiguousarray(small[0][:1]),
                                 np.ascontiguousarray(small[1][:1]), *small[2:]),
        compile_mode_ready=True)


def basis(mb1: np.ndarray, ms2: np.ndarray) -> tuple:
    """``(basT, sym, prodT, pk, pm)``: the nodes' basis ``(mub1_a mub1_b (a <= b), mus2_g)``
    (nb, nodes), the basis index ``sym[a, b]`` of each pair (symmetric), and the products
    ``b_pk b_pm`` (pk <= pm) on the nodes (the Jacobian's second-order sums)."""
    K = mb1.shape[1]
    sym = np.empty((K, K), dtype=np.int64)
    cols = []
    for a in range(K):
        for b in range(a, K):
            sym[a, b] = sym[b, a] = len(cols)
            cols.append(mb1[:, a] * mb1[:, b])
    basT = np.ascontiguousarray(np.concatenate([np.stack(cols), ms2.T]), dtype=np.float64)
    pk, pm = (np.ascontiguousarray(i, dtype=np.int64) for i in np.triu_indices(basT.shape[0]))
    prodT = np.ascontiguousarray(basT[pk] * basT[pm])
    return basT, sym, prodT, pk, pm


class SrfSolver(law.Solver):
    """:class:`~asymptotics.spectra.law.Solver` of the sRF features' V-part with the compiled
    residual, exact Jacobian and Broyden steps (``residual_np``: the numpy residual, used
    until they are compiled)."""

    def __init__(self, residual_np: Callable, start: Callable, stieltjes: Callable,
                 scale: float, *, pi: np.ndarray, beta: float, A: float, w: np.ndarray,
                 mb1: np.ndarray, ms2: np.ndarray) -> None:
        super().__init__(self._residual, start, stieltjes, scale)
        self.scan = srf_scan.scan  # the component search's coarse first pass
        self.linear = True  # m = tau . pi
        self.residual_np = residual_np
        basT, sym, prodT, pk, pm = basis(mb1, ms2)
        self._args = (np.ascontiguousarray(pi, dtype=np.float64), float(beta), float(A), basT,
                      np.ascontiguousarray(w, dtype=np.float64), sym, prodT, pk, pm)

    def _ready(self, disp, x: np.ndarray, z: np.ndarray) -> bool:
        return KERNELS and compiled(disp, (x, z, *self._args))

    def _residual(self, x: np.ndarray, z: np.ndarray) -> np.ndarray:
        if x.shape[0] == 0:
            return np.empty(x.shape, dtype=np.complex128)
        x = np.ascontiguousarray(x, dtype=np.complex128)
        z = np.ascontiguousarray(z, dtype=np.complex128)
        if self._ready(srf_residual, x, z):
            return srf_residual(x, z, *self._args)
        return self.residual_np(x, z)

    def _jacobian_fd(self, x: np.ndarray, z: np.ndarray, F: np.ndarray) -> np.ndarray:
        if x.shape[0] == 0:
            return np.empty(x.shape + x.shape[1:], dtype=np.complex128)
        x = np.ascontiguousarray(x, dtype=np.complex128)
        z = np.ascontiguousarray(z, dtype=np.complex128)
        if self._ready(srf_jacobian, x, z):
            return srf_jacobian(x, z, *self._args)[1]
        return super()._jacobian_fd(x, z, F)

    def real_jacobian(self, u: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
        """``(G, dG/du)`` of :func:`asymptotics.spectra.branch._eval` at real ``u = (x, lam)``
        exactly: ``G = (F(x, lam), tau . pi)``; dF/dx the kernel's Jacobian, dF/dlam = -tau in
        the rows of e1 (e1_g = tau_g (-z + ...) - 1), d(tau . pi) = pi (None: not compiled)."""
        out = self.real_jacobians(u[None])
        return None if out is None else (out[0][0], out[1][0])

    def real_jacobians(self, U: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
        """:meth:`real_jacobian` at the rows of ``U`` (n, q + 1) in one kernel call: (n, q + 1)
        and (n, q + 1, q + 1) (each row's numbers as alone)."""
        n, q = U.shape[0], U.shape[1] - 1
        pi = self._args[0]
        K = pi.shape[0]
        x = np.ascontiguousarray(U[:, :q], dtype=np.complex128)
        z = np.ascontiguousarray(U[:, q], dtype=np.complex128)
        if not (EXACT_BRANCH and self._ready(srf_jacobian, x, z)):
            return None
        F, J = srf_jacobian(x, z, *self._args)
        D = np.zeros((n, q + 1, q + 1))
        D[:, :q, :q] = J.real
        D[:, :K, q] = -U[:, :K]
        D[:, q, :K] = pi
        G = np.empty((n, q + 1))
        G[:, :q] = F.real
        for r in range(n):  # (row by row: the same sums as alone)
            G[r, q] = U[r, :K] @ pi
        return G, D

    def _broyden(self, x: np.ndarray, z: np.ndarray, H0: np.ndarray | None = None
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """:meth:`~asymptotics.spectra.law.Solver._broyden` compiled point by point
        (:func:`~asymptotics.spectra.traces.srf_kernels.srf_broyden`) when it starts from the
        Jacobian at ``x`` (``H0`` None)."""
        if H0 is not None or x.shape[0] == 0:
            return super()._broyden(x, z, H0)
        x = np.ascontiguousarray(x, dtype=np.complex128)
        z = np.ascontiguousarray(z, dtype=np.complex128)
        args = (x, z, float(self.tol), int(law.QUASI_MAX), *self._args)
        if not (KERNELS and compiled(srf_broyden, args, args[:3] + (0,) + args[4:])):
            return super()._broyden(x, z, H0)
        return srf_broyden(*args)
