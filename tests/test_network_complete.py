"""A point's completion and residual check as one numba kernel where W is diagonal
(asymptotics/network/compiled/complete.py, docs/THEORY.md §15, DERIVATIONS.md §9.7): the state,
the residual and the risk within rounding of the Python completion (``complete_net``,
``full_map_net``, ``risk_of``), the bulk's warm starts and kept results left bit for bit as the
Python leaves them, the NaN of a failed resolvent, and the route's points with and without the
kernel."""

from __future__ import annotations

import math

import numpy as np
import pytest

from asymptotics.network import solve as S
from asymptotics.network.compiled import complete as C

K1 = dict(sigma="tanh", target="z1 + z1*z2", alpha0=4.942, readout="constant", steps=2,
          eta=(1.0, 2.0), beta=1.624, p=1624.0)
K2 = dict(sigma="tanh", target="tanh(z1)", alpha0=13.848, readout="pm1", steps=2,
          eta=(2.0, 4.0), beta=1.524, p=1524.0)
#: W not diagonal (a group outside the base class): one outside it (W low rank), K = 2 and 3
G2 = dict(sigma="relu", target="z1 + z1*z2", alpha0=5.267, readout="pm1", steps=2,
          eta=(2.0, 4.0), beta=0.776, p=776.0)
G3 = dict(sigma="tanh", target="tanh(z1)", alpha0=8.677, readout={2.0: 0.25, 1.0: 0.5, -1.0: 0.25},
          steps=2, eta=(2.0, 4.0), beta=1.552, p=1552.0)
BULK = ("tau_last", "y_last", "jac_last", "lin_last", "_ed_last", "_gram_last")


def _calls(kw, monkeypatch) -> list:
    """The arguments of every completion of a point at alpha = 2 (and the bulk's state then)."""
    import asymptotics as A

    seen = []
    real = S.complete_fast

    def spy(v, ch, a, bulk, floor):
        seen.append((v.copy(), ch, a, bulk, floor, _snap(ch)))
        return real(v, ch, a, bulk, floor)

    monkeypatch.setattr(S, "complete_fast", spy)
    A.risk(2.0, model="network", lam=0.01, **kw)
    assert seen
    return seen


def _snap(ch) -> dict:
    b = ch.bulk
    out = {k: getattr(b, k, None) for k in BULK}
    out["_memo"] = dict(b._memo)
    out["ch"] = (ch._acal, ch._blk, ch._key, ch._val)
    return out


def _restore(ch, snap: dict) -> None:
    b = ch.bulk
    for k in BULK:
        setattr(b, k, snap[k])
    b._memo.clear()
    b._memo.update(snap["_memo"])
    ch._acal, ch._blk, ch._key, ch._val = snap["ch"]


def _same(x, y) -> bool:
    """Bit for bit (arrays, tuples of them, numbers, None)."""
    if isinstance(x, tuple | list):
        return len(x) == len(y) and all(_same(a, b) for a, b in zip(x, y, strict=True))
    if isinstance(x, np.ndarray):
        return isinstance(y, np.ndarray) and x.shape == y.shape and (
            x.tobytes() == y.tobytes())
    return (x is None and y is None) or x == y or (x != x and y != y)


def _python(v, ch, a, bulk, floor) -> tuple:
    state, ok = S.complete_net(v, ch, *a, bulk=bulk)
    fin = np.all(np.isfinite(state))
    res = S.rel_res(state, S.full_map_net(state, ch, *a, bulk=bulk), floor) if fin \
        else math.nan
    K = a[3].shape[1]
    o = S.sizes(K, a[1].shape[-1], a[6].shape[1])
    cut = state.copy()
    cut[o[1]:o[2]] = np.maximum(cut[o[1]:o[2]], 0.0)
    return state, ok, res, S.risk_of(cut, *a[:8]) if fin else math.nan


@pytest.mark.parametrize("kw", [K1, K2, G2, G3], ids=["K1", "K2", "G2", "G3"])
def test_completion_is_pythons_and_keeps_the_same_warm_starts(kw, monkeypatch):
    """From the same kept state of the bulk, the kernel's completion and the Python one give
    the state within 1e-12 of each entry (1e-13 of the largest), the same ``ok``, residuals
    within 1e-13 and risks within 1e-13 relative; the bulk's warm starts (tau, the Jacobians'
    arguments, the kept W, Hessian parts and derivative matrix, in the same order) and the
    coupling's kept Acal are bit for bit the Python's. W diagonal (K1, K2) and not (G2, G3:
    the field parts' forms from ``W a``)."""
    for v, ch, a, bulk, floor, snap in _calls(kw, monkeypatch):
        diagonal = kw in (K1, K2)
        assert a[1].ndim == 3 and (bulk._eig[3] == bulk.K) == diagonal  # (the kernel's cases)
        _restore(ch, snap)
        fast = C.complete_fast(v, ch, a, bulk, floor)
        after_fast = _snap(ch)
        _restore(ch, snap)
        ref = _python(v, ch, a, bulk, floor)
        after_py = _snap(ch)
        assert fast is not None and fast[2] is not None
        state, ok, res, risk = fast
        assert ok == ref[1] and np.all(np.isfinite(state))
        scale = np.max(np.abs(ref[0]))
        assert np.all(np.abs(state - ref[0]) <= 1e-12 * np.abs(ref[0]) + 1e-13 * scale)
        assert abs(res - ref[2]) <= 1e-13 and res <= 1e-10
        assert abs(risk - ref[3]) <= 1e-13 * abs(ref[3])
        for k in BULK:
            assert _same(after_fast[k], after_py[k]), k
        assert list(after_fast["_memo"]) == list(after_py["_memo"])
        for k, x in after_py["_memo"].items():
            assert _same(after_fast["_memo"][k], x), k[0]
        assert _same(after_fast["ch"][0], after_py["ch"][0])


