"""Theory of several giant steps (docs/THEORY.md §12) against the Monte Carlo of the protocol
(:mod:`validation.multistep.risk`): the risk of the ridge readout after each step,
and the groups' statistics (loadings on the target, bulk variance, outside Gram).

``python -m validation.multistep.theory [--data CSV] [--out DIR] [--quiet]`` reads the
simulations (default ``validation/reports/data/multistep_risk.csv``), computes the theory at
their parameters, writes ``STEPS.md`` and ``figures/steps.png`` (risk vs the number of steps)
into ``--out`` (default ``validation/reports``) and prints the summary table. Three theories per
point of the K-group surrogate: ``theory`` (the mapping of §12 then the K-group equations,
``p -> infinity``), ``theory_p`` (the same at the simulated width, §10.6) and ``measured_groups``
(the K-group equations fed with the group statistics measured on the simulated first layer: the
readout theory alone, without the mapping's closure); and ``network``, the network theory of K
groups (§15, ``asymptotics.risk(..., steps=t)`` with the default ``model="network"``) at the
simulated width, read from the theory cache of
:mod:`validation.experiments.network_steps_report` (computed by the same calls where missing).
"""

from __future__ import annotations

import math
import pathlib
import sys
from functools import lru_cache

import numpy as np
import pandas as pd

from asymptotics.multiindex.steps import GroupState, StepsMapping, group_params, steps_mapping
from asymptotics.spiked.solve import risk_spiked

REPORTS = pathlib.Path(__file__).resolve().parents[1] / "reports"
DATA = REPORTS / "data" / "multistep_risk.csv"
KEYS = ["setting", "target", "sigma", "alpha0", "eta", "readout", "lam", "beta", "delta"]


def readout_name(readout: str) -> str:
    """The simulator's readout name as the theory's (hypercube halves = pm1)."""
    return {"hypercube": "pm1", "pm1": "pm1", "constant": "constant"}[readout]


def mapping_of(row) -> StepsMapping:
    """The mapping of §12 at a simulated row's parameters (one computation per parameter set)."""
    eta = tuple(float(e) for e in str(row.eta).split(","))
    return _mapping(row.sigma, row.target, float(row.alpha0), eta, float(row.delta),
                    readout_name(row.readout))


@lru_cache(maxsize=64)
def _mapping(sigma: str, target: str, alpha0: float, eta: tuple[float, ...], delta: float,
             readout: str) -> StepsMapping:
    return steps_mapping(sigma, target, steps=len(eta), alpha0=alpha0, eta=eta, delta=delta,
                         readout=readout)


def measured_state(rows: pd.DataFrame, k: int, groups: int) -> GroupState:
    """The groups' state from the simulator's statistics (means over repetitions)."""
    a = np.array([[rows[f"a_g{g}_j{j}"].mean() for j in range(1, k + 1)] for g in range(groups)])
    c = np.array([rows[f"c_g{g}"].mean() for g in range(groups)])
    B = np.zeros((groups, groups))
    for g in range(groups):
        for h in range(groups):
            B[g, h] = rows[f"Bperp_{min(g, h)}{max(g, h)}"].mean()
    lam, vec = np.linalg.eigh(B)
    keep = lam > 1e-12
    return GroupState(-1, a, vec[:, keep] * np.sqrt(lam[keep]), c)


def target_power(target: str) -> float:
    """``E g(z)^2`` for ``z ~ N(0, I_k)`` by tensor Gauss-Hermite quadrature (exact for a
    polynomial target of degree <= 19 in each variable)."""
    from asymptotics.coefficients.functions import Function
    from asymptotics.spiked.coefficients import tensor_rule
    from asymptotics.spiked.problem import resolve_target

    g, k, _ = resolve_target(target)
    Z, w = tensor_rule(k, 40 if k <= 3 else 12)
    vals = g(Z[:, 0]) if isinstance(g, Function) else g(Z)
    return float(w @ np.asarray(vals, dtype=np.float64) ** 2)


