"""NETWORK_STEPS.md: the network theory of K groups (``model="network"``, docs/THEORY.md §15) and
the K-group sRF surrogate (``model="srf"``, §11-§12) against the trained network, on the
committed Monte Carlo of several steps and of readouts and on the new settings of
:mod:`validation.experiments.network_steps` (``python -m validation.experiments.network_steps_report
[--quiet]``). Both theories at the simulated width ``p = beta d`` (§10.6, DERIVATIONS.md §8).
The theory values are cached per point in ``network_steps_points_theory.csv`` (only missing
points are computed): delete that file after any change of either theory. Both that cache and
the points table ``network_steps_points.csv`` are derived tables, written whole (atomically)."""

from __future__ import annotations

import argparse
import math
import os
import pathlib
import sys
from functools import lru_cache

import numpy as np
import pandas as pd

import asymptotics
from asymptotics.multiindex.steps import steps_mapping
from asymptotics.multiindex.steps_risk import risk_steps
from asymptotics.network.route import network_problem, one_step_equivalent, risk_network
from asymptotics.spiked.readouts import risk_readout
from validation.experiments.network_steps import (
    LAM,
    PLAN,
    REPORTS,
    RIDGE_ALPHAS,
    RUNS,
    SETTINGS,
    readout_text,
)
from validation.multistep.theory import summarize

STEPS_RUNS = REPORTS / "data" / "multistep_risk.csv"
READOUT_RUNS = REPORTS / "data" / "readouts_runs.csv"
OUT = REPORTS / "NETWORK_STEPS.md"
THEORY_CSV = REPORTS / "data" / "network_steps_points.csv"
THEORY_CACHE = REPORTS / "data" / "network_steps_points_theory.csv"


def _readout(text: str):
    if text in ("hypercube", "pm1"):
        return "pm1"
    if text == "constant":
        return "constant"
    inner = text.strip("{}")
    table = {float(a): float(b) for a, b in (kv.split(":") for kv in inner.split(","))}
    total = sum(table.values())  # the CSV keeps 6 digits of the weights
    return {v: w / total for v, w in table.items()}


@lru_cache(maxsize=64)
def _problems(sigma, target, readout_key, alpha0, eta, steps):
    ro = _readout(readout_key)
    etas = tuple(float(e) for e in eta.split(","))
    srf = steps_mapping(sigma, target, steps=steps, alpha0=alpha0, eta=etas, readout=ro)
    net = None
    if one_step_equivalent(sigma, ro, steps) is None or "z2" in target:
        net = {t: network_problem(sigma=sigma, target=target, steps=t, alpha0=alpha0,
                                  eta=etas[:t], readout=ro) for t in range(1, steps + 1)}
    return srf, net


def _theories(sigma, target, readout_key, alpha0, eta, step, alpha, beta, lam, p):
    etas = tuple(float(e) for e in eta.split(","))
    steps = len(etas)
    srf_map, net = _problems(sigma, target, readout_key, alpha0, eta, steps)
    ro = _readout(readout_key)
    kw = dict(sigma=sigma, lam=lam, beta=beta, p=p)
    if step == 1 and "z2" not in target:
        one = target.replace("z1", "z")  # the one-step routes name a single index z
        s = risk_readout(alpha, readout=ro, target=one, alpha0=alpha0, eta=etas[0], **kw)
    else:
        s = risk_steps(alpha, steps=step, target=target, alpha0=alpha0, eta=etas[:step],
                       readout=ro, mapping=srf_map, **kw)
    if net is None:
        n = asymptotics.risk(alpha, steps=1, readout=ro, target=target.replace("z1", "z"),
                             alpha0=alpha0, eta=etas[0], model="network", **kw)
    else:
        n = risk_network(alpha, steps=step, readout=ro, target=target, alpha0=alpha0,
                         eta=etas[:step], problem=net[step], **kw)
    return _value(s), _value(n)


def _value(res) -> float:
    return res.risk if res.converged else math.nan


