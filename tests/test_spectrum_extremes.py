"""Extreme settings of the predicted spectra (docs/THEORY.md §16.1): a huge step (eta = 1e10) and
an activation without a linear part at the trained weights (cosh) on the one-step network's
features are refused quickly (both ran > 400 s); a Newton step that is not finite gives up."""

import math
import time

import numpy as np
import pytest

import asymptotics as A
from asymptotics.spectra.law import NEWTON_MAX, Solver


def _mass_mean(law) -> tuple[float, float]:
    """The law's total mass (atom included) and first moment over its mean eigenvalue."""
    mass, mean = law.atom, 0.0
    for lo, hi in law.support:
        th = np.linspace(0.0, math.pi, 2001)
        x = lo + (hi - lo) * 0.5 * (1.0 - np.cos(th))
        f = law.density(x) * (hi - lo) * 0.5 * np.sin(th)
        mass += float(np.trapezoid(f, th))
        mean += float(np.trapezoid(f * x, th))
    return mass, mean / law._solver.scale


def test_a_huge_step_on_the_network_features_is_refused_quickly():
    """eta = 1e10: sqrt(c) ~ 1.4e9, beyond the bulk scale the quadrature resolves (it ran the
    exact resolvent kernel to its iteration cap at every grid point for > 400 s)."""
    t0 = time.perf_counter()
    with pytest.raises(ValueError, match="bulk scale.*model='srf'"):
        A.spectrum(of="features", alpha=2.0, eta=1e10)
    assert time.perf_counter() - t0 < 30.0


def test_cosh_on_the_network_features_is_refused_quickly():
    """cosh: E sigma' = 0 at the trained weights, mub1 = 0 and the network's V1 undetermined
    (its Jacobian singular; the exact part divided by y = 0 for > 400 s)."""
    t0 = time.perf_counter()
    with pytest.raises(ValueError, match="no linear part"):
        A.spectrum(of="features", alpha=2.0, sigma="cosh(z)")
    assert time.perf_counter() - t0 < 30.0


def test_cosh_srf_features_are_the_marchenko_pastur_law_of_the_noise():
    """The refusal points to model='srf': at mub1 = 0 the features are i.i.d. noise of variance
    v = Var cosh(sqrt(c) z) (e^(2c) - 2 e^c + 1)/2, so F^T F is MP with ratio p/n = beta/alpha
    at scale v n/p: edges v (alpha/beta) (1 +- sqrt(beta/alpha))^2 (closed form)."""
    from asymptotics.step.srf import srf_mapping

    c = srf_mapping("cosh(z)", "tanh", alpha0=2.0, eta=1.0).c
    v = (math.exp(2.0 * c) - 2.0 * math.exp(c) + 1.0) / 2.0
    law = A.spectrum(of="features", alpha=2.0, sigma="cosh(z)", model="srf")
    (lo, hi), = law.support
    q = math.sqrt(0.5)
    assert lo == pytest.approx(2.0 * v * (1.0 - q) ** 2, rel=1e-3)
    assert hi == pytest.approx(2.0 * v * (1.0 + q) ** 2, rel=1e-3)


def test_a_large_step_below_the_bulk_scale_still_gives_the_law():
    """eta = 3000 (sqrt(c) = 416 < 1e3): the law's mass is 1 and its first moment the features'
    mean eigenvalue (identities of any spectral law of F^T F; at sqrt(c) = 971 the mean was
    already 0.2% off, at 1.4e3 0.8%, at 1.4e5 the mass 0.04)."""
    law = A.spectrum(of="features", alpha=2.0, eta=3000.0)
    assert law.status == "converged"
    mass, mean = _mass_mean(law)
    assert mass == pytest.approx(1.0, abs=1e-3)
    assert mean == pytest.approx(1.0, abs=1e-3)


def test_newton_gives_up_on_a_non_finite_step():
    """A point whose Newton step is not finite keeps x, so the next step would repeat it: the
    loop drops it after one step instead of NEWTON_MAX."""
    calls = []

    def residual(x, z):
        calls.append(x.shape[0])
        return np.full(x.shape, np.nan + 0j)

    sol = Solver(residual, lambda z: (-1.0 / z)[:, None], lambda x: x[:, 0], scale=1.0)
    sol.quasi = False
    x, ok = sol._newton(sol.start(np.array([1.0 + 1j, 2.0 + 1j])), np.array([1.0 + 1j, 2.0 + 1j]))
    assert not ok.any()
    assert len(calls) == 2 < NEWTON_MAX  # one residual and one difference for the Jacobian


def test_the_surrogate_named_by_the_refusal_stays_computable_at_a_huge_step():
    """model='srf' at eta = 1e10 (sign-like features; the same kappa tables, no population law
    of C): mass 1 and first moment the mean eigenvalue."""
    law = A.spectrum(of="features", alpha=2.0, eta=1e10, model="srf")
    mass, mean = _mass_mean(law)
    assert mass == pytest.approx(1.0, abs=1e-3)
    assert mean == pytest.approx(1.0, abs=1e-3)