def with_control_variate(runs: pd.DataFrame) -> pd.DataFrame:
    """``test_error_cv = test_error - target_power + E g^2``: the same mean (the sample
    ``target_power`` is an unbiased estimate of the exact ``E g^2``), a much smaller variance for
    heavy-tailed targets (``z1 z2 z3``), whose test-set power moves the raw error by its own
    sampling noise."""
    exact = {t: target_power(t) for t in runs["target"].unique()}
    out = runs.copy()
    out["target_power_exact"] = out["target"].map(exact)
    out["test_error_cv"] = out["test_error"] - out["target_power"] + out["target_power_exact"]
    return out


def summarize(runs: pd.DataFrame, column: str = "test_error_cv") -> pd.DataFrame:
    """Mean, s.e. and count of ``column`` per (setting, d, step, ridge_alpha) (``mean_raw``,
    ``se_raw``: the raw test error)."""
    if column not in runs:
        runs = with_control_variate(runs)
    g = runs.groupby(KEYS + ["d", "step", "ridge_alpha"], sort=True)
    out = g[column].agg(["mean", "std", "count"]).reset_index()
    out["se"] = out["std"] / np.sqrt(out["count"])
    raw = g["test_error"].agg(["mean", "std"]).reset_index(drop=True)
    out["mean_raw"] = raw["mean"].to_numpy()
    out["se_raw"] = (raw["std"] / np.sqrt(out["count"])).to_numpy()
    return out.drop(columns="std")


def with_theory(runs: pd.DataFrame, progress=None) -> pd.DataFrame:
    """:func:`summarize` plus the three theories (module docstring) and z-scores."""
    pts = summarize(runs)
    cols = {"theory": [], "theory_p": [], "measured_groups": []}
    for r in pts.itertuples():
        mp = mapping_of(r)
        kw = dict(sigma=r.sigma, lam=r.lam, beta=r.beta, delta=r.delta)
        params = mp.spiked_params(int(r.step))
        res = risk_spiked(r.ridge_alpha, **kw, **params)
        cols["theory"].append(res.risk if res.converged else math.nan)
        res = risk_spiked(r.ridge_alpha, p=r.beta * r.d, **kw, **params)
        cols["theory_p"].append(res.risk if res.converged else math.nan)
        sub = runs[(runs.setting == r.setting) & (runs.d == r.d) & (runs.step == r.step)
                   & (runs.ridge_alpha == r.ridge_alpha)]
        st = measured_state(sub, mp.k, len(mp.readout.values))
        # at the simulated width: tiny measured loadings (step 0) must not open the groups'
        # contrast channel that p -> infinity leaves unpenalised (THEORY.md §12.5)
        res = risk_spiked(r.ridge_alpha, p=r.beta * r.d, **kw,
                          **group_params(st, r.target, mp.readout.weights))
        cols["measured_groups"].append(res.risk if res.converged else math.nan)
        if progress is not None:
            progress()
    for name, v in cols.items():
        pts[name] = v
    pts["z"] = (pts["mean"] - pts["theory"]) / pts["se"]
    pts["z_p"] = (pts["mean"] - pts["theory_p"]) / pts["se"]
    pts["gap"] = (pts["theory"] - pts["mean"]) / pts["mean"]
    pts["gap_p"] = (pts["theory_p"] - pts["mean"]) / pts["mean"]
    pts["gap_groups"] = (pts["measured_groups"] - pts["mean"]) / pts["mean"]
    return with_network(pts)


