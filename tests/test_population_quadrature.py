"""The deterministic population measure of the network theory
(asymptotics.measures.population_quadrature,
docs/DERIVATIONS.md §7, 'A deterministic measure from the resolvent'), checked against closed
forms, an independent numpy implementation of the resolvent, the plane moments of the step and
sampled first batches."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import asymptotics as A
from asymptotics.coefficients.cget import ge_coefficients
from asymptotics.coefficients.functions import get_function
from asymptotics.measures import population as N
from asymptotics.measures import population_quadrature as PQ
from asymptotics.measures.resolvent_kernels import dyson_forms
from asymptotics.measures.spectral import EMPTY, SpectralMeasure, measure_moments

SETTINGS = [("relu", "relu", 2.0, 3.0), ("relu", "tanh", 0.5, 1.0), ("erf", "sin", 20.0, 3.0),
            ("tanh", "he2", 2.0, 3.0)]


def test_gauss_rule_of_the_arcsine_law_and_of_atoms():
    """Chebyshev moments of the arcsine law (1, 0, 0, ...) give the Gauss-Chebyshev rule
    (nodes cos((2j - 1) pi/2n), weights 1/n); those of five atoms give back the atoms."""
    n = 12
    mom = np.zeros(2 * n)
    mom[0] = 1.0
    x, w = PQ.gauss_from_chebyshev(mom, n)
    ref = np.sort(np.cos((2 * np.arange(1, n + 1) - 1) * np.pi / (2 * n)))
    np.testing.assert_allclose(np.sort(x), ref, atol=1e-12)
    np.testing.assert_allclose(w, 1.0 / n, rtol=1e-10)
    atoms, wa = np.array([-0.9, -0.3, 0.1, 0.55, 0.8]), np.array([0.1, 0.3, 0.2, 0.25, 0.15])
    mom = np.array([np.sum(wa * np.cos(k * np.arccos(atoms))) for k in range(2 * n)])
    x, w = PQ.gauss_from_chebyshev(mom, n)
    keep = w > 1e-12
    np.testing.assert_allclose(np.sort(x[keep]), atoms, atol=1e-8)
    np.testing.assert_allclose(w[keep][np.argsort(x[keep])], wa, atol=1e-8)


@pytest.mark.parametrize("sigma,target,alpha0,eta", SETTINGS[:2])
def test_compiled_resolvent_equals_the_numpy_reference(sigma, target, alpha0, eta):
    """The compiled Dyson fixed point (Newton continuation) against the independent damped
    numpy iteration of network.population_resolvent, on the same nodes of the law."""
    s, g = get_function(sigma), get_function(target)
    k = ge_coefficients(s, g)
    zq, wq = N.gaussian_nodes(np.zeros(1), np.ones(1), tuple(g.kinks))
    z, w = zq[0], wq[0] / wq[0].sum()
    e = g(z) - k.mu0
    a, bq = eta * k.c1, eta * eta * max(k.s2 - k.c1**2, 0.0) / alpha0
    zeta = np.array([-1.0, -0.2, 0.5 + 0.5j, 2.0 + 0.3j, 8.0 + 1.0j])
    out, _, ok = dyson_forms(zeta.astype(complex), e, z, w, a, bq, 1 / alpha0, 1e-14, 20000)
    ref = N.population_resolvent(s, g, alpha0=alpha0, eta=eta, zeta=zeta)
    assert ok.all() and ref.converged
    for j, arr in enumerate([ref.trace, ref.theta_theta, ref.theta_u, ref.u_u]):
        np.testing.assert_allclose(out[:, j], arr, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("sigma,target,alpha0,eta", SETTINGS)
def test_rules_against_closed_forms_and_the_plane_moments(sigma, target, alpha0, eta):
    """Masses (bulk and t: 1), c = tr(C)/d against its closed form
    1 + 2 a E e + a^2 ((E e)^2 + E e^2/alpha0) + bq E e^2, and the first moments of the channel
    measures against the step's plane covariances (network.step_covariances, elementary
    moments of (z, e)): Var eps + int lam dmu_b = sigma_vv, int lam dmu_bt = sigma_vt,
    int lam dmu_t = sigma_tt."""
    s, g = get_function(sigma), get_function(target)
    k = ge_coefficients(s, g)
    r = PQ.population_rules(s, g, alpha0, eta, 0.0, PQ.N_NODES, PQ.N_CONTOUR, 180)
    zq, wq = N.gaussian_nodes(np.zeros(1), np.ones(1), tuple(g.kinks))
    zq, wq = zq[0], wq[0] / wq[0].sum()
    e = g(zq) - k.mu0
    e1, e2 = float(wq @ e), float(wq @ (e * e))
    a, bq = eta * k.c1, eta * eta * max(k.s2 - k.c1**2, 0.0) / alpha0
    trace = 1.0 + 2 * a * e1 + a * a * (e1 * e1 + e2 / alpha0) + bq * e2
    lam, wts = r.nodes, r.weights
    assert wts[0].sum() == pytest.approx(1.0, abs=1e-8)
    assert wts[2].sum() == pytest.approx(1.0, abs=1e-8)
    assert float(lam[0] @ wts[0]) == pytest.approx(trace, rel=1e-7)
    svv, svt, stt, _ = N.step_covariances(s, g, alpha0=alpha0, eta=eta)
    for rules, tol in ((r, 1e-8), (PQ.population_rules(s, g, alpha0, eta, 0.0), 1e-5)):
        # the law of theta*.x on 180 nodes (as in step_covariances): equal to rounding; on the
        # default 48 nodes: the law's quadrature error
        m1 = [float(rules.nodes[j] @ rules.weights[j]) for j in range(5)]
        assert rules.var_eps + m1[1] == pytest.approx(svv, rel=tol)
        assert m1[2] == pytest.approx(stt, rel=tol)
        assert 0.25 * (m1[3] - m1[4]) == pytest.approx(svt, rel=10 * tol, abs=1e-9)


def test_quadrature_kernel_equals_the_atoms_kernel():
    """measure_moments of kind 'quadrature' fed with the atoms of a sampled device as five
    rules (bulk with weights 1/n, |b.e_j|^2, |t.e_j|^2, |(b +- t).e_j|^2) equals kind
    'population' on the same atoms (an algebraic identity of the two kernels)."""
    dev = N.population_measure("relu", "tanh", alpha0=2.0, eta=1.0, beta=1.5, method="device",
                               size=120, batches=1)
    lam, b, t = dev.rho, dev.F[1:], dev.G
    n = lam.size
    nodes = np.tile(lam, 5)
    wts = np.concatenate([np.full(n, 1.0 / n), b * b, t * t, (b + t) ** 2, (b - t) ** 2])
    q = SpectralMeasure("quadrature", dev.beta, dev.c, nodes, wts, np.array([dev.F[0]]), EMPTY)
    for s0, s1 in [(0.3, 0.7), (0.05, 1.2), (1.0, 0.0)]:
        np.testing.assert_allclose(q.moments(s0, s1), dev.moments(s0, s1), rtol=1e-11)
    assert measure_moments(4, 1.5, 1.0, nodes, wts, np.ones(1), EMPTY, 0.3, 0.7).shape == (14,)


@pytest.mark.parametrize("sigma,target,alpha0,eta", [("relu", "relu", 2.0, 3.0),
                                                     ("erf", "sin", 0.5, 3.0)])
def test_bulk_and_channel_against_sampled_first_batches(sigma, target, alpha0, eta):
    """The rules' bulk mean of 1/(1 + lam) and t-channel mean of lam/(1 + lam) against the
    spectra of C sampled from eight d = 700 first batches of the device (stratified theta*.x;
    independent of the resolvent): the device's value is their mean, within the Student
    quantile of 7 degrees of freedom at a two-sided 1e-3 per comparison times its s.e., plus
    the finite-d bias at d = 700 measured as c/d (validation/reports/BIAS_SLOPES.md:
    (|c| + 3 s.e.)/700)."""
    from scipy import stats

    from validation.experiments import bias_slopes as BS

    s, g = get_function(sigma), get_function(target)
    r = PQ.population_rules(s, g, alpha0, eta, 0.0)
    dev = N.population_measure(s, g, alpha0=alpha0, eta=eta, beta=1.0, method="device",
                               size=700, batches=8, seed=5)
    bulk = float(r.weights[0] @ (1.0 / (1.0 + r.nodes[0])))
    tch = float(r.weights[2] @ (r.nodes[2] / (1.0 + r.nodes[2])))
    k = ge_coefficients(s, g)
    a, bq = eta * k.c1, eta * eta * max(k.s2 - k.c1**2, 0.0) / alpha0
    per = []
    for sample in N._population_samples(s, g, alpha0, 0.0, 700, 8, 5, True):
        lam, _, tv, _ = N._batch_atoms(sample, a, bq)
        per.append((np.mean(1.0 / (1.0 + lam)), np.sum(tv * tv * lam / (1.0 + lam))))
    per = np.array(per)
    assert np.mean(1.0 / (1.0 + dev.rho)) == pytest.approx(per[:, 0].mean(), rel=1e-12)
    assert np.sum(dev.G**2 * dev.H / (1.0 + dev.H)) == pytest.approx(per[:, 1].mean(), rel=1e-12)
    name = {("relu", "relu", 2.0, 3.0): "relu-relu-2-3",
            ("erf", "sin", 0.5, 3.0): "erf-sin-0.5-3"}[(sigma, target, alpha0, eta)]
    t = stats.t.ppf(1 - 5e-4, len(per) - 1)
    for j, (q, lim) in enumerate((("bulk", bulk), ("tch", tch))):
        x = per[:, j]
        band = t * x.std(ddof=1) / math.sqrt(x.size) + BS.slope(name, q).allowance(700)
        assert abs(x.mean() - lim) <= band, (q, x.mean(), lim, band)


@pytest.mark.slow  # ~50 s: independent sampled devices averaged (slow suite)
def test_network_risk_from_the_rules_against_sampled_devices():
    """The network theory's risk with the deterministic measure against the sampled device
    (relu/relu, alpha0 = 2, eta = 3, the device's noisiest setting: ~1% per first batch) at
    d = 600 x 2 batches, eight seeds: within the Student quantile of 7 degrees of freedom at a
    two-sided 1e-3 (5.41) of their standard error, no bias allowance."""
    from scipy import stats

    kw = dict(sigma="relu", target="relu", alpha0=2.0, eta=3.0, beta=1.0, lam=0.01)
    det = A.risk(5.0, model="network", **kw)
    assert det.measure == "quadrature" and det.converged
    vals = []
    for seed in range(8):
        dev = N.population_measure("relu", "relu", alpha0=2.0, eta=3.0, beta=1.0,
                                   method="device", size=600, batches=2, seed=seed)
        vals.append(A.risk(5.0, model="network", measure=dev, **kw).risk)
    se = np.std(vals, ddof=1) / math.sqrt(len(vals))
    t = stats.t.ppf(1 - 5e-4, len(vals) - 1)
    assert abs(det.risk - np.mean(vals)) <= t * se, (det.risk, np.mean(vals), se)


def test_falls_back_to_the_device_with_a_warning(monkeypatch):
    def fail(*args, **kwargs):
        raise PQ.QuadratureError("forced")

    monkeypatch.setattr(PQ, "resolvent_measure", fail)
    with pytest.warns(RuntimeWarning, match="forced; using the sampled device"):
        m = N.population_measure("relu", "tanh", alpha0=2.0, eta=1.0, beta=1.0)
    assert m.kind == "population"
    with pytest.raises(ValueError, match="method must be"):
        N.population_measure("relu", "tanh", alpha0=2.0, eta=1.0, beta=1.0, method="exact")
    with pytest.raises(ValueError, match="options of the sampled device"):
        N.population_measure("relu", "tanh", alpha0=2.0, eta=1.0, beta=1.0,
                             method="resolvent", size=100)


def test_rules_are_deterministic_and_converged():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for sigma, target, alpha0, eta in SETTINGS:
            PQ.population_rules.cache_clear()
            r1 = PQ.population_rules(get_function(sigma), get_function(target), alpha0, eta, 0.0)
            PQ.population_rules.cache_clear()
            r2 = PQ.population_rules(get_function(sigma), get_function(target), alpha0, eta, 0.0)
            assert np.array_equal(r1.nodes, r2.nodes) and math.isfinite(r1.var_eps)