THEORY_KEYS = ("sigma", "target", "readout", "alpha0", "eta", "step", "alpha", "beta", "lam",
               "d")


def _key_frame(df: pd.DataFrame) -> pd.DataFrame:
    out = df[list(THEORY_KEYS)].copy()
    for c in ("sigma", "target", "readout", "eta"):
        out[c] = out[c].astype(str)
    for c in ("alpha0", "alpha", "beta", "lam"):
        out[c] = out[c].astype(float)
    out["step"] = out["step"].astype(int)
    out["d"] = out["d"].astype(int)
    return out.drop_duplicates().reset_index(drop=True)


def planned_new_points() -> pd.DataFrame:
    """The theory keys of every planned point of the new settings (PLAN x steps x alpha)."""
    rows = []
    for d, _, names in PLAN:
        for name in names:
            s = SETTINGS[name]
            for t in range(1, len(s["eta"]) + 1):
                for a in RIDGE_ALPHAS:
                    rows.append(dict(sigma=s["sigma"], target=s["target"],
                                     readout=readout_text(s["readout"]), alpha0=s["alpha0"],
                                     eta=",".join(f"{x:g}" for x in s["eta"]), step=t, alpha=a,
                                     beta=s["beta"], lam=LAM, d=d))
    return _key_frame(pd.DataFrame(rows))


def theory_table(keys: pd.DataFrame, progress: bool = True) -> pd.DataFrame:
    """Both theories at every key (cached in ``network_steps_points_theory.csv``: only the keys
    it lacks are computed)."""
    keys = _key_frame(keys)
    cache = None
    if THEORY_CACHE.exists():
        raw = pd.read_csv(THEORY_CACHE)
        cache = _key_frame(raw.assign(_i=range(len(raw))).drop_duplicates(
            list(THEORY_KEYS), keep="last"))
        last = raw.drop_duplicates(list(THEORY_KEYS), keep="last").reset_index(drop=True)
        cache = cache.assign(network=last["network"].to_numpy(), srf=last["srf"].to_numpy())
    if cache is not None:  # a NaN (no converged theory) is an answer too: not recomputed
        have = keys.merge(cache.assign(_in=True), on=list(THEORY_KEYS), how="left")
        todo = have[have["_in"].isna()][list(THEORY_KEYS)]
    else:
        todo = keys
    rows = []
    for i, r in enumerate(todo.itertuples(index=False)):
        s, n = _theories(r.sigma, r.target, r.readout, r.alpha0, r.eta, r.step, r.alpha,
                         r.beta, r.lam, r.beta * r.d)
        rows.append({**r._asdict(), "network": n, "srf": s})
        if progress:
            print(f"  theory {i + 1}/{len(todo)}: {r.sigma} {r.target} {r.readout} d={r.d} "
                  f"t={r.step} alpha={r.alpha:g}: network {n:.4f}, srf {s:.4f}", flush=True)
        if len(rows) % 10 == 0 or i == len(todo) - 1:  # save as we go
            new = pd.DataFrame(rows)
            full = new if cache is None else pd.concat([cache, new], ignore_index=True)
            _write_whole(full, THEORY_CACHE)
    if rows:
        new = pd.DataFrame(rows)
        cache = new if cache is None else pd.concat([cache, new], ignore_index=True)
    return keys.merge(cache, on=list(THEORY_KEYS), how="left")


