"""The interpolated Gaussian moments (asymptotics.coefficients.line_moments) against the direct
rule they interpolate, the quadrature ladder's settling rule, the steps mapping's cache and its
refusal of a product rule too large for memory."""

from __future__ import annotations

import math

import numpy as np
import pytest

import asymptotics as A
from asymptotics.coefficients.functions import get_function
from asymptotics.coefficients.line_moments import TOL, line_moments
from asymptotics.coefficients.quadrature import gaussian_moments
from asymptotics.multiindex import steps as steps_mod
from asymptotics.spiked import solve as spiked_solve


@pytest.mark.parametrize("name,s", [("tanh", 1.0), ("relu", 0.8), ("softplus", 0.3),
                                    ("erf", 1.2), ("relu", 0.05)])
def test_interpolant_is_the_direct_rule(name, s):
    """At 5000 shifts in [-9, 9] the interpolant equals the rule it interpolates to TOL of each
    moment's scale (or is that rule, where the check refuses the interpolant)."""
    fn = get_function(name)
    t = np.random.default_rng(1).uniform(-9.0, 9.0, 5000)
    got = line_moments(fn, t, s, n_smooth=96, n_piece=40)
    ref = gaussian_moments(fn, t, np.full(t.shape, s), n_smooth=96, n_piece=40)
    scale = math.sqrt(np.max(np.abs(ref[:, 2])))
    assert np.max(np.abs(got[:, :2] - ref[:, :2])) <= 10 * TOL * scale
    assert np.max(np.abs(got[:, 2] - ref[:, 2])) <= 10 * TOL * scale**2


def test_kinked_function_at_zero_scale_is_the_direct_rule():
    """relu(t + 0 Z) is kinked in t: no interpolation, the direct rule bit for bit."""
    fn = get_function("relu")
    t = np.linspace(-3.0, 3.0, 4001)
    assert np.array_equal(line_moments(fn, t, 0.0), gaussian_moments(fn, t, np.zeros(t.shape)))


def _res(risk, converged=True):
    return spiked_solve.SpikedResult(
        alpha=1.0, risk=risk, converged=converged, status="converged" if converged else
        "max_iter", message="", iterations=1, residual=0.0, sigma="tanh", target="tanh",
        loadings=[[1.0]], bulk=[1.0], fractions=[1.0], overlaps=[[0.5]], lam=0.01, beta=1.0,
        delta=0.0, p=math.inf, order={}, state=())


def _climb(risks):
    """The ladder climbed on a point whose rules give ``risks`` (NaN: not converged)."""
    ladder = tuple(range(10, 10 + len(risks)))
    return spiked_solve._climb(
        lambda i: _res(risks[i], converged=not math.isnan(risks[i])), ladder)


def test_a_point_is_settled_only_by_converged_rules_that_agree():
    """Settled: the last SETTLE_CHANGES changes between successive converged rules all within
    QUADRATURE_RTOL, or the last one within QUADRATURE_RTOL / PAIR_FACTOR; a NaN (one rule
    unconverged) restarts the count; two failures in a row are a failure of the equations; two
    rules agreeing by accident after a large change do not settle a point; a ladder exhausted
    unsettled is NaN with the reason."""
    assert spiked_solve.SETTLE_CHANGES == 2 and spiked_solve.QUADRATURE_RTOL == 1e-3
    assert spiked_solve.PAIR_FACTOR == 100.0
    res, i = _climb([0.5, 0.5 * (1 + 1e-4), 0.5 * (1 + 2e-4)])
    assert i == 2 and res.converged and res.n_kappa == 12
    assert res.quadrature_change == pytest.approx(1e-4, rel=1e-3)
    res, i = _climb([0.5, 0.5 * (1 + 1e-6), 0.7])  # two rules agreeing to 1e-6
    assert i == 1 and res.quadrature_change == pytest.approx(1e-4, rel=1e-3)
    # an oscillation crossing its limit: 0.50 -> 0.51 -> 0.5101 agree to 2e-4 but do not settle
    res, i = _climb([0.50, 0.51, 0.5101, 0.5102])
    assert i == 3 and res.risk == 0.5102
    res, i = _climb([0.5, 0.51, math.nan, 0.5, 0.5003, 0.5004])
    assert i == 5
    res, i = _climb([0.5, math.nan, math.nan, 0.5, 0.5])
    assert i == -1 and not res.converged
    res, i = _climb([0.5, 0.6, 0.5, 0.6])
    assert i is None and not res.converged and math.isnan(res.risk)
    assert "quadrature not resolved" in res.message


