"""Every result records what produced it after several steps: the number of steps, eta_tilde of
each, the readout and the batches (``asymptotics.core.result.STEP_FIELDS``), on every entry point
(points, curves, grids, the named doors) and in their frames; ``risk_grid`` reads ``eta`` after
several steps as ``risk`` does (one schedule), and grids a list of schedules."""

from __future__ import annotations

import json
import math
import warnings

import pytest

import asymptotics as A
from asymptotics.core.result import RESULT_COLUMNS, STEP_FIELDS

SRF = dict(model="srf", sigma="tanh", target="tanh", alpha0=2.0, lam=0.01, beta=1.0)


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def test_columns_unique_and_step_fields_in_schema():
    assert len(set(RESULT_COLUMNS)) == len(RESULT_COLUMNS)
    assert all(name in RESULT_COLUMNS for name in STEP_FIELDS)


def test_one_spike_point_and_curve_say_one_step_constant_fresh():
    r = A.risk(1.0, eta=1.5)
    assert (r.steps, r.eta_schedule, r.readout, r.batch) == (1, [1.5], "constant", "fresh")
    df = A.risk_curve([1.0, 2.0], eta=1.5)
    assert list(df.columns) == RESULT_COLUMNS
    assert df.steps.tolist() == [1, 1]
    assert [json.loads(s) for s in df.eta_schedule] == [[1.5], [1.5]]
    assert df.readout.tolist() == ["constant"] * 2 and df.batch.tolist() == ["fresh"] * 2
    assert r.to_frame().eta_schedule.iloc[0] == "[1.5]"


def test_schedule_after_three_steps_on_point_and_curve():
    kw = dict(SRF, steps=3, eta=(1.0, 2.0, 3.0), readout="pm1")
    r = A.risk(1.0, **kw)
    assert r.steps == 3 and r.eta_schedule == [1.0, 2.0, 3.0] and r.readout == "pm1"
    assert math.isnan(r.eta)  # different rates: no single eta_tilde
    assert r.alpha0 == 2.0 and r.batch == "fresh"
    df = A.risk_curve([1.0, 1.5], **kw)
    assert list(df.columns[:len(RESULT_COLUMNS) + 1]) == [RESULT_COLUMNS[0], "route",
                                                         *RESULT_COLUMNS[1:]]
    assert df.steps.tolist() == [3, 3]
    assert [json.loads(s) for s in df.eta_schedule] == [[1.0, 2.0, 3.0]] * 2
    assert df.readout.tolist() == ["pm1"] * 2


def test_constant_rate_after_steps_keeps_eta():
    r = A.risk(1.0, **dict(SRF, steps=2, eta=2.0))
    assert r.eta == 2.0 and r.eta_schedule == [2.0, 2.0] and r.steps == 2


def test_given_k_group_model_has_no_step():
    r = A.risk(1.0, model="srf", loadings=[[1.0]], bulk=[1.0], fractions=[1.0],
               overlaps=[[1.0]])
    assert (r.steps, r.eta_schedule, r.readout, r.batch) == (None, None, None, None)


def test_named_doors_carry_their_step():
    base = {k: v for k, v in SRF.items() if k != "model"}
    r = A.risk_steps(1.0, steps=2, eta=(1.0, 2.0), **base)
    assert (r.steps, r.eta_schedule, r.readout, r.alpha0) == (2, [1.0, 2.0], "constant", 2.0)
    r = A.risk_readout(1.0, readout="pm1", eta=1.0, **base)
    assert (r.steps, r.eta_schedule, r.readout, r.eta) == (1, [1.0], "pm1", 1.0)
    df = A.risk_readout_curve([1.0, 2.0], readout="pm1", eta=1.0, **base)
    assert df.readout.tolist() == ["pm1"] * 2 and df.steps.tolist() == [1, 1]


def test_grid_reads_a_schedule_as_risk_does():
    kw = dict(SRF, steps=2, readout="pm1")
    df = A.risk_grid(alpha=[1.0], eta=(1.0, 2.0), **kw)
    assert len(df) == 1
    assert json.loads(df.eta_schedule.iloc[0]) == [1.0, 2.0]
    point = A.risk(1.0, eta=(1.0, 2.0), **kw)
    assert df.risk.iloc[0] == pytest.approx(point.risk, rel=1e-9)
    # the constant rate 2 is another point: the grid did not take (1, 2) as two rates
    assert abs(A.risk(1.0, eta=2.0, **kw).risk - point.risk) > 1e-3


def test_grid_of_schedules_and_refusals():
    kw = dict(SRF, steps=2, readout="pm1")
    df = A.risk_grid(alpha=[1.0], eta=[(1.0, 2.0), 2.0], **kw)
    assert [json.loads(s) for s in df.eta_schedule] == [[1.0, 2.0], [2.0, 2.0]]
    assert math.isnan(df.eta.iloc[0]) and df.eta.iloc[1] == 2.0
    with pytest.raises(ValueError, match="one value per step"):
        A.risk_grid(alpha=[1.0], eta=(1.0, 2.0), **dict(kw, steps=3))
    one = A.risk_grid(alpha=[1.0], eta=[1.0, 2.0], model="srf")  # one step: two rates
    assert one.eta.tolist() == [1.0, 2.0] and one.steps.tolist() == [1, 1]


def test_a_comma_schedule_is_read_alike_by_point_curve_and_grid():
    kw = dict(SRF, steps=3)
    want = A.risk(1.0, eta=(2.0, 8.0, 16.0), **kw).risk
    assert A.risk(1.0, eta="2,8,16", **kw).risk == want
    df = A.risk_curve([1.0], eta="2,8,16", **kw)
    assert json.loads(df.eta_schedule.iloc[0]) == [2.0, 8.0, 16.0]
    assert df.risk.iloc[0] == pytest.approx(want, rel=1e-9)
    grid = A.risk_grid(alpha=[1.0], eta="2,8,16", **kw)
    assert grid.risk.iloc[0] == pytest.approx(want, rel=1e-9)
    with pytest.raises(ValueError, match="one value per step"):
        A.risk_curve([1.0], eta="2,8", **kw)
