"""The one-step route's bound on the step's spike scale c (docs/THEORY.md §4): below it every
registered sigma is resolved (a bounded sigma's risk is flat in eta), above it a one-line
refusal naming c, on every door that builds a one-step problem."""

from __future__ import annotations

import math
import subprocess
import sys

import pytest

from asymptotics import risk, risk_curve
from asymptotics.models.problem import MAX_SPIKE_SCALE, build_problem
from asymptotics.step.srf import SpikeMapping


def _eta_at_scale(sigma: str, c_target: float) -> float:
    """The eta whose spike scale c is c_target: c = s^2 + eta^2 K with s linear in eta
    (docs/THEORY.md §3) is a quadratic in eta, fitted exactly at eta = 1, 2, 3."""
    c = [build_problem(sigma=sigma, eta=e, model="srf").spike.c for e in (1.0, 2.0, 3.0)]
    k = (c[2] - 2.0 * c[1] + c[0]) / 2.0
    b = c[1] - c[0] - 3.0 * k
    a = c[0] - b - k
    return (-b + math.sqrt(b * b - 4.0 * k * (a - c_target))) / (2.0 * k)


@pytest.mark.parametrize("sigma", ["tanh", "erf", "sigmoid"])
def test_bounded_sigma_flat_up_to_the_bound(sigma):
    """A bounded sigma's features tend to a step function as eta grows: the risk at the largest
    eta below the bound equals the risk at eta / 100 (measured to 1e-13; asserted at 1e-9)."""
    eta = 0.9 * _eta_at_scale(sigma, MAX_SPIKE_SCALE)
    far = risk(2.0, sigma=sigma, eta=eta, model="srf")
    near = risk(2.0, sigma=sigma, eta=eta / 100, model="srf")
    assert far.converged and near.converged
    assert far.c <= MAX_SPIKE_SCALE
    assert abs(far.risk - near.risk) <= 1e-9 * near.risk


def test_relu_smooth_up_to_the_bound():
    """relu's features scale with eta: the risk approaches its limit like 1/eta, so the gaps
    between eta, 3 eta and 10 eta shrink geometrically up to the bound."""
    eta = 0.9 * _eta_at_scale("relu", MAX_SPIKE_SCALE)
    values = [risk(2.0, sigma="relu", eta=e, model="srf").risk for e in (eta / 100, eta / 10, eta)]
    gaps = [abs(values[1] - values[0]), abs(values[2] - values[1])]
    assert all(math.isfinite(v) for v in values)
    assert gaps[1] < 0.2 * gaps[0]


@pytest.mark.parametrize("model", ["srf", "network"])
def test_refused_above_the_bound(model):
    with pytest.raises(ValueError, match=r"spike the scale c = .*resolve c <= 1e\+10.*smaller eta"):
        risk(2.0, eta=3e6, model=model)
    with pytest.raises(ValueError, match=r"delta=1e\+14"):
        risk_curve([1.0, 2.0], delta=1e14, model=model)


def test_given_spike_checked():
    big = SpikeMapping(1e6, 1e12, 0.5, math.sqrt(0.75), 1.0, 0.0, 1.0, 1.0)
    with pytest.raises(ValueError, match="the given spike gives"):
        build_problem(spike=big, model="srf")


def test_cli_exit_2():
    out = subprocess.run([sys.executable, "-m", "asymptotics", "curve", "--eta", "1e7",
                          "--model", "srf", "--alpha", "1"], capture_output=True, text=True)
    assert out.returncode == 2, out.stderr
    assert "Traceback" not in out.stderr
    assert "c <= 1e+10" in out.stderr


def test_the_bound_is_needed(monkeypatch):
    """With the bound lifted, what it guards against (THEORY.md §4): tanh turns non-finite at
    c ~ 1.7e11 (eta = 3e6), and softplus's risk still 'converges' at c ~ 5e16 (eta = 1e9) but
    drifts from the 1/eta approach it follows up to c ~ 5e15 (the gap 3e8 -> 1e9 is 4e-8, ten
    times the gap 1e8 -> 3e8 instead of a third of it)."""
    from asymptotics.models import problem

    monkeypatch.setattr(problem, "MAX_SPIKE_SCALE", math.inf)
    beyond = risk(2.0, sigma="tanh", eta=3e6, model="srf")
    assert not beyond.converged and beyond.c > MAX_SPIKE_SCALE
    r = [risk(2.0, sigma="softplus", eta=e, model="srf") for e in (1e8, 3e8, 1e9)]
    assert all(x.converged for x in r)
    assert abs(r[2].risk - r[1].risk) > 3.0 * abs(r[1].risk - r[0].risk)
