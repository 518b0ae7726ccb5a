"""A curve with a probe resolved on no kappa ladder is still decided once (docs/THEORY.md §10.8,
``curve_on_ladder(fail_fast=True)``, the sRF groups' curves): the other probes decide the rule,
the curve is swept once on it, and only the points between the unresolved probe and its settled
neighbours climb, walking from the settled side until two successive points settle on no rule;
the points left are NaN with the reason, never a number."""

from __future__ import annotations

import math

import numpy as np

from asymptotics.equations.ladder import FAIL_RUN, PROBES, curve_on_ladder
from asymptotics.spiked import solve as spiked_solve


def _res(alpha: float, risk: float, converged: bool = True):
    return spiked_solve.SpikedResult(
        alpha=alpha, risk=risk, converged=converged, status="converged" if converged else
        "max_iter", message="" if converged else "quadrature not resolved: probe",
        iterations=1, residual=0.0, sigma="tanh", target="tanh", loadings=[[1.0]], bulk=[1.0],
        fractions=[1.0], overlaps=[[0.5]], lam=0.01, beta=1.0, delta=0.0, p=math.inf,
        order={"V1": [[0.5]]}, state=(0.5, 0.25), quadrature_change=1e-4 if converged else
        math.inf)


def _run(verdict, n: int = 40, fail_fast: bool = True):
    """curve_on_ladder on n alphas with rules (10, 11, 12, "a", "b") (second ladder at 3);
    ``verdict(alpha, start)``: the index a climb settles on (None unresolved, -1 failed)."""
    alphas = [float(a) for a in np.linspace(0.5, 3.0, n)]
    seen, swept = [], []

    def climb_at(a, start):
        seen.append((a, start))
        i = verdict(a, start)
        return _res(a, 1.0 if i is not None and i >= 0 else math.nan,
                    i is not None and i >= 0), i

    def sweep(rule, bar_on, carried, first, known):
        swept.append((rule, sorted(known)))
        return [spiked_solve.relabel(known[j], n_kappa=carried[0]) if j in known
                else _res(a, 2.0) for j, a in enumerate(alphas)]

    out = curve_on_ladder(alphas, (10, 11, 12, "a", "b"), sweep, climb_at, False, second=3,
                          fail_fast=fail_fast)
    return alphas, out, seen, swept


def test_an_unresolved_first_probe_is_walked_to_from_its_neighbour_then_fails_fast():
    """Probe 0 is resolved on no ladder, points 0..6 as well; the others settle on rule 1. The
    other probes still climb (from the first rule: no probe settled on the second ladder), the
    walk climbs from probe 1 down to the last settled point and two unresolved ones, the rest
    is NaN without a climb, and the sweep (rule 11) solves every other point once."""
    n = 40
    alphas = [float(a) for a in np.linspace(0.5, 3.0, n)]
    at = sorted({round(f * (n - 1)) for f in PROBES})
    hard = set(alphas[:7])
    alphas, out, seen, swept = _run(lambda a, s: None if a in hard else 1, n)
    probes_seen = [a for a, _ in seen[:len(at)]]
    assert probes_seen == [alphas[j] for j in at] and all(s == 0 for _, s in seen)
    walked = [a for a, _ in seen[len(at):]]
    assert walked == [alphas[j] for j in range(at[1] - 1, 6 - FAIL_RUN, -1)]
    assert len(swept) == 1 and swept[0][0] == 11
    for j, res in enumerate(out):
        assert res.alpha == alphas[j]
        if j < 7:
            assert not res.converged and math.isnan(res.risk)
            assert "quadrature not resolved" in res.message
        else:
            assert res.converged and res.risk == (1.0 if j < at[1] or j in at else 2.0)
    # the points not climbed say why, and carry no state of another alpha
    skipped = [out[j] for j in range(1, 7 - FAIL_RUN)]
    assert skipped and all("not climbed" in r.message and r.iterations == 0 for r in skipped)
    assert all(math.isnan(x) for r in skipped for x in r.state)


def test_a_point_that_settles_inside_the_walk_restarts_the_count():
    """One unresolved point, then a settled one, then two unresolved: the walk goes on past the
    single miss (FAIL_RUN successive misses end it)."""
    n = 40
    alphas = [float(a) for a in np.linspace(0.5, 3.0, n)]
    at = sorted({round(f * (n - 1)) for f in PROBES})
    hard = {alphas[j] for j in range(0, 6)} | {alphas[8]}
    alphas, out, seen, swept = _run(lambda a, s: None if a in hard else 1, n)
    walked = [a for a, _ in seen[len(at):]]
    assert walked == [alphas[j] for j in range(at[1] - 1, 3, -1)]
    assert out[7].converged and not out[8].converged and not out[5].converged
    assert all(not out[j].converged for j in range(0, 6))