def test_a_failed_resolvent_is_nan_as_in_python(monkeypatch):
    """A (V1, V2) where the bulk's resolvent fails (NaN): the NaN state and not ok, as the
    Python completion gives them."""
    v, ch, a, bulk, floor, snap = _calls(K1, monkeypatch)[0]
    bad = np.full_like(v, np.nan)
    _restore(ch, snap)
    state, ok, res, risk = C.complete_fast(bad, ch, a, bulk, floor)
    _restore(ch, snap)
    ref, ok_ref = S.complete_net(bad, ch, *a, bulk=bulk)
    assert not ok and not ok_ref and np.all(np.isnan(state)) and np.all(np.isnan(ref))
    assert state.shape == ref.shape and math.isnan(res) and math.isnan(risk)


def test_where_it_does_not_apply(monkeypatch):
    """Without the bulk, with the nodes' mean table (n x r) or with COMPILED False: None (the
    Python completion)."""
    v, ch, a, bulk, floor, snap = _calls(K1, monkeypatch)[0]
    assert C.complete_fast(v, ch, a, None, floor) is None
    flat = (a[0], np.ascontiguousarray(a[1][:, 0, :]), *a[2:])
    assert C.complete_fast(v, ch, flat, bulk, floor) is None
    monkeypatch.setattr(C, "COMPILED", False)
    assert C.complete_fast(v, ch, a, bulk, floor) is None


def test_a_singular_solve_in_the_kernel_leaves_the_point_to_python(monkeypatch):
    """numba's solves raise LinAlgError on a singular matrix: the point then takes the Python
    completion (None), as where the kernel does not apply, not the user's traceback."""
    v, ch, a, bulk, floor, snap = _calls(K1, monkeypatch)[0]

    def singular(*args):
        raise np.linalg.LinAlgError("Matrix is singular to machine precision.")

    _restore(ch, snap)
    monkeypatch.setattr(C, "complete_check", singular)
    assert C.complete_fast(v, ch, a, bulk, floor) is None


@pytest.mark.parametrize("kw", [K1, K2], ids=["K1", "K2"])
def test_route_points_with_and_without_the_kernel(kw, monkeypatch):
    """Points along alpha with and without the kernel: converged alike, the risks within 1e-12
    relative and every state entry within 1e-11 of the largest."""
    import asymptotics as A

    for alpha in (0.5, 2.0, 8.0):
        out = []
        for flag in (True, False):
            monkeypatch.setattr(C, "COMPILED", flag)
            out.append(A.risk(alpha, model="network", lam=0.01, **kw))
        r1, r0 = out
        assert r1.converged == r0.converged
        if r0.converged:
            assert abs(r1.risk - r0.risk) <= 1e-12 * abs(r0.risk)
            s1, s0 = np.asarray(r1.state), np.asarray(r0.state)
            assert np.max(np.abs(s1 - s0)) <= 1e-11 * np.max(np.abs(s0))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_forms_wa_kernel_is_the_numpy_forms(seed):
    """The kernel :func:`asymptotics.network.compiled.coupled.forms_wa` (called itself) against
    the numpy :func:`~asymptotics.network.compiled.coupled.forms_from_wa` on random states
    (B x K x n x K x m, K = 2, 3): within 1e-13 relative."""
    from asymptotics.network.compiled import coupled as CC

    rng = np.random.default_rng(seed)
    B, K, n, m = 3, 2 + seed % 2, 7, 3
    Wa = rng.standard_normal((B, K, n, K, m))
    a = rng.standard_normal((B, K, m, n))
    wa = rng.standard_normal((K, m))
    vh = rng.standard_normal((K, K))
    vh = vh @ vh.T
    D = rng.uniform(0.5, 2.0, K)
    c1, c2 = CC.forms_wa(Wa, a, wa, vh, D)
    r1, r2 = CC.forms_from_wa(Wa, np.swapaxes(a, 2, 3), wa, vh, D)
    assert np.allclose(c1, r1, rtol=1e-13, atol=1e-13 * np.max(np.abs(r1)))
    assert np.allclose(c2, r2, rtol=1e-13, atol=1e-13 * np.max(np.abs(r2)))