def with_network(pts: pd.DataFrame) -> pd.DataFrame:
    """``network``: the network theory of K groups (THEORY.md §15) at ``p = beta d`` after each
    step >= 1 (NaN at step 0, random features: not computed), with ``z_net`` and ``gap_net``:
    ``asymptotics.risk(..., steps=t, readout=...)`` with the default ``model="network"``, read
    from NETWORK_STEPS.md's theory cache (the same call for a missing point)."""
    from validation.spiked.readouts_report import network_risk

    pts = pts.copy()
    pts["network"] = [network_risk(r.sigma, r.target, r.readout, r.alpha0, r.eta, r.step,
                                   r.ridge_alpha, r.beta, r.lam, r.d)
                      if r.step >= 1 else math.nan for r in pts.itertuples()]
    pts["z_net"] = (pts["mean"] - pts["network"]) / pts["se"]
    pts["gap_net"] = (pts["network"] - pts["mean"]) / pts["mean"]
    return pts


def group_table(runs: pd.DataFrame) -> pd.DataFrame:
    """Measured group statistics (means over repetitions, group +) against the mapping."""
    rows = []
    one = runs[runs.ridge_alpha == runs.ridge_alpha.min()]
    for (setting, d, step), sub in one.groupby(["setting", "d", "step"]):
        mp = mapping_of(sub.iloc[0])
        st = mp.states[int(step)]
        meas = measured_state(sub, mp.k, len(mp.readout.values))
        row = dict(setting=setting, d=int(d), step=int(step))
        for j in range(mp.k):
            row[f"a+_{j + 1}"] = f"{meas.a[0, j]:.3f} / {st.a[0, j]:.3f}"
        row["c+"] = f"{meas.c[0]:.3f} / {st.c[0]:.3f}"
        row["|s+perp|^2"] = (f"{(meas.L @ meas.L.T)[0, 0]:.3f} / "
                             f"{(st.L @ st.L.T)[0, 0] if st.L.shape[1] else 0.0:.3f}")
        rows.append(row)
    return pd.DataFrame(rows)


# ------------------------------------------------------------------------------------------------
# report


def protocol_table(pts: pd.DataFrame) -> pd.DataFrame:
    """Per setting and d (steps >= 1): points within 3 s.e., median and max relative gap, of the
    sRF surrogate (p -> infinity) and of the network theory (p = d)."""
    rows = []
    later = pts[pts.step >= 1]
    for (setting, d), g in later.groupby(["setting", "d"]):
        r = g.iloc[0]
        rf = pts[(pts.setting == setting) & (pts.d == d) & (pts.step == 0)]
        rows.append({
            "setting": setting, "target": r.target, "readout": readout_name(r.readout),
            "alpha0": f"{r.alpha0:g}", "eta": r.eta, "d": int(d), "seeds": int(g["count"].min()),
            "sRF: within 3 s.e.": f"{int((g.z.abs() <= 3).sum())}/{len(g)}",
            "sRF: median |gap|": f"{g.gap.abs().median():.1%}",
            "sRF: max |gap|": f"{g.gap.abs().max():.1%}",
            "median |gap|, measured groups": f"{g.gap_groups.abs().median():.1%}",
            "network: within 3 s.e.": f"{int((g.z_net.abs() <= 3).sum())}/{len(g)}",
            "network: median |gap|": f"{g.gap_net.abs().median():.1%}",
            "network: max |gap|": f"{g.gap_net.abs().max():.1%}",
            "step 0 (RF) within 3 s.e.": f"{int((rf.z.abs() <= 3).sum())}/{len(rf)}"})
    return pd.DataFrame(rows)