def test_between_two_unresolved_probes_nothing_is_climbed():
    """Probes 0 and 1 unresolved: the points between them are NaN without a climb; the walk
    from probe 2 towards probe 1 climbs."""
    n = 40
    alphas = [float(a) for a in np.linspace(0.5, 3.0, n)]
    at = sorted({round(f * (n - 1)) for f in PROBES})
    alphas, out, seen, swept = _run(lambda a, s: None if a <= alphas[at[1]] else 1, n)
    walked = [a for a, _ in seen[len(at):]]
    assert all(a > alphas[at[1]] for a in walked)
    assert all(not out[j].converged for j in range(at[1] + 1))
    assert all("not climbed" in out[j].message for j in range(1, at[1]))


def test_a_probe_on_the_second_ladder_moves_the_walk_there_and_without_fail_fast_as_before():
    """A probe that settled on the second ladder: the later probes and the walk climb from it.
    Without ``fail_fast`` an unresolved probe ends the probing and every point climbs from the
    first rule (the policy of the network's curves)."""
    n = 40
    alphas = [float(a) for a in np.linspace(0.5, 3.0, n)]
    at = sorted({round(f * (n - 1)) for f in PROBES})
    hard = set(alphas[:5])
    alphas, out, seen, swept = _run(lambda a, s: None if a in hard else (
        4 if a == alphas[at[1]] or s == 3 else 1), n)
    assert [s for _, s in seen[:2]] == [0, 0] and all(s == 3 for _, s in seen[2:])
    assert swept[0][0] == "b"
    alphas, out, seen, swept = _run(lambda a, s: None if a in hard else 1, n, fail_fast=False)
    assert swept == [] and [s for _, s in seen[1:]] == [0] * n


def test_a_curve_asked_again_takes_its_walk_from_the_probes_cache():
    """With a ProbeCache the walk's outcomes are kept beside the probes': the same curve asked
    again climbs nothing and returns the same rows; other alphas between the probes climb."""
    from asymptotics.equations.ladder import ProbeCache

    n = 40
    alphas = [float(a) for a in np.linspace(0.5, 3.0, n)]
    hard = set(alphas[:7])
    cache = ProbeCache(8)
    seen = []

    def climb_at(a, start):
        seen.append(a)
        ok = a not in hard
        return _res(a, 1.0 if ok else math.nan, ok), (1 if ok else None)

    def sweep(rule, bar_on, carried, first, known):
        return [known.get(j, _res(a, 2.0)) for j, a in enumerate(xs)]

    outs = []
    for xs in (alphas, alphas, [*alphas[:8], alphas[8] + 1e-3, *alphas[9:]]):
        seen.clear()
        outs.append((curve_on_ladder(xs, (10, 11, 12, "a", "b"), sweep, climb_at, False,
                                     second=3, cache=(cache, "model"), fail_fast=True),
                     list(seen)))
    (first, climbed), (again, climbed2), (moved, climbed3) = outs
    assert climbed and climbed2 == [] and climbed3 and climbed3[0] != alphas[0]
    assert [(r.alpha, r.converged, r.message) for r in first] == \
        [(r.alpha, r.converged, r.message) for r in again]


def test_a_softplus_curve_whose_small_alphas_no_ladder_resolves():
    """Softplus, +-1 readout, three steps (``bench_engine.py`` section 3's draw 0 of seed 779):
    at small alpha the aligned rule's Gauss-Hermite axis is too coarse for the second group
    (THEORY.md §10.8), so the curve's first probe is resolved on no ladder. The curve is still
    decided once: its NaN rows say why, its converged rows agree with a finer aligned rule (216
    Gauss-Hermite nodes on the other axis) within the tolerance, and asked again it is the same
    frame, bit for bit."""
    import asymptotics as A
    from asymptotics.equations.ladder import QUADRATURE_RTOL
    from asymptotics.multiindex.steps_risk import mapping_params
    from asymptotics.spiked.problem import spiked_builder

    kw = dict(sigma="softplus", target="z1 + 0.5*z1**2", alpha0=4.0, eta=(8.89, 14.22, 14.45))
    alphas = np.linspace(0.2, 5.0, 100)
    df = A.risk_curve(alphas, model="srf", steps=3, readout="pm1", lam=0.01, **kw)
    again = A.risk_curve(alphas, model="srf", steps=3, readout="pm1", lam=0.01, **kw)
    assert df.equals(again)
    bad = df[~df.converged]
    assert 0 < len(bad) <= 20 and not bad.alpha.gt(1.4).any()
    assert bad.risk.isna().all() and bad.message.str.startswith("quadrature not resolved").all()
    assert df.converged.iloc[30:].all()
    mp = A.steps_mapping(kw["sigma"], kw["target"], steps=3, alpha0=4.0, eta=kw["eta"],
                         readout="pm1")
    build = spiked_builder(sigma="softplus", lam=0.01, beta=1.0, **mapping_params(mp, 3))
    fine = build((0.035, 216), None)
    for j in (20, 50, 99):
        ref = spiked_solve.solve_spiked(fine, float(alphas[j]))
        assert ref.converged and df.converged.iloc[j]
        assert abs(df.risk.iloc[j] - ref.risk) <= QUADRATURE_RTOL * ref.risk
