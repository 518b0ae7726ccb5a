"""Decomposition of the finite-d gap of tanh/tanh, beta = 0.5, alpha0 = 20, eta = 1 (the network
below its sRF surrogate by ~10%, 3%, 2% at d = 500, 1000, 2000; docs/DERIVATIONS.md §8, "The
network's initial output").

For each repetition, ONE first batch (the simulator's stream) and ONE W0, theta*; the first layers

- ``net``        the giant step of THEORY.md §1, residual ``y - f(x; a0, W0)`` (recomputed here and
                 checked against ``validation.protocol.simulator.first_layer``);
- ``net_nof``    the same step on the same batch with the residual ``y`` (the network's initial
                 output ``f = mean_k sigma(w_k . x)`` dropped);
- ``net_fix``    ``net`` with the mean row of W0 put back: ``W1 + eta mu1^2 1 wbar0^T``;
- ``srf``        ``sqrt(c) W0 + r 1 v^T`` (the simulator's sRF first layer, same W0, theta*);
- ``srf_shrunk`` ``srf`` with the component ``sqrt(c) 1 wbar0^T`` of its bulk scaled by
                 ``sqrt(omega)``, omega the predicted common-row ratio (asymptotics.step.srf:
                 ``common_row_ratio``);

then the ridge readouts of the (alpha, lam) grid of the matrix on the SAME ridge and test inputs
(paired). Printed: the per-repetition test errors, the paired differences, the measured mean-row
shrink ``s = (wbar1 . wbar0)/|wbar0|^2`` of the step's f-part, and the theories at p = beta d
(sRF, and with the common-row ratio omega).

``--semi`` adds the semi-empirical theory (``from_weights`` at p = beta d) of the net, srf and
srf_shrunk first layers, around the spike direction independent of W0 (sRF: v; network:
u_y/|u_y|), with omega = 1 and with the measured omega; ``--store`` compares the stored matrix
repetitions of the setting with the theories instead (no simulation, ~2 s).

Run: ``python -m benchmarks.finite_d_gap --d 500 --seeds 16 --semi`` (one core, every variant and
--semi: about 1.7 s per repetition at d = 500, 7 s at d = 1000, 28 s at d = 2000; with
``--variants net,srf,srf_shrunk`` 22 s at d = 2000 and 2 min at d = 4000).
"""

from __future__ import annotations

import argparse
import math
import time
from pathlib import Path

import numpy as np

import asymptotics as A
from asymptotics.coefficients.functions import get_function
from validation.protocol import montecarlo as mc
from validation.protocol.simulator import (
    STREAMS,
    Setting,
    chunk_rows,
    estimate_test_error,
    first_layer,
    fit_readouts,
)

STORE = Path(__file__).resolve().parents[1] / "validation" / "data" / "matrix_runs.csv"
ALPHAS = (0.2, 1.0, 2.5, 5.0)
LAMS = (0.01, 0.1)
VARIANTS = ("net", "net_nof", "net_fix", "srf", "srf_shrunk")


def own_step(W0, theta, sigma, target, setting: Setting, seed) -> tuple[np.ndarray, np.ndarray,
                                                                       dict]:
    """The step on the simulator's first batch, twice: with the residual y - f and with y.
    Returns (W1, W1_nof, {u_y, u_f}) with u_y = n0^-1 sum y_i x_i, u_f = n0^-1 sum f_i x_i."""
    children = mc.streams(seed, STREAMS)
    step = mc.BlockRows(children["step"], setting.d)
    noise = np.random.default_rng(children["step_noise"])
    p, d = W0.shape
    n0 = setting.n0
    G, Gn = np.zeros((p, d)), np.zeros((p, d))
    uy, uf = np.zeros(d), np.zeros(d)
    for X, y in mc.labelled(mc.batches(step, n0, d, chunk_rows(p, n0)), theta, target,
                            setting.delta, noise):
        Z = X @ W0.T
        val, der = sigma.value_and_derivative(Z)
        f = val.mean(axis=1)
        Gn += (der * y[:, None]).T @ X
        G += (der * (y - f)[:, None]).T @ X
        uy += y @ X
        uf += f @ X
    rate = setting.eta / n0
    return W0 + rate * G, W0 + rate * Gn, {"u_y": uy / n0, "u_f": uf / n0}


