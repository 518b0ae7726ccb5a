"""A point of the network route on the coupled bulk takes its kappa rule from the isotropic
bulk's climb and solves the coupled bulk on that rule alone (asymptotics/equations/ladder.py
``climb_borrowed``, network/solve.py ``BORROW``; docs/THEORY.md §15): the policy on its own,
the rule and the borrowed estimate, the coupled solve on that rule against the route's solve
given the rule, and the fallback to the full coupled climb."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from asymptotics.equations.ladder import QUADRATURE_RTOL, climb, climb_borrowed
from tests.test_ladder_empty import _Res as Fake  # a ladder rule's result, faked

KW = dict(sigma="relu", target="z1 + z1*z2", alpha0=16.0, readout="pm1", steps=2,
          eta=(2.0, 4.0), lam=0.01, beta=1.0)




def test_policy_solves_the_full_model_on_the_cheap_climbs_rule():
    """The cheap climb settles on its third rule: the full model is solved there alone (from
    the cheap solution), carrying that rule and the cheap climb's estimate; with ``pair`` on
    the rule below too, and a change there above QUADRATURE_RTOL (or a failed full solve, or
    a cheap climb that does not settle) is None: the caller climbs the full model."""
    cheap = [1.0, 1.1, 1.1002, 1.10021, 1.10021]
    rules = [10, 16, 24, 36, 54]
    ref, i = climb(lambda j: Fake(cheap[j]), rules)
    calls = []

    def full(j, start, first, shift=0.0, ok=True):
        calls.append((j, start.risk, first))
        return Fake(2.0 + j * shift, converged=ok)

    got = climb_borrowed(lambda j: Fake(cheap[j]), full, rules)
    assert got is not None and got[1] == i == 3
    assert calls == [(3, cheap[3], True)]
    assert got[0].risk == 2.0 and got[0].n_kappa == 36
    assert got[0].quadrature_change == ref.quadrature_change <= QUADRATURE_RTOL
    calls.clear()
    got = climb_borrowed(lambda j: Fake(cheap[j]), lambda j, s, f: full(j, s, f, 1e-4), rules,
                         pair=True)
    assert calls == [(2, cheap[2], True), (3, cheap[3], False)]
    assert got[0].quadrature_change == max(ref.quadrature_change, 1e-4 / 2.0003)
    assert climb_borrowed(lambda j: Fake(cheap[j]), lambda j, s, f: full(j, s, f, 1e-2), rules,
                          pair=True) is None
    assert climb_borrowed(lambda j: Fake(cheap[j]), lambda j, s, f: full(j, s, f, ok=False),
                          rules) is None
    calls.clear()
    wobbly = [1.0, 1.2, 1.0, 1.2, 1.0]
    assert climb_borrowed(lambda j: Fake(wobbly[j]), full, rules) is None and not calls
    assert climb_borrowed(lambda j: Fake(math.nan, converged=False), full, rules) is None


def _setup():
    from asymptotics.network.route import route_setup

    kw = {k: KW[k] for k in ("steps", "alpha0", "eta", "readout")}
    params, bulk_kw = route_setup(KW["sigma"], KW["target"], **kw)
    p = dict(params)
    return p.pop("channels"), p, bulk_kw


def test_point_carries_the_isotropic_rule_and_the_coupled_solve_there():
    """The point (coupled bulk) carries the rule and the error estimate of the isotropic
    bulk's point (the same climb: bit for bit), and its risk is the route's coupled solve with
    that rule given (``n_kappa``), to the solver's tolerance (measured 1e-14); the old full
    coupled climb (``BORROW = False``) settles on the same rule here, within the borrowed
    estimate."""
    import asymptotics as A
    from asymptotics.network import solve as So
    from asymptotics.network.route import risk_network

    res = A.risk(2.0, model="network", **KW)
    iso = risk_network(2.0, outside="isotropic", **KW)
    assert res.converged and iso.converged and res.n_kappa is not None
    assert res.n_kappa == iso.n_kappa and res.quadrature_change == iso.quadrature_change
    sig, params, bulk_kw = _setup()
    given = So.risk_network_groups(2.0, channels=sig, n_kappa=res.n_kappa, lam=KW["lam"],
                                   beta=KW["beta"], sigma=KW["sigma"], **bulk_kw, **params)
    assert given.converged and res.risk == pytest.approx(given.risk, rel=1e-10, abs=0)
    So.BORROW = False
    try:
        old = A.risk(2.0, model="network", **KW)
    finally:
        So.BORROW = True
    assert old.n_kappa == res.n_kappa
    assert abs(old.risk - res.risk) <= 1e-10 * old.risk


def test_coupled_bulk_is_solved_on_one_rule(monkeypatch):
    """The coupled subsystem (``_bulk_v``) once a point, against once per climbed rule
    (at least three) by the full coupled climb."""
    import asymptotics as A
    from asymptotics.network import solve as So

    calls = []
    real = So._bulk_v
    monkeypatch.setattr(So, "_bulk_v", lambda *a: calls.append(1) or real(*a))
    assert A.risk(2.0, model="network", **KW).converged and len(calls) == 1
    calls.clear()
    monkeypatch.setattr(So, "BORROW", False)
    assert A.risk(2.0, model="network", **KW).converged and len(calls) >= 3


@pytest.mark.parametrize("where", ["cheap", "coupled"])
def test_fallback_is_the_full_coupled_climb(monkeypatch, where):
    """Where the isotropic climb fails (its equations made to fail) or the coupled solve on
    its rule does not converge (made to fail once), the point is the full coupled climb's,
    bit for bit."""
    import asymptotics as A
    from asymptotics.equations.solver import Status
    from asymptotics.network import solve as So

    monkeypatch.setattr(So, "BORROW", False)
    old = A.risk(2.0, model="network", **KW)
    monkeypatch.setattr(So, "BORROW", True)
    real_solve, real_bulk = So.solve_network, So._bulk_v
    failed = []

    def no_cheap(prob, ch, alpha, solver, x0, bulk, mean):
        res = real_solve(prob, ch, alpha, solver, x0, bulk, mean)
        if bulk is None:
            failed.append(1)
            return replace(res, converged=False, risk=math.nan, status="max_iter")
        return res

    def no_coupled_once(x, bulk, vargs, solver):
        if not failed:
            failed.append(1)
            return x, Status.MAX_ITER, 0, math.nan
        return real_bulk(x, bulk, vargs, solver)

    if where == "cheap":
        monkeypatch.setattr(So, "solve_network", no_cheap)
    else:
        monkeypatch.setattr(So, "_bulk_v", no_coupled_once)
    res = A.risk(2.0, model="network", **KW)
    assert failed and res.converged
    assert (res.risk, res.n_kappa, res.quadrature_change) == (
        old.risk, old.n_kappa, old.quadrature_change)
