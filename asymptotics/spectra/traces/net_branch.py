"""The exact real Jacobian of the network features' V-part residual on the real axis, for the
real branch of :mod:`asymptotics.spectra.branch` (docs/THEORY.md §16.10), by the complex step.

At real ``u = (x, lam)`` outside the support the residual ``F(x, lam)`` of
:func:`asymptotics.spectra.netbulk.outside_solver` is real (every operation is complex
arithmetic on real numbers: the imaginary parts are exactly 0) and analytic in ``x``, so

    dF/dx_j = Im F(x + i h e_j) / h + O(h^2)

with no difference taken: at ``h = 1e-20 (1 + |x_j|)`` the ``O(h^2)`` term is ~1e-40 relative,
below rounding, and the column is exact to rounding (a forward difference at step 1e-7 is
~1e-8 off). The columns of ``V1_ab`` and ``V1_ba`` differ by the identity of ``e2 = V1 - Vb``
only (the residual sees ``V1`` through ``V1 . mub1 mub1^T``: as
:func:`~asymptotics.spectra.traces.net_chord.sym_jacobian`), so K + K (K + 1)/2 complex-step
rows a point (9 for K = 3, against the forward differences' q + 2 = 14); ``dF/dlam = -tau`` in
the rows of ``e1`` (``e1_g = tau_g (-lam + v2 + e) - 1``), ``d(tau . pi) = pi``. ``F(x, lam)``
itself is the real part of the first row (its change ``O(h^2)`` is below rounding)."""

from __future__ import annotations

import numpy as np

#: the branch's Jacobian by the complex step (False: the forward differences of
#: :func:`asymptotics.spectra.branch._eval`, the former method)
EXACT_BRANCH = True
#: the complex step, relative to ``1 + |u_j|``
H_CS = 1e-20


def sym_columns(K: int) -> list[int]:
    """The unknowns stepped: ``tau`` (K), then ``V1_ab`` for ``a <= b`` (row-major ``V1``)."""
    return list(range(K)) + [K + a * K + b for a in range(K) for b in range(a, K)]


def real_jacobians(residual, pi: np.ndarray, U: np.ndarray, block_min: int = 1
                   ) -> tuple[np.ndarray, np.ndarray]:
    """``(G, dG/du)`` of :func:`asymptotics.spectra.branch._eval` at the real rows of ``U``
    (n, q + 1), ``G = (F(x, lam), tau . pi)``, in one call of ``residual`` (the module
    docstring) of at least ``block_min`` rows (the rows repeated: the residual's sums then
    take one order at any n): (n, q + 1) and (n, q + 1, q + 1), each row's numbers as
    alone."""
    U = np.asarray(U, dtype=np.float64)
    n, q = U.shape[0], U.shape[1] - 1
    K = pi.shape[0]
    cols = sym_columns(K)
    c = len(cols)
    h = H_CS * (1.0 + np.abs(U[:, cols]))  # (n, c)
    X = np.repeat(U[:, None, :q], c, axis=1).astype(np.complex128)  # (n, c, q)
    X[:, np.arange(c), cols] += 1j * h
    X, z = X.reshape(n * c, q), np.repeat(U[:, q], c).astype(np.complex128)
    if n * c < block_min:  # (the rows repeated up to the traces' block path: as in a batch)
        X, z = np.resize(X, (block_min, q)), np.resize(z, block_min)
    F = residual(X, z)[:n * c].reshape(n, c, q)
    J = np.zeros((n, q + 1, q + 1))
    J[:, :q, cols] = np.swapaxes(F.imag / h[:, :, None], 1, 2)
    for a in range(K):
        for b in range(a + 1, K):
            j, jt = K + a * K + b, K + b * K + a
            J[:, :q, jt] = J[:, :q, j]
            J[:, j, jt] -= 1.0
            J[:, jt, jt] += 1.0
    J[:, :K, q] = -U[:, :K]
    J[:, q, :K] = pi
    m = [u[:K] @ pi for u in U]  # (row by row: the same sums as alone)
    return np.concatenate([F[:, 0].real, np.array(m)[:, None]], axis=1), J


def attach(solver, pi: np.ndarray, block_min: int = 1) -> None:
    """Give ``solver`` (its ``residual`` the V-part's) the exact ``real_jacobian(s)`` that
    :mod:`asymptotics.spectra.branch` uses (nothing when :data:`EXACT_BRANCH` is off: the
    branch's forward differences); ``block_min``: as in :func:`real_jacobians`."""
    if not EXACT_BRANCH:
        return
    pi = np.ascontiguousarray(pi, dtype=np.float64)

    def many(U: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return real_jacobians(solver.residual, pi, U, block_min)

    def one(u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        G, J = many(np.asarray(u)[None])
        return G[0], J[0]

    solver.real_jacobians, solver.real_jacobian = many, one
