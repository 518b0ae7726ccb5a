"""The several-steps mapping and the K-group points and curves run their products and their
kernels' LAPACK calls on one BLAS thread (small problems: a second thread only spins on a shared
machine; a K = 4, r = 3 point cost twice the CPU time on two), with the same numbers as on the
caller's threads, and give the caller back its own setting."""

from __future__ import annotations

import numpy as np
import pytest
from threadpoolctl import threadpool_info, threadpool_limits

from asymptotics.multiindex import steps
from asymptotics.spiked import solve

G2 = dict(sigma="relu", target="z1 + z1*z2", loadings=[[1.0, 0.0], [0.5, 0.5]], bulk=[1.0, 1.0],
          fractions=[0.5, 0.5], overlaps=[[1.0, 0.0], [0.0, 1.0]], lam=0.01, beta=1.0)


def _blas_threads() -> list[int]:
    return [m["num_threads"] for m in threadpool_info() if m["user_api"] == "blas"]


def _spy(seen: list, real):
    """``real`` recording the BLAS threads it is called on in ``seen``."""
    def spy(*args, **kwargs):
        seen.append(_blas_threads())
        return real(*args, **kwargs)
    return spy


def test_mapping_advances_on_one_blas_thread(monkeypatch):
    seen: list[list[int]] = []
    real = steps.advance
    monkeypatch.setattr(steps, "advance", _spy(seen, real))
    steps._CACHE.clear()
    with threadpool_limits(2, user_api="blas"):
        mp = steps.steps_mapping("relu", "z1 + z1*z2", steps=2, alpha0=16.0, eta=(2.0, 3.0),
                                 readout="pm1")
        after = _blas_threads()
    steps._CACHE.clear()
    assert len(seen) == 2 and all(t == [1] * len(t) for t in seen), seen
    assert after == [2] * len(after)  # the caller's setting is back
    with threadpool_limits(1, user_api="blas"):
        monkeypatch.setattr(steps, "advance", real)
        again = steps.steps_mapping("relu", "z1 + z1*z2", steps=2, alpha0=16.0,
                                    eta=(2.0, 3.0), readout="pm1")
    steps._CACHE.clear()
    for s1, s2 in zip(mp.states, again.states, strict=True):
        for x, y in ((s1.a, s2.a), (s1.L, s2.L), (s1.c, s2.c)):
            assert np.array_equal(x, y)


@pytest.mark.parametrize("curve", [False, True])
def test_kgroup_solves_on_one_blas_thread(monkeypatch, curve):
    seen: list[list[int]] = []
    monkeypatch.setattr(solve, "solve_spiked", _spy(seen, solve.solve_spiked))
    with threadpool_limits(2, user_api="blas"):
        if curve:  # (the curve's rows solve through solve_point directly: spy the builder)
            calls: list[list[int]] = []
            build = solve.spiked_builder

            monkeypatch.setattr(solve, "spiked_builder",
                                lambda **params: _spy(calls, build(**params)))
            frame = solve.risk_spiked_curve([0.5, 1.0], **G2)
            seen = calls
            assert np.all(np.isfinite(frame["risk"]))
        else:
            res = solve.risk_spiked(1.0, **G2)
            assert res.converged
        after = _blas_threads()
    assert seen and all(t == [1] * len(t) for t in seen), seen
    assert after == [2] * len(after)
