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


# a scaled Marchenko-Pastur law (two labels of one variance c, beta > 1): edges c (1 -+ sqrt
# beta)^2, the lower one the fold that forward differences missed (the grid passes gave it 1.3%
# low)
MP = (np.array([1.1270404115408374, 1.1270404115408374]), np.array([0.5, 0.5]),
      1.1775200580686422)
SETTING = dict(sigma="relu", target="tanh(z1)", alpha0=1.2355385613787366, eta=1.0,
               beta=1.1775200580686422, readout="pm1", steps=2, d=1000.0)  # alpha 1.0761...


@pytest.fixture
def cold(monkeypatch):
    """The kernels reported not compiled (the gate's numpy path, as on a cold cache)."""
    def use() -> None:
        monkeypatch.setattr(srf_rowvar, "compiled", lambda *a, **k: False)
    return use


def _support(c: np.ndarray, w: np.ndarray, beta: float) -> list:
    return law.bulk_support(rowvar_solver(c, w, beta),
                            float(c.max()) * (1 + np.sqrt(beta)) ** 2 * 1.5)


def test_cold_kernels_give_the_closed_form_edges(cold) -> None:
    """The MP law's edges equal c (1 -+ sqrt beta)^2 within 1e-12 with the kernels compiled and
    with them reported not compiled, also after another law in the same process; the other
    laws' supports agree between the two paths within 1e-12."""
    c, w, beta = MP
    want = (c[0] * (1 - np.sqrt(beta)) ** 2, c[0] * (1 + np.sqrt(beta)) ** 2)
    hot = [_support(*case) for case in CASES]
    sups = [_support(*MP)]
    cold()
    cool = [_support(*case) for case in CASES]
    sups.append(_support(*MP))
    for sup in sups:
        assert len(sup) == 1
        assert np.allclose(sup[0], want, rtol=1e-12, atol=0), (sup, want)
    for a, b in zip(hot, cool, strict=True):
        assert len(a) == len(b)
        assert np.allclose(a, b, rtol=1e-12, atol=0)


def test_cold_kernels_give_the_compiled_path(cold) -> None:
    """The path's solutions with the numpy Broyden steps (the kernels reported not compiled)
    agree with the compiled steps within 1e-13: both start from the exact inverse Jacobian."""
    for c, w, beta in CASES + [MP]:
        sol = rowvar_solver(c, w, beta)
        z = np.linspace(0.01, 1.5 * float(c.max()) * (1 + np.sqrt(beta)) ** 2, 61) + 1e-3j
        X1, ok1 = sol.solve(z)
        x = X1 + 1e-3 * (1 + 1j)
        H = sol.inverse_jacobian(x, z)
        Hk = srf_rowvar.rowvar_broyden(x, z, 1e300, 1, *sol._args)[2]  # (H at x)
        assert np.max(np.abs(H - Hk) / np.abs(Hk).max(axis=(1, 2))[:, None, None]) < 1e-14
        cold()
        X0, ok0 = sol.solve(z)
        assert ok1.all() and ok0.all()
        assert np.max(np.abs(X1 - X0) / (1.0 + np.abs(X0))) < 1e-13


def test_weights_edge_in_an_interpreted_process(tmp_path) -> None:
    """The drawn setting whose lower edge a cold-kernel process gave 1.3% low: in a process on
    an empty numba cache (every kernel interpreted) and here (compiled), after another law,
    its lower edge is c (1 - sqrt beta)^2 within 1e-12."""
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

    import asymptotics as A

    alpha = 1.0761527819041474
    code = ("import json, sys; import asymptotics as A; kw = json.loads(sys.argv[1]); "
            "A.spectrum('weights', 2.0, **dict(kw, beta=0.6)); "
            "law = A.spectrum('weights', float(sys.argv[2]), **kw); "
            "print(json.dumps([law.support[0][0], law.params['bulk']]))")
    root = Path(__file__).resolve().parents[1]
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "numba"), GIANTSTEP_COLD_START=
               "interpret", PYTHONPATH=str(root) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = subprocess.run([sys.executable, "-c", code, json.dumps(SETTING), repr(alpha)],
                         env=env, capture_output=True, text=True, timeout=600, cwd=str(root))
    assert out.returncode == 0, out.stderr
    lo_interp, bulk = json.loads(out.stdout)
    A.spectrum("weights", 2.0, **dict(SETTING, beta=0.6))
    law_ = A.spectrum("weights", alpha, **SETTING)
    assert list(law_.params["bulk"]) == bulk
    want = float(np.mean(bulk)) * (1 - np.sqrt(SETTING["beta"])) ** 2
    for lo in (lo_interp, law_.support[0][0]):
        assert abs(lo - want) <= 1e-12 * want, (lo, want)
