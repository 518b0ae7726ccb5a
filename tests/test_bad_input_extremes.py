"""Extreme values on the routes beyond one step and in the commands' outputs: a huge ridge on
the K-group equations (evaluated at ``LAM_CAP`` with a warning, as at a finite width on the
one-spike route, instead of a LinAlgError), a tiny batch on the network's steps (the surrogate's
one-line bulk-scale refusal, instead of numpy's "Eigenvalues did not converge"), and a write
that fails on a full disk (a one-line error naming ``--out``, exit 2)."""

from __future__ import annotations

import math
import os
import re
import warnings

import pytest

import asymptotics as A
from asymptotics.cli.curve import main as asym_main
from asymptotics.models.problem import LAM_CAP, LimitWarning


@pytest.mark.parametrize("kw", [dict(model="srf", steps=2), dict(model="srf", readout="pm1",
                                                                  p=1000.0)])
def test_a_huge_ridge_is_the_capped_ridge(kw):
    """Beyond ``LAM_CAP`` the K-group equations' variables of order 1/lam^2 leave float64
    (a LinAlgError at lam = 1e200 before); the risk there is its large-lam value, which the
    equations reach long before: the values at 1e20, 1e100 and 1e300 agree, and 1e300 warns."""
    at_cap = A.risk(2.0, lam=LAM_CAP, **kw)
    below = A.risk(2.0, lam=1e20, **kw)
    with pytest.warns(LimitWarning, match="evaluated at lam"):
        huge = A.risk(2.0, lam=1e300, **kw)
    assert huge.converged and math.isfinite(huge.risk)
    assert huge.risk == at_cap.risk
    assert abs(below.risk - at_cap.risk) <= 1e-12 * abs(at_cap.risk)


def test_a_huge_ridge_at_a_finite_width_is_the_target_variance():
    """At a finite width every channel switches off as lam grows: the risk is E g^2
    (E tanh(z)^2 = 0.394294...; an independent 200-node Gauss-Hermite sum)."""
    import numpy as np

    x, w = np.polynomial.hermite_e.hermegauss(200)
    eg2 = float(np.sum(w * np.tanh(x) ** 2) / np.sqrt(2 * np.pi))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LimitWarning)
        res = A.risk(2.0, lam=1e300, model="srf", readout="pm1", p=1000.0)
    assert abs(res.risk - eg2) <= 1e-9


@pytest.mark.parametrize("alpha0", [1e-300, 1e-30])
def test_a_tiny_batch_on_the_network_steps_is_refused_in_one_line(alpha0):
    """The network's steps check the groups' bulk scale as the surrogate's do."""
    with pytest.raises(ValueError, match="alpha0") as info:
        A.risk(2.0, alpha0=alpha0, steps=2)
    assert "\n" not in str(info.value)
    assert "bulk scale" in str(info.value)


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_a_failed_write_names_the_option(capsys):
    code = asym_main(["curve", "--alpha", "1,2", "--model", "rf", "--eta", "0",
                      "--out", "/dev/full", "--quiet"])
    err = capsys.readouterr().err
    assert code == 2
    assert "--out" in err and "/dev/full" in err
    assert "Traceback" not in err


@pytest.mark.parametrize("kw", [dict(of="features", alpha=2.0, d=1e20),
                                dict(of="weights", d=1e300), dict(of="weights", d=1e11)])
def test_a_spectrum_beyond_the_largest_d_is_refused_at_once(kw):
    """Beyond ``MAX_D`` the outliers (at a location of order d) leave float64: the features'
    search took ~200 s to end in a LinAlgError at d = 1e20, the weights' gave a wrong outlier
    at 1e100 and 'math domain error' at 1e300."""
    import time

    from asymptotics.spectra.api import MAX_D

    t0 = time.perf_counter()
    with pytest.raises(ValueError, match=re.escape(f"d must be <= {MAX_D:g}")):
        A.spectrum(**kw)
    assert time.perf_counter() - t0 < 5.0


def test_the_largest_d_keeps_the_outliers_d_scaling():
    """At ``MAX_D`` the weights' outlier still scales like d: location/d agrees with d = 1e8
    to the 1/d correction (measured 1.6e-8 relative between 1e8 and 1e10)."""
    from asymptotics.spectra.api import MAX_D

    at = A.spectrum(of="weights", d=MAX_D).outliers[0].location / MAX_D
    ref = A.spectrum(of="weights", d=1e8).outliers[0].location / 1e8
    assert abs(at - ref) <= 1e-6 * abs(ref)


def test_a_wildly_oscillating_sigma_on_the_network_steps_is_refused_quickly():
    """sin(1e8 z) after two steps: the network's groups now check the bulk scale after each
    step (sqrt(c) ~ 4e7 > 1e3) instead of running the steps' quadrature for minutes."""
    import time

    t0 = time.perf_counter()
    with pytest.raises(ValueError, match="bulk scale"):
        A.risk(2.0, steps=2, sigma="sin(1e8*z)")
    assert time.perf_counter() - t0 < 60.0


def test_network_steps_refuse_a_batch_beyond_memory():
    """The network's steps draw batches of alpha0 x size samples for their device: at
    alpha0 = 1e300 numpy said "Maximum allowed dimension exceeded", at 1e7 it would have
    asked for ~8 TB; now one line naming alpha0 and the surrogate, before anything is drawn."""
    for alpha0 in (1e300, 1e7):
        with pytest.raises(ValueError, match=r"alpha0=1e\+(300|07) needs batches .* model='srf'"):
            A.risk(2.0, alpha0=alpha0, steps=2)
