"""The sRF features' compiled V-part (asymptotics/spectra/traces/srf_kernels.py, srf_solver.py):
the residual against the numpy residual, the exact Jacobian against central differences, the
compiled Broyden steps against the numpy ones, and whole laws against the numpy path."""

from __future__ import annotations

import math

import numpy as np
import pytest

import asymptotics as A
from asymptotics.spectra.law import Solver
from asymptotics.spectra.traces import srf_solver
from asymptotics.spectra.traces.srf_kernels import srf_jacobian

TV = {1.0: 0.5, -1.0: 0.3, 2.0: 0.2}
BASE = dict(eta=1.0, target="tanh(z1)", steps=1, model="srf")
#: K = 1 (constant readout), 2 (pm1), 3 (three values)
SETTINGS = [
    dict(sigma="relu", readout="constant", alpha=1.2, alpha0=1.5, beta=0.8, d=1000.0),
    dict(sigma="erf", readout="pm1", alpha=2.45, alpha0=1.55, beta=0.39, d=1000.0),
    dict(sigma="tanh", readout=TV, alpha=1.0, alpha0=0.7, beta=0.9, d=300.0),
    dict(sigma="relu", readout=TV, alpha=2.0, alpha0=3.0, beta=0.5, d=None),
    dict(sigma="sigmoid", readout="pm1", alpha=3.5, alpha0=0.8, beta=1.4, d=1000.0),
]


def _law(s: dict, kernels: bool):
    srf_solver.KERNELS = kernels
    try:
        kw = {k: v for k, v in s.items() if k != "alpha"}
        law = A.spectrum("features", s["alpha"], **BASE, **kw)
        x = np.linspace(0.0, 1.05 * law.edge, 120)
        return law, law.density(x)
    finally:
        srf_solver.KERNELS = True


def _perturbed(law, rng) -> tuple[np.ndarray, np.ndarray]:
    s = law._solver
    z = np.linspace(0.01, 1.05 * law.edge, 40) + 1e-3j
    X, _ = s.solve(z)
    noise = rng.standard_normal(X.shape) + 1j * rng.standard_normal(X.shape)
    return X + 0.01 * noise * np.abs(X), z


@pytest.mark.parametrize("i", [0, 1, 2])
def test_residual_and_exact_jacobian(i: int) -> None:
    law, _ = _law(SETTINGS[i], True)
    s = law._solver
    assert isinstance(s, srf_solver.SrfSolver)
    X, z = _perturbed(law, np.random.default_rng(i))
    Fn = s.residual_np(X, z)
    Fk = s.residual(X, z)
    assert np.max(np.abs(Fk - Fn)) <= 1e-12 * np.max(np.abs(Fn))
    Fj, J = srf_jacobian(np.ascontiguousarray(X), np.ascontiguousarray(z), *s._args)
    assert np.max(np.abs(Fj - Fn)) <= 1e-12 * np.max(np.abs(Fn))
    Jc = np.empty_like(J)  # central differences of the numpy residual: error ~ h^2
    for j in range(X.shape[1]):
        h = 1e-5 * (1.0 + np.abs(X[:, j]))
        xp, xm = X.copy(), X.copy()
        xp[:, j] += h
        xm[:, j] -= h
        Jc[:, :, j] = (s.residual_np(xp, z) - s.residual_np(xm, z)) / (2.0 * h[:, None])
    assert np.max(np.abs(J - Jc)) <= 1e-8 * np.max(np.abs(Jc))


def test_compiled_broyden_is_the_numpy_broyden() -> None:
    law, _ = _law(SETTINGS[2], True)
    s = law._solver
    z = np.linspace(0.01, 1.05 * law.edge, 60) + 1e-2j * law.edge
    x0 = s.start(z + 1j * 5.0 * s.scale)
    xk, okk, _ = s._broyden(x0, z)
    xn, okn, _ = Solver._broyden(s, x0, z)
    both = okk & okn
    assert both.sum() >= 0.9 * z.size
    scale = 1.0 + np.max(np.abs(xn[both]), axis=1)
    assert np.max(np.max(np.abs(xk[both] - xn[both]), axis=1) / scale) < 1e-10


@pytest.mark.parametrize("i", range(len(SETTINGS)))
def test_law_on_kernels_is_the_numpy_law(i: int) -> None:
    """Supports, densities and outliers within 1e-12 relative; overlaps within 2e-9 (their
    central difference of step 1e-5 sqrt(lam) has an error ~1e-10 itself)."""
    new, dn = _law(SETTINGS[i], True)
    old, do = _law(SETTINGS[i], False)
    assert len(new.support) == len(old.support)
    for a, b in zip(new.support, old.support, strict=True):
        assert a == pytest.approx(b, rel=1e-12, abs=1e-14 * old.edge)
    assert np.max(np.abs(dn - do)) <= 1e-12 * np.max(do)
    assert len(new.outliers) == len(old.outliers)
    for p, o in zip(new.outliers, old.outliers, strict=True):
        assert p.channel == o.channel
        if math.isfinite(o.location):
            assert p.location == pytest.approx(o.location, rel=1e-12)
        for k, v in o.overlaps.items():
            assert p.overlaps[k] == pytest.approx(v, rel=2e-9, abs=1e-15)
