"""One family of entry points (risk, risk_curve, risk_grid) over every route of the theory: the
K-group routes (readout, steps, a given K-group model, a multi-index target) give the numbers of
their named doors bit for bit, refuse what they cannot honour in one line, and the several-steps
defaults of Python and of the command line are one table."""

from __future__ import annotations

import inspect
import math

import pytest

import asymptotics as A
from asymptotics.api.by_step import risk_by_step
from asymptotics.core.parameters import STEPS_EXAMPLE, steps_eta

KW = dict(sigma="erf(z-1)", target="z1 + z1*z2", alpha0=16.0, lam=0.01, beta=1.0)


def test_every_route_is_its_named_door():
    """risk() on the readout, steps and given-model routes is risk_readout, risk_steps and
    risk_spiked (same numbers, same result type with the accessors of RiskResult)."""
    a = A.risk(1.3, model="srf", readout="pm1")
    b = A.risk_readout(1.3, readout="pm1")
    assert a.risk == b.risk and a.converged
    s = A.risk(1.3, model="srf", steps=2, eta=(2.0, 8.0), **KW)
    t = A.risk_steps(1.3, steps=2, eta=(2.0, 8.0), **KW)
    assert s.risk == t.risk and s.converged
    g = dict(loadings=[[0.5, 0.2]], bulk=[1.1], fractions=[1.0], overlaps=[[0.7], [0.1]])
    u = A.risk(1.3, model="srf", target="tanh", **g)
    v = A.risk_spiked(1.3, sigma="tanh", target="tanh", **g)
    assert u.risk == v.risk
    for res in (a, s, u):
        assert res.parameters["alpha"] == 1.3 and res.solution["risk"] == res.risk
        assert res.diagnostics["converged"] and res.model == "srf"
        assert len(res.to_frame()) == 1


def test_a_multi_index_target_after_one_step_is_the_steps_route():
    """steps=1 with a target in z1, z2 (refused before) is the K-group model of one step."""
    a = A.risk(1.3, model="srf", steps=1, eta=2.0, **KW)
    b = A.risk_steps(1.3, steps=1, eta=2.0, **KW)
    assert a.converged and a.risk == b.risk


def test_curves_and_grids_take_every_route():
    """risk_curve and the top-level risk_grid on the readout route: the K-group curve, one row
    per (lam, alpha), with a route column; a one-point curve is the point."""
    alphas = [0.8, 1.6, 2.4]
    df = A.risk_curve(alphas, model="srf", readout="pm1")
    assert list(df.route.unique()) == ["readout"] and df.converged.all()
    one = A.risk_curve([1.6], model="srf", readout="pm1")
    assert one.risk.iloc[0] == A.risk(1.6, model="srf", readout="pm1").risk
    grid = A.risk_grid(alpha=alphas, lam=[0.01, 0.1], model="srf", readout="pm1")
    assert len(grid) == 6
    assert grid.risk.iloc[:3].tolist() == df.risk.tolist()
    st = A.risk_curve(alphas, model="srf", steps=2, eta=(2.0, 8.0), **KW)
    assert list(st.route.unique()) == ["steps"] and st.converged.all()


@pytest.mark.parametrize("kw,message", [
    (dict(model="srf", readout="pm1", engine="python"), "engine='python' is not available"),
    (dict(model="srf", steps=2, engine="python"), "engine='python' is not available"),
    (dict(model="srf", loadings=[[1.0]]), "missing bulk, fractions, overlaps"),
    (dict(model="network", loadings=[[1.0]], bulk=[1.0], fractions=[1.0], overlaps=[[0.5]]),
     "implemented for model='srf'"),
])
def test_what_a_route_cannot_honour_is_refused_in_one_line(kw, message):
    for call in (lambda: A.risk(1.0, **kw), lambda: A.risk_curve([1.0], **kw)):
        with pytest.raises(ValueError, match=message) as err:
            call()
        assert "\n" not in str(err.value)


def test_a_given_mapping_must_be_the_one_of_the_arguments():
    mp = A.steps_mapping("tanh", "tanh", steps=2, alpha0=2.0, eta=1.0)
    kw = dict(steps=2, sigma="tanh", target="tanh", eta=1.0, lam=0.01, beta=1.0)
    assert A.risk_steps(1.0, alpha0=2.0, mapping=mp, **kw).converged
    with pytest.raises(ValueError, match="alpha0=2.0, not the alpha0=3.0"):
        A.risk_steps(1.0, alpha0=3.0, mapping=mp, **kw)
    with pytest.raises(ValueError, match="readout"):
        A.risk_steps(1.0, alpha0=2.0, mapping=mp, readout="pm1", **kw)


