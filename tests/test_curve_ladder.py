"""The K-group quadrature policy of a curve (docs/THEORY.md §10.8): the tensor ladder, then the
aligned rules of DERIVATIONS.md §9.6 as a second ladder (r = 2, 3); a curve whose probe needed the
second ladder verifies its other probes on it alone; a point is settled only by converged rules
that agree, and a point the rules do not resolve stays NaN with the reason."""

from __future__ import annotations

import math

import numpy as np
import pytest

import asymptotics as A
from asymptotics.equations.ladder import (
    PROBES,
    QUADRATURE_RTOL,
    aligned_ladder,
    climb_ladders,
    curve_on_ladder,
    ladder,
)
from asymptotics.spiked import solve as spiked_solve
from asymptotics.spiked.coefficients import tensor_rule
from asymptotics.spiked.problem import aligned_nodes, spiked_builder

#: a setting drawn by ``benchmarks/bench_engine.py --steps-seed 4242`` whose groups after three
#: steps are sharp along one loading (|u| = 5.46 at bulk variance 1.48: features of width 0.22
#: in kappa): the tensor ladder does not settle it up to 183 nodes a dimension at 69 of 100 alphas
SHARP = dict(sigma="erf(z-1)", target="z1 + z1*z2", alpha0=math.inf, eta=(11.93, 3.07, 6.75),
             readout="pm1", steps=3, lam=0.01, model="srf")


def _res(risk: float, converged: bool = True):
    return spiked_solve.SpikedResult(
        alpha=1.0, risk=risk, converged=converged, status="converged" if converged else
        "max_iter", message="", iterations=1, residual=0.0, sigma="tanh", target="tanh",
        loadings=[[1.0]], bulk=[1.0], fractions=[1.0], overlaps=[[0.5]], lam=0.01, beta=1.0,
        delta=0.0, p=math.inf, order={}, state=())


def test_the_second_ladder_is_climbed_only_where_the_first_does_not_resolve():
    """Indices count over both ladders end to end; the second ladder is not touched where the
    first settles or where the equations fail (-1); ``start`` skips rules; a point resolved on
    neither ladder is NaN with the first ladder's reason."""
    first, second = (10, 11, 12), ((0.1, 20), (0.05, 30))
    calls: list = []

    def solver(risks):
        def solve_rule(rule, is_first):
            calls.append((rule, is_first))
            r = risks[rule]
            return _res(r, converged=not math.isnan(r))
        return solve_rule

    settle_first = {10: 0.5, 11: 0.5 * (1 + 1e-7), 12: 0.9, (0.1, 20): 1.0, (0.05, 30): 1.0}
    res, i = climb_ladders(solver(settle_first), (first, second))
    assert i == 1 and res.n_kappa == 11 and [c[0] for c in calls] == [10, 11]
    assert calls[0][1] and not calls[1][1]
    calls.clear()
    wobble = {10: 0.5, 11: 0.6, 12: 0.5, (0.1, 20): 0.55, (0.05, 30): 0.55 * (1 + 1e-7)}
    res, i = climb_ladders(solver(wobble), (first, second))
    assert i == 4 and res.converged and res.risk == wobble[(0.05, 30)] and res.n_kappa == 30
    assert [c[0] for c in calls] == [10, 11, 12, (0.1, 20), (0.05, 30)]
    calls.clear()
    res, i = climb_ladders(solver(wobble), (first, second), start=3)
    assert i == 4 and [c[0] for c in calls] == [(0.1, 20), (0.05, 30)] and calls[0][1]
    failing = {10: math.nan, 11: math.nan, 12: 0.5, (0.1, 20): 0.5, (0.05, 30): 0.5}
    assert climb_ladders(solver(failing), (first, second))[1] == -1
    neither = {10: 0.5, 11: 0.6, 12: 0.5, (0.1, 20): 0.55, (0.05, 30): 0.6}
    res, i = climb_ladders(solver(neither), (first, second))
    assert i is None and math.isnan(res.risk) and "quadrature not resolved" in res.message
    assert res.n_kappa == 12 and "nor did the next ladder settle" in res.message