def store_gaps(args) -> None:
    """The stored repetitions of the matrix (validation/data/matrix_runs.csv) of this setting:
    per repetition, the relative gap to a theory averaged over its (alpha, lam) points; mean and
    s.e. over repetitions, per model and d."""
    import pandas as pd

    from validation.matrix.campaign import read_store

    store = read_store(STORE)
    sub = store[(store["sigma"] == args.sigma) & (store["target"] == args.target)
                & (store["beta"] == args.beta) & (store["alpha0"] == args.alpha0)
                & (store["eta"] == args.eta)]
    if sub.empty:
        raise SystemExit(f"no stored runs of {args.sigma}/{args.target} beta={args.beta} "
                         f"alpha0={args.alpha0} eta={args.eta}")
    kw = dict(sigma=args.sigma, target=args.target, alpha0=args.alpha0, eta=args.eta,
              beta=args.beta)
    theories = {"srf": [("sRF p=inf", dict()), ("sRF p=bd", dict(finite=True))],
                "network": [("network p=bd, omega=1",
                             dict(finite=True, model="network", common_row=1.0)),
                            ("network p=bd (+ common row)",
                             dict(finite=True, model="network", common_row="network"))]}
    print(f"stored repetitions of {args.sigma}/{args.target} beta={args.beta} "
          f"alpha0={args.alpha0} eta={args.eta}: mean relative gap (sim - theory)/theory over "
          f"the (alpha, lam) points of a repetition, mean +- s.e. over repetitions")
    for (model, d), runs in sub.groupby(["model", "d"]):
        p = args.beta * int(d)
        pts = runs[["alpha", "lam"]].drop_duplicates().itertuples(index=False)
        pts = list(pts)
        for label, spec in theories.get(model, []):
            spec = dict(spec)
            extra = dict(model=spec.pop("model", "srf"), common_row=spec.pop("common_row", None),
                         p=p if spec.pop("finite", False) else None)
            th = {(a, lam): A.risk(a, lam=lam, **extra, **kw).risk for a, lam in pts}
            rel = runs.apply(lambda r, th=th: r["risk"] / th[(r["alpha"], r["lam"])] - 1, axis=1)
            per = pd.Series(rel.to_numpy(), index=runs.index).groupby(
                [runs["seed_root"], runs["rep"]]).mean()
            se = per.std(ddof=1) / math.sqrt(per.size)
            print(f"  {model:8s} d={int(d):5d} ({per.size:3d} reps)  {label:28s} "
                  f"{100 * per.mean():+6.2f}% +- {100 * se:.2f}%")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sigma", default="tanh")
    ap.add_argument("--target", default="tanh")
    ap.add_argument("--beta", type=float, default=0.5)
    ap.add_argument("--alpha0", type=float, default=20.0)
    ap.add_argument("--eta", type=float, default=1.0)
    ap.add_argument("--d", type=int, default=500)
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--n-test", type=int, default=20000)
    ap.add_argument("--variants", default=",".join(VARIANTS))
    ap.add_argument("--semi", action="store_true",
                    help="also the semi-empirical theory (from_weights at p = beta d) of the net, "
                         "srf and srf_shrunk first layers, with omega = 1 and the measured omega")
    ap.add_argument("--store", action="store_true",
                    help="instead: the stored matrix repetitions of the setting against the "
                         "theories (no simulation)")
    args = ap.parse_args(argv)
    if args.store:
        store_gaps(args)
        return
    variants = args.variants.split(",")
    sig, tgt = get_function(args.sigma), get_function(args.target)
    base = dict(sigma=args.sigma, target=args.target, alpha=1.0, alpha0=args.alpha0,
                eta=args.eta, lam=0.01, beta=args.beta, d=args.d)
    kw = dict(sigma=args.sigma, target=args.target, alpha0=args.alpha0, eta=args.eta,
              beta=args.beta)
    st = Setting(model="network", **base)
    p = st.p
    sp = A.srf_mapping(args.sigma, args.target, alpha0=args.alpha0, eta=args.eta)
    ge = A.ge_coefficients(args.sigma, args.target)
    shrink = 1.0 - args.eta * ge.mu1 ** 2 / sp.scale
    omega = A.common_row_ratio(args.sigma, args.target, alpha0=args.alpha0, eta=args.eta)
    print(f"{args.sigma}/{args.target} beta={args.beta} alpha0={args.alpha0} eta={args.eta} "
          f"d={args.d} p={p}: predicted shrink s = 1 - eta mu1^2 = {shrink:.4f}, "
          f"common-row ratio omega = {omega:.4f}")
    theory = {}
    for a in ALPHAS:
        for lam in LAMS:
            theory[("srf_p", a, lam)] = A.risk(a, lam=lam, p=p, model="srf", **kw).risk
            theory[("srf_p_omega", a, lam)] = A.risk(a, lam=lam, p=p, common_row=omega,
                                                     model="srf", **kw).risk
            theory[("net_p", a, lam)] = A.risk(a, lam=lam, p=p, model="network",
                                               common_row=1.0, **kw).risk
            theory[("net_p_omega", a, lam)] = A.risk(a, lam=lam, p=p, model="network",
                                                     common_row=omega, **kw).risk
    ns = [int(round(a * args.d)) for a in ALPHAS]
    rows = []
    for i in range(args.seeds):
        t0 = time.perf_counter()
        def seed(i=i):  # repetition i of the simulator's seeding (spawn is stateful: anew)
            return np.random.SeedSequence(args.seed).spawn(args.seeds)[i]

        W1s, theta, _ = first_layer(Setting(model="srf", **base), seed(), sig, tgt)
        children = mc.streams(seed(), STREAMS)
        W0 = mc.sphere_rows(mc.BlockRows(children["weights"], args.d), p, args.d)
        W1, W1n, us = own_step(W0, theta, sig, tgt, st, seed())
        if args.d <= 1000:  # the recomputed step is the simulator's (it costs one more step)
            W1ref, theta_ref, _ = first_layer(st, seed(), sig, tgt)
            assert np.allclose(theta, theta_ref)
            err = float(np.abs(W1 - W1ref).max())
            assert err < 1e-9, f"own step differs from the simulator's by {err:g}"
        wbar0 = W0.mean(axis=0)
        out = {"seed": i}
        out["s_meas"] = float((W1 - W1n).mean(axis=0) @ wbar0 / (wbar0 @ wbar0)) + 1.0
        out["p|u_f - mu1 wbar0|^2"] = float(p * np.sum((us["u_f"] - ge.mu1 * wbar0) ** 2))
        layers = {"net": W1, "net_nof": W1n,
                  "net_fix": W1 + args.eta * ge.mu1 ** 2 * np.outer(np.ones(p), wbar0),
                  "srf": W1s,
                  "srf_shrunk": W1s - (1.0 - math.sqrt(omega)) * math.sqrt(sp.c)
                  * np.outer(np.ones(p), wbar0)}
        # the spike direction independent of W0: the sRF's v, the network's u_y/|u_y| (the
        # label part of the step's m1 row); the measured omega = p |Pi wbar|^2 / c around it
        vs = {"srf": W1s.mean(axis=0) - math.sqrt(sp.c) * wbar0,
              "net": us["u_y"].copy()}
        vs["srf_shrunk"] = vs["srf"]
        for name, v in vs.items():
            if name not in variants:
                continue
            v = v / np.linalg.norm(v)
            W = layers[name]
            wb = W.mean(axis=0)
            wb -= (wb @ v) * v
            WP = W - np.outer(W @ v, v)
            c_w = float(np.einsum("ij,ij->", WP, WP) / p)
            out[f"{name}:omega"] = float(p * (wb @ wb) / c_w)
            out[f"{name}:gamma"] = float(v @ theta)
            if args.semi:
                meas = A.from_weights(W, v, theta)
                for a in ALPHAS:
                    for lam in LAMS:
                        for tag, om in (("semi", None), ("semi_om", out[f"{name}:omega"])):
                            out[(f"{name}_{tag}", a, lam)] = A.risk(
                                a, lam=lam, p=p, measure=meas, common_row=om, **kw).risk
        for name in variants:
            W = layers[name]
            Ar = fit_readouts(W, theta, sig, tgt, ns=ns, lams=LAMS, delta=0.0,
                              rng=np.random.default_rng([args.seed, i, 11]),
                              noise_rng=np.random.default_rng([args.seed, i, 12]))
            err = estimate_test_error(W, Ar.reshape(p, -1), theta, sig, tgt, n_test=args.n_test,
                                      rng=np.random.default_rng([args.seed, i, 13]))
            for j, (a, lam) in enumerate((a, lam) for a in ALPHAS for lam in LAMS):
                out[(name, a, lam)] = float(err[j])
        out["sec"] = time.perf_counter() - t0
        rows.append(out)
        oms = ", ".join(f"omega[{k}] {out[k + ':omega']:.4f}" for k in vs if k + ":omega" in out)
        print(f"rep {i}: s_meas {out['s_meas']:.4f}, p|u_f - mu1 wbar0|^2 "
              f"{out['p|u_f - mu1 wbar0|^2']:.4f}, {oms}, {out['sec']:.1f} s", flush=True)

    def mse(key):
        x = np.array([r[key] for r in rows])
        return x.mean(), (x.std(ddof=1) / math.sqrt(x.size) if x.size > 1 else math.nan)

    print(f"\nmeasured shrink s: {mse('s_meas')[0]:.4f} +- {mse('s_meas')[1]:.4f} "
          f"(predicted {shrink:.4f}); p|u_f - mu1 wbar0|^2 {mse('p|u_f - mu1 wbar0|^2')[0]:.4f}"
          f" (predicted (mu1^2 + mu_star^2) / alpha0 = "
          f"{(ge.mu1 ** 2 + ge.mu_star ** 2) / args.alpha0:.4f})")
    for k in ("net", "srf", "srf_shrunk"):
        if f"{k}:omega" in rows[0]:
            m, se = mse(f"{k}:omega")
            g, gse = mse(f"{k}:gamma")
            print(f"{k}: measured omega {m:.4f} +- {se:.4f}, gamma = <v, theta*> {g:.5f} +- "
                  f"{gse:.5f}")
    print(f"\n{'alpha':>5} {'lam':>5} " + " ".join(f"{v:>16}" for v in variants)
          + "   srf_p  srf_p_om  net_p  net_p_om")
    rel = {k: [] for k in ("net-srf", "net_nof-srf", "net_fix-srf", "net-srf_shrunk",
                           "srf/srf_p", "net/net_p", "net/net_p_om", "srf_shrunk/srf_p_om",
                           "srf-srf_semi", "srf-srf_semi_om", "net-net_semi", "net-net_semi_om",
                           "srf_shrunk-srf_shrunk_semi", "srf_shrunk-srf_shrunk_semi_om")}
    have = set(variants) | {k[0] for k in rows[0] if isinstance(k, tuple)}
    for a in ALPHAS:
        for lam in LAMS:
            cells = []
            for name in variants:
                m, se = mse((name, a, lam))
                cells.append(f"{m:.5f}+-{se:.5f}")
            th = [theory[(k, a, lam)] for k in ("srf_p", "srf_p_omega", "net_p", "net_p_omega")]
            print(f"{a:5g} {lam:5g} " + " ".join(f"{c:>16}" for c in cells) + "  "
                  + " ".join(f"{t:.5f}" for t in th))
            for key in rel:
                x, y = key.split("/") if "/" in key else key.split("-")
                if "/" in key:
                    tkey = {"srf_p": "srf_p", "net_p": "net_p", "net_p_om": "net_p_omega",
                            "srf_p_om": "srf_p_omega"}[y]
                    if x in variants:
                        rel[key].append(np.array([r[(x, a, lam)] for r in rows])
                                        / theory[(tkey, a, lam)] - 1)
                elif x in have and y in have:
                    rel[key].append(np.array([r[(x, a, lam)] / r[(y, a, lam)] - 1
                                              for r in rows]))
    print("\nrelative differences averaged over the 8 (alpha, lam) points, mean +- s.e. over "
          "repetitions (paired where both are simulations):")
    for key, vals in rel.items():
        if vals:
            x = np.mean(np.array(vals), axis=0)  # per repetition
            se = x.std(ddof=1) / math.sqrt(x.size) if x.size > 1 else math.nan
            print(f"  {key:<22} {100 * x.mean():+7.2f}% +- {100 * se:.2f}%")


if __name__ == "__main__":
    main()
