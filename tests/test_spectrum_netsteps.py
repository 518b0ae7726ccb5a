"""The network's spectra beyond one step (docs/THEORY.md §16.6, §16.8) and the two-step
eta ~ p^(1/2 + a) weights inside ``spectrum`` (§16.7).

Independent checks: with every group's bulk isotropic on E (``Sig_g = I``) the network's
channels are the sRF surrogate's exactly (a different formula: the features' E columns as
channels instead of inside the bulk; the weights' additive ``W_perp W_perp^T + L L^T`` instead of
the multiplicative spike of §16.6), so the two must agree to rounding. The agreement with the
trained network is the campaigns' (validation/reports/SPECTRA_THEORY.md)."""

from __future__ import annotations

import numpy as np
import pytest

import asymptotics
from asymptotics.network import groups as network_groups_module
from asymptotics.spectra import two_step_weights

KW = dict(sigma="tanh", target="tanh(z1)", alpha0=2.0, eta=1.0, beta=0.5, steps=2)


@pytest.fixture
def isotropic(monkeypatch):
    """Every group's bulk isotropic: on E (``Sig_g = I``) and outside it (the features' bulk
    outside E an identity :class:`GroupBulk`, uncoupled: ``a = 0``, ``Ecov_g = I``; this runs
    the anisotropic code, :mod:`asymptotics.spectra.netbulk` and the coupled Phi2, on the
    isotropic case)."""
    from asymptotics.network.bulk import GroupBulk
    from asymptotics.network.coupling import CoupledChannels
    from asymptotics.spectra import netsteps

    orig = network_groups_module.model_channels

    def iso(state, cov):
        S = orig(state, cov)
        return np.repeat(np.eye(S.shape[1])[None], S.shape[0], axis=0)

    def iso_outside(*args, **kw):
        cc = orig_outside(*args, **kw)
        B, K, n = cc.bulk.sig.shape[:3]
        m = cc.r + cc.k
        return CoupledChannels(GroupBulk(np.broadcast_to(np.eye(n), (B, K, n, n)).copy()),
                               np.zeros((B, K, m, n)), np.repeat(np.eye(m)[None], K, axis=0),
                               cc.r, cc.k)

    orig_outside = netsteps.network_steps_outside
    from asymptotics.network import device

    # a cache of its own: the coupled device reads model_channels, and its cached result
    # (the residual Ecov = I - explained) must not outlive the patch
    monkeypatch.setattr(device, "_CACHE", {})
    monkeypatch.setattr(network_groups_module, "model_channels", iso)
    monkeypatch.setattr(netsteps, "network_steps_outside", iso_outside)
    # and no spread of the rows' outside scale (THEORY.md §16.9): Sig = I, no slope
    import dataclasses

    from asymptotics.network import rowvar as rowvar_module

    orig_rv = rowvar_module.row_variance

    def iso_rv(*args, **kwargs):
        rv = orig_rv(*args, **kwargs)
        eye = np.repeat(np.eye(rv.sig.shape[1])[None], rv.sig.shape[0], axis=0)
        return dataclasses.replace(rv, sig=eye, slope=np.zeros_like(rv.slope))

    monkeypatch.setattr(rowvar_module, "row_variance", iso_rv)
    # spectrum's cache keys on the arguments, not on replaced functions: forget it on both sides
    from asymptotics.spectra import clear_cache

    clear_cache()
    yield
    clear_cache()