def test_a_probe_that_needed_the_second_ladder_moves_the_other_probes_there():
    """Probes climb from the start of the rules until one needs the second ladder; the later
    probes climb it alone; the curve is swept once on the finest rule a probe settled on. A
    probe resolved on neither ladder stops the probing, and every point then climbs both
    ladders from the first rule, as a single point does (settled by its own rules, or NaN with
    the reason)."""
    alphas = [float(a) for a in np.linspace(0.5, 3.0, 20)]
    probe_at = [alphas[round(f * (len(alphas) - 1))] for f in PROBES]

    def run(verdict):
        seen, swept = [], []

        def climb_at(a, start):
            seen.append((a, start))
            return _res(1.0), verdict(a, start)

        def sweep(rule, bar_on, carried, first, known):
            swept.append(rule)
            return [_res(2.0)] * len(alphas)

        out = curve_on_ladder(alphas, (10, 11, 12, "a", "b"), sweep, climb_at, False, second=3)
        return out, seen, swept

    # the second probe needs the second ladder: probes 3-5 start there
    out, seen, swept = run(lambda a, s: 4 if a == probe_at[1] or s == 3 else 2)
    assert seen == [(probe_at[0], 0), (probe_at[1], 0)] + [(a, 3) for a in probe_at[2:]]
    assert swept == ["b"] and [r.risk for r in out] == [2.0] * len(alphas)
    # the first ladder settles every probe: one ladder, as before
    out, seen, swept = run(lambda a, s: 1)
    assert [s for _, s in seen] == [0] * len(PROBES) and swept == [11]
    # the third probe (on the second ladder: the second needed it) is resolved on neither
    # ladder: no more probes, each point climbs from the first rule
    out, seen, swept = run(lambda a, s: None if a == probe_at[2] else (4 if a == probe_at[1]
                                                                       else 1))
    assert seen[:3] == [(probe_at[0], 0), (probe_at[1], 0), (probe_at[2], 3)]
    assert seen[3:] == [(a, 0) for a in alphas] and swept == []


def test_the_aligned_rule_is_a_rule_of_the_standard_gaussian():
    """The aligned nodes (rotated onto the sharpest loading, pruned) integrate the moments of
    kappa ~ N(0, I_2): weights sum to 1, E kappa = 0 and E kappa kappa^T = I to 1e-10, and
    E (u . kappa)^4 = 3 |u|^4 along the sharp loading to 1e-9 and within twice the error of the
    tensor rule of 54 nodes (both lose the same pruned tail, weights below PRUNE x the largest:
    3e-10 here)."""
    U = np.array([[-5.46, 0.236], [5.46, 0.236]])
    k54, w54 = tensor_rule(2, 54)
    tensor_err = abs(w54 @ (k54 @ U[0]) ** 4 / (3 * (U[0] @ U[0]) ** 2) - 1.0)
    for h, n in aligned_ladder(2):
        kap, w = aligned_nodes(U, np.array([1.48, 1.48]), h, n)
        assert abs(w.sum() - 1.0) < 1e-14
        np.testing.assert_allclose(w @ kap, 0.0, atol=1e-10)
        np.testing.assert_allclose((kap * w[:, None]).T @ kap, np.eye(2), atol=1e-10)
        t = kap @ U[0]
        err = abs(w @ t**4 / (3 * (U[0] @ U[0]) ** 2) - 1.0)
        assert err < 1e-9 and err <= 2 * tensor_err


def test_a_smooth_setting_gives_the_same_risk_on_both_ladders():
    """Where the tensor ladder settles (smooth groups), the aligned rules integrate the same
    Gaussian integral on other nodes: closer to a fine tensor rule (183 nodes a dimension) from
    rule to rule, the coarsest within 1e-5, the last within 1e-10."""
    kw = dict(sigma="tanh", target="z1 + z1*z2", loadings=[[1.0, 0.3], [-0.5, 0.8]],
              bulk=[0.8, 1.1], fractions=[0.4, 0.6], overlaps=[[0.7, 0.1], [0.2, 0.5]],
              lam=0.01, beta=1.2)
    assert spiked_solve.risk_spiked(1.3, **kw).n_kappa in ladder(2)  # (settled on the tensor)
    build = spiked_builder(**kw)
    ref = spiked_solve.solve_spiked(build(183, None), 1.3)
    assert ref.converged
    errs = []
    for rule in aligned_ladder(2):
        res = spiked_solve.solve_spiked(build(rule, None), 1.3)
        assert res.converged
        errs.append(abs(res.risk - ref.risk) / ref.risk)
    assert errs[0] <= 1e-5 and errs == sorted(errs, reverse=True) and errs[-1] <= 1e-10


