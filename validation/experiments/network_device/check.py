"""``python -m validation.experiments.network_device.check --setting N1 --d 1000 --seed 1
--step 2 [--mc]`` (docs/DERIVATIONS.md §9.9): trains one network of a new setting of
NETWORK_STEPS.md (the protocol and seed ``1000 + seed`` of its ``diagnose``) and, along the way,
applies the device's map of DERIVATIONS.md §9.7 to the network itself: in all d directions, at
its own batches, residuals, group means and bulk variances (``C_full``). Prints the device's
and ``C_full``'s coupling quantities on ``[V, T]`` (the explained covariance ``a Sig a^T``,
``a a^T``, ``a Sig^2 a^T``, ``tr Sig^2 / n``) and the risks: the coupled theory on the device and
on ``C_full``, the semi-empirical theory of the trained layer and of Gaussian rows with
covariance ``C_full / d`` (and with ``--mc`` both layers' simulated ridge error)."""

from __future__ import annotations

import argparse
import math
import sys

import numpy as np

from asymptotics.coefficients.functions import get_function
from asymptotics.coefficients.gauss_rules import gauss_hermite
from asymptotics.coefficients.targets import target_callable
from asymptotics.multiindex.steps import group_params
from asymptotics.multiindex.xi_lines import xi_moments
from asymptotics.network.bulk import GroupBulk
from asymptotics.network.coupling import CoupledChannels
from asymptotics.network.device import coupled_device, network_coupled
from asymptotics.network.groups import model_channels, network_groups
from asymptotics.network.solve import risk_network_groups
from asymptotics.spiked.readouts import parse_readout
from validation.experiments.network_steps import (
    DIAG_ALPHAS,
    LAM,
    SETTINGS,
    diag_risk,
    initial_layer,
    measured_groups,
    semi_risk,
)


def trained_with_cfull(name: str, d: int, seed: int, step: int) -> tuple:
    """``(W, labels, C_full)`` after ``step`` steps of setting ``name`` (seed ``1000 + seed``)."""
    s = SETTINGS[name]
    sig = get_function(s["sigma"])
    g, k = target_callable(s["target"])
    rng = np.random.default_rng(1000 + seed)
    p, W, eps = initial_layer(s, d, rng)
    order = list(parse_readout(s["readout"]).values)
    labels = np.array([order.index(v) for v in eps])
    K, vals = len(order), np.array(order)
    n0 = int(round(s["alpha0"] * d))
    xi, wxi = gauss_hermite(96)
    C = np.repeat(np.eye(d)[None], K, axis=0)
    for eta in s["eta"][:step]:
        X = rng.standard_normal((n0, d))
        means = np.array([W[labels == j].mean(axis=0) for j in range(K)])
        B = W - means[labels]
        c = np.array([np.mean(np.sum(B[labels == j] ** 2, axis=1)) for j in range(K)])
        act, dact = sig.value_and_derivative(X @ W.T)
        e = g(X[:, :k]) - act @ eps / p
        _, _, m2, v = xi_moments(sig, c, X @ means.T, xi, wxi)
        for j in range(K):
            w = e * m2[:, j] / math.sqrt(c[j])
            u = e * e * np.maximum(v[:, j] - m2[:, j] ** 2, 0.0)
            L = np.eye(d) + eta * vals[j] * (X.T * w) @ X / n0
            C[j] = L @ C[j] @ L.T + d * (eta * vals[j] / n0) ** 2 * (X.T * u) @ X
        W = W + (eta / n0) * ((e[:, None] * dact) * eps[None, :]).T @ X
    return W, labels, C, rng


def coupling_of(C: np.ndarray, c: float, BE: np.ndarray, Up: np.ndarray) -> tuple:
    """``(Sig, a, explained, E block)`` of one group's covariance ``C`` (units of ``c``) on the
    model's ``[V, T]`` (``BE``) and the directions outside E (``Up``), as on a device block."""
    Ct = C / c
    Cp = Up.T @ Ct @ Up
    Cp = 0.5 * (Cp + Cp.T)
    A = (BE.T @ Ct @ Up) @ np.linalg.inv(Cp)
    kap = Cp.shape[0] / np.trace(Cp)
    sg, a = Cp * kap, A / math.sqrt(kap)
    return sg, a, a @ sg @ a.T, BE.T @ Ct @ BE


def _psd(x: np.ndarray) -> np.ndarray:
    ev, vec = np.linalg.eigh(0.5 * (x + x.T))
    return (vec * np.maximum(ev, 0.0)) @ vec.T


