"""The compiled readings of W with one group outside the base class
(asymptotics/network/compiled/lowrank.py, docs/DERIVATIONS.md §9.7, THEORY.md §15): the trace,
the Gram of W's blocks and ``W a`` against the numpy forms and against the dense W of
:func:`asymptotics.network.schur.wfull` on drawn Schur cases (to 1e-12), the numpy path where
the kernels are off, and a network point with and without them (to 1e-12)."""

from __future__ import annotations

import numpy as np
import pytest

from asymptotics.network import schur
from asymptotics.network.compiled import lowrank
from tests.test_netcost_schur import _case


def _forms(K: int, c: int, seed: int, B: int = 3, n: int = 7) -> tuple:
    vp, Dp, s, rest, c = _case(K, c, B=B, n=n, seed=seed)
    perm = np.arange(K)
    W = schur.wform(vp, Dp, s, rest, c, perm, perm, True)
    dense = schur.wfull(vp, Dp, s, rest, c)
    return W, dense


def _close(a: np.ndarray, b: np.ndarray) -> bool:
    return bool(np.max(np.abs(a - b)) <= 1e-12 * max(np.max(np.abs(b)), 1e-300))


@pytest.mark.parametrize("K,seed", [(2, 0), (2, 1), (3, 2), (3, 3), (4, 4)])
def test_kernels_are_the_numpy_forms_and_the_dense_w(K: int, seed: int) -> None:
    W, dense = _forms(K, K - 1, seed, B=2 + seed % 3, n=5 + 2 * seed)
    assert isinstance(W, schur.LowRankW)
    rng = np.random.default_rng(seed)
    B, n = W.z.shape[:2]
    aT = rng.standard_normal((B, K, n, 4))
    assert lowrank._ready()
    got = (lowrank.trace(W), lowrank.gram(W), lowrank.wa(W, aT))
    ref = (lowrank.trace_np(W.Pf, W.z, W.G), lowrank.gram_np(W.Pf, W.z, W.G),
           lowrank.wa_np(W.Pf, W.z, W.G, aT))
    for g, r in zip(got, ref, strict=True):
        assert _close(g, r)
    # against the dense W (B x K x n x K x n) of the same Schur complement
    assert _close(got[0], np.einsum("baici->ac", dense))
    Wr = dense.transpose(1, 3, 0, 2, 4).reshape(K * K, -1)
    assert _close(got[1], (Wr @ Wr.T).reshape(K, K, K, K))
    assert _close(got[2], schur.right_blocks(dense, aT))
    # the schur module's readings go through the kernels
    assert np.array_equal(schur.wgram(W), got[1])
    assert np.array_equal(schur.wtrace(W), got[0])
    assert np.array_equal(schur.wa(W, aT), got[2])


def test_numpy_path_where_the_kernels_are_off(monkeypatch) -> None:
    W, _ = _forms(3, 2, 5)
    aT = np.ones((W.z.shape[0], 3, W.z.shape[1], 2))
    monkeypatch.setattr(lowrank, "COMPILED", False)
    monkeypatch.setattr(lowrank, "_READY", [])
    assert not lowrank._ready()
    assert np.array_equal(schur.wgram(W), lowrank.gram_np(W.Pf, W.z, W.G))
    assert np.array_equal(schur.wtrace(W), lowrank.trace_np(W.Pf, W.z, W.G))
    assert np.array_equal(schur.wa(W, aT), lowrank.wa_np(W.Pf, W.z, W.G, aT))


def test_a_nonfinite_w_stays_nonfinite() -> None:
    W, _ = _forms(2, 1, 6)
    G = W.G.copy()
    G[0, 1, 2] = G[0, 2, 1] = np.nan
    Wn = schur.LowRankW(W.Pf, W.z, G)
    assert np.isnan(lowrank.gram(Wn)).any() and np.isnan(lowrank.gram_np(W.Pf, W.z, G)).any()


#: an outside-class setting (three readout values: one group outside the base class)
THREE = dict(sigma="tanh", target="tanh(z1)", alpha0=8.677, readout={2.0: 0.25, 1.0: 0.5,
             -1.0: 0.25}, steps=2, eta=(1.0, 2.0), beta=1.552, p=1552.0)


@pytest.mark.parametrize("alpha", [0.5, 2.0])
def test_route_points_with_and_without_the_kernels(alpha: float, monkeypatch) -> None:
    """A point of the coupled route outside the base class with and without the kernels:
    converged alike, the risks within 1e-12 relative."""
    import asymptotics as A

    out = []
    for flag in (True, False):
        monkeypatch.setattr(lowrank, "COMPILED", flag)
        monkeypatch.setattr(lowrank, "_READY", [])
        out.append(A.risk(alpha, model="network", lam=0.01, **THREE))
    r1, r0 = out
    assert r1.converged == r0.converged
    if r0.converged:
        assert abs(r1.risk - r0.risk) <= 1e-12 * abs(r0.risk)


@pytest.mark.parametrize("K, same, neg", [(2, (), False), (3, ((2, 1),), False), (3, (), False),
                                          (3, ((2, 1),), True)])
def test_field_forms_from_wa_are_those_of_p1_p2(K: int, same: tuple, neg: bool) -> None:
    """``coupled.forms_from_wa`` (the field parts' forms read from ``W a``, Kc not formed) is
    ``w^T P1 w``, ``w^T P2 w`` of :meth:`CoupledChannels._d_parts` (to 1e-12), with and without
    the Schur route's compact W."""
    from asymptotics.network.bulk import GroupBulk
    from asymptotics.network.compiled import coupled
    from asymptotics.network.coupling import CoupledChannels
    from tests.test_network_bulk import _noncommuting, _vhat

    B, n, r, k = 2, 12, 1, 2
    sig = _noncommuting(B, K, n, seed=31 + K)
    for g, h in same:
        sig[:, g] = sig[:, h]
    rng = np.random.default_rng(K)
    a = rng.standard_normal((B, K, r + k, n))
    E = rng.standard_normal((K, r + k, r + k))
    cc = CoupledChannels(GroupBulk(sig), a, np.einsum("gij,gkj->gik", E, E), r, k)
    vh = _vhat(K, K) + 0.1 * np.eye(K)
    D = np.linspace(0.4, 1.7, K)
    if neg:
        D[0] = -D[0]
    wa = rng.standard_normal((K, r + k))
    parts = cc._w_parts(vh, D)
    assert not parts[1] and parts[4] is None  # (Kc not formed; Kc^T a not asked yet)
    c1, c2 = coupled.forms_from_wa(parts[3], np.swapaxes(cc.a_w, 2, 3), wa, vh, D)
    P1, P2 = cc._d_parts(vh, D)
    r1 = np.einsum("xaebf,ae,bf->x", P1, wa, wa) / B
    r2 = np.einsum("caebf,ae,bf->c", P2, wa, wa) / B
    assert _close(c1, r1) and _close(c2, r2)
