"""The several-steps mapping runs its products on one BLAS thread (small products: more threads
only spin on a shared machine), with the same numbers as on the caller's threads."""

from __future__ import annotations

import numpy as np
from threadpoolctl import threadpool_info, threadpool_limits

from asymptotics.multiindex import steps


def _blas_threads() -> list[int]:
    return [m["num_threads"] for m in threadpool_info() if m["user_api"] == "blas"]


def test_mapping_advances_on_one_blas_thread(monkeypatch):
    seen: list[list[int]] = []
    real = steps.advance

    def spy(*args, **kwargs):
        seen.append(_blas_threads())
        return real(*args, **kwargs)

    monkeypatch.setattr(steps, "advance", spy)
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
