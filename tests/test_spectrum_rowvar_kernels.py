"""The row-variance MP law's compiled path and real branch (asymptotics/spectra/traces/
srf_rowvar.py, THEORY.md §16.6) against the numpy residual and path they replace."""

from __future__ import annotations

import numpy as np
import pytest

from asymptotics.spectra import branch, law
from asymptotics.spectra.traces import srf_rowvar
from asymptotics.spectra.weights import rowvar_solver, rowvar_top

CASES = [  # (c, w, beta): two labels, three labels with a spread, beta > 1 (an atom at 0)
    (np.array([1.0, 1.0]), np.array([0.5, 0.5]), 0.39),
    (np.array([0.3, 1.1, 2.7]), np.array([0.25, 0.5, 0.25]), 0.8),
    (np.array([0.6, 1.9]), np.array([0.7, 0.3]), 1.4),
]


@pytest.fixture
def numpy_path(monkeypatch):
    """The former path: numpy Broyden steps and forward-difference branch Jacobians."""
    def use(on: bool) -> None:
        monkeypatch.setattr(srf_rowvar, "KERNELS", not on)
        monkeypatch.setattr(srf_rowvar, "EXACT_BRANCH", not on)
    return use


@pytest.mark.parametrize("i", range(len(CASES)))
def test_exact_real_jacobian(i: int) -> None:
    """G is the numpy residual's real part at real (m_t, m, lam) and dG/du its central
    differences."""
    c, w, beta = CASES[i]
    sol = rowvar_solver(c, w, beta)
    edge, mt = rowvar_top(c, w / w.sum(), beta)
    U = []
    for lam in (1.05 * edge, 2.0 * edge):
        m_t = mt(lam)
        m = -float(np.sum(w / w.sum() / (lam * (1.0 + c * m_t))))
        U.append([m_t, m, lam])
    U = np.array(U)
    G, D = sol.real_jacobians(U)
    for u, g, d in zip(U, G, D, strict=True):
        F = sol.residual(u[None, :2].astype(complex), np.array([u[2] + 0j]))
        assert np.allclose(g[:2], F[0].real, rtol=0, atol=1e-14)
        assert g[2] == u[1]
        for j in range(3):
            h = 1e-6 * (1.0 + abs(u[j]))
            up, um = u.copy(), u.copy()
            up[j] += h
            um[j] -= h
            cd = branch._eval(sol, up)[0] - branch._eval(sol, um)[0]
            assert np.allclose(d[:, j], cd / (2 * h), rtol=1e-7, atol=1e-8)


@pytest.mark.parametrize("i", range(len(CASES)))
def test_compiled_path_is_the_numpy_path(i: int, numpy_path) -> None:
    """The path's solutions (every stage's Broyden steps compiled) agree with the numpy steps
    to 1e-12 on a grid across and beside the bulk, and each point's path converges."""
    c, w, beta = CASES[i]
    sol = rowvar_solver(c, w, beta)
    z = np.linspace(0.01, 1.5 * float(c.max()) * (1 + np.sqrt(beta)) ** 2, 61) + 0j
    X1, ok1 = sol.solve(z)
    numpy_path(True)
    X0, ok0 = sol.solve(z)
    assert ok1.all() and ok0.all()
    assert np.max(np.abs(X1 - X0) / (1.0 + np.abs(X0))) < 1e-12


@pytest.mark.parametrize("i", range(len(CASES)))
def test_law_on_kernels(i: int, numpy_path) -> None:
    """The support with the compiled path and exact branch agrees with the former numpy law to
    1e-12, and its top edge with rowvar_top's (the minimum of the inverse lam(m_t), an
    independent computation) to 1e-12."""
    c, w, beta = CASES[i]
    hi = float(c.max()) * (1 + np.sqrt(beta)) ** 2 * 1.5
    sup1 = law.bulk_support(rowvar_solver(c, w, beta), hi)
    assert srf_rowvar.KERNELS and rowvar_solver(c, w, beta).real_jacobian(
        np.array([-0.1, -0.1, 5.0])) is not None
    numpy_path(True)
    sup0 = law.bulk_support(rowvar_solver(c, w, beta), hi)
    assert len(sup1) == len(sup0)
    for a, b in zip(sup1, sup0, strict=True):
        assert np.allclose(a, b, rtol=1e-12, atol=0)
    edge, _ = rowvar_top(c, w / w.sum(), beta)
    assert abs(sup1[-1][1] - edge) <= 1e-12 * edge
