"""The coupling's Gram ``Acal`` with some ``D_g < 0`` (the spectra's real lam beyond the bulk's
edge, docs/THEORY.md §16.8) by the Schur complement's solves, W not formed
(:meth:`asymptotics.network.coupling.CoupledChannels._wa_solve`), against W's route and the
dense inverse per block."""

from __future__ import annotations

import numpy as np
import pytest

from asymptotics.network import coupling
from asymptotics.network.bulk import GroupBulk
from asymptotics.network.coupling import CoupledChannels
from tests.test_network_bulk import _noncommuting


def _setting(K: int, same: tuple, B: int = 3, n: int = 11, r: int = 2, k: int = 1):
    sig = _noncommuting(B, K, n, seed=31 + K)
    for g, h in same:
        sig[:, g] = sig[:, h]
    rng = np.random.default_rng(K + 3)
    a = rng.standard_normal((B, K, r + k, n))
    E = rng.standard_normal((K, r + k, r + k))
    A = rng.standard_normal((K, K))
    vh = 0.7 * A @ A.T + 0.1 * np.eye(K)
    return sig, a, np.einsum("gij,gkj->gik", E, E), vh, r, k


def _dense_acal(sig, a, ecov, vh, D) -> np.ndarray:
    """``a_(g,e)^T W_gh a_(h,f)`` averaged over the blocks, ``W`` the dense inverse of
    ``Dc^-1 + Vhat1 (x) I`` per block, plus ``D_g Ecov_g`` on the diagonal blocks."""
    B, K, n = sig.shape[:3]
    m = a.shape[2]
    Q = np.zeros((K, m, K, m))
    for b in range(B):
        A = np.kron(vh, np.eye(n))
        for g in range(K):
            A[g * n:(g + 1) * n, g * n:(g + 1) * n] += np.linalg.inv(sig[b, g]) / D[g]
        W = np.linalg.inv(A).reshape(K, n, K, n)
        Q += np.einsum("xei,xiyj,yfj->xeyf", a[b], W, a[b])
    Q /= B
    for g in range(K):
        Q[g, :, g, :] += D[g] * ecov[g]
    Q = Q.reshape(K * m, K * m)
    return 0.5 * (Q + Q.T)


@pytest.mark.parametrize("K, same", [(2, ()), (3, ()), (3, ((2, 1),)), (3, ((1, 0),)),
                                     (4, ((3, 1),))])
@pytest.mark.parametrize("neg", [(0,), (1, 2), "all"])
def test_acal_by_solves_is_the_route_from_w(K, same, neg, monkeypatch):
    """Some ``D_g < 0``: the solves' ``Acal`` is W's (to rounding) and the dense inverse's;
    the derivative after it (:meth:`dacal`, from W's parts) is W's route's."""
    sig, a, ecov, vh, r, k = _setting(K, same)
    D = np.linspace(0.4, 1.7, K)
    if neg == "all":
        D = -D
    else:
        D[[g for g in neg if g < K]] *= -1.0
    X1, dD = 0.1 * vh, np.linspace(-0.3, 0.5, K)
    out = []
    for solve in (True, False):
        monkeypatch.setattr(coupling, "SOLVE_ACAL", solve)
        cc = CoupledChannels(GroupBulk(sig), a, ecov, r, k)
        if solve:
            assert cc._wa_solve(vh, D) is not None
        out.append((cc.acal(vh, D), cc.dacal(vh, D, X1, dD)))
    scale = np.max(np.abs(out[1][0]))
    assert np.max(np.abs(out[0][0] - out[1][0])) <= 1e-13 * scale
    assert np.array_equal(out[0][1], out[1][1])
    ref = _dense_acal(sig, a, ecov, vh, D)
    assert np.max(np.abs(out[0][0] - ref)) <= 1e-11 * np.max(np.abs(ref))


def test_acal_by_solves_only_below_the_edge():
    """With every ``D_g > 0`` (the risk's route), complex D or every group in the base class
    the solves do not apply: ``Acal`` is W's route's, bit for bit."""
    sig, a, ecov, vh, r, k = _setting(3, ())
    cc = CoupledChannels(GroupBulk(sig), a, ecov, r, k)
    D = np.array([0.4, 0.9, 1.7])
    assert cc._wa_solve(vh, D) is None
    assert cc._wa_solve(vh, D.astype(np.complex128)) is None
    assert cc._wa_solve(vh, np.array([-0.4, 0.0, 1.7])) is None
    same = _noncommuting(2, 1, 9, seed=5)
    sig3 = np.repeat(same, 3, axis=1)
    cc3 = CoupledChannels(GroupBulk(sig3), a[:2, :, :, :9], ecov, r, k)
    assert cc3._wa_solve(vh, -D) is None
    ref = CoupledChannels(GroupBulk(sig), a, ecov, r, k)
    ref._wa_solve = lambda vhat1, D: None
    assert np.array_equal(cc.acal(vh, D), ref.acal(vh, D))


def test_acal_kept_parts_are_read_not_solved(monkeypatch):
    """Where W's parts at the same point are kept (the risk's field parts asked first),
    ``Acal`` reads them (no solve)."""
    sig, a, ecov, vh, r, k = _setting(3, ())
    D = np.array([-0.4, 0.9, 1.7])
    cc = CoupledChannels(GroupBulk(sig), a, ecov, r, k)
    cc._w_parts(vh, D)
    calls = []
    monkeypatch.setattr(cc, "_wa_solve", lambda *x: calls.append(1))
    cc.acal(vh, D)
    assert not calls
