"""Wide networks (beta = p/d >> 1) on the one-step equations: the Marchenko-Pastur averages
against an independent discretisation of the law, and the caps on a huge or tiny beta (THEORY.md
§6) and a huge alpha (§7)."""

import math
import warnings

import numpy as np
import pytest

import asymptotics as gs
from asymptotics.api.points import solve_point
from asymptotics.measures.spectral import SpectralMeasure
from asymptotics.models.problem import BETA_CAP, LimitWarning, build_problem


def _quantile_atoms(beta: float, n: int) -> np.ndarray:
    """n equal-weight atoms of MP(beta): the bulk's midpoint quantiles (its CDF by the trapezoid
    rule in x = 1 + beta + 2 sqrt(beta) cos(theta)) and the atom 1 - 1/beta at 0."""
    m, h = 1.0 + beta, 2.0 * math.sqrt(beta)
    th = np.linspace(0.0, math.pi, 1_000_001)
    x = m + h * np.cos(th)
    dens = h * h * np.sin(th) ** 2 / (2 * math.pi * beta * np.maximum(x, 1e-300))
    cdf = np.concatenate([[0.0], np.cumsum((dens[1:] + dens[:-1]) / 2 * np.diff(th))])
    nb = int(round(n * min(1.0, 1.0 / beta)))
    xb = np.interp((np.arange(nb) + 0.5) / nb * cdf[-1], cdf, x)
    return np.concatenate([xb, np.zeros(n - nb)])


@pytest.mark.parametrize("beta,lam,alpha", [(100.0, 1.0, 2.0), (1000.0, 0.01, 2.0)])
def test_wide_srf_risk_equals_the_discretised_law(beta, lam, alpha):
    """The closed-form MP route against 200k quantile atoms of the same law (the atoms' sums,
    another code path): within 1e-7 relative (the atoms' own error). Before the series was
    confined to its radius the first point was 0.37% high and the second NaN."""
    pr = build_problem(sigma="tanh", model="srf", beta=beta, lam=lam)
    c = pr.measure.c
    x = _quantile_atoms(beta, 200_000)
    meas = SpectralMeasure("atoms", beta, c, c * x, np.full(x.size, beta * c), beta * c * x,
                           np.zeros(x.size))
    ref = solve_point(build_problem(sigma="tanh", model="srf", beta=beta, lam=lam,
                                    measure=meas), alpha, engine="python")
    got = gs.risk(alpha, beta=beta, lam=lam, model="srf")
    assert got.converged and ref.converged
    assert got.risk == pytest.approx(ref.risk, rel=1e-7)


@pytest.mark.parametrize("kw", [dict(model="srf"), dict(model="rf", eta=0.0),
                                dict(model="srf", steps=2)])
def test_huge_beta_is_evaluated_at_the_cap(kw):
    """A finite beta above BETA_CAP is the risk at BETA_CAP with a LimitWarning (it was
    out_of_domain beyond ~1e150); the risk there is flat in beta to double precision."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LimitWarning)
        at_cap = gs.risk(2.0, beta=BETA_CAP, **kw)
        below = gs.risk(2.0, beta=1e40, **kw)
    with pytest.warns(LimitWarning, match="beta = 1e\\+300 is evaluated at beta = 1e\\+100"):
        huge = gs.risk(2.0, beta=1e300, **kw)
    assert at_cap.converged and huge.converged
    assert huge.risk == at_cap.risk and huge.beta == BETA_CAP
    assert huge.risk == pytest.approx(below.risk, rel=1e-13)


@pytest.mark.parametrize("kw", [dict(model="srf"), dict(steps=2)])
def test_tiny_beta_is_evaluated_at_the_floor(kw):
    """A positive beta below BETA_FLOOR is the risk at BETA_FLOOR with a LimitWarning (beta =
    1e-300 was out_of_domain, and a LinAlgError on the K-group sRF route)."""
    from asymptotics.models.problem import BETA_FLOOR

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LimitWarning)
        at_floor = gs.risk(2.0, beta=BETA_FLOOR, **kw)
        above = gs.risk(2.0, beta=1e-30, **kw)
    with pytest.warns(LimitWarning, match="beta = 1e-300 is evaluated at beta = 1e-50"):
        tiny = gs.risk(2.0, beta=1e-300, **kw)
    assert at_floor.converged and tiny.converged and tiny.beta == BETA_FLOOR
    assert tiny.risk == at_floor.risk == pytest.approx(above.risk, rel=1e-13)


@pytest.mark.parametrize("kw", [dict(model="srf"), dict(model="srf", steps=2),
                                dict(model="srf", readout={1.0: 0.5, -1.0: 0.3, 0.5: 0.2})])
def test_huge_alpha_is_evaluated_at_the_cap(kw):
    """alpha above ALPHA_CAP is the risk at ALPHA_CAP with a LimitWarning (alpha = 1e200 was
    out_of_domain on the one-spike route and numpy's "Array must not contain infs or NaNs" on
    the K-group routes); the risk is flat from alpha = 1e20 to the cap in double precision."""
    from asymptotics.models.problem import ALPHA_CAP

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LimitWarning)
        at_cap = gs.risk(ALPHA_CAP, **kw)
        below = gs.risk(1e20, **kw)
    with pytest.warns(LimitWarning, match="alpha = 1e\\+200 is evaluated at alpha = 1e\\+100"):
        huge = gs.risk(1e200, **kw)
    assert at_cap.converged and huge.converged and huge.alpha == ALPHA_CAP
    assert huge.risk == at_cap.risk == pytest.approx(below.risk, rel=1e-13)
    with pytest.warns(LimitWarning):
        curve = gs.risk_curve([2.0, 1e300], **kw)
    assert list(curve["alpha"]) == [2.0, ALPHA_CAP] and curve["risk"].iloc[1] == at_cap.risk
