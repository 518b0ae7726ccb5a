"""Network half of the stored d = 2000 matrix against the sRF theory and the network theory.

Reads the per-repetition risks of validation/data/matrix_runs.csv (model = network), groups them
by setting and point (all repetitions pooled: mean, s.e. = sd/sqrt(n)), and compares with
``risk(..., model="srf")`` and ``risk(..., model="network")`` (docs/DERIVATIONS.md §7). Prints
the share of points within 3 s.e., the median and max |relative gap|, per model and per alpha0,
the worst points, and the cost of a theory point.
Run: python benchmarks/network_theory_matrix.py [--d 2000] [--exclude relu/he2]
"""

from __future__ import annotations

import argparse
import math
import time
from pathlib import Path

import numpy as np
import pandas as pd

import asymptotics as A

STORE = Path(__file__).resolve().parents[1] / "validation" / "data" / "matrix_runs.csv"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--d", type=int, default=2000)
    ap.add_argument("--exclude", default="relu/he2", help="sigma/target pairs to leave out")
    ap.add_argument("--first-reps", type=int, default=0, help="only repetitions < this (0: all)")
    ap.add_argument("--with-rest", action="store_true",
                    help="also the variant with the rest directions (network_measure(with_rest))")
    args = ap.parse_args()
    store = pd.read_csv(STORE)
    net = store[(store["model"] == "network") & (store["d"] == args.d)]
    if args.first_reps:
        net = net[net["rep"] < args.first_reps]
    pair = net["sigma"] + "/" + net["target"]
    net = net[~pair.isin(args.exclude.split(","))]
    keys = ["key", "sigma", "target", "beta", "alpha0", "eta", "alpha", "lam"]
    agg = net.groupby(keys)["risk"].agg(sim="mean", sd=lambda v: v.std(ddof=1),
                                          n="count").reset_index()
    agg["se"] = agg["sd"] / np.sqrt(agg["n"])
    cost = {}
    models = ("srf", "network", "network+rest") if args.with_rest else ("srf", "network")
    for model in models:
        vals, t = {}, 0.0
        for (sg, tg, beta, a0, eta, lam), sub in agg.groupby(
                ["sigma", "target", "beta", "alpha0", "eta", "lam"]):
            alphas = sorted(sub["alpha"].unique())
            t0 = time.perf_counter()
            extra = {}
            if model == "network+rest":
                from asymptotics.network import network_measure
                extra = dict(measure=network_measure(sg, tg, alpha0=a0, eta=eta, beta=beta,
                                                     with_rest=True))
            df = A.risk_curve(alphas, sigma=sg, target=tg, alpha0=a0, eta=eta, lam=lam,
                              beta=beta, model=model.split("+")[0], progress=False, **extra)
            t += time.perf_counter() - t0
            for a, r, ok in zip(df["alpha"], df["risk"], df["converged"], strict=True):
                vals[(sg, tg, beta, a0, eta, lam, a)] = r if ok else math.nan
        cost[model] = t / len(agg)
        agg[model] = [vals[(r.sigma, r.target, r.beta, r.alpha0, r.eta, r.lam, r.alpha)]
                      for r in agg.itertuples()]
        agg[f"z_{model}"] = (agg["sim"] - agg[model]) / agg["se"]
        agg[f"gap_{model}"] = (agg["sim"] - agg[model]) / agg[model]
    print(f"network repetitions at d = {args.d} ({args.exclude} excluded): {len(agg)} points, "
          f"median {int(agg['n'].median())} repetitions, median s.e. {agg['se'].median():.2e}")
    print("| theory | points | share |z| <= 3 | median |rel gap| | max |rel gap| | "
          "mean time per point |")
    print("|---|---|---|---|---|---|")
    for model in models:
        z, gap = agg[f"z_{model}"], agg[f"gap_{model}"]
        print(f"| {model} | {int(z.notna().sum())} | {(z.abs() <= 3).mean():.1%} | "
              f"{gap.abs().median():.2%} | {gap.abs().max():.2%} | "
              f"{cost[model] * 1e3:.2f} ms |")
    print("\nby alpha0 (network theory): share |z| <= 3, median |gap|, max |gap|")
    for a0, sub in agg.groupby("alpha0"):
        for model in models:
            z, gap = sub[f"z_{model}"], sub[f"gap_{model}"]
            print(f"  alpha0 = {a0:g} {model:8s}: {(z.abs() <= 3).mean():.1%}, "
                  f"{gap.abs().median():.2%}, {gap.abs().max():.2%}")
    print("\nper setting (network theory): share |z|<=3, median gap (signed), max |gap|")
    for key, sub in agg.groupby("key"):
        print(f"  {key:40s} srf {(sub['z_srf'].abs() <= 3).mean():4.0%} "
              f"{sub['gap_srf'].median():+.2%} | network "
              f"{(sub['z_network'].abs() <= 3).mean():4.0%} {sub['gap_network'].median():+.2%}"
              f" max {sub['gap_network'].abs().max():.2%}"
              + (f" | +rest {(sub['z_network+rest'].abs() <= 3).mean():4.0%} "
                 f"{sub['gap_network+rest'].median():+.2%}" if args.with_rest else ""))


if __name__ == "__main__":
    main()
