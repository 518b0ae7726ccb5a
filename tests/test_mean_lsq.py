"""The two-group mean channel by Cholesky QR (asymptotics.equations.mean_lsq) against numpy's
SVD and least squares on the same designs, and its refusal of ill-conditioned ones."""

from __future__ import annotations

import numpy as np
import pytest

from asymptotics.equations.mean_lsq import MAX_COND, mean_coef2, mean_elimination2, thin_svd2


def _reference(Phi, Psi, ht, A, beta, pi, tau, r):
    """The elimination written with numpy's SVD, projector and lstsq (docs/THEORY.md §10.5)."""
    U, sv, _ = np.linalg.svd(Phi, full_matrices=False)
    proj = np.eye(Phi.shape[0]) - U @ U.T
    Psr, htr = proj @ Psi, proj @ ht
    D = np.repeat(A * beta * pi * tau, r)
    zeta = np.linalg.solve(np.eye(Psi.shape[1]) + D[:, None] * (Psr.T @ Psr), D * (Psr.T @ htr))
    m = np.linalg.lstsq(Phi, ht - Psi @ zeta, rcond=None)[0]
    zh = A * Psi.T @ (ht - Psi @ zeta - Phi @ m)
    return zeta, m, zh, sv, (U.T @ ht) ** 2, ht @ ht


def _design(rng, n, r, cond):
    """A random (n + 2)-row design with two columns of condition number ``cond``."""
    Q, _ = np.linalg.qr(rng.standard_normal((n + 2, 2)))
    Phi = Q @ np.diag([1.0, 1.0 / cond]) @ np.linalg.qr(rng.standard_normal((2, 2)))[0]
    return Phi, rng.standard_normal((n + 2, 2 * r)), rng.standard_normal(n + 2)


@pytest.mark.parametrize("r", [1, 2, 3])
@pytest.mark.parametrize("cond", [1.5, 30.0, 900.0])
def test_elimination_matches_svd_path(r, cond):
    rng = np.random.default_rng([r, int(10 * cond)])
    Phi, Psi, ht = _design(rng, 500, r, cond)
    pi, tau = np.array([0.3, 0.7]), np.array([0.8, 1.3])
    ok, zeta, m, zh, U, sv, Vt, power, total = mean_elimination2(Phi, Psi, ht, 1.7, 0.9, pi,
                                                                 tau, r)
    assert ok
    ref = _reference(Phi, Psi, ht, 1.7, 0.9, pi, tau, r)
    # round-off of either factorisation, norm-wise on the data's scale (the residual of these
    # random targets is of the size of ht, so zeta and m are small against it)
    tol = 1e-13 * cond
    for got, want in zip((zeta, m, zh, sv, power, total), ref, strict=True):
        assert np.max(np.abs(got - want)) <= tol * max(np.max(np.abs(want)), np.max(np.abs(ht)))
    assert np.max(np.abs(U.T @ U - np.eye(2))) <= 1e-13
    assert np.max(np.abs(U @ np.diag(sv) @ Vt - Phi)) <= 1e-14 * np.max(np.abs(Phi))
    assert np.max(np.abs(mean_coef2(U, sv, Vt, Psi, ht, zeta) - m)) <= tol * np.max(np.abs(ht))


@pytest.mark.parametrize("kind", ["collinear", "zero column", "ill conditioned"])
def test_refuses_what_the_svd_path_keeps(kind):
    rng = np.random.default_rng(5)
    Phi, _, _ = _design(rng, 300, 2, 1.0)
    if kind == "collinear":
        Phi[:, 1] = 2.0 * Phi[:, 0]
    elif kind == "zero column":
        Phi[:, 1] = 0.0
    else:
        Phi, _, _ = _design(rng, 300, 2, 10.0 * MAX_COND)
    assert not thin_svd2(Phi)[0]
