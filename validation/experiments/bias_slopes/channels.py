"""The semi-empirical measure of a sampled first layer against its deterministic values
(relu/relu, alpha0 = 20, eta = 3, beta = 1): on sRF weights sqrt(c) W0 + r 1 v^T
(``srf_weights``) the (gamma, r, c) that :func:`asymptotics.from_weights` recovers, the mean of F
and the risk at alpha = 5, lam = 0.01 against the sRF spike and theory (with v given and with v
estimated: ``v.`` and ``est.``); on the trained network's first layer (``network_step``, the
simulator's protocol) the means of (F, G, H), d times the bulk rows' covariances along (v, t),
against :func:`asymptotics.step.plane.step_covariances` (docs/DERIVATIONS.md §7); and
(``gmp_bulk``) the spectrum of a sampled p x d Gram matrix B B^T, B = G diag(lam/d)^(1/2) with
two population variances (4 with probability 0.3, else 0.7; beta = 0.5, 1.5), against the
generalised Marchenko-Pastur moments of the sampled variances: the relative deviations of
five resolvent moments at (s0, s1) = (0.1, 1) and (1, 0.3), whose limit is 0."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

KW = dict(sigma="relu", target="relu", alpha0=20.0, eta=3.0, lam=0.01, beta=1.0)
ALPHA = 5.0


@dataclass(frozen=True)
class ChannelSetting:
    """``kind``: ``'srf_weights'`` or ``'network_step'``."""

    name: str
    kind: str


CHANNELS = (ChannelSetting("srf-weights-relu", "srf_weights"),
            ChannelSetting("network-step-relu", "network_step"),
            ChannelSetting("gmp-bulk-two-variances", "gmp_bulk"))
GMP_BETAS, GMP_S = (0.5, 1.5), ((0.1, 1.0), (1.0, 0.3))
GMP_NAMES = ("1/S", "rho/S", "1/S^2", "rho/S^2", "rho^2/S^2")


def gmp_deviations(d: int, rng: np.random.Generator) -> dict[str, float]:
    """``emp/theory - 1`` of each moment, beta and (s0, s1) for one draw of the variances and
    of G (the theory at the drawn variances)."""
    from asymptotics.measures.spectral import measure_moments

    z = np.zeros(0)
    out = {}
    for beta in GMP_BETAS:
        lam = np.where(rng.random(d) < 0.3, 4.0, 0.7)
        B = rng.standard_normal((int(beta * d), d)) * np.sqrt(lam / d)
        rho = np.linalg.eigvalsh(B @ B.T)
        for s0, s1 in GMP_S:
            S = s0 + s1 * rho
            emp = [np.mean(1 / S), np.mean(rho / S), np.mean(1 / S**2), np.mean(rho / S**2),
                   np.mean(rho**2 / S**2)]
            th = measure_moments(3, beta, 1.0, lam, np.zeros(1), z, z, s0, s1)[:5]
            for name, e, t in zip(GMP_NAMES, emp, th, strict=True):
                out[f"beta{beta:g}@({s0:g},{s1:g}):{name}"] = float(e / t - 1.0)
    return out


def srf_weights(rng: np.random.Generator, d: int, p: int, r: float, c: float, gamma: float):
    """``(W, v, theta)``: W = sqrt(c) W0 + r 1 v^T, W0 rows on the sphere, <v, theta> = gamma."""
    W0 = rng.standard_normal((p, d))
    W0 /= np.linalg.norm(W0, axis=1, keepdims=True)
    theta = rng.standard_normal(d)
    theta /= np.linalg.norm(theta)
    t = rng.standard_normal(d)
    t -= (t @ theta) * theta
    t /= np.linalg.norm(t)
    v = gamma * theta + math.sqrt(1 - gamma * gamma) * t
    return math.sqrt(c) * W0 + r * v[None, :], v, theta


def channel_draw(s: ChannelSetting, d: int, rng: np.random.Generator) -> dict[str, float]:
    """The quantities of one draw at d = p."""
    import asymptotics as A

    if s.kind == "gmp_bulk":
        return gmp_deviations(d, rng)
    if s.kind == "srf_weights":
        sp = A.build_problem(**KW, model="srf").spike
        W, v, theta = srf_weights(rng, d, d, sp.r, sp.c, sp.gamma)
        out = {}
        for tag, vv in (("v.", v), ("est.", None)):
            m = A.from_weights(W, vv, theta)
            res = A.risk(ALPHA, **KW, measure=m)
            out.update({f"{tag}gamma": float(m.gamma), f"{tag}r": float(m.r),
                        f"{tag}c": float(m.c), f"{tag}F_mean": float(np.mean(m.F)),
                        f"{tag}risk": float(res.risk) if res.converged else math.nan})
        return out
    from asymptotics.coefficients.functions import get_function
    from validation.protocol.simulator import Setting, first_layer

    f = get_function(KW["sigma"])
    st = Setting(model="network", alpha=1.0, d=d, **KW)
    W1, theta, _ = first_layer(st, np.random.SeedSequence(int(rng.integers(2**63))), f, f)
    m = A.from_weights(W1, None, theta)
    return {"svv": float(m.F.mean()), "svt": float(m.G.mean()), "stt": float(m.H.mean())}


def channel_theory(s: ChannelSetting) -> dict[str, float]:
    """The deterministic values (d -> infinity)."""
    import asymptotics as A

    if s.kind == "gmp_bulk":
        return {f"beta{beta:g}@({s0:g},{s1:g}):{name}": 0.0 for beta in GMP_BETAS
                for s0, s1 in GMP_S for name in GMP_NAMES}
    if s.kind == "srf_weights":
        sp = A.build_problem(**KW, model="srf").spike
        risk = float(A.risk(ALPHA, model="srf", **KW).risk)
        base = dict(gamma=sp.gamma, r=sp.r, c=sp.c, F_mean=sp.c, risk=risk)
        return {f"{tag}{k}": float(v) for tag in ("v.", "est.") for k, v in base.items()}
    from asymptotics.step.plane import step_covariances

    pv, pt, ptt, _ = step_covariances(KW["sigma"], KW["target"], alpha0=KW["alpha0"],
                                      eta=KW["eta"])
    return {"svv": float(pv), "svt": float(pt), "stt": float(ptt)}
