"""The trained network's features after one step with the constant readout (docs/THEORY.md
§16.1; ``asymptotics/spectra/features.py``, ``network_features_solver``): its solver's path and
polish run on the network spectra's BLAS threads (``features.BLAS_THREADS``), whatever the
caller's, and give the same numbers as on the caller's threads."""

from __future__ import annotations

import numpy as np

from asymptotics.coefficients.functions import get_function
from asymptotics.spectra import features
from asymptotics.spectra.api import _groups
from asymptotics.spectra.features import network_features_solver
from asymptotics.spiked.problem import build_spiked_problem

KW = dict(alpha0=2.0, eta=1.0, delta=0.0)


def _solver():
    s, g = get_function("relu"), get_function("tanh(z1)")
    gp = _groups(s, g, readout="constant", steps=1, model="network", **KW)
    prob = build_spiked_problem(sigma=s, lam=0.01, beta=0.5, delta=0.0, **gp)
    return network_features_solver(prob, 1.5, sigma=s, target=g, **KW)


def _blas() -> list:
    from threadpoolctl import threadpool_info

    return [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]


def test_one_step_network_features_on_one_blas_thread(blas_two_threads) -> None:
    sol = _solver()
    seen: list = []
    for part in (sol.approx, sol):  # the path's model and the polished (exact) one
        inner = part.residual

        def residual(x, z, inner=inner):
            seen.extend(_blas())
            return inner(x, z)
        part.residual = residual
    before = _blas()
    z = np.linspace(0.05, 2.0, 24) + 1e-10j * sol.scale
    x1, ok1 = sol.solve(z)
    assert _blas() == before and set(before) == {2}
    assert seen and set(seen) == {features.BLAS_THREADS}
    old = features.BLAS_THREADS
    features.BLAS_THREADS = None  # the caller's threads: the same solutions
    try:
        seen.clear()
        x2, ok2 = sol.solve(z)
        assert set(seen) == {2}
    finally:
        features.BLAS_THREADS = old
    assert np.all(ok1) and np.array_equal(ok1, ok2)
    assert np.max(np.abs(x1 - x2)) <= 1e-14 * np.max(np.abs(x2))