def test_sharp_groups_after_three_steps_settle_on_the_aligned_ladder():
    """The sharp setting: every point of a 100-alpha curve is settled (on the aligned ladder,
    the message says so), and the rows agree with a finer aligned rule (trapezoid step 0.02,
    100 nodes on the other axis, not on the ladder) to 1e-7 and with a tensor rule of 400 nodes
    a dimension (the other family, still converging) to 1e-4."""
    alphas = np.linspace(0.2, 5.0, 100)
    df = A.risk_curve(alphas, progress=False, **SHARP)
    assert df.converged.all() and df.quadrature_change.max() <= QUADRATURE_RTOL
    assert df.n_kappa.nunique() == 1 and "aligned rule" in df.message.iloc[0]
    mp = A.steps_mapping(SHARP["sigma"], SHARP["target"], steps=3, alpha0=SHARP["alpha0"],
                         eta=SHARP["eta"], readout=SHARP["readout"])
    build = spiked_builder(sigma=SHARP["sigma"], lam=0.01, beta=1.0, delta=0.0,
                           **mp.spiked_params(3))
    for j in (0, 37, 99):
        fine = spiked_solve.solve_spiked(build((0.02, 100), None), alphas[j])
        tensor = spiked_solve.solve_spiked(build(400, None), alphas[j])
        assert fine.converged and tensor.converged
        assert df.risk.iloc[j] == pytest.approx(fine.risk, rel=1e-7)
        assert df.risk.iloc[j] == pytest.approx(tensor.risk, rel=1e-4)
    pt = A.risk(float(alphas[37]), **SHARP)  # a single point climbs the same ladders
    assert pt.converged and pt.risk == pytest.approx(df.risk.iloc[37], rel=QUADRATURE_RTOL)


#: three groups after two steps with r = 3 learned directions (relu, the three-value readout):
#: features of width 0.235, 0.363, 0.785 along their loadings; the tensor ladder does not settle
#: it up to 72 nodes a dimension (benchmarks/aligned_r3_study.py)
SHARP3 = dict(sigma="relu", target="z1 + z1*z2", readout={2.0: 0.25, 1.0: 0.5, -1.0: 0.25},
              alpha0=8.0, eta=(2.0, 4.0), steps=2, lam=0.01, beta=1.0, p=1000.0, model="srf")


def test_three_spikes_settle_on_the_aligned_ladder(monkeypatch):
    """r = 3: where the tensor ladder is not resolved (NaN with the reason when the aligned
    ladder is taken away) the point settles on the aligned rules and agrees with a finer aligned
    rule off the ladder (trapezoid step 0.025, 72 nodes on each other axis) to 1e-5 and with the
    tensor rule of 106 nodes a dimension (the other family, still converging) to 1e-4."""
    from asymptotics.equations import ladder as ladder_mod
    from asymptotics.multiindex.steps_risk import mapping_params

    assert aligned_ladder(3) == aligned_ladder(2)
    res = A.risk(2.0, **SHARP3)
    assert res.converged and "aligned rule" in res.message
    assert res.quadrature_change <= QUADRATURE_RTOL
    mp = A.steps_mapping(SHARP3["sigma"], SHARP3["target"], steps=2, alpha0=SHARP3["alpha0"],
                         eta=SHARP3["eta"], readout=SHARP3["readout"])
    build = spiked_builder(sigma="relu", lam=0.01, beta=1.0, p=1000.0, delta=0.0,
                           **mapping_params(mp, 2))
    fine = spiked_solve.solve_spiked(build((0.025, 72), None), 2.0)
    tensor = spiked_solve.solve_spiked(build(106, None), 2.0)
    assert fine.converged and tensor.converged
    assert res.risk == pytest.approx(fine.risk, rel=1e-5)
    assert res.risk == pytest.approx(tensor.risk, rel=1e-4)
    monkeypatch.setitem(ladder_mod.ALIGNED_LADDER, 3, ())
    bare = A.risk(2.0, **SHARP3)
    assert not bare.converged and math.isnan(bare.risk)
    assert "quadrature not resolved" in bare.message
