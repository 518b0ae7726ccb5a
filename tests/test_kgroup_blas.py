"""K-group points and curves run their kernels' LAPACK calls on one BLAS thread (small
problems: a second thread only spins; a K = 4, r = 3 point cost twice the CPU time on two), and
give the caller back its own setting."""

from __future__ import annotations

import numpy as np
import pytest
from threadpoolctl import threadpool_info, threadpool_limits

from asymptotics.spiked import solve

G2 = dict(sigma="relu", target="z1 + z1*z2", loadings=[[1.0, 0.0], [0.5, 0.5]], bulk=[1.0, 1.0],
          fractions=[0.5, 0.5], overlaps=[[1.0, 0.0], [0.0, 1.0]], lam=0.01, beta=1.0)


def _blas_threads() -> list[int]:
    return [m["num_threads"] for m in threadpool_info() if m["user_api"] == "blas"]


@pytest.mark.parametrize("curve", [False, True])
def test_kgroup_solves_on_one_blas_thread(monkeypatch, curve):
    seen: list[list[int]] = []
    real = solve.solve_spiked

    def spy(*args, **kwargs):
        seen.append(_blas_threads())
        return real(*args, **kwargs)

    monkeypatch.setattr(solve, "solve_spiked", spy)
    with threadpool_limits(2, user_api="blas"):
        if curve:  # (the curve's rows solve through solve_point directly: spy the builder)
            calls: list[list[int]] = []
            build = solve.spiked_builder

            def spy_builder(**params):
                inner = build(**params)

                def built(*a):
                    calls.append(_blas_threads())
                    return inner(*a)
                return built
            monkeypatch.setattr(solve, "spiked_builder", spy_builder)
            frame = solve.risk_spiked_curve([0.5, 1.0], **G2)
            seen = calls
            assert np.all(np.isfinite(frame["risk"]))
        else:
            res = solve.risk_spiked(1.0, **G2)
            assert res.converged
        after = _blas_threads()
    assert seen and all(t == [1] * len(t) for t in seen), seen
    assert after == [2] * len(after)
