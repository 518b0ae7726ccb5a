"""Sampled spectra against their predictions: the sRF surrogate's outliers (the features' mean
outlier and the weights' learned outlier, both divided by d, and the latter's overlap with the
target; tanh/tanh, alpha0 = 2, eta = 2, alpha = 2, beta = 0.5) against
:func:`asymptotics.spectrum` at the simulated d (docs/THEORY.md §16), and the atoms of
Omega = W Pi W^T for rows on the sphere (p = d/2, c = 1.4) against the Marchenko-Pastur measure
(§6): its moments at (s0, s1) = (0.3, 0.9), the mean of F and of the eigenvalues; the relu
network's features after one step (``network_features``: relu/relu, alpha = 2, alpha0 = 1,
eta = 1, beta = 0.5): its mean outlier's squared overlap with 1_p/sqrt(p) against the network
theory's at the simulated d; and (``edge_bbp``) the bulk edge of W0 (rows on the sphere,
p = d/2) as :func:`validation.spectrum.bulk_edge` estimates it (``'fit'`` and ``'mp'``) against the
Marchenko-Pastur edge 1 + sqrt(p/d), and the top singular values of W0 + 2 u v^T and of
W0 + 2 u1 v1^T + 3 u2 v2^T (u, v uniform unit vectors) against the BBP locations
sqrt((1 + theta^2)(beta + theta^2))/theta (Benaych-Georges & Nadakuditi 2012)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

SRF = dict(sigma="tanh", target="tanh", alpha0=2.0, eta=2.0)
SRF_SHAPE = dict(alpha=2.0, beta=0.5)
MP_C, MP_S = 1.4, (0.3, 0.9)


@dataclass(frozen=True)
class SpectrumSetting:
    """``kind``: ``'srf_outliers'``, ``'mp_atoms'``, ``'edge_bbp'`` or
    ``'network_features'``."""

    name: str
    kind: str


SPECTRA = (SpectrumSetting("srf-outliers-tanh", "srf_outliers"),
           SpectrumSetting("mp-atoms-0.5", "mp_atoms"),
           SpectrumSetting("edge-bbp-0.5", "edge_bbp"),
           SpectrumSetting("network-features-relu", "network_features"))
#: the network of ``network_features``
NET_FEATURES = dict(sigma="relu", target="relu", alpha=2.0, alpha0=1.0, eta=1.0, beta=0.5)
#: the planted spike strengths of ``edge_bbp``: one spike, then two
BBP_ONE, BBP_TWO = 2.0, (2.0, 3.0)


def bbp_location(theta: float, beta: float) -> float:
    """The limit of the outlier of W0 + theta u v^T (p/d = beta; an outlier iff
    theta > beta^(1/4))."""
    return math.sqrt((1 + theta**2) * (beta + theta**2)) / theta


def _unit(rng: np.random.Generator, n: int) -> np.ndarray:
    v = rng.standard_normal(n)
    return v / np.linalg.norm(v)


def edge_bbp_draw(d: int, rng: np.random.Generator) -> dict[str, float]:
    """The estimated edges of W0 and the top singular values of the planted matrices."""
    from validation import spectrum as sp

    p = d // 2
    W0 = sp.sphere_rows(rng, p, d)
    s = sp.singular_values(W0)
    out = {f"edge_{m}": float(sp.bulk_edge(s, W0.shape, method=m).edge) for m in ("fit", "mp")}
    M = W0 + BBP_ONE * np.outer(_unit(rng, p), _unit(rng, d))
    out[f"outlier@{BBP_ONE:g}"] = float(sp.singular_values(M)[0])
    for th in BBP_TWO:
        W0 = W0 + th * np.outer(_unit(rng, p), _unit(rng, d))
    top = np.sort(sp.singular_values(W0))[::-1][:2]
    for th, v in zip(sorted(BBP_TWO, reverse=True), top, strict=True):
        out[f"two_outliers@{th:g}"] = float(v)
    return out


def spectrum_draw(s: SpectrumSetting, d: int, rng: np.random.Generator) -> dict[str, float]:
    """The quantities of one draw at dimension ``d``."""
    if s.kind == "edge_bbp":
        return edge_bbp_draw(d, rng)
    if s.kind == "network_features":
        from validation.experiments.spectra_sim import simulate_network

        D = simulate_network(seed=int(rng.integers(2**31)), d=d, **NET_FEATURES)
        return {"features_mean_overlap": float(D.f_overlaps["mean"][0])}
    if s.kind == "srf_outliers":
        import asymptotics
        from validation.experiments.spectra_sim import simulate_srf

        sp = asymptotics.srf_mapping(SRF["sigma"], SRF["target"], alpha0=SRF["alpha0"],
                                     eta=SRF["eta"])
        D = simulate_srf(sigma=SRF["sigma"], r=sp.r, c=sp.c, gamma=sp.gamma, d=d,
                         seed=int(rng.integers(2**31)), **SRF_SHAPE)
        return {"features_mean_outlier/d": float(D.f_eig[-1]) / d,
                "weights_outlier/d": float(D.w_eig[-1]) / d,
                "weights_outlier_target_overlap": float(D.w_overlaps["target 1"][0])}
    from asymptotics.measures.spectral import empirical_measure
    from validation.experiments.bias_slopes.channels import sphere_frame

    W0, v, t = sphere_frame(rng, d // 2, d)
    emp = empirical_measure(W0, v, t, MP_C)
    out = {f"moment{j}": float(m) for j, m in enumerate(emp.moments(*MP_S)[:5])}
    out.update(F_mean=float(np.mean(emp.F)), rho_mean=float(np.mean(emp.rho)))
    return out


def spectrum_theory(s: SpectrumSetting, d: int) -> dict[str, float]:
    """The predictions at dimension ``d`` (the sRF outliers at the simulated d; MP at p/d)."""
    if s.kind == "srf_outliers":
        import asymptotics

        kw = dict(**SRF, **SRF_SHAPE, d=d)
        lf, lw = asymptotics.spectrum("features", **kw), asymptotics.spectrum("weights", **kw)
        return {"features_mean_outlier/d": float(lf.outliers[0].location) / d,
                "weights_outlier/d": float(lw.outliers[0].location) / d,
                "weights_outlier_target_overlap": float(lw.outliers[0].overlaps["target 1"])}
    if s.kind == "network_features":
        import asymptotics

        net = asymptotics.spectrum("features", model="network", d=d, **NET_FEATURES)
        return {"features_mean_overlap": float(net.outliers[0].overlaps["mean"])}
    p = d // 2
    if s.kind == "edge_bbp":
        beta = p / d
        out = {"edge_fit": 1 + math.sqrt(beta), "edge_mp": 1 + math.sqrt(beta),
               f"outlier@{BBP_ONE:g}": bbp_location(BBP_ONE, beta)}
        out.update({f"two_outliers@{th:g}": bbp_location(th, beta)
                    for th in sorted(BBP_TWO, reverse=True)})
        return out
    from asymptotics.measures.spectral import marchenko_pastur

    md = marchenko_pastur(p / d, MP_C).moments(*MP_S)[:5]
    out = {f"moment{j}": float(m) for j, m in enumerate(md)}
    out.update(F_mean=p / d * MP_C, rho_mean=MP_C)
    return out
