"""The sRF features' law with the coarse component search and the real branch's exact Jacobian
(docs/THEORY.md §16.10) against the former construction (the full grid, forward-difference
Jacobians): the same components, atom and outliers, edges to 1e-12; the exact Jacobian against
central differences of the residual."""

from __future__ import annotations

import math

import numpy as np
import pytest

import asymptotics as A
from asymptotics.spectra import branch
from asymptotics.spectra.traces import srf_scan, srf_solver

#: two settings of benchmarks/bench_spectrum_srf.py: two components (a small one near 0), and
#: a three-value readout (K = 3) with an atom at 0 (n < p)
SETTINGS = [
    dict(sigma="sigmoid", readout="pm1", alpha=3.5, alpha0=0.8, beta=1.4, d=1000.0),
    dict(sigma="sigmoid", readout={1.0: 0.5, -1.0: 0.3, 2.0: 0.2}, alpha=0.8, alpha0=1.2,
         beta=1.2, d=1000.0),
]


def _law(s: dict, new: bool):
    srf_scan.COARSE, srf_solver.EXACT_BRANCH = (srf_scan.COARSE, True) if new else (1, False)
    try:
        return A.spectrum("features", s["alpha"], sigma=s["sigma"], readout=s["readout"],
                          alpha0=s["alpha0"], beta=s["beta"], eta=1.0, target="tanh(z1)",
                          steps=1, model="srf", d=s["d"])
    finally:
        srf_scan.COARSE, srf_solver.EXACT_BRANCH = 8, True


@pytest.mark.parametrize("s", SETTINGS)
def test_law_as_the_former_construction(s):
    old, new = _law(s, False), _law(s, True)
    assert len(new.support) == len(old.support)
    assert new.atom == old.atom
    np.testing.assert_allclose(np.ravel(new.support), np.ravel(old.support), rtol=1e-12)
    lo = [o.location for o in old.outliers]
    ln = [o.location for o in new.outliers]
    assert len(ln) == len(lo) and all(math.isfinite(v) for v in ln)
    np.testing.assert_allclose(ln, lo, rtol=1e-12)


def test_exact_real_jacobian_matches_differences():
    s = SETTINGS[1]
    law = _law(s, True)
    sol = law._solver
    assert sol.branch is not None
    p = sol.branch.points[-1]
    G, J = sol.real_jacobian(p.u)
    q = p.u.size - 1
    x = p.u[None, :q].astype(np.complex128)
    F = sol.residual(x, np.array([complex(p.u[q])]))[0].real
    np.testing.assert_allclose(G, np.append(F, float(sol.stieltjes(x)[0].real)), rtol=0,
                               atol=1e-14)
    Jc = np.empty_like(J)
    for j in range(q + 1):  # central differences of G
        h = 1e-6 * (1.0 + abs(p.u[j]))
        up, dn = p.u.copy(), p.u.copy()
        up[j] += h
        dn[j] -= h
        srf_solver.EXACT_BRANCH = False
        try:
            Jc[:, j] = (branch._eval(sol, up)[0] - branch._eval(sol, dn)[0]) / (2 * h)
        finally:
            srf_solver.EXACT_BRANCH = True
    np.testing.assert_allclose(J, Jc, rtol=0, atol=1e-7 * np.max(np.abs(J)))