def points(progress: bool = True) -> pd.DataFrame:
    """Every (protocol, setting, d, step, alpha) with the Monte Carlo mean, its s.e. and both
    theories."""
    frames = []
    st = summarize(pd.read_csv(STEPS_RUNS))
    st = st[st.step >= 1].assign(protocol="steps (STEPS.md)")
    frames.append(st.rename(columns={"ridge_alpha": "alpha"}))
    ro = pd.read_csv(READOUT_RUNS)
    ro = ro[ro.model == "network"]
    g = ro.groupby(["name", "readout", "sigma", "target", "eta", "alpha0", "lam", "beta", "d",
                    "alpha"])["risk"].agg(["mean", "std", "count"]).reset_index()
    g["se"] = g["std"] / np.sqrt(g["count"])
    g = g.rename(columns={"name": "setting"}).assign(protocol="readouts (READOUTS.md)", step=1)
    g["eta"] = g["eta"].astype(str)
    frames.append(g)
    if RUNS.exists():
        nw = pd.read_csv(RUNS)
        h = nw.groupby(["setting", "sigma", "target", "readout", "eta", "alpha0", "lam", "beta",
                        "d", "step", "ridge_alpha"])["test_error_cv"].agg(
            ["mean", "std", "count"]).reset_index()
        h["se"] = h["std"] / np.sqrt(h["count"])
        frames.append(h.rename(columns={"ridge_alpha": "alpha"}).assign(protocol="new settings"))
    cols = ["protocol", "setting", "sigma", "target", "readout", "alpha0", "eta", "beta", "lam",
            "d", "step", "alpha", "count", "mean", "se"]
    pts = pd.concat([f[cols] for f in frames], ignore_index=True)
    pts = pts[pts["count"] >= 2].reset_index(drop=True)  # a single repetition has no s.e.
    th = theory_table(pts, progress=progress)
    pts = pts.merge(th, on=list(THEORY_KEYS), how="left")
    for m in ("network", "srf"):
        pts[f"z_{m}"] = (pts["mean"] - pts[m]) / pts["se"]
        pts[f"gap_{m}"] = (pts[m] - pts["mean"]) / pts["mean"]
    return pts


def _committed_keys() -> pd.DataFrame:
    st = summarize(pd.read_csv(STEPS_RUNS))
    st = st[st.step >= 1].rename(columns={"ridge_alpha": "alpha"})
    ro = pd.read_csv(READOUT_RUNS)
    ro = ro[ro.model == "network"].assign(step=1)
    ro["eta"] = ro["eta"].astype(str)
    return pd.concat([_key_frame(st), _key_frame(ro)], ignore_index=True)


