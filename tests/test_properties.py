"""Invariants over the parameter space (Hypothesis) that no correct solver can break:

* a converged risk is finite and >= 0; a point that is not converged is NaN with a status and a
  message (never a number);
* at a finite width the risk tends to E g^2 as lam grows (every channel switched off: the
  predictor tends to 0), whatever the other parameters;
* the same calls in this process and in a fresh one (no shared cache, another order) agree.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import asymptotics as A

ROOT = Path(__file__).resolve().parent.parent
STATUSES = {"converged", "max_iter", "non_finite", "out_of_domain", "diverged"}
SIGMAS = ["tanh", "relu", "erf", "sigmoid", "softplus", "sin", "he3", "abs"]
TARGETS = ["tanh", "relu", "sin", "he2", "linear", "abs", "quadratic"]

settings_ = settings(max_examples=40, deadline=None,
                     suppress_health_check=[HealthCheck.too_slow])


def point(**kw) -> dict:
    return dict(
        alpha=kw["alpha"], sigma=kw["sigma"], target=kw["target"], alpha0=kw["alpha0"],
        eta=kw["eta"], lam=kw["lam"], beta=kw["beta"], delta=kw["delta"], model=kw["model"],
        p=kw["p"],
    )


parameters = st.fixed_dictionaries(dict(
    alpha=st.floats(0.05, 10.0),
    sigma=st.sampled_from(SIGMAS),
    target=st.sampled_from(TARGETS),
    alpha0=st.floats(0.1, 50.0),
    eta=st.floats(0.0, 4.0),
    lam=st.floats(-4.0, 1.0).map(lambda e: 10.0**e),
    beta=st.floats(0.1, 4.0),
    delta=st.sampled_from([0.0, 0.1]),
    model=st.sampled_from(["srf", "network"]),
    p=st.sampled_from([None, 200.0, 2000.0]),
))


def _risk(kw: dict):
    kw = dict(kw)
    alpha = kw.pop("alpha")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the fallback of the measure warns; not the point here
        return A.risk(alpha, **kw)


@settings_
@given(parameters)
def test_a_risk_is_a_finite_nonnegative_number_or_nan_with_a_status(kw):
    r = _risk(kw)
    assert r.status in STATUSES
    if r.converged:
        assert math.isfinite(r.risk) and r.risk >= 0.0, r
        assert r.residual <= 1e-8
    else:
        assert math.isnan(r.risk) and r.status != "converged" and r.message, r


@settings_
@given(parameters)
def test_at_finite_width_the_risk_tends_to_the_target_power_as_lam_grows(kw):
    """lam large in the features' own units: 1e8 times their second moment E sigma^2 (which
    reaches 1e5 for he3 after a large step)."""
    from asymptotics.models.problem import build_problem

    kw = dict(kw, p=kw["p"] or 500.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pb = build_problem(**{k: v for k, v in kw.items() if k != "alpha"})
    k = pb.coefficients
    power = float(np.dot(k.weights, k.mu0**2 + k.mu1**2 * pb.spike.c + k.mu_star2))
    kw["lam"] = 1e8 * max(1.0, power)
    r = _risk(kw)
    eg2 = A.ge_coefficients(kw["sigma"], kw["target"]).mu2_star
    if r.converged:  # (an unconverged point is NaN: the other test)
        assert r.risk == pytest.approx(eg2, rel=1e-3, abs=1e-9)


def test_one_process_and_a_fresh_one_agree():
    rng = np.random.default_rng(7)
    cases = []
    for _ in range(12):
        cases.append(point(
            alpha=float(rng.uniform(0.2, 5)), sigma=str(rng.choice(SIGMAS)),
            target=str(rng.choice(TARGETS)), alpha0=float(rng.uniform(0.5, 20)),
            eta=float(rng.uniform(0, 3)), lam=float(10 ** rng.uniform(-3, 0)),
            beta=float(rng.uniform(0.3, 3)), delta=0.0,
            model=str(rng.choice(["srf", "network"])),
            p=[None, 500.0][int(rng.integers(2))]))
    here = [_risk(c).risk for c in cases]
    code = textwrap.dedent(f"""
        import json, sys, warnings
        warnings.simplefilter("ignore")
        sys.path.insert(0, {str(ROOT)!r})
        import asymptotics as A
        cases = json.loads(sys.stdin.read())
        out = {{}}
        for i in reversed(range(len(cases))):
            kw = dict(cases[i]); alpha = kw.pop("alpha")
            out[i] = A.risk(alpha, **kw).risk
        print(json.dumps([out[i] for i in range(len(cases))]))
    """)
    run = subprocess.run([sys.executable, "-c", code], input=json.dumps(cases),
                         capture_output=True, text=True, timeout=600, env=dict(os.environ))
    assert run.returncode == 0, run.stderr[-2000:]
    fresh = json.loads(run.stdout.strip().splitlines()[-1])
    np.testing.assert_allclose(np.array(here, dtype=float), np.array(fresh, dtype=float),
                               rtol=1e-12, atol=0, equal_nan=True)
    assert sum(math.isfinite(v) for v in here) >= 8
