"""One result record on every route: every entry point returns the same class
(``RiskResult``; ``SpikedResult`` is its former name, the same class) with the same fields, and
its ``to_dict`` / ``to_frame`` and the frames of ``risk_curve``, ``risk_grid`` and the named
curves have the one column schema (``RESULT_COLUMNS``)."""

from __future__ import annotations

import dataclasses
import json
import math
import subprocess
import sys

import numpy as np
import pytest

import asymptotics as A
from asymptotics.core.result import GROUP_FIELDS, RESULT_COLUMNS, STATE_NAMES

KW = dict(sigma="erf(z-1)", target="z1 + z1*z2", alpha0=16.0, lam=0.01, beta=1.0)
GIVEN = dict(loadings=[[0.5, 0.2]], bulk=[1.1], fractions=[1.0], overlaps=[[0.7], [0.1]])
GROUPS = dict(sigma="tanh", target="z1 + z1*z2", loadings=[[0.8, 0.0], [0.0, 0.8]],
              bulk=[1.0, 1.0], fractions=[0.5, 0.5], overlaps=[[1.0, 0.0], [0.0, 1.0]])

ONE_SPIKE = {
    "srf": lambda: A.risk(1.3, model="srf"),
    "network": lambda: A.risk(1.3, model="network"),
    "rf": lambda: A.risk(1.3, model="rf", eta=0.0),
    "ridgeless": lambda: A.risk(0.7, model="srf", lam=0.0),
    "finite p": lambda: A.risk(1.3, model="network", p=500.0),
    "optimal lam": lambda: A.risk(1.3, model="srf", lam="optimal"),
    "python engine": lambda: A.risk(1.3, model="srf", engine="python"),
    "solve_point": lambda: A.solve_point(A.build_problem(model="srf"), 1.3),
}
K_GROUP = {
    "readout srf": lambda: A.risk(1.3, model="srf", readout="pm1"),
    "readout network": lambda: A.risk(1.3, model="network", readout="pm1", sigma="relu"),
    "steps srf": lambda: A.risk(1.3, model="srf", steps=2, eta=(2.0, 8.0), **KW),
    "steps network": lambda: A.risk(1.3, model="network", steps=2, eta=(2.0, 8.0), **KW),
    "given": lambda: A.risk(1.3, model="srf", target="tanh", **GIVEN),
    "multi-index": lambda: A.risk(1.3, model="srf", steps=1, eta=2.0, **KW),
    "risk_spiked": lambda: A.risk_spiked(0.8, lam=0.01, **GROUPS),
    "risk_readout": lambda: A.risk_readout(1.3, readout="pm1"),
    "risk_steps": lambda: A.risk_steps(1.3, steps=2, eta=(2.0, 8.0), **KW),
}


def _fields(res) -> tuple[str, ...]:
    return tuple(f.name for f in dataclasses.fields(res))


@pytest.mark.parametrize("name", [*ONE_SPIKE, *K_GROUP])
def test_every_route_returns_the_one_record(name):
    res = {**ONE_SPIKE, **K_GROUP}[name]()
    assert type(res) is A.RiskResult and isinstance(res, A.SpikedResult)
    assert A.SpikedResult is A.RiskResult
    assert _fields(res) == _fields(A.risk(1.3, model="srf"))
    assert list(res.to_dict()) == RESULT_COLUMNS
    row = res.to_frame()
    assert list(row.columns) == RESULT_COLUMNS and len(row) == 1
    assert set(res.PARAMETERS) | set(res.SOLUTION) | set(res.DIAGNOSTICS) | {"state"} \
        == set(_fields(res))
    assert res.solution["risk"] == res.risk or math.isnan(res.risk)
    if name in K_GROUP:  # the groups' order parameters; the one-spike ones do not apply
        assert isinstance(res.order, dict) and set(res.order) >= {"Q1", "Q2", "V1", "zeta"}
        assert all(math.isnan(getattr(res, n)) for n in STATE_NAMES)
        assert json.loads(row.order.iloc[0]) == res.order
        assert json.loads(row.loadings.iloc[0]) == res.loadings
    else:
        assert res.order is None and all(getattr(res, n) is None for n in GROUP_FIELDS[:5])
        assert res.n_kappa == 0 and math.isnan(res.quadrature_change)


def test_the_step_parameters_are_on_the_k_group_records():
    """alpha0 and a single eta_tilde are the step's on the readout and steps routes; a
    schedule of several eta stays NaN, and a given K-group model has no step."""
    a = A.risk(1.3, model="srf", readout="pm1", alpha0=3.0, eta=1.5)
    assert a.alpha0 == 3.0 and a.eta == 1.5
    s = A.risk(1.3, model="srf", steps=2, eta=(2.0, 8.0), **KW)
    assert s.alpha0 == 16.0 and math.isnan(s.eta)
    g = A.risk(1.3, model="srf", target="tanh", **GIVEN)
    assert math.isnan(g.alpha0) and math.isnan(g.eta)


def test_curves_and_grids_share_the_schema():
    """The frames of every route have the one schema (the K-group routes add a ``route``
    column) and their rows are the points' records."""
    alphas = [0.8, 1.6]
    one = A.risk_curve(alphas, model="srf")
    assert list(one.columns) == RESULT_COLUMNS
    net = A.risk_curve(alphas, model="network", engine="python")
    assert list(net.columns) == RESULT_COLUMNS
    for df in (A.risk_curve(alphas, model="srf", readout="pm1"),
               A.risk_curve(alphas, model="network", steps=2, eta=(2.0, 8.0), **KW),
               A.risk_grid(alpha=alphas, lam=[0.01, 0.1], model="srf", readout="pm1")):
        assert [c for c in df.columns if c != "route"] == RESULT_COLUMNS
    df = A.risk_curve(alphas, model="srf", readout="pm1")
    pt = A.risk(1.6, model="srf", readout="pm1")
    # (a curve warm-starts: the same point to solver precision)
    assert math.isclose(df.risk.iloc[1], pt.risk, rel_tol=1e-9)
    got = json.loads(df.order.iloc[1])
    assert set(got) == set(pt.order)
    for k in got:
        np.testing.assert_allclose(got[k], pt.order[k], rtol=1e-8, atol=1e-12)
    assert df.alpha0.iloc[1] == pt.alpha0 and df.eta.iloc[1] == pt.eta
    assert list(A.risk_spiked_curve(alphas, lam=0.01, beta=1.0, **GROUPS).columns) \
        == RESULT_COLUMNS
    assert list(A.risk_grid(alpha=alphas, lam=[0.01, 0.1], model="srf").columns) \
        == RESULT_COLUMNS
    assert np.isnan(one.q1).sum() == 0 and one.order.isna().all()


def test_the_command_line_csv_has_the_schema(tmp_path):
    out = tmp_path / "curve.csv"
    run = subprocess.run([sys.executable, "-m", "asymptotics", "curve", "--alpha", "1,2",
                          "--model", "srf", "--out", str(out), "--quiet"],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    import pandas as pd

    df = pd.read_csv(out)
    # the schema, then the random-features comparison the command adds
    assert list(df.columns) == [*RESULT_COLUMNS, "risk_rf", "converged_rf", "status_rf"]
    assert len(df) == 2 and df.converged.all() and df.order.isna().all()
