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
five resolvent moments at (s0, s1) = (0.1, 1) and (1, 0.3), whose limit is 0; and
(``network_groups``) a network trained by two steps (relu, target z1 + z1 z2, pm1 readout,
p = 4d, alpha0 = 8, eta_tilde = (2, 4)): each readout group's bulk covariance on (z1, z2) over
its bulk variance c, against :func:`asymptotics.network.groups.network_groups`
(docs/DERIVATIONS.md §9.2); and (``network_risk``) the trained network's test error at
alpha = 5 (the simulator's protocol, control-variate estimator, p = d) and the semi-empirical
theory of its sampled first layer, each against the deterministic network theory, and their
paired difference (limit 0)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

KW = dict(sigma="relu", target="relu", alpha0=20.0, eta=3.0, lam=0.01, beta=1.0)
ALPHA = 5.0


@dataclass(frozen=True)
class ChannelSetting:
    """``kind``: ``'srf_weights'``, ``'network_step'``, ``'gmp_bulk'``, ``'network_groups'`` or
    ``'network_risk'``."""

    name: str
    kind: str


CHANNELS = (ChannelSetting("srf-weights-relu", "srf_weights"),
            ChannelSetting("network-step-relu", "network_step"),
            ChannelSetting("gmp-bulk-two-variances", "gmp_bulk"),
            ChannelSetting("network-groups-relu", "network_groups"),
            ChannelSetting("network-risk-relu", "network_risk"))
#: the two-step network of ``network_groups``
GROUPS_KW = dict(sigma="relu", target="z1 + z1*z2", alpha0=8.0, eta=(2.0, 4.0), readout="pm1")
GROUP_ENTRIES = ((0, 0), (0, 1), (1, 1))
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


def _group_name(t: int, g: int, i: int, j: int) -> str:
    return f"step{t}:group{g}:C{i + 1}{j + 1}/c"


def network_group_covariances(d: int, rng: np.random.Generator) -> dict[str, float]:
    """One network trained by the two steps (the protocol of docs/THEORY.md §1/§12: rows of W0
    on the sphere, readout +-1 by halves, fresh batches of n0 = alpha0 d): after each step,
    d times each group's covariance of the bulk rows on the target coordinates over its bulk
    variance c (measured on the other d - k coordinates)."""
    from asymptotics.coefficients.functions import get_function
    from asymptotics.coefficients.targets import target_callable

    sig = get_function(GROUPS_KW["sigma"])
    g, k = target_callable(GROUPS_KW["target"])
    p, n0 = 4 * d, int(GROUPS_KW["alpha0"] * d)
    W = rng.standard_normal((p, d))
    W /= np.linalg.norm(W, axis=1, keepdims=True)
    eps = np.repeat([1.0, -1.0], p // 2)
    out = {}
    for t, eta in enumerate(GROUPS_KW["eta"], start=1):
        X = rng.standard_normal((n0, d))
        act, dact = sig.value_and_derivative(X @ W.T)
        e = g(X[:, :k]) - act @ eps / p
        W = W + (eta / n0) * ((e[:, None] * dact) * eps[None, :]).T @ X
        for gi, val in enumerate((1.0, -1.0)):
            B = W[eps == val] - W[eps == val].mean(axis=0)
            c = np.mean(np.sum(B[:, k:] ** 2, axis=1)) * d / (d - k)
            C = np.cov(B[:, :k].T * np.sqrt(d)) / c
            out.update({_group_name(t, gi, i, j): float(C[i, j]) for i, j in GROUP_ENTRIES})
    return out


def network_group_theory() -> dict[str, float]:
    """The groups' covariances over c of :func:`asymptotics.network.groups.network_groups`."""
    from asymptotics.network.groups import network_groups

    kw = dict(GROUPS_KW)
    ng = network_groups(kw.pop("sigma"), kw.pop("target"), steps=2, **kw)
    return {_group_name(t, gi, i, j): float(ng.cov[t][gi][i, j] / ng.states[t].c[gi])
            for t in (1, 2) for gi in (0, 1) for i, j in GROUP_ENTRIES}


def network_risk_draw(d: int, rng: np.random.Generator) -> dict[str, float]:
    """One trained network at d = p: its test error at :data:`ALPHA` and the semi-empirical
    theory's of its first layer."""
    import asymptotics as A
    from asymptotics.coefficients.functions import get_function
    from validation.protocol.simulator import Setting, first_layer, simulate_grid_once

    f = get_function(KW["sigma"])
    st = Setting(model="network", alpha=ALPHA, d=d, estimator="cv", **KW)
    ch = np.random.SeedSequence(int(rng.integers(2**63)))
    W1, theta, _ = first_layer(st, ch, f, f)
    semi = float(A.risk(ALPHA, **KW, measure=A.from_weights(W1, None, theta)).risk)
    net = float(simulate_grid_once(st, [ALPHA], [KW["lam"]], ch)[0, 0])
    return {"net_risk": net, "semi_risk": semi, "semi_minus_net": semi - net}


def sphere_frame(rng: np.random.Generator, p: int, d: int
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(W0, a, b)``, drawn in that order: W0 (p x d) with rows uniform on the unit sphere, a a
    uniform unit vector, b a unit vector orthogonal to a."""
    W0 = rng.standard_normal((p, d))
    W0 /= np.linalg.norm(W0, axis=1, keepdims=True)
    a = rng.standard_normal(d)
    a /= np.linalg.norm(a)
    b = rng.standard_normal(d)
    b -= (b @ a) * a
    b /= np.linalg.norm(b)
    return W0, a, b


def srf_weights(rng: np.random.Generator, d: int, p: int, r: float, c: float, gamma: float):
    """``(W, v, theta)``: W = sqrt(c) W0 + r 1 v^T, W0 rows on the sphere, <v, theta> = gamma."""
    W0, theta, t = sphere_frame(rng, p, d)
    v = gamma * theta + math.sqrt(1 - gamma * gamma) * t
    return math.sqrt(c) * W0 + r * v[None, :], v, theta


def channel_draw(s: ChannelSetting, d: int, rng: np.random.Generator) -> dict[str, float]:
    """The quantities of one draw at d = p."""
    import asymptotics as A

    if s.kind == "gmp_bulk":
        return gmp_deviations(d, rng)
    if s.kind == "network_groups":
        return network_group_covariances(d, rng)
    if s.kind == "network_risk":
        return network_risk_draw(d, rng)
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

    if s.kind == "network_groups":
        return network_group_theory()
    if s.kind == "network_risk":
        th = float(A.risk(ALPHA, **KW, model="network").risk)
        return {"net_risk": th, "semi_risk": th, "semi_minus_net": 0.0}
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