@pytest.mark.parametrize("readout", ["constant", "pm1"])
def test_isotropic_network_features_are_the_srf_ones(isotropic, readout: str) -> None:
    net = asymptotics.spectrum("features", alpha=4.0, model="network", readout=readout, d=1000,
                               **KW)
    srf = asymptotics.spectrum("features", alpha=4.0, model="srf", readout=readout, d=1000, **KW)
    assert net.model == "network" and len(net.outliers) == len(srf.outliers) >= 1
    assert np.ravel(net.support) == pytest.approx(np.ravel(srf.support), rel=1e-12)
    for a, b in zip(net.outliers, srf.outliers, strict=True):
        assert a.location == pytest.approx(b.location, rel=1e-10)
        assert a.overlaps["target (B t)"] == pytest.approx(0.0, abs=1e-14)
        learned = sum(v for k, v in b.overlaps.items() if k.startswith("learned"))
        assert a.overlaps["learned span (B V)"] == pytest.approx(learned, rel=1e-8)
        means = sum(v for k, v in b.overlaps.items() if k.startswith("mean"))
        assert a.overlaps["mean" if readout == "constant" else "readout"] == pytest.approx(
            means, rel=1e-9)


@pytest.mark.parametrize("steps,readout", [(2, "pm1"), (3, "constant")])
def test_isotropic_network_weights_are_the_srf_ones(isotropic, steps: int, readout: str) -> None:
    kw = dict(KW, steps=steps, readout=readout, d=1000)
    net = asymptotics.spectrum("weights", model="network", **kw)
    srf = asymptotics.spectrum("weights", model="srf", **kw)
    assert len(net.outliers) == len(srf.outliers) == 1
    a, b = net.outliers[0], srf.outliers[0]
    assert a.location == pytest.approx(b.location, rel=1e-10)
    for name in ("mean", "readout", "learned span", "target 1"):
        assert a.overlaps[name] == pytest.approx(b.overlaps[name], rel=1e-8, abs=1e-14)


def test_network_weights_move_the_left_overlap_up() -> None:
    """The network's bulk has less variance along the spike than the isotropic groups (the
    route's Sig_vv < 1): the left vector's deficit 1 - <u, 1/sqrt p>^2 shrinks by about that
    factor, the location and the right vector barely move."""
    net = asymptotics.spectrum("weights", model="network", readout="constant", d=1000, **KW)
    srf = asymptotics.spectrum("weights", model="srf", readout="constant", d=1000, **KW)
    svv = net.params["channels"][0][0][0]
    assert 0.5 < svv < 1.0
    ratio = (1 - net.outliers[0].overlaps["mean"]) / (1 - srf.outliers[0].overlaps["mean"])
    assert ratio == pytest.approx(svv, abs=0.1)
    assert net.outliers[0].location == pytest.approx(srf.outliers[0].location, rel=1e-3)


def test_two_step_weights_is_spectrum() -> None:
    """``spectrum(of='weights', exponents=...)`` and the door ``two_step_weights``: one law."""
    law = asymptotics.spectrum("weights", sigma="tanh(z+0.5)", target="linear", steps=2,
                               readout="gaussian", exponents=(0.2, 0.3), eta=(1.0, 3.0),
                               beta=0.5, alpha0=1.0, d=1000)
    r = two_step_weights("tanh(z+0.5)", "linear", a1=0.2, a2=0.3, d=1000, eta1=1.0, eta2=3.0)
    assert isinstance(law, asymptotics.SpectralLaw) and law.status == "converged"
    assert [o.location for o in law.outliers] == pytest.approx([v * v for v in r.outliers])
    assert law.edge == pytest.approx(r.edge ** 2)
    assert law.params["count"] == r.count and tuple(law.params["degrees"]) == r.degrees
    assert [o.channel for o in law.outliers] == list(r.channels)
    assert law.mass == pytest.approx(1.0, abs=2e-3)


def _tanh_pm1_parts():
    from asymptotics.coefficients.functions import get_function
    from asymptotics.network.rowvar import row_variance
    from asymptotics.spectra import netsteps

    s = get_function("tanh")
    kw = dict(steps=2, alpha0=2.0, eta=1.0, delta=0.0, readout="pm1")
    _, sig, _ = netsteps.network_steps_params(s, "tanh(z1)", **kw)
    cp = netsteps.network_steps_outside(s, "tanh(z1)", **kw)
    return sig, cp, row_variance(s, "tanh(z1)", **kw)


