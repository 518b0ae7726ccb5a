"""The steps mapping's weak spike axes, rotated spike axes, split target and fused xi sums
(docs/THEORY.md §12.4) against the rules they replace, which are independent quadratures of the
same integrals (the trapezoid rule on the weak axis, the unrotated lattice, the full other-axes
tensor rule, numpy's sums)."""
from __future__ import annotations

import numpy as np
import pytest

import asymptotics as A
from asymptotics.coefficients import step_quadrature
from asymptotics.coefficients.functions import get_function
from asymptotics.coefficients.gauss_rules import gauss_hermite
from asymptotics.multiindex import graded, polynomial_spikes, step_rules, xi_lines
from asymptotics.multiindex import steps as steps_mod
from asymptotics.spiked.problem import resolve_target


def _rel(x: steps_mod.StepsMapping, y: steps_mod.StepsMapping) -> float:
    out = 0.0
    for s, t in zip(x.states[1:], y.states[1:], strict=True):
        for u, v in ((s.a, t.a), (s.L @ s.L.T, t.L @ t.L.T), (s.c, t.c)):
            out = max(out, float(np.max(np.abs(u - v))) / float(np.max(np.abs(v))))
    return out


def _mapping(**kw) -> steps_mod.StepsMapping:
    steps_mod.clear_cache()
    return A.steps_mapping(kw["sigma"], kw["target"], steps=3, alpha0=kw["alpha0"],
                           eta=kw["eta"], readout=kw["readout"])


# a three-valued readout whose third spike direction is weak (singular value ~1e-2 of the first)
WEAK = dict(sigma="erf(z-1)", target="z1 + z1*z2 + z1*z2*z3",
            readout={1.0: 0.54, -1.0: 0.14, -0.73: 0.32}, alpha0=16.0, eta=(6.99, 1.68, 6.56))
# softplus, a steep group between the two leading spike axes (rotated onto one)
ROTATED = dict(sigma="softplus", target="z1 + 0.5*z1**2", readout={1.0: 0.16, -1.0: 0.78,
                                                                   1.08: 0.06},
               alpha0=16.0, eta=(12.51, 4.79, 9.74))


def test_weak_axes_agree_with_the_trapezoid_rule(monkeypatch):
    seen = []
    orig = graded.weak_axes
    monkeypatch.setattr(graded, "weak_axes", lambda *a: seen.append(orig(*a)) or seen[-1])
    new = _mapping(**WEAK)
    assert any(isinstance(h, np.ndarray) and np.any(h < 0) for h in seen)  # a weak axis used
    monkeypatch.setattr(graded, "weak_axes", lambda hs, *a: hs)
    assert _rel(new, _mapping(**WEAK)) < 1e-12


def test_rotated_spike_axes_agree_with_the_unrotated_lattice(monkeypatch):
    new = _mapping(**ROTATED)
    monkeypatch.setattr(step_quadrature, "spike_rotation", lambda *a, **k: None)
    assert _rel(new, _mapping(**ROTATED)) < 1e-12
    # and the rotation was taken (it halves the predicted lattice there)
    monkeypatch.undo()
    steps_mod.clear_cache()
    st = _mapping(**ROTATED).states[2]
    S = np.hstack([st.a, st.L])
    _, _, vt = np.linalg.svd(S)
    assert graded.rotation(S @ vt.T[:, :3], st.c, get_function("softplus"), True, 0.2,
                           9.0) is not None


def test_split_target_sums_are_the_untruncated_rule():
    """split_rest's e0, e1, e2 against the direct sums of g = z1 z2 + tanh(z1) over a full
    (unpruned) 128 x 4-node Gauss-Hermite rule on the other axes: the polynomial parts exact,
    the tanh parts the pruned rule's (to its truncation, ~1e-12)."""
    per = (None, 1)
    rng = np.random.default_rng(0)
    Q, _ = np.linalg.qr(rng.normal(size=(3, 3)))
    R, w, B = step_rules.other_axes(Q, 2, 48, per, 128)
    split = polynomial_spikes.split_target("z1*z2 + tanh(z1)", 2, per)
    assert split is not None and split.degree == 2
    R2, w2 = polynomial_spikes.split_rule(split, step_rules.other_axes, Q, 2, 48, per, R, B)
    assert R2 is not None and R2.shape[0] < R.shape[0]
    Uz, f = rng.normal(size=(7, 2)) * 2, rng.normal(size=7)
    e0, e1, e2 = polynomial_spikes.split_rest(split, Uz, R, w, R2, w2, B[:, :2], f, 0.1)
    xs, ws = gauss_hermite(128)
    xp, wp = gauss_hermite(4)
    RR = np.array([[a, b] for a in xs for b in xp])
    ww = np.array([a * b for a in ws for b in wp])
    g, _, _ = resolve_target("z1*z2 + tanh(z1)")
    e = g(Uz[:, None, :] + (RR @ B[:, :2])[None]) - f[:, None]
    assert np.max(np.abs(e @ ww - e0)) < 1e-11
    assert np.max(np.abs(e @ (ww[:, None] * RR) - e1)) < 1e-11
    assert np.max(np.abs((e * e) @ ww + 0.1 - e2)) < 1e-10 * np.max(np.abs(e2))
    # a mixed term (z2 tanh(z1)) or two non-polynomial variables: no split
    assert polynomial_spikes.split_target("z2*tanh(z1)", 2, per) is None
    assert polynomial_spikes.split_target("tanh(z1) + tanh(z2)", 2, (None, None)) is None


@pytest.mark.parametrize("name", ["softplus", "tanh"])
@pytest.mark.parametrize("sc", [0.3, 2.0, 6.9])
def test_fused_xi_sums_are_numpys(name, sc, monkeypatch):
    sigma = get_function(name)
    t, w = step_rules.xi_trapezoid(sc) if sc > 1 else gauss_hermite(96)
    M = np.linspace(-70.0, 70.0, 301) + 0.013
    small = sc < xi_lines.SMALL_BULK
    fn = xi_lines.xi_direct_small if small else xi_lines.xi_direct
    args = (1 if name == "tanh" else 0, float(sc), M, t, w, small)
    got = step_quadrature.xi_sums(*args)
    monkeypatch.setattr(xi_lines, "_fused", lambda *a, **k: None)
    ref = fn(sigma, sc, M, t, w)
    scale = np.max(np.abs(ref), axis=0)
    assert np.max(np.abs(got - ref) / scale) < 1e-13
