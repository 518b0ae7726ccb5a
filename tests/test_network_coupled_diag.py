"""The coupling's Gram of the special columns where every group is in the base class (K = 1; K = 2
with sigma' even and the ±1 readout: W diagonal per direction) by the numba kernels of
asymptotics/network/compiled/coupled.py (docs/THEORY.md §15, DERIVATIONS.md §9.7): ``Acal``,
``field_q`` and the bulk's ``dlin`` against the numpy path (``W a``, ``P1``, ``P2`` formed) to
rounding, the fallback where some ``D_g <= 0``, and the route's points with and without the
kernels."""

from __future__ import annotations

import numpy as np
import pytest

from asymptotics.network.compiled import coupled as cd

K1 = dict(sigma="tanh", target="z1 + z1*z2", alpha0=4.942, readout="constant", steps=2,
          eta=(1.0, 2.0), beta=1.624, p=1624.0)
K2 = dict(sigma="tanh", target="tanh(z1)", alpha0=13.848, readout="pm1", steps=2,
          eta=(2.0, 4.0), beta=1.524, p=1524.0)


def _coupled(kw):
    from asymptotics.network.route import route_setup

    params, out = route_setup(kw["sigma"], kw["target"], steps=kw["steps"],
                              alpha0=kw["alpha0"], eta=kw["eta"], readout=kw["readout"])
    return params, out["coupled"]


def _both(ch, f, monkeypatch):
    """``f()`` with the kernels and with numpy's path (the kept results forgotten before each)."""
    out = []
    for flag in (True, False):
        monkeypatch.setattr(cd, "COMPILED", flag)
        ch.forget()
        out.append(f())
    return out


@pytest.mark.parametrize("kw", [K1, K2], ids=["K1", "K2"])
def test_acal_and_field_q_are_numpys(kw, monkeypatch):
    """``Acal``, the field parts of Q and the bulk's derivative matrix (``dlin``) by the kernels
    equal numpy's within 1e-13 (relative to the largest entry) at drawn ``(Vhat1, tau)``; the
    kernels are taken (W diagonal)."""
    params, ch = _coupled(kw)
    K = ch.K
    assert ch.bulk._eig[3] == K and K == (1 if kw is K1 else 2)
    pi = np.asarray(params["fractions"], dtype=np.float64)
    beta = kw["beta"]
    rng = np.random.default_rng(11)
    taken = []
    real = cd.acal_diag
    monkeypatch.setattr("asymptotics.network.coupling.acal_diag",
                        lambda *a: taken.append(1) or real(*a))
    for _ in range(4):
        C = rng.standard_normal((K, K))
        vhat1 = C @ C.T + 0.5 * np.eye(K)
        tau = 0.5 + rng.random(K)
        D = beta * pi * tau
        zh, ph = rng.standard_normal((K, ch.r)), rng.standard_normal((K, ch.k))
        a1, a0 = _both(ch, lambda: ch.acal(vhat1, D).copy(), monkeypatch)  # noqa: B023
        assert np.max(np.abs(a1 - a0)) <= 1e-13 * np.max(np.abs(a0))
        assert np.array_equal(a1, a1.T)
        (q1, q2), (r1, r2) = _both(ch, lambda: ch.field_q(vhat1, tau, beta, pi, zh, ph),  # noqa: B023
                                   monkeypatch)
        scale = max(np.max(np.abs(r1)), np.max(np.abs(r2)))
        assert np.max(np.abs(q1 - r1)) <= 1e-13 * scale
        assert np.max(np.abs(q2 - r2)) <= 1e-13 * scale
        l1, l0 = _both(ch, lambda: ch.bulk.dlin(vhat1, tau, beta, pi).copy(),  # noqa: B023
                       monkeypatch)
        assert np.all(np.isfinite(l1)) and np.max(np.abs(l1 - l0)) <= 1e-13 * np.max(np.abs(l0))
    assert taken
    monkeypatch.setattr(cd, "COMPILED", True)
    assert cd.diag_w(ch.bulk, vhat1, -D) is None  # (some D_g < 0: numpy's path)


@pytest.mark.parametrize("kw", [K1, K2], ids=["K1", "K2"])
def test_route_points_with_and_without_the_kernels(kw, monkeypatch):
    """Points along alpha with and without the kernels: converged alike, the risks within
    1e-13 and every state entry within 1e-11 of the largest."""
    import asymptotics as A

    for a in (0.5, 2.0, 5.0):
        res = []
        for flag in (True, False):
            monkeypatch.setattr(cd, "COMPILED", flag)
            res.append(A.risk(a, model="network", lam=0.01, **kw))
        on, off = res
        assert on.converged and off.converged
        assert abs(on.risk - off.risk) <= 1e-13 * abs(off.risk)
        s1, s0 = np.array(on.state), np.array(off.state)
        assert np.max(np.abs(s1 - s0)) <= 1e-11 * np.max(np.abs(s0))


def test_a_nan_input_stays_a_nan():
    """The kernels' fast-math keeps NaN semantics (no no-NaN assumption): a NaN in W or in the
    readout's coordinates reaches Acal and the forms as a NaN, never as a number."""
    rng = np.random.default_rng(0)
    B, n, K, m = 2, 5, 2, 3
    W = rng.standard_normal((B, n, K, K))
    a = rng.standard_normal((B, K, m, n))
    D, ecov = np.array([0.7, 1.3]), np.stack([np.eye(m)] * K)
    assert np.all(np.isfinite(cd.acal_diag(W, a, D, ecov)))
    W[1, 3, 0, 1] = np.nan
    assert np.isnan(cd.acal_diag(W, a, D, ecov)).any()
    a[0, 1, 2, 4] = np.nan
    c1, c2 = cd.field_forms(W, a, np.eye(K), D, rng.standard_normal((K, m)))
    assert np.isnan(c1).any() and np.isnan(c2).any()