def test_python_and_the_command_line_share_the_steps_defaults():
    """risk_by_step and `giantstep steps` default to the table's several-steps example."""
    from asymptotics.cli.common import Parser
    from asymptotics.cli.steps import add_subparser

    params = inspect.signature(risk_by_step).parameters
    for name in ("steps", "sigma", "target", "alpha0", "lam", "beta", "delta", "readout"):
        assert params[name].default == STEPS_EXAMPLE[name], name
    parser = Parser(prog="steps")
    add_subparser(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["steps"])
    for name in ("steps", "sigma", "target", "alpha0", "lam", "beta", "delta", "readout"):
        assert getattr(args, name) == STEPS_EXAMPLE[name], name
    assert args.eta is None and params["eta"].default is None  # both: the example's schedule
    assert steps_eta(3) == (2.0, 8.0, 16.0) and steps_eta(4)[-1] == 16.0
    assert math.isclose(A.risk_curve([1.0], model="srf", steps=1, eta=2.0, **KW).risk.iloc[0],
                        A.risk(1.0, model="srf", steps=1, eta=2.0, **KW).risk)


def test_batch_and_the_network_model_reach_curves_and_grids():
    """batch= (THEORY.md §14) and model="network" beyond one step (§15) take the same dispatch on
    every entry point: a curve's and a grid's points are risk()'s points; an unknown batch is
    refused in one line."""
    kw = dict(sigma="tanh", target="He3(z1)/sqrt(6)", alpha0=2.0, eta=1.0, lam=0.01, beta=1.0,
              steps=2)
    alphas = [0.7, 2.0]
    reused = [A.risk(a, model="srf", batch="reused", **kw) for a in alphas]
    fresh = A.risk(2.0, model="srf", **kw)
    assert all(r.converged for r in reused) and reused[1].risk != fresh.risk
    curve = A.risk_curve(alphas, model="srf", batch="reused", **kw)
    grid = A.risk_grid(alpha=alphas, model="srf", batch="reused", **kw)
    for df in (curve, grid):
        want = [r.risk for r in reused]
        assert all(math.isclose(x, y, rel_tol=1e-8) for x, y in zip(df.risk, want, strict=True))
    net = dict(sigma="erf(z-1)", target="z1 + z1*z2", alpha0=16.0, eta=(2.0, 8.0), lam=0.01,
               beta=1.0, steps=2, readout="pm1")
    points = [A.risk(a, **net) for a in alphas]
    assert all(p.model == "network" for p in points)
    curve = A.risk_curve(alphas, **net)
    want = [p.risk for p in points]
    assert all(math.isclose(x, y, rel_tol=1e-8) for x, y in zip(curve.risk, want, strict=True))
    with pytest.raises(ValueError, match="batch must be one of fresh, reused"):
        A.risk(1.0, model="srf", batch="stale", **kw)


def test_the_routes_target_test_is_kept_per_text_and_refusals_are_said_each_time():
    """``needs_groups`` (asked on every point) keeps its answer per text: the same answers as the
    parse it replaces, and a text the K-group model refuses is refused on every call."""
    from asymptotics.api import groups
    from asymptotics.coefficients.targets import parse_target
    from asymptotics.multiindex import steps_risk

    for text, want in [("z1 + z1*z2", True), ("tanh", False), ("z1 + 0.5*z1**2", False),
                       ("He3(z1)", True), ("z1*z2 + tanh(z1)", True), ("not a target(", False)]:
        for _ in range(2):  # (a fresh answer, then the kept one)
            assert groups.needs_groups(text) is want
            assert steps_risk.needs_groups(text) is want
    assert groups.needs_groups(None) is False and steps_risk.needs_groups(2.0) is False
    assert len(parse_target("z1 + z1*z2")[1]) == 2  # (the parse the first answer came from)
    bad = "z1*z2*exp(z1**3)"
    for _ in range(2):
        with pytest.raises(ValueError, match="finite"):
            groups.needs_groups(bad)