def test_steps_mapping_is_computed_once_and_shared():
    """The same parameters give the same states (the cache), and a longer run starts from the
    cached shorter one with the same numbers as a fresh computation."""
    steps_mod.clear_cache()
    kw = dict(alpha0=16.0, readout="pm1")
    two = A.steps_mapping("erf(z-1)", "z1 + z1*z2", steps=2, eta=(2.0, 8.0), **kw)
    again = A.steps_mapping("erf(z-1)", "z1 + z1*z2", steps=2, eta=(2.0, 8.0), **kw)
    assert again.states[-1] is two.states[-1]
    three = A.steps_mapping("erf(z-1)", "z1 + z1*z2", steps=3, eta=(2.0, 8.0, 1.0), **kw)
    assert three.states[2] is two.states[2]
    steps_mod.clear_cache()
    fresh = A.steps_mapping("erf(z-1)", "z1 + z1*z2", steps=3, eta=(2.0, 8.0, 1.0), **kw)
    assert np.array_equal(fresh.states[3].c, three.states[3].c)


def test_a_product_rule_too_large_is_refused_in_one_line():
    """Groups spanning r >= 4 directions (five readout values after a few steps): the steps'
    product rule (73^r nodes) and the K-group kappa rule above r = 4 are refused in one line,
    before any node is built."""
    K, k = 5, 2
    rng = np.random.default_rng(0)
    st = steps_mod.GroupState(3, rng.standard_normal((K, k)), rng.standard_normal((K, 2)),
                              np.ones(K))
    with pytest.raises(ValueError, match=r"span r = 4 directions") as err:
        steps_mod.advance(st, sigma=get_function("tanh"), g=get_function("tanh"),
                          values=np.linspace(-2, 2, K), fractions=np.full(K, 0.2), eta=1.0,
                          alpha0=4.0, delta=0.0)
    assert "\n" not in str(err.value)
    with pytest.raises(ValueError, match=r"r = 5 .* r <= 4") as err:
        A.risk_spiked(1.0, sigma="tanh", target="tanh", loadings=rng.standard_normal((2, 5)),
                      bulk=[1.0, 1.0], fractions=[0.5, 0.5], overlaps=np.full((5, 1), 0.1))
    assert "\n" not in str(err.value)


def test_a_tensor_rule_beyond_memory_is_refused_in_one_line():
    """A non-polynomial target of eight unlearned directions would need 8^8 omega nodes: one
    line, before any node is built (it was a product of 1.7e7 tuples)."""
    t = "tanh(" + "+".join(f"z{i}" for i in range(1, 9)) + ")"
    with pytest.raises(ValueError, match="tensor quadrature rule over 8 dimensions") as err:
        A.risk_spiked(1.0, sigma="tanh", target=t, loadings=[[0.5]], bulk=[1.0],
                      fractions=[1.0], overlaps=[[0.3] * 8])
    assert "\n" not in str(err.value)


def test_the_interpolant_is_clenshaw_on_the_stored_pieces_stacked():
    """``on_line`` evaluates the stored pieces of its range, stacked in order (np.array of the
    list: np.stack's array), at lo = 2 h p_lo: the same numbers as the stack of them."""
    from asymptotics.coefficients import line_moments as L

    fn = get_function("tanh")
    t = np.linspace(-7.3, 6.1, 4001)
    key = ("test stacked pieces", 0.8)
    L._PIECES.pop(key, None)
    got = L.on_line(lambda p: L.direct_moments(fn, p, 0.8), t, 0.8, key=key, moments=True)
    h = 0.8
    lo, hi = int(np.floor(t.min() / (2 * h))), int(np.floor(t.max() / (2 * h)))
    coef = np.ascontiguousarray(np.stack([L._PIECES[key][i] for i in range(lo, hi + 1)]))
    assert np.array_equal(got, L._clenshaw(coef, 2 * h * lo, h, t))
    L._PIECES.pop(key, None)