def check(name: str, d: int, seed: int, step: int, mc: bool = False) -> dict:
    """The quantities and risks of the module docstring (a dict of arrays and floats)."""
    s = SETTINGS[name]
    g, k = target_callable(s["target"])
    W, labels, C, rng = trained_with_cfull(name, d, seed, step)
    K = C.shape[0]
    st, _, E, B, means = measured_groups(W, labels, k)
    etas = s["eta"][:step]
    ng = network_groups(s["sigma"], s["target"], steps=step, alpha0=s["alpha0"], eta=etas,
                        readout=s["readout"])
    stT = ng.states[step]
    U_model, _, Q = stT.spiked_model()
    r = U_model.shape[1]
    uu, _, vt = np.linalg.svd(np.linalg.pinv(means) @ U_model, full_matrices=False)
    V = uu @ vt
    th = np.eye(d)[:, :k] @ Q
    T = th - V @ (V.T @ th)
    T /= np.linalg.norm(T, axis=0)
    BE = np.hstack([V, T])
    Up = np.linalg.svd(E, full_matrices=True)[0][:, E.shape[1]:]
    sig_ee = model_channels(stT, ng.cov[step])
    full = [coupling_of(C[j], st.c[j], BE, Up) for j in range(K)]
    dsig, da, _, _ = coupled_device(s["sigma"], s["target"], steps=step, alpha0=s["alpha0"],
                                    eta=etas, readout=s["readout"])
    out: dict = {"c_measured": st.c, "c_recursion": stT.c}
    for j in range(K):
        sg, a, ex, eb = full[j]
        pairs = list(zip(da[:, j], dsig[:, j], strict=True))
        out[f"g{j}"] = {
            "explained": (ex, np.mean([x @ y @ x.T for x, y in pairs], 0)),
            "aa": (a @ a.T, np.mean([x @ x.T for x in da[:, j]], 0)),
            "a_sig2_a": (a @ sg @ sg @ a.T,
                         np.mean([x @ y @ y @ x.T for x, y in pairs], 0)),
            "tr_sig2": (np.trace(sg @ sg) / sg.shape[0],
                        np.mean([np.trace(y @ y) / y.shape[0] for y in dsig[:, j]])),
            "e_block": (eb, sig_ee[j])}
    p = W.shape[0]
    kw = dict(sigma=s["sigma"], lam=LAM, beta=s["beta"], p=p)
    params = group_params(stT, s["target"], [float(np.mean(labels == j)) for j in range(K)])
    chan = model_channels(stT, ng.cov[step])
    cc = network_coupled(s["sigma"], s["target"], steps=step, alpha0=s["alpha0"], eta=etas,
                         readout=s["readout"])
    ccf = CoupledChannels(GroupBulk(np.array([[f[0] for f in full]])),
                          np.array([[f[1] for f in full]]),
                          np.array([_psd(sig_ee[j] - full[j][2]) for j in range(K)]), r, k)
    risks = {"theory_device": cc, "theory_cfull": ccf}
    out["risk"] = {lab: {a: risk_network_groups(a, channels=chan, coupled=c_, **kw,
                                                **params).risk for a in DIAG_ALPHAS}
                   for lab, c_ in risks.items()}
    out["risk"]["semi_trained"] = semi_risk(st, E, B, labels, s, k, rng)
    G = np.empty_like(B)
    for j in range(K):
        idx = np.flatnonzero(labels == j)
        G[idx] = rng.standard_normal((idx.size, d)) @ np.linalg.cholesky(
            C[j] + 1e-12 * np.eye(d)).T / math.sqrt(d)
    out["risk"]["semi_gauss_cfull"] = semi_risk(st, E, G, labels, s, k, rng)
    if mc:
        sig = get_function(s["sigma"])
        out["risk"]["mc_trained"] = diag_risk(W, sig, g, k, rng)
        out["risk"]["mc_gauss_cfull"] = diag_risk(means[labels] + G, sig, g, k, rng)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m validation.experiments.network_device.check",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("--setting", required=True, help="a setting name (N1..N8)")
    ap.add_argument("--d", type=int, default=1000, help="dimension (default 1000)")
    ap.add_argument("--seed", type=int, default=1, help="repetition (seed 1000 + this)")
    ap.add_argument("--step", type=int, required=True, help="the step to check")
    ap.add_argument("--mc", action="store_true", help="also simulate both layers' ridge error")
    args = ap.parse_args(argv)
    if args.setting not in SETTINGS:
        print(f"error: --setting must be one of {', '.join(SETTINGS)}, got {args.setting}",
              file=sys.stderr)
        return 2
    T = len(SETTINGS[args.setting]["eta"])
    if args.d < 10 or args.seed < 0 or not 1 <= args.step <= T:
        print(f"error: need --d >= 10, --seed >= 0 and --step in 1..{T}, got d={args.d}, "
              f"seed={args.seed}, step={args.step}", file=sys.stderr)
        return 2
    out = check(args.setting, args.d, args.seed, args.step, args.mc)
    np.set_printoptions(precision=3, suppress=True, linewidth=150)
    print(f"c measured {out['c_measured']}, recursion {out['c_recursion']}")
    for key, val in out.items():
        if key.startswith("g"):
            for q, (full, dev) in val.items():
                print(f"{key} {q}: C_full / device (E block: C_full / recursion)\n{full}\n{dev}")
    for lab, r in out["risk"].items():
        print(f"{lab}: " + ", ".join(f"alpha {a:g}: {v:.4f}" for a, v in r.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
