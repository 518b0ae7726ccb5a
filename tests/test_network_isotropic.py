"""A point's completion and residual check with the isotropic bulk outside E as one numba
kernel (asymptotics/network/compiled/isotropic.py, docs/THEORY.md §15, DERIVATIONS.md §9.3):
the state and the residual within rounding of the Python completion (``complete_net``,
``full_map_net`` with ``bulk=None``) on the rungs of the isotropic climb (the mean table of the
rows' outside scale, n x K x r) and on the isotropic route without the scale (the nodes, n x r),
the NaN of a failed resolvent, where it does not apply, and the route's points with and without
the kernel."""

from __future__ import annotations

import math

import numpy as np
import pytest

from asymptotics.network import solve as S
from asymptotics.network.compiled import isotropic as I

K2 = dict(sigma="relu", target="z1 + z1*z2", alpha0=5.267, readout="pm1", steps=3,
          eta=(1.0, 2.0, 4.0), beta=0.776, p=776.0)
K3 = dict(sigma="tanh", target="tanh(z1)", alpha0=8.677,
          readout={2.0: 0.25, 1.0: 0.5, -1.0: 0.25}, steps=2, eta=(2.0, 4.0), beta=1.552,
          p=1552.0)


def _calls(kw, monkeypatch, **route) -> list:
    """The arguments of every isotropic completion of a point at alpha = 2 (the route's default:
    the rungs of the isotropic climb; ``route``: :func:`asymptotics.network.route.risk_network`'s
    keywords)."""
    import asymptotics as A
    from asymptotics.network.route import risk_network

    seen = []
    real = S.complete_iso

    def spy(v, ch, a, floor):
        seen.append((v.copy(), ch, a, floor))
        return real(v, ch, a, floor)

    monkeypatch.setattr(S, "complete_iso", spy)
    if route:
        risk_network(2.0, lam=0.01, **route, **kw)
    else:
        A.risk(2.0, model="network", lam=0.01, **kw)
    assert seen
    return seen


def _python(v, ch, a, floor) -> tuple:
    state, ok = S.complete_net(v, ch, *a)
    fin = np.all(np.isfinite(state))
    res = S.rel_res(state, S.full_map_net(state, ch, *a), floor) if fin else math.nan
    return state, ok, res


@pytest.mark.parametrize("kw,route,ndim", [
    (K2, {}, 3), (K3, {}, 3), (K2, dict(outside="isotropic", row_scale=False), 2),
    (K3, dict(outside="isotropic", row_scale=False), 2)], ids=["K2", "K3", "K2-nodes", "K3-nodes"])
def test_completion_is_pythons(kw, route, ndim, monkeypatch):
    """From the same (V1, V2), the kernel's completion and the Python one give the state within
    1e-12 of each entry (1e-13 of the largest), (V1, V2) bit for bit, the same ``ok`` and
    residuals within 1e-12 (a converged state's residual is itself rounding, ~1e-13: the two
    differ by up to ~1.1e-13 here; the solver's tolerance is 1e-10)."""
    for v, ch, a, floor in _calls(kw, monkeypatch, **route):
        assert a[1].ndim == ndim
        fast = I.complete_iso(v, ch, a, floor)
        assert fast is not None and fast[3] is None
        state, ok, res, _ = fast
        ref = _python(v, ch, a, floor)
        assert ok == ref[1] and np.all(np.isfinite(state))
        K = a[3].shape[1]
        assert np.array_equal(state[K * K + K:2 * (K * K + K)], v)
        scale = np.max(np.abs(ref[0]))
        assert np.all(np.abs(state - ref[0]) <= 1e-12 * np.abs(ref[0]) + 1e-13 * scale)
        assert abs(res - ref[2]) <= 1e-12 and res <= 1e-10


def test_a_failed_resolvent_is_nan_as_in_python(monkeypatch):
    """A (V1, V2) where the resolvent fails (NaN): the NaN state and not ok, as the Python
    completion gives them."""
    v, ch, a, floor = _calls(K2, monkeypatch)[0]
    bad = np.full_like(v, np.nan)
    state, ok, res, _ = I.complete_iso(bad, ch, a, floor)
    ref, ok_ref = S.complete_net(bad, ch, *a)
    assert not ok and not ok_ref and np.all(np.isnan(state)) and np.all(np.isnan(ref))
    assert state.shape == ref.shape and math.isnan(res)


def test_where_it_does_not_apply(monkeypatch):
    """Channels without ``kbig`` (the coupled ones), a singular solve in the kernel or
    COMPILED False: None (the Python completion)."""
    v, ch, a, floor = _calls(K2, monkeypatch)[0]
    assert I.complete_iso(v, object(), a, floor) is None

    def singular(*args):
        raise np.linalg.LinAlgError("Matrix is singular to machine precision.")

    monkeypatch.setattr(I, "complete_flat", singular)
    assert I.complete_iso(v, ch, a, floor) is None
    monkeypatch.undo()
    monkeypatch.setattr(I, "COMPILED", False)
    assert I.complete_iso(v, ch, a, floor) is None


@pytest.mark.parametrize("route", [{}, dict(outside="isotropic"),
                                   dict(outside="isotropic", row_scale=False)],
                         ids=["coupled", "isotropic", "isotropic-nodes"])
def test_route_points_with_and_without_the_kernel(route, monkeypatch):
    """Points along alpha with and without the kernel: converged alike, the same kappa rule,
    the risks within 1e-12 relative (bit for bit on the coupled route: the isotropic climb
    decides its rule only)."""
    import asymptotics as A
    from asymptotics.network.route import risk_network

    for alpha in (0.5, 2.0):
        out = []
        for flag in (True, False):
            monkeypatch.setattr(I, "COMPILED", flag)
            out.append(risk_network(alpha, lam=0.01, **route, **K2) if route else
                       A.risk(alpha, model="network", lam=0.01, **K2))
        r1, r0 = out
        assert r1.converged == r0.converged and r1.n_kappa == r0.n_kappa
        if r0.converged:
            assert abs(r1.risk - r0.risk) <= (0.0 if not route else 1e-12) * abs(r0.risk)
