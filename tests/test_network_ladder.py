"""The network route's quadrature policy is the K-group sRF route's (docs/THEORY.md §10.8,
§15): a point settles only when the error estimate of successive converged kappa rules is within
QUADRATURE_RTOL, and a curve's rule is decided once by its probe points."""

from __future__ import annotations

import math

import numpy as np
import pytest

import asymptotics.network.solve as net_solve
from asymptotics.equations.ladder import PROBES, QUADRATURE_RTOL, ladder, quadrature_error
from asymptotics.network.solve import risk_network_groups, risk_network_groups_curve
from asymptotics.spiked.solve import risk_spiked, risk_spiked_curve

GROUPS = dict(sigma="relu", target="z1 + z1*z2", loadings=[[1.0, 0.3], [-0.5, 0.8]],
              bulk=[0.8, 1.1], fractions=[0.4, 0.6], overlaps=[[0.7, 0.1], [0.2, 0.5]],
              lam=0.01, beta=1.2)
IDENTITY = np.repeat(np.eye(4)[None], 2, axis=0)
ALPHAS = [float(a) for a in np.linspace(0.3, 3.0, 12)]


def _channels(seed: int = 5) -> np.ndarray:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(2):
        A = rng.standard_normal((4, 4)) * 0.4
        out.append(np.eye(4) + A @ A.T)
    return np.array(out)


def test_isotropic_channels_climb_as_the_srf_groups():
    """Sig_g = I: the network's equations are the sRF groups' (§15), so one policy gives the
    same rule, error estimate and risk, at a point and along a curve."""
    a = risk_spiked(0.8, **GROUPS)
    b = risk_network_groups(0.8, channels=IDENTITY, **GROUPS)
    assert a.converged and b.converged
    assert a.n_kappa == b.n_kappa
    assert abs(a.quadrature_change - b.quadrature_change) <= 1e-6 * a.quadrature_change
    assert abs(a.risk - b.risk) <= 1e-9 * a.risk
    df = risk_spiked_curve(ALPHAS, progress=False, **GROUPS)
    rows = risk_network_groups_curve(ALPHAS, channels=IDENTITY, progress=False, **GROUPS)
    assert [r.n_kappa for r in rows] == list(df.n_kappa)
    np.testing.assert_allclose([r.risk for r in rows], df.risk, rtol=1e-9)


def test_network_curve_rule_is_decided_by_its_probes():
    """Anisotropic channels, 12 alphas: every row carries one rule, the finest the probe
    points settled on when climbed as single points, and the probes' largest error estimate;
    at the probes the rows are the points to QUADRATURE_RTOL."""
    sig = _channels()
    rows = risk_network_groups_curve(ALPHAS, channels=sig, progress=False, **GROUPS)
    idx = sorted({round(f * (len(ALPHAS) - 1)) for f in PROBES})
    probes = [risk_network_groups(ALPHAS[i], channels=sig, **GROUPS) for i in idx]
    assert all(p.converged for p in probes) and all(r.converged for r in rows)
    assert {r.n_kappa for r in rows} == {max(p.n_kappa for p in probes)}
    assert {r.quadrature_change for r in rows} == {max(p.quadrature_change for p in probes)}
    for i, p in zip(idx, probes, strict=True):
        assert abs(rows[i].risk - p.risk) <= QUADRATURE_RTOL * p.risk


def test_point_settles_exactly_when_the_error_estimate_is_within_tolerance():
    """The rule a point settles on is the first rung of the ladder where quadrature_error of
    the risks of the successive rules (each solved on its own here) is <= QUADRATURE_RTOL."""
    sig = _channels()
    res = risk_network_groups(0.8, channels=sig, **GROUPS)
    rungs = ladder(2)
    assert res.converged and res.n_kappa in rungs
    top = rungs.index(res.n_kappa)
    risks = []
    for n in rungs[:top + 1]:
        r = risk_network_groups(0.8, channels=sig, n_kappa=n, **GROUPS)
        assert r.converged
        risks.append(r.risk)
    for j in range(1, top):
        assert quadrature_error(risks[:j + 1]) > QUADRATURE_RTOL, rungs[j]
    err = quadrature_error(risks)
    assert err <= QUADRATURE_RTOL
    assert abs(err - res.quadrature_change) <= 1e-4 * err
    assert abs(res.risk - risks[-1]) <= 1e-9 * res.risk


def test_unsettled_point_is_nan_with_the_reason(monkeypatch):
    """On a ladder of two rules that differ by more than QUADRATURE_RTOL / PAIR_FACTOR (and no
    aligned rule), a point is not settled: NaN, not converged, the reason in the message."""
    sig = _channels()
    two = [risk_network_groups(0.8, channels=sig, n_kappa=n, **GROUPS).risk for n in (10, 16)]
    assert quadrature_error(two) > QUADRATURE_RTOL  # the premise
    monkeypatch.setattr(net_solve, "ladder", lambda r: (10, 16))
    monkeypatch.setattr(net_solve, "aligned_ladder", lambda r: ())
    res = risk_network_groups(0.8, channels=sig, **GROUPS)
    assert not res.converged and math.isnan(res.risk)
    assert "quadrature not resolved" in res.message


def test_both_routes_climb_one_aligned_ladder():
    """One second ladder for both routes: r = 2 and 3, none at r = 4."""
    from asymptotics.equations.ladder import aligned_ladder
    from asymptotics.network.aligned import rules

    for r in (2, 3, 4):
        assert rules(r) == tuple(ladder(r)) + aligned_ladder(r)
    assert aligned_ladder(4) == () and len(aligned_ladder(3)) == 5


@pytest.mark.slow
def test_three_spikes_settle_on_the_shared_aligned_ladder():
    """Relu with the three-value readout after three steps (three groups, r = 3), where the
    network route's former two aligned rules did not agree (NaN), settles on the shared ladder
    (a minute on a fresh device cache: slow)."""
    import asymptotics as A

    res = A.risk(2.0, model="network", sigma="relu", target="z1 + z1*z2",
                 readout={2.0: 0.25, 1.0: 0.5, -1.0: 0.25}, steps=3, alpha0=8.0,
                 eta=(2.0, 4.0, 8.0), beta=1.0, lam=0.01, p=1000.0)
    assert res.converged and "aligned rule" in res.message
    assert res.quadrature_change <= QUADRATURE_RTOL
