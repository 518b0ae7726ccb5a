"""The network theory's K-group doors run BLAS on one thread whatever the process's setting
(``asymptotics.network.schur.BLAS_THREADS``): their products are small (blocks of ~100 x 100),
and two OpenBLAS threads on a busy 2-core machine made the first ``risk_by_step`` call 34-41 s
instead of ~6 s (the numbers the same: a product is split by rows and columns)."""

from __future__ import annotations

import pytest
from threadpoolctl import threadpool_info

import asymptotics as gs


class _Stop(Exception):
    """Raised by a spy once it has seen the thread count (the work itself is not needed)."""


def _blas() -> set:
    return {i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"}


def _spy(monkeypatch, module, name: str, seen: list) -> None:
    def spy(*a, **k):
        seen.append(_blas())
        raise _Stop

    monkeypatch.setattr(module, name, spy)


def test_risk_by_step_network_on_one_thread(monkeypatch, blas_two_threads):
    from asymptotics.network import groups

    seen: list = []
    _spy(monkeypatch, groups, "network_groups", seen)
    assert _blas() == {2}
    with pytest.raises(_Stop):
        gs.risk_by_step([2.0], steps=2, target="z1 + z1*z2", progress=False)
    assert seen == [{1}]
    assert _blas() == {2}


@pytest.mark.parametrize("call", ["risk", "risk_curve"])
def test_network_group_doors_on_one_thread(monkeypatch, blas_two_threads, call):
    from asymptotics.network import route

    seen: list = []
    _spy(monkeypatch, route, "api_network_risk", seen)
    _spy(monkeypatch, route, "network_door", seen)
    alphas = 2.0 if call == "risk" else [1.0, 2.0]
    with pytest.raises(_Stop):
        getattr(gs, call)(alphas, steps=2, target="z1 + z1*z2", readout="pm1")
    assert seen == [{1}]
    assert _blas() == {2}