def test_coupling_on_the_routes_sig_is_the_device() -> None:
    """The device's residual is the route's Sig minus the coupling's explained part
    (DERIVATIONS.md §10.6), so re-basing it on the route's Sig gives it back; on the rows'
    Sig of §10 only the residual moves, by exactly the difference of the two Sig."""
    from asymptotics.spectra.netsteps import coupled_on

    sig, cp, rv = _tanh_pm1_parts()
    assert np.all(np.linalg.eigvalsh(cp.ecov) > 0)  # (no clipping: the identity below is exact)
    assert coupled_on(cp, sig).ecov == pytest.approx(cp.ecov, abs=1e-12)
    moved = coupled_on(cp, rv.sig)
    assert moved.ecov - cp.ecov == pytest.approx(rv.sig - sig, abs=1e-12)
    assert moved.a is cp.a or np.array_equal(moved.a, cp.a)


def test_uncoupled_columns_give_the_gram_law() -> None:
    """``a = 0``: Phi2's E block is ``-D_g Sig_g = -tau_g Gram_g`` (§16.8), the law without
    ``coupled=`` on the same bulk, to rounding. With the device's coupling the mean's outlier,
    far above the bulk, moves by a relative O(edge/location) times the coupling's share of
    Sig on E (``(lam - F^T F)^-1 = 1/lam + F^T F/lam^2 + ...``: the coupling enters at the
    second term; here the share is 1.6%, bounded by 5%)."""
    from asymptotics.coefficients.functions import get_function
    from asymptotics.core.parameters import default
    from asymptotics.network.coupling import CoupledChannels
    from asymptotics.spectra.features import features_bulk
    from asymptotics.spectra.netbulk import outside_solver
    from asymptotics.spectra.netsteps import network_steps_outliers, network_steps_params
    from asymptotics.spiked.problem import build_spiked_problem

    sig, cp, rv = _tanh_pm1_parts()
    s = get_function("tanh")
    gp, _, values = network_steps_params(s, "tanh(z1)", steps=2, alpha0=2.0, eta=1.0,
                                         delta=0.0, readout="pm1")
    prob = build_spiked_problem(sigma=s, lam=default("lam"), beta=0.5, delta=0.0, **gp)
    sol, support, _ = features_bulk(prob, 4.0, outside_solver(prob, 4.0, cp.bulk))
    edge = support[-1][1]
    zero = CoupledChannels(cp.bulk, np.zeros_like(cp.a), cp.ecov, cp.r, cp.k)
    args = (prob, 4.0, sol, edge, 2000.0, rv.sig, values)
    plain = network_steps_outliers(*args, row_slope=rv.slope)
    for cc, rel in ((zero, 1e-10), (cp, 0.05 * edge / plain[0].location)):
        got = network_steps_outliers(*args, row_slope=rv.slope, coupled=cc)
        assert len(got) == len(plain)
        for a, b in zip(got, plain, strict=True):
            assert a.location == pytest.approx(b.location, rel=rel)
            for q in ("readout", "learned span (B V)"):
                assert a.overlaps[q] == pytest.approx(b.overlaps[q], rel=rel)


def test_default_model_beyond_one_step_is_the_network() -> None:
    """``model=None``: the network's law after several steps (THEORY.md §16.6, §16.8), the
    surrogate at one step with a non-constant readout; eta = 0 is never the network."""
    w = asymptotics.spectrum("weights", d=1000, readout="pm1", **KW)
    assert w.model == "network"
    assert w.params["channels"] is not None  # the route's groups, not the isotropic ones
    one = dict(KW, steps=1)
    assert asymptotics.spectrum("weights", d=1000, readout="pm1", **one).model == "srf"
    assert asymptotics.spectrum("weights", d=1000, **dict(KW, eta=0.0)).model == "srf"


