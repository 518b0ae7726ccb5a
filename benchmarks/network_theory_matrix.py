"""Network half of the stored d = 2000 matrix against the sRF theory and the network theory.

Reads the per-repetition risks of validation/data/matrix_runs.csv (model = network), groups them
by setting and point (all repetitions pooled: mean, s.e. = sd/sqrt(n)), and compares with
``risk(..., model="srf")`` and ``risk(..., model="network")`` (docs/DERIVATIONS.md §7), each at
p = infinity and at the simulated width p = beta d (``p=``, docs/DERIVATIONS.md §8). Prints
the share of points within 3 s.e., the median and max |relative gap|, per model and per alpha0,
the worst points, and the cost of a theory point.
"network" is the default network theory (population measure, deterministic unless a device
option is given), "rank-one" the earlier MP bulk with rank-one channels (both with the
bulk-variance channel of asymptotics/step/row_channel.py, which model="network" adds to any theory
measure); the mean time of the first row of a measure includes building it.
At finite p the network theory includes by default the mean-row correction of
docs/DERIVATIONS.md §8 (the network's initial output in the step's residual);
"network p=bd, omega=1" (``--no-common-row``) is the network theory without it
(``common_row=1.0``).
Run: python -m benchmarks.network_theory_matrix [--d 2000] [--exclude relu/he2] [--with-rest]
[--pop-mp-bulk] [--pop-size N --pop-batches B --pop-seed 0 --pop-iid] [--no-common-row]
[--network-only]
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
    ap.add_argument("--pop-size", type=int, default=None,
                    help="device size of the network measure (default: population_measure's)")
    ap.add_argument("--pop-batches", type=int, default=None, help="its device batches")
    ap.add_argument("--pop-seed", type=int, default=0, help="its device seed")
    ap.add_argument("--pop-iid", action="store_true",
                    help="i.i.d. theta*.x in the device (population_measure(stratify=False))")
    ap.add_argument("--pop-mp-bulk", action="store_true",
                    help="also the population channels with an MP(c) bulk")
    ap.add_argument("--no-common-row", action="store_true",
                    help="also the network theory at p = beta d without the mean-row "
                         "correction (common_row=1.0; docs/DERIVATIONS.md §8, the network's "
                         "initial output)")
    ap.add_argument("--network-only", action="store_true",
                    help="only the network theories (population measure)")
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
    # (label, model, finite width?, measure: "" default / "rank1" / "rest" / "pop" / "popmp");
    # "network" is the default network theory (population_measure), "rank-one" the MP bulk with
    # the step's rank-one channels (network_measure)
    theories = [("srf", "srf", False, ""), ("srf p=bd", "srf", True, ""),
                ("rank-one", "network", False, "rank1"),
                ("rank-one p=bd", "network", True, "rank1")]
    if args.with_rest:
        theories += [("rank-one+rest p=bd", "network", True, "rest")]
    if args.pop_mp_bulk:
        theories += [("pop, MP bulk p=bd", "network", True, "popmp")]
    if args.network_only:
        theories = []
    theories += [("network", "network", False, "pop"), ("network p=bd", "network", True, "pop")]
    if args.no_common_row:
        theories += [("network p=bd, omega=1", "network", True, "pop+row")]
    models = [t[0] for t in theories]
    for label, model, finite, rest in theories:
        vals, t = {}, 0.0
        for (sg, tg, beta, a0, eta, lam), sub in agg.groupby(
                ["sigma", "target", "beta", "alpha0", "eta", "lam"]):
            alphas = sorted(sub["alpha"].unique())
            t0 = time.perf_counter()
            extra = {}
            if rest == "rank1":
                from asymptotics.measures.population import network_measure
                extra = dict(measure=network_measure(sg, tg, alpha0=a0, eta=eta, beta=beta))
            elif rest == "rest":
                from asymptotics.measures.population import network_measure
                extra = dict(measure=network_measure(sg, tg, alpha0=a0, eta=eta, beta=beta,
                                                     with_rest=True))
            elif rest in ("pop", "popmp", "pop+row"):
                from asymptotics.measures.population import population_measure
                extra = dict(measure=population_measure(
                    sg, tg, alpha0=a0, eta=eta, beta=beta, size=args.pop_size,
                    batches=args.pop_batches, seed=args.pop_seed, mp_bulk=rest == "popmp",
                    stratify=not args.pop_iid))
                if rest == "pop+row":
                    extra["common_row"] = 1.0
            df = A.risk_curve(alphas, sigma=sg, target=tg, alpha0=a0, eta=eta, lam=lam,
                              beta=beta, model=model, progress=False,
                              p=beta * args.d if finite else None, **extra)
            t += time.perf_counter() - t0
            for a, r, ok in zip(df["alpha"], df["risk"], df["converged"], strict=True):
                vals[(sg, tg, beta, a0, eta, lam, a)] = r if ok else math.nan
        cost[label] = t / len(agg)
        agg[label] = [vals[(r.sigma, r.target, r.beta, r.alpha0, r.eta, r.lam, r.alpha)]
                      for r in agg.itertuples()]
        agg[f"z_{label}"] = (agg["sim"] - agg[label]) / agg["se"]
        agg[f"gap_{label}"] = (agg["sim"] - agg[label]) / agg[label]
    print(f"network repetitions at d = {args.d} ({args.exclude} excluded): {len(agg)} points, "
          f"median {int(agg['n'].median())} repetitions, median s.e. {agg['se'].median():.2e}; "
          f"p = bd: the theory at the simulated width p = beta d (docs/DERIVATIONS.md §8)")
    print("| theory | points | share |z| <= 3 | median |rel gap| | max |rel gap| | "
          "mean time per point |")
    print("|---|---|---|---|---|---|")
    for model in models:
        z, gap = agg[f"z_{model}"], agg[f"gap_{model}"]
        print(f"| {model} | {int(z.notna().sum())} | {(z.abs() <= 3).mean():.1%} | "
              f"{gap.abs().median():.2%} | {gap.abs().max():.2%} | "
              f"{cost[model] * 1e3:.2f} ms |")
    print("\nby alpha0: share |z| <= 3, median |gap|, max |gap|")
    for a0, sub in agg.groupby("alpha0"):
        for model in models:
            z, gap = sub[f"z_{model}"], sub[f"gap_{model}"]
            print(f"  alpha0 = {a0:g} {model:18s}: {(z.abs() <= 3).mean():.1%}, "
                  f"{gap.abs().median():.2%}, {gap.abs().max():.2%}")
    last = models[-1]
    print(f"\nper setting: share |z|<=3, median gap (signed); max |gap| of {last}")
    for key, sub in agg.groupby("key"):
        line = f"  {key:40s}"
        for model in models:
            line += (f" | {model} {(sub[f'z_{model}'].abs() <= 3).mean():4.0%} "
                     f"{sub[f'gap_{model}'].median():+.2%}")
        print(line + f" max {sub[f'gap_{last}'].abs().max():.2%}")
    worst = agg.reindex(agg[f"gap_{last}"].abs().sort_values(ascending=False).index).head(12)
    print(f"\nworst points ({last}):")
    for r in worst.itertuples():
        print(f"  {r.key:40s} alpha={r.alpha:g} lam={r.lam:g} sim={r.sim:.4f}+-{r.se:.4f} "
              f"theory={agg.loc[r.Index, last]:.4f} gap={agg.loc[r.Index, 'gap_' + last]:+.2%}")

if __name__ == "__main__":
    main()