def _summary(pts: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    rows = []
    for key, sub in pts.groupby(by, sort=False):
        key = key if isinstance(key, tuple) else (key,)
        row = dict(zip(by, key, strict=True))
        row["points"] = len(sub)
        for m in ("network", "srf"):
            ok = int(np.sum(np.abs(sub[f"z_{m}"]) <= 3.0))
            row[f"{m} within 3 s.e."] = f"{ok}/{len(sub)}"
            gap = np.abs(sub[f"gap_{m}"])
            row[f"{m} median/max gap"] = f"{100 * gap.median():.1f}% / {100 * gap.max():.1f}%"
        rows.append(row)
    return pd.DataFrame(rows)


def _trend(pts: pd.DataFrame) -> str:
    """The median |gap| of each theory at each d, over the settings simulated at both."""
    both = [k for k, sub in pts.groupby(["protocol", "setting"]) if sub.d.nunique() > 1]
    sub = pts[[(r.protocol, r.setting) in both for r in pts.itertuples()]]
    parts = []
    for d, g in sub.groupby("d"):
        parts.append(f"d = {d}: network {100 * np.abs(g.gap_network).median():.1f}%, "
                     f"surrogate {100 * np.abs(g.gap_srf).median():.1f}% "
                     f"({len(g)} points)")
    return ("**Trend in d** (median |gap| over the settings simulated at several d): "
            + "; ".join(parts) + ".")


def _cost() -> str:
    if not RUNS.exists():
        return ""
    runs = pd.read_csv(RUNS)
    sec = runs.groupby(["setting", "d", "repetition"])["seconds"].max()
    by_d = sec.groupby(level=1).sum() / 3600
    return ("Simulation cost: " + f"{len(sec)} repetitions, "
            + ", ".join(f"{h:.2f} h at d = {d}" for d, h in by_d.items())
            + " of summed wall-clock of single-threaded processes at low priority on a shared "
              "machine (an upper bound of their CPU time).")


def _steps_seeds(pts: pd.DataFrame) -> str:
    """The seeds of STEPS.md's points at each d, from the data (the settings that differ)."""
    st = pts[pts.protocol == "steps (STEPS.md)"]
    seeds = st.groupby(["d", "setting"])["count"].min()
    parts = []
    for d, s in seeds.groupby(level="d"):
        common = int(s.mode().max())
        other = [f"{name}: {int(n)}" for (_, name), n in s.items() if n != common]
        parts.append(f"{common} at d = {d}" + (f" ({', '.join(other)})" if other else ""))
    return "seeds " + ", ".join(parts)


def _md(df: pd.DataFrame) -> str:
    head = "| " + " | ".join(map(str, df.columns)) + " |"
    sep = "|" + "---|" * len(df.columns)
    body = ["| " + " | ".join(str(v) for v in r) + " |" for r in df.itertuples(index=False)]
    return "\n".join([head, sep, *body])


def _n2_text(pts: pd.DataFrame) -> str:
    """N2 (relu, pm1 readout) after two and three steps at d = 2000: its gaps and z."""
    sub = pts[(pts.protocol == "new settings") & (pts.setting == "N2") & (pts.d == 2000)
              & (pts.step >= 2)]
    gap, z = -100 * sub.gap_network, sub.z_network
    side = int(max(np.sum(z > 0), np.sum(z < 0)))
    return (f"N2 after two and three steps stays {gap.min():.1f}-{gap.max():.1f}% below the "
            f"simulations at d = 2000 (z {z.min():+.1f} to {z.max():+.1f} with "
            f"{int(sub['count'].min())} seeds, {side} of its {len(sub)} points on the same side")


def _n2_se(pts: pd.DataFrame) -> str:
    """The s.e. of N2's d = 2000 point after three steps at ridge alpha 0.5, with its seeds."""
    row = pts[(pts.protocol == "new settings") & (pts.setting == "N2") & (pts.d == 2000)
              & (pts.step == 3) & (pts.alpha == 0.5)].iloc[0]
    return f"{int(row['count'])} seeds put at {row['se']:.3f}"


def report_text(pts: pd.DataFrame) -> str:
    new = pts[pts.protocol == "new settings"]
    settings = pd.DataFrame([dict(setting=k, sigma=v["sigma"], target=v["target"],
                                  readout=str(v["readout"]), alpha0=v["alpha0"],
                                  eta=",".join(f"{e:g}" for e in v["eta"]), beta=v["beta"])
                             for k, v in SETTINGS.items()])
    fmt = pts.copy()
    for c in ("mean", "se", "network", "srf"):
        fmt[c] = fmt[c].map(lambda x: f"{x:.4f}")
    for c in ("z_network", "z_srf"):
        fmt[c] = fmt[c].map(lambda x: f"{x:+.1f}")
    for c in ("gap_network", "gap_srf"):
        fmt[c] = fmt[c].map(lambda x: f"{100 * x:+.1f}%")
    cols = ["protocol", "setting", "d", "step", "alpha", "count", "mean", "se", "network",
            "z_network", "gap_network", "srf", "z_srf", "gap_srf"]
    d2000 = pts[pts.d == 2000]
    def _nan(m: str) -> str:
        sub = pts[pts[m].isna()]
        return f"{len(sub)}" + (" (" + ", ".join(
            f"{r.setting} d={r.d} t={r.step} alpha={r.alpha:g}" for r in sub.itertuples())
            + ")" if len(sub) else "")
    lines = [
        "# The network theory of K groups against the trained network",
        "",
        "Generated by `python -m validation.experiments.network_steps_report` (theory: "
        "docs/THEORY.md §15; simulations of the new settings: `python -m "
        "validation.experiments.network_steps simulate`, data "
        "`validation/reports/data/network_steps_runs.csv`; the committed runs of STEPS.md and "
        "READOUTS.md are reused as they are). `network`: `asymptotics.risk(..., "
        "model=\"network\")` with `readout=` / `steps=`; `srf`: the K-group surrogate "
        "(`model=\"srf\"`). Both at the simulated width `p = beta d`. z = (MC - theory)/s.e.; "
        "gap = (theory - MC)/MC. Protocols: STEPS.md (erf(z-1), p = d, three steps, ridge "
        "alpha 0.5, 2, 4; control-variate estimator; steps 1-3; " + _steps_seeds(pts)
        + "), READOUTS.md (one step, "
        "alpha0 = 2, trained network rows only, 16 seeds), new settings (below; 3 seeds at "
        "d = 1000 and 6 at d = 2000 (`count`); ridge alpha 0.5 and 2, lam = 0.01, 5000 test "
        "inputs, the control variate of STEPS.md). With 3-6 seeds the s.e. is itself a rough "
        "estimate (an underestimate makes |z| large at a small gap: read z with the gap).",
        "",
        f"**d = 2000**: network theory within 3 s.e. at "
        f"{int(np.sum(np.abs(d2000.z_network) <= 3))}/{len(d2000)} points, surrogate "
        f"{int(np.sum(np.abs(d2000.z_srf) <= 3))}/{len(d2000)}. **All points**: network "
        f"{int(np.sum(np.abs(pts.z_network) <= 3))}/{len(pts)}, surrogate "
        f"{int(np.sum(np.abs(pts.z_srf) <= 3))}/{len(pts)}. Points without a theory number "
        f"(NaN: not converged, a quadrature or fixed point not resolved; "
        f"counted as misses): network {_nan('network')}, surrogate {_nan('srf')}.",
        "",
        _trend(pts),
        "",
        "**What the misses are** (docs/DERIVATIONS.md §9.5, §9.7 and §9.9, `python -m "
        "validation.experiments.network_steps diagnose` and `python -m "
        "validation.experiments.network_device.check`): on the trained layers of N1 at d = 1000"
        " the measured groups and the channels given them reproduce the isotropic-bulk theory "
        "(to about 1% on average); what that theory missed was the groups' bulk outside the "
        "target/spike span (closure (a): +14% of the error at ridge alpha 0.5, +4% at alpha 2),"
        " the difference of its spectral spread (-2% and -7%) and of its coupling to the rows' "
        "coordinates on the span (+16% and +11%). The network theory carries both (a K-group "
        "generalised Marchenko-Pastur bulk on a sampled device of the steps, and the coupling; "
        "`risk_network(outside=...)`, default `\"coupled\"`). Run on a trained network itself, "
        "the device's map gives Gaussian rows that reproduce the trained layer (semi-empirical "
        "theory to 0.1-0.5%): the coupling the earlier device (4 blocks of 100 directions) "
        "seemed to miss was its sampling error (the risk moved by 4-7% between device seeds), "
        "now about 1% with 32 blocks. The rows' outside scale (closure (b), each row's own "
        "outside variance as one more channel coordinate of the groups, docs/DERIVATIONS.md "
        "§12; at one step with the constant readout it is the one-step theory's bulk-variance "
        "channel to 0.2%) is now carried too: it moves the erf(z-1) points by -2.9% to +2.0% "
        "after two and three steps, N1 by -1.6% after two steps and N2 by -1.5% to -1.2% after "
        "two and +1% to +3% after three, but no count at d = 2000 (on the three seeds of "
        "STEPS.md then: one point in, E after two steps; one out, D after three). " + _n2_text(pts)
        + "; with four seeds three of them missed, one at "
        "a s.e. of 0.005 (step 3, alpha 0.5) that " + _n2_se(pts) + "): on the trained "
        "layers the scale channel "
        "agrees in sign and size with `mc - semi` for N1 and for N2 after three steps at d = "
        "1000, but the single N2 network at d = 2000 lies +6.6% and +2.8% beyond its Gaussian "
        "equivalent, where the channel predicts -0.9% and +0.5%: a gap the theory does not "
        "carry, inside the s.e. of six seeds. The misses left at d = 2000 are erf(z-1) points "
        "of STEPS.md. STEPS.md's d = 2000 runs were raised from three to six and then to eleven"
        " seeds for every setting alike (the rounds fixed before any new result; the s.e. "
        "shrank by a median factor 0.70, then 0.72). With six seeds eight STEPS.md points "
        "missed: B (the heavy-tailed cubic staircase) at ridge alpha 0.5 after each step, D "
        "after one and three steps, E after each step; with eleven, six of them are in (B 0.5 "
        "after steps 1-3, D step 1 alpha 4, D step 3 alpha 2, E step 3 alpha 4) and none went "
        "out. The two left are E after one and two steps at ridge alpha 2 (2.0% below, z +4.0 "
        "and +4.4), where E's random-features point of step 0, a settled theory, misses the "
        "same way (2.0% below, z +4.4; the steps share each repetition's ridge and test "
        "samples, and E's eleven seeds spread less there than A's or D's, 0.040 against 0.070)."
        " The surrogate: 45/54 at d = 2000 with eleven seeds (43/54 with six).",
        "",
        "## Summary by protocol and d",
        "",
        _md(_summary(pts, ["protocol", "d"])),
        "",
        "## By setting",
        "",
        _md(_summary(pts, ["protocol", "setting", "d"])),
        "",
        "## The new settings (fixed and committed before any theory number for them)",
        "",
        _md(settings),
        "",
        f"{len(new)} points. {_cost()}",
        "",
        "*Process note.* The settings and the simulator were committed before any theory number"
        " for them. Two later changes were made after a first look at the comparison: the "
        "theory's row noise on the target/spike span was made anisotropic (a term of "
        "DERIVATIONS.md §7 that the first version kept isotropic, checked against §7's "
        "independent plane covariances, not fitted; seen then: one repetition per setting at d "
        "= 1000), and the d = 2000 runs were raised from 2 to 4 seeds because two-seed standard"
        " errors came out as small as 1e-3. Later the d = 2000 plan was extended to every new "
        "setting with 6 seeds (N1 and N2 from 4; the plan committed before any of these runs, "
        "after the report had shown N2's three misses at d = 2000). So the verdict on the new "
        "settings is not fully blind. The aligned kappa rule (docs/DERIVATIONS.md §9.6) was "
        "added later for the two N7 points the tensor rule left NaN; it was chosen by the "
        "convergence of the quadrature alone (two rules agreeing to 1e-3; against a 122^3 "
        "tensor rule to 1e-3), not by the comparison with the simulations.",
        "",
        "## Every point",
        "",
        _md(fmt[cols]),
        "",
    ]
    return "\n".join(lines)


def _write_whole(df: pd.DataFrame, path: pathlib.Path) -> None:
    """A derived table written whole and atomically (a kill leaves the old file or the new)."""
    tmp = path.with_name(path.name + ".tmp")
    df.to_csv(tmp, index=False)
    os.replace(tmp, path)


def write_report(progress: bool = True) -> pathlib.Path:
    pts = points(progress=progress)
    _write_whole(pts, THEORY_CSV)
    OUT.write_text(report_text(pts))
    return OUT


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m validation.experiments.network_steps_report",
                                 description="both theories against every point: "
                                             "NETWORK_STEPS.md")
    ap.add_argument("--quiet", action="store_true", help="no progress lines")
    ap.add_argument("--precompute", action="store_true",
                    help="only fill the theory cache for the committed runs and every planned "
                         "point of the new settings (no report)")
    args = ap.parse_args(argv)
    if args.precompute:
        theory_table(pd.concat([_committed_keys(), planned_new_points()]), not args.quiet)
        return 0
    print(write_report(progress=not args.quiet))
    return 0


if __name__ == "__main__":
    sys.exit(main())