def figure(pts: pd.DataFrame, runs: pd.DataFrame, ridge_alpha: float = 4.0):
    """Risk vs the number of steps (the network theory solid, the sRF surrogate dashed, Monte
    Carlo mean +- s.e.) for the two
    targets, pm1 (two groups) against the constant readout (one spike, K = 1), and the groups'
    loadings on each target direction."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(12, 3.6), constrained_layout=True)
    axes = fig.subplots(1, 3)
    colors = {"A": "#D55E00", "D": "#0072B2", "B": "#009E73", "C": "#CC79A7"}
    labels = {"A": "pm1 (K = 2)", "D": "constant (one spike)", "B": "pm1 (K = 2)",
              "C": "pm1, tanh(z1) + z1 z2"}
    panels = [(axes[0], ("A", "D"), "z1 + z1 z2"), (axes[1], ("B",), "z1 + z1 z2 + z1 z2 z3")]
    for ax, settings, title in panels:
        for s in settings:
            sub = pts[(pts.setting == s) & (pts.ridge_alpha == ridge_alpha)]
            if sub.empty:
                continue
            th = sub.groupby("step")["theory"].first()
            ax.plot(th.index, th.values, "--", color=colors[s], lw=1.0,
                    label=f"sRF surrogate (p = inf), {labels[s]}")
            dmax = sub.d.max()  # p = d: the lines at the two d differ by less than a marker
            at = sub[sub.d == dmax].set_index("step")
            net = at["network"].where(at.index >= 1, at["theory_p"])  # step 0: RF at p = d
            ax.plot(net.index, net.values, "-", color=colors[s], lw=1.4,
                    label=f"network theory (p = d = {dmax}), {labels[s]}")
            for d, marker in zip(sorted(sub.d.unique()), "os^", strict=False):
                m = sub[sub.d == d]
                shift = 0.06 * (1 if marker == "s" else -1)
                ax.errorbar(m.step + shift, m["mean"], yerr=m.se, fmt=marker, ms=4,
                            color=colors[s], mfc="white" if marker == "s" else colors[s],
                            capsize=2, lw=1, label=(f"trained network, d = {d}"
                                                    if s == settings[0] else None))
            one = net.loc[1]
            ax.axhline(one, color=colors[s], ls=":", lw=1)
        ax.set_xticks(range(4), ["RF", "1", "2", "3"])
        ax.set_xlabel("giant steps")
        ax.set_title(rf"$g$ = {title}, $\alpha$ = {ridge_alpha:g} (dotted: one step)",
                     fontsize=9)
        ax.grid(alpha=0.3)
        lo, hi = ax.get_ylim()  # headroom for the legend above the curves
        ax.set_ylim(lo, hi + (0.55 if len(settings) > 1 else 0.3) * (hi - lo))
        ax.legend(fontsize=6, frameon=False, loc="upper right")
    axes[0].set_ylabel("test error")
    ax = axes[2]
    sub = runs[(runs.setting == "B") & (runs.ridge_alpha == runs.ridge_alpha.min())]
    if not sub.empty:
        mp = mapping_of(sub.iloc[0])
        for j, color in zip(range(3), ("#0072B2", "#D55E00", "#009E73"), strict=True):
            ax.plot(range(4), [abs(st.a[0, j]) for st in mp.states], "-", color=color,
                    label=rf"theory (§12) $|a_{{+,{j + 1}}}|$")
            d = sub.d.max()
            m = sub[sub.d == d].groupby("step")[f"a_g0_j{j + 1}"].agg(["mean", "std", "count"])
            ax.errorbar(m.index, m["mean"].abs(), yerr=m["std"] / np.sqrt(m["count"]), fmt="o",
                        ms=4, color=color, capsize=2,
                        label=f"trained network, d = {d}" if j == 0 else None)
        ax.set_xticks(range(4), ["init", "1", "2", "3"])
        ax.set_xlabel("giant steps")
        ax.set_ylabel(r"group + loading on $\theta_j$")
        ax.set_title("the staircase: z1 + z1 z2 + z1 z2 z3, pm1", fontsize=9)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=6, frameon=False)
    return fig


def _markdown(df: pd.DataFrame) -> str:
    head = "| " + " | ".join(map(str, df.columns)) + " |"
    sep = "|" + "---|" * len(df.columns)
    body = ["| " + " | ".join(str(v) for v in row) + " |" for row in df.itertuples(index=False)]
    return "\n".join([head, sep, *body])


def _few_seeds(pts: pd.DataFrame) -> str:
    """The sentence on the seeds, from the data: how many at each d (with the settings that
    differ), and what the 3 s.e. test with an s.e. estimated from so few seeds means."""
    from scipy.stats import t as student

    later = pts[pts.step >= 1]
    seeds = later.groupby(["setting", "d"])["count"].min()
    parts = []
    for d, s in seeds.groupby(level="d"):
        common = int(s.mode().max())
        other = sorted(((int(n), st) for (st, _), n in s.items() if n != common))
        parts.append(f"{common} at d = {d}"
                     + (" (" + ", ".join(f"{st}: {n}" for n, st in other) + ")" if other else ""))
    counts = sorted({int(n) for n in seeds})
    tails = ", ".join(f"{100 * 2 * student.sf(3.0, n - 1):.1f}% with {n}" for n in counts)
    return (f"Seeds per setting: {'; '.join(parts)} (`count`). The s.e. is estimated from these "
            f"seeds: for an exact theory a point lies beyond 3 s.e. with probability "
            f"P(|t_(n-1)| > 3) ({tails} seeds).")


def report_text(pts: pd.DataFrame, groups: pd.DataFrame, figure_name: str) -> str:
    pts_t = pts.copy()
    fmt = pts_t.assign(
        MC=[f"{m:.3f} ± {s:.3f}" for m, s in zip(pts_t["mean"], pts_t.se, strict=True)],
        MC_raw=[f"{m:.3f} ± {s:.3f}" for m, s in zip(pts_t["mean_raw"], pts_t.se_raw,
                                                      strict=True)],
        theory=pts_t.theory.map("{:.3f}".format), theory_p=pts_t.theory_p.map("{:.3f}".format),
        measured_groups=pts_t.measured_groups.map("{:.3f}".format),
        z=pts_t.z.map("{:+.1f}".format), gap=pts_t.gap.map("{:+.1%}".format),
        network=pts_t.network.map(lambda x: "-" if math.isnan(x) else f"{x:.3f}"),
        z_net=pts_t.z_net.map(lambda x: "-" if math.isnan(x) else f"{x:+.1f}"),
        gap_net=pts_t.gap_net.map(lambda x: "-" if math.isnan(x) else f"{x:+.1%}"))
    cols = ["setting", "d", "step", "ridge_alpha", "count", "MC", "theory", "z", "gap",
            "network", "z_net", "gap_net", "theory_p", "measured_groups", "MC_raw"]
    later = pts[pts.step >= 1]
    n_in = int((later.z.abs() <= 3).sum())
    n_p = int((later.z_p.abs() <= 3).sum())
    n_net = int((later.z_net.abs() <= 3).sum())
    no_net = int(later.network.isna().sum())  # not converged: counted as misses
    out = [
        "# Several giant steps: theory against the trained network\n",
        "Generated by `python -m validation.multistep.theory` from the simulations of "
        "`python -m validation.multistep.risk` "
        "(`validation/reports/data/multistep_risk.csv`). Theory: docs/THEORY.md §12 (the "
        "population recursion of the readout groups with the batch-noise closure, then the "
        "K-group equations of §10: the sRF surrogate) and §15 (the network theory of K groups, "
        "`asymptotics.risk(..., steps=t)` with the default `model=\"network\"`, at the "
        "simulated width p = d; its numbers are those of NETWORK_STEPS.md). Figure: `figures/"
        + figure_name + "`.\n",
        "Protocol: `sigma = erf(z-1)`, `p = d`, three giant steps on fresh batches of "
        "`n0 = alpha0 d` samples with `eta_t = eta_tilde_t p`, the readout frozen at `1/sqrt p` "
        "(constant) or `+-1/sqrt p` on two halves (pm1), then ridge (sum loss, `lam = 0.01`) on "
        "`alpha d` fresh samples, `alpha = 0.5, 2, 4`; test error on 10 000 fresh noiseless "
        "inputs; mean ± standard error over seeds. Step 0 is random features. The estimator is "
        "`test_error - target_power + E g^2` (a control variate: the test set's own power "
        "`target_power` has the known mean `E g^2`; same mean as the raw error, far less "
        "variance for the heavy-tailed `z1 z2 z3`); the raw error is in the columns `MC raw`. "
        + _few_seeds(pts) + "\n",
        f"**Summary** (steps 1-3, {len(later)} points; gap = (theory - MC)/MC): the network "
        f"theory (p = d) is within 3 s.e. at {n_net} of {len(later)} points, median |gap| "
        f"{later.gap_net.abs().median():.1%}, max {later.gap_net.abs().max():.1%}"
        + (f" ({no_net} without a converged theory number, counted as misses)" if no_net
           else "")
        + f"; the sRF surrogate at {n_in} of {len(later)} (p -> infinity; {n_p} at p = d), "
        f"median |gap| {later.gap.abs().median():.1%}, max {later.gap.abs().max():.1%}.\n",
        _markdown(protocol_table(pts)) + "\n",
        "`theory` is the surrogate at d = p -> infinity; `network` (z_net, gap_net) the network "
        "theory at p = d (no number at step 0: random features); `theory_p` the surrogate's "
        "mapping with the finite-width "
        "K-group equations at p = d (§10.6); `measured_groups` the K-group equations at p = d "
        "fed with the group statistics measured on the simulated first layers (the readout "
        "theory alone: where it sides with `theory`, the gap is not the mapping's but the "
        "K-group model's, i.e. of the network's structure beyond isotropic bulk + group "
        "spikes).\n",
        "## Every point\n",
        _markdown(fmt[cols]) + "\n",
        "## The groups: measured / predicted (group +, mean over seeds)\n",
        "`a+_j`: the group's mean projection on theta_j; `c+`: bulk variance; "
        "`|s+perp|^2`: squared norm of the group's spike outside the target span (the batches' "
        "noise).\n",
        _markdown(groups) + "\n",
    ]
    return "\n".join(out)


def build_parser():
    from asymptotics.cli.common import Parser, add_quiet

    parser = Parser(prog="python -m validation.multistep.theory",
                    description="Theory of several giant steps against the simulations: "
                                "STEPS.md and figures/steps.png.")
    parser.add_argument("--data", default=None, help="simulations CSV (default: the campaign's, "
                        "validation/reports/data/multistep_risk.csv or its copy in the cache)")
    parser.add_argument("--out", default=None,
                        help="directory of STEPS.md and figures/ (default: validation/reports in "
                             "a source checkout; required when the package is installed)")
    add_quiet(parser)
    return parser


def main(argv: list[str] | None = None) -> int:
    from asymptotics.cli.common import apply_quiet, check_writable, fail, save_figure
    from asymptotics.core.progress import Progress

    args = build_parser().parse_args(argv)
    apply_quiet(args)
    from validation.campaign.report import report_dir
    from validation.paths import data_file

    if args.data is None:
        args.data = str(data_file(DATA, "validation", "reports", "data")[0])
    try:
        if not pathlib.Path(args.data).exists():
            raise ValueError(f"--data {args.data} does not exist: run `python -m "
                             "validation.multistep.risk` first")
        out = report_dir(args.out)
        check_writable(out, "--out", directory=True)
    except ValueError as exc:
        return fail(str(exc))
    runs = pd.read_csv(args.data)
    n = len(summarize(runs))
    with Progress(n, "steps theory", unit="point", enabled=not args.quiet) as bar:
        pts = with_theory(runs, progress=lambda: bar.update(1))
    groups = group_table(runs)
    (out / "figures").mkdir(parents=True, exist_ok=True)
    save_figure(figure(pts, runs), out / "figures" / "steps.png", dpi=150)
    text = report_text(pts, groups, "steps.png")  # tests/test_reports.py: the committed text
    (out / "STEPS.md").write_text(text)
    print(_markdown(protocol_table(pts)))
    print(f"wrote {out / 'STEPS.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
