"""lam = 0: the ridgeless limit lam -> 0+ where it is finite, divergence (NaN, status diverged) at
the interpolation peak alpha = beta. Independent values: the random-features ridge closed form
of asymptotics.models.rf_ridge at eta = 0 (a separate deterministic-equivalent computation) at a
tiny
lam, and the lam -> 0+ trend of the regularised equations for eta > 0."""

from __future__ import annotations

import math

import pytest

from asymptotics import ConvergenceError, risk
from asymptotics.cli.curve import main as cli_main
from asymptotics.models.rf_ridge import rf_ridge_risk

FINITE = [  # (sigma, beta, alpha) on both sides of the peak, some close to it
    ("tanh", 1.0, 0.5), ("tanh", 1.0, 0.95), ("tanh", 1.0, 1.05), ("tanh", 1.0, 3.0),
    ("tanh", 2.0, 1.9), ("tanh", 0.5, 0.25), ("relu", 2.0, 1.9), ("relu", 0.5, 0.525),
    ("erf", 1.0, 0.8),
]


@pytest.mark.parametrize("sigma,beta,alpha", FINITE)
def test_ridgeless_random_features_match_the_closed_form(sigma, beta, alpha):
    r = risk(alpha, sigma=sigma, target="tanh", alpha0=2.0, eta=0.0, lam=0.0, beta=beta,
             model="srf")
    assert r.converged and r.status == "converged"
    ref = rf_ridge_risk(alpha, sigma=sigma, target="tanh", lam=1e-11, beta=beta)
    assert r.risk == pytest.approx(ref, rel=2e-5)


@pytest.mark.parametrize("alpha,beta", [(0.5, 1.0), (0.95, 1.0), (1.9, 2.0), (0.25, 0.5)])
def test_ridgeless_one_step_is_the_limit_of_the_regularised_risk(alpha, beta):
    kw = dict(sigma="tanh", target="tanh", alpha0=2.0, eta=1.0, beta=beta, model="srf")
    r0 = risk(alpha, lam=0.0, **kw)
    assert r0.converged
    r7, r8 = risk(alpha, lam=1e-7, **kw).risk, risk(alpha, lam=1e-8, **kw).risk
    # R(lam) = R0 + a lam + O(lam^2): the regularised risks approach R0 tenfold per decade
    assert abs(r8 - r0.risk) < abs(r7 - r0.risk)
    assert abs(r8 - r0.risk) <= 0.2 * abs(r7 - r0.risk) + 1e-9
    assert r0.risk == pytest.approx(r8 + (r8 - r7) / 9, rel=1e-6)


@pytest.mark.parametrize("sigma", ["tanh", "relu"])
@pytest.mark.parametrize("beta", [0.5, 1.0, 2.0])
@pytest.mark.parametrize("eta", [0.0, 1.0])
def test_interpolation_peak_is_reported_as_divergent(sigma, beta, eta):
    r = risk(beta, sigma=sigma, target="tanh", alpha0=2.0, eta=eta, lam=0.0, beta=beta, model="srf")
    assert math.isnan(r.risk) and not r.converged
    assert r.status == "diverged"
    assert "interpolation peak" in r.message
    # the regularised risk at the peak does grow as lam -> 0+ (independent of the ladder)
    grow = [risk(beta, sigma=sigma, target="tanh", alpha0=2.0, eta=eta, lam=lam,
                 beta=beta, model="srf").risk for lam in (1e-4, 1e-6)]
    assert grow[1] > 3 * grow[0]


def test_interpolation_peak_strict_raises_naming_the_divergence():
    with pytest.raises(ConvergenceError, match="diverg"):
        risk(1.0, lam=0.0, strict=True, model="srf")


def test_cli_curve_at_the_peak_prints_no_number(capsys):
    assert cli_main(["curve", "--csv", "--lam", "0", "--alpha", "1", "--quiet"]) == 0
    out, err = capsys.readouterr()
    row = out.splitlines()[1].split(",")
    header = out.splitlines()[0].split(",")
    assert row[header.index("risk")] == ""
    assert row[header.index("converged")] == "False"
    assert row[header.index("status")] == "diverged"
    assert "diverged" in err
