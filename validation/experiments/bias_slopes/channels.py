"""The semi-empirical measure of a sampled first layer against its deterministic values
(relu/relu, alpha0 = 20, eta = 3, beta = 1): on sRF weights sqrt(c) W0 + r 1 v^T
(``srf_weights``) the (gamma, r, c) that :func:`asymptotics.from_weights` recovers, the mean of F
and the risk at alpha = 5, lam = 0.01 against the sRF spike and theory (with v given and with v
estimated: ``v.`` and ``est.``); on the trained network's first layer (``network_step``, the
simulator's protocol) the means of (F, G, H), d times the bulk rows' covariances along (v, t),
against :func:`asymptotics.step.plane.step_covariances` (docs/DERIVATIONS.md §7)."""

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
            ChannelSetting("network-step-relu", "network_step"))


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

    if s.kind == "srf_weights":
        sp = A.build_problem(**KW, model="srf").spike
        risk = float(A.risk(ALPHA, model="srf", **KW).risk)
        base = dict(gamma=sp.gamma, r=sp.r, c=sp.c, F_mean=sp.c, risk=risk)
        return {f"{tag}{k}": float(v) for tag in ("v.", "est.") for k, v in base.items()}
    from asymptotics.step.plane import step_covariances

    pv, pt, ptt, _ = step_covariances(KW["sigma"], KW["target"], alpha0=KW["alpha0"],
                                      eta=KW["eta"])
    return {"svv": float(pv), "svt": float(pt), "stt": float(ptt)}