@pytest.mark.slow
def test_coupled_columns_against_sampled_features() -> None:
    """tanh, constant readout, two steps, d = 794 (each device block twice), p = 397, n = 4d,
    24 draws: rows with the route's loading on v, outside parts of the device's covariances
    (norm exactly sqrt(c): no spread of the rows' scale, so no bulk-variance channel) and
    coordinates on E = [v, t] coupled to them, ``b_E = sum_b a_b . G_b/sqrt(2B) + eps`` with
    total covariance §16.9's ``Sig``. The top eigenvector's overlaps with 1_p and with the
    group-centred column B v against the law with ``Ecov`` from that ``Sig`` (DERIVATIONS.md
    §10.6); the device's own residual (the route's ``Sig`` in Phi2) misses the same draws."""
    import math

    from asymptotics.coefficients.functions import get_function
    from asymptotics.core.parameters import default
    from asymptotics.spectra import netsteps as ns
    from asymptotics.spectra.features import features_bulk
    from asymptotics.spectra.netbulk import outside_solver
    from asymptotics.spiked.problem import build_spiked_problem

    s = get_function("tanh")
    kw = dict(steps=2, alpha0=2.0, eta=1.0, delta=0.0, readout="constant")
    gp, _, values = ns.network_steps_params(s, "tanh(z1)", **kw)
    from asymptotics.network.rowvar import row_variance

    cp = ns.network_steps_outside(s, "tanh(z1)", **kw)

    sig = row_variance(s, "tanh(z1)", **kw).sig
    alpha = 4.0
    prob = build_spiked_problem(sigma=s, lam=default("lam"), beta=0.5, delta=0.0, **gp)
    sol, sup, _ = features_bulk(prob, alpha, outside_solver(prob, alpha, cp.bulk))
    S = np.asarray(cp.bulk.sig)[:, 0]
    a = np.asarray(cp.a)[:, 0]
    B, n = S.shape[:2]
    L, c, m = float(gp["loadings"][0][0]), float(gp["bulk"][0]), cp.r + cp.k
    d = m + 2 * B * n
    p, N = round(0.5 * d), round(alpha * d)

    def top(coupled):
        return max(ns.network_steps_outliers(prob, alpha, sol, sup[-1][1], d, sig, values,
                                             coupled=coupled), key=lambda o: o.location)

    fix = top(cp)
    plain = ns.coupled_on
    try:
        ns.coupled_on = lambda cc, sg: cc  # the device's residual as it is (as first merged)
        main = top(cp)
    finally:
        ns.coupled_on = plain
    ce = np.linalg.cholesky(sig[0] - np.einsum("ben,bnk,bfk->ef", a, S, a) / B)
    chol = np.linalg.cholesky(S + 1e-12 * np.eye(n))
    rng = np.random.default_rng(71)
    res = []
    for _ in range(24):
        G = np.einsum("bij,prbj->prbi", chol, rng.standard_normal((p, 2, B, n)))
        yE = (np.einsum("ben,prbn->pe", a, G) / math.sqrt(2 * B)
              + rng.standard_normal((p, m)) @ ce.T)
        Gf = G.reshape(p, -1)
        Gf = Gf * math.sqrt(d) / np.linalg.norm(Gf, axis=1, keepdims=True)
        W = np.hstack([math.sqrt(c / d) * yE, math.sqrt(c / d) * Gf])
        W[:, 0] += L
        F = s(rng.standard_normal((N, d)) @ W.T) / math.sqrt(p)
        u = np.linalg.eigh(F.T @ F)[1][:, -1]
        bv = yE[:, 0] - yE[:, 0].mean()
        res.append(((u @ bv) ** 2 / (bv @ bv), u.sum() ** 2 / p))
    res = np.array(res)
    mu, se = res.mean(axis=0), res.std(axis=0, ddof=1) / math.sqrt(len(res))
    got = np.array([fix.overlaps["learned span (B V)"], fix.overlaps["mean"]])
    old = np.array([main.overlaps["learned span (B V)"], main.overlaps["mean"]])
    assert np.all(np.abs(mu - got) < 3 * se)
    assert abs(mu[0] - old[0]) > 4 * se[0]
