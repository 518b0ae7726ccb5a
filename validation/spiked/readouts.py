"""Monte Carlo of one giant step with a finite-support initial readout (docs/THEORY.md §11).

Two simulated models per setting, against the theory :func:`asymptotics.risk_readout`:

- ``network``: the protocol of THEORY.md §1 with ``a0_j = eps_j / sqrt(p)``, ``eps_j`` drawn
  i.i.d. from the readout's support (``pm1``: ``+-1`` with probability 1/2 each; the group sizes
  are therefore binomial); the step is :func:`validation.montecarlo.giant_step` with that ``a0``
  (``rate = eta_tilde / n0``, ``eta = eta_tilde p``), then the ridge readout and the test error of
  :mod:`validation.simulator`. Seeds: repetition ``i`` is child ``i`` of ``SeedSequence(seed)``;
  inside it the streams of :data:`validation.simulator.STREAMS` in the same order and roles
  (random stream 2), plus an eighth child ``readout`` for the draw of ``eps``. With
  ``readout="constant"`` a repetition is the repetition of
  ``validation.simulator.simulate(Setting(model="network", ...))`` number for number;
- ``srf``: the K-group spiked random-features model of the mapping
  (:func:`asymptotics.readout_mapping`), simulated by :mod:`validation.spiked.simulator`
  (group ``g`` holds ``round(pi_g p)`` rows, one spike direction for all groups).

``python -m validation.spiked readouts run`` simulates the campaign (:data:`SETTINGS` at
:data:`D`, and the network at the d of :data:`D_SCAN`) as a :class:`validation.campaign.Campaign`
(one task per setting, model, readout and d, keyed by its full parameter record) into a SQLite
store, exported to ``validation/reports/data/readouts_runs.csv`` (one row per repetition and
alpha; in a checkout, else the user cache); ``python -m validation.spiked readouts report``
writes ``validation/reports/READOUTS.md`` and ``python -m figures.fig_readouts`` its figure.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from asymptotics.coefficients.functions import get_function
from asymptotics.spiked.readouts import parse_readout, readout_mapping

from .. import montecarlo as mc
from ..campaign import Campaign, Schema, Store, run_campaign
from ..paths import data_file
from ..simulator import STREAMS, estimate_test_error, fit_readouts, network_step
from ..store import g10_cell
from .simulator import SpikedSetting
from .simulator import simulate_once as spiked_once

ROOT = Path(__file__).resolve().parents[2]
STORE = ROOT / "validation" / "reports" / "data" / "readouts_runs.csv"
REPORT = ROOT / "validation" / "reports" / "READOUTS.md"
FIGURE = ROOT / "validation" / "reports" / "figures" / "readouts.png"
READOUT_STREAMS = (*STREAMS, "readout")

D = 800
SEEDS = 16
SEED = 0
ALPHAS = (0.5, 2.0, 4.0)
MODELS = ("network", "srf")
READOUTS = ("constant", "pm1")


@dataclass(frozen=True)
class ReadoutCase:
    """One setting of the campaign: both readouts and both models are simulated for it."""

    name: str
    sigma: str
    target: str  # a function name (the network simulator's single-index target)
    eta: float
    alpha0: float = 2.0
    lam: float = 0.01
    beta: float = 1.0
    alphas: tuple[float, ...] = ALPHAS
    purpose: str = ""


#: the campaign, fixed before any comparison
SETTINGS: tuple[ReadoutCase, ...] = (
    ReadoutCase("relu-tanh-eta1", "relu", "tanh", 1.0,
                purpose="mu0 != 0: pm1 and constant differ"),
    ReadoutCase("relu-tanh-eta2", "relu", "tanh", 2.0, purpose="a larger step"),
    ReadoutCase("relu-relu-eta1", "relu", "relu", 1.0,
                purpose="mu0* != 0; sigma and g both with He2: the rank-one term the mapping "
                        "leaves out"),
    ReadoutCase("tanh-tanh-eta1", "tanh", "tanh", 1.0, purpose="odd sigma: pm1 = constant"),
    ReadoutCase("erf-relu-eta1", "erf", "relu", 1.0,
                purpose="odd sigma, mu0* != 0: pm1 = constant"),
)
BY_NAME = {c.name: c for c in SETTINGS}
#: the network at other d (the report's dependence on d): d -> the settings, in run order
D_SCAN: dict[int, tuple[str, ...]] = {400: ("relu-relu-eta1", "relu-tanh-eta2"),
                                      1200: ("relu-relu-eta1", "relu-tanh-eta2")}
#: the rows: one per repetition and alpha
SCHEMA = Schema.of(name=str, model=str, readout=str, sigma=str, target=str, eta=float,
                   alpha0=float, lam=float, beta=float, d=int, p=int, alpha=float, seed=int,
                   rep=int, risk=float, frac_plus=float, seconds=float)


# ------------------------------------------------------------------------------------------------
# the network with a finite-support readout


def draw_readout(readout: object, p: int, rng: np.random.Generator) -> np.ndarray:
    """``eps``: ``p`` i.i.d. draws from the readout's support (``a0 = eps / sqrt p``)."""
    ro = parse_readout(readout)
    if ro.is_constant:
        return np.ones(p)
    return rng.choice(np.asarray(ro.values), size=p, p=np.asarray(ro.weights))


def network_first_layer(case: ReadoutCase, readout: object, d: int,
                        seed: np.random.SeedSequence) -> tuple[np.ndarray, np.ndarray, dict,
                                                               np.ndarray]:
    """``(W1, theta*, rngs, eps)`` of one network repetition (module docstring)."""
    sigma, target = get_function(case.sigma), get_function(case.target)
    children = mc.streams(seed, READOUT_STREAMS)
    rngs = {name: np.random.default_rng(child) for name, child in children.items()}
    for name in ("weights", "ridge", "test"):
        rngs[name] = mc.BlockRows(children[name], d)
    p, n0 = int(round(case.beta * d)), int(round(case.alpha0 * d))
    W0 = mc.sphere_rows(rngs["weights"], p, d)
    theta = mc.unit_vector(rngs["teacher"], d)
    eps = draw_readout(readout, p, rngs["readout"])
    step = mc.BlockRows(children["step"], d)
    if parse_readout(readout).is_constant:  # the simulator's own step (a0 = 1/sqrt p)
        W1 = network_step(W0, theta, sigma, target, n0=n0, eta_tilde=case.eta, delta=0.0,
                          rng=step, noise_rng=rngs["step_noise"])
    else:
        chunks = mc.labelled(mc.batches(step, n0, d, mc.chunk_rows(p, n0)), theta, target, 0.0,
                             rngs["step_noise"])
        W1 = mc.giant_step(W0, chunks, sigma, rate=case.eta / n0, a=eps / math.sqrt(p))[0]
    return W1, theta, rngs, eps


def network_once(case: ReadoutCase, readout: object, d: int,
                 seed: np.random.SeedSequence) -> tuple[np.ndarray, float]:
    """Risks along ``case.alphas`` of one network repetition, and the fraction of ``eps > 0``."""
    sigma, target = get_function(case.sigma), get_function(case.target)
    W1, theta, rngs, eps = network_first_layer(case, readout, d, seed)
    p = W1.shape[0]
    ns = [max(1, int(round(a * d))) for a in case.alphas]
    A = fit_readouts(W1, theta, sigma, target, ns=ns, lams=[case.lam], delta=0.0,
                     rng=rngs["ridge"], noise_rng=rngs["ridge_noise"])
    err = estimate_test_error(W1, A.reshape(p, -1), theta, sigma, target,
                              n_test=max(10_000, 2 * d), rng=rngs["test"], estimator="mc")
    return np.asarray(err, dtype=np.float64).reshape(len(ns)), float(np.mean(eps > 0))


def srf_setting(case: ReadoutCase, readout: object, d: int) -> SpikedSetting:
    """The K-group sRF model of the mapping (THEORY.md §11) as a :class:`SpikedSetting`."""
    mp = readout_mapping(case.sigma, case.target, alpha0=case.alpha0, eta=case.eta,
                         readout=readout)
    return SpikedSetting(sigma=case.sigma, target=f"{case.target}(z1)", loadings=mp.loadings,
                         bulk=mp.bulk, fractions=mp.fractions, overlaps=[[mp.gamma]],
                         alpha=case.alphas[0], lam=case.lam, beta=case.beta, d=d)


def simulate_case(case: ReadoutCase, model: str, readout: str, *, d: int = D, seeds: int = SEEDS,
                  seed: int = SEED) -> list[dict]:
    """Per-repetition rows (one per repetition and alpha) of one (setting, model, readout)."""
    ro = parse_readout(readout)
    children = np.random.SeedSequence(int(seed)).spawn(int(seeds))
    rows = []
    srf = srf_setting(case, ro, d) if model == "srf" else None
    for rep, child in enumerate(children):
        t0 = time.perf_counter()
        if model == "network":
            risks, frac = network_once(case, ro, d, child)
        elif model == "srf":
            risks = spiked_once(srf, case.alphas, child)
            frac = srf.group_sizes[0] / srf.p
        else:
            raise ValueError(f"model must be one of {', '.join(MODELS)}, got {model!r}")
        sec = time.perf_counter() - t0
        for a, risk in zip(case.alphas, risks, strict=True):
            rows.append(dict(name=case.name, model=model, readout=ro.name, sigma=case.sigma,
                             target=case.target, eta=case.eta, alpha0=case.alpha0, lam=case.lam,
                             beta=case.beta, d=d, p=int(round(case.beta * d)), alpha=a,
                             seed=int(seed), rep=rep, risk=float(risk), frac_plus=frac,
                             seconds=sec))
    return rows


# ------------------------------------------------------------------------------------------------
# the campaign store


def paths() -> tuple[Path, Path]:
    """``(read, write)`` of the runs' CSV (:func:`validation.paths.data_file`)."""
    return data_file(STORE, "validation", "reports", "data")


def load(path: str | Path | None = None):
    """The per-repetition rows (a DataFrame; empty if there is no store yet)."""
    import pandas as pd

    path = Path(path) if path is not None else paths()[0]
    return pd.read_csv(path) if path.is_file() else pd.DataFrame()


def _task(job: tuple) -> list[dict]:
    case, model, readout, d, seeds, seed = job
    return simulate_case(case, model, readout, d=d, seeds=seeds, seed=seed)


def _rank(row) -> tuple:
    """The export's order: d = :data:`D` first, then the d scan; settings, models, readouts in
    the plan's order."""
    d = row["d"]
    names = list(BY_NAME) if d == D else list(D_SCAN.get(d, ()))
    where = names.index(row["name"]) if row["name"] in names else len(names)
    return (d != D, d, where, row["name"], MODELS.index(row["model"]),
            READOUTS.index(row["readout"]))


def campaign(names: Sequence[str] | None = None, *, d: int | None = None, seeds: int = SEEDS,
             seed: int = SEED, models: Sequence[str] = MODELS) -> Campaign:
    """One task per (setting, model, readout, d) with all ``seeds`` repetitions. Default
    (``d`` None): the committed plan, every setting at :data:`D` and the network at the d of
    :data:`D_SCAN`; with ``d``: the settings ``names`` (default all) and ``models`` at ``d``."""
    bad = [m for m in models if m not in MODELS]
    if bad:
        raise ValueError(f"models must be among {', '.join(MODELS)}, got {bad}")
    if d is None:
        points = [(BY_NAME[n], m, D) for n in (names or BY_NAME) for m in models]
        points += [(BY_NAME[n], "network", dd) for dd, ns in D_SCAN.items() for n in ns
                   if "network" in models and (not names or n in names)]
    else:
        points = [(BY_NAME[n], m, int(d)) for n in (names or BY_NAME) for m in models]
    jobs = tuple((case, m, r, dd, int(seeds), int(seed)) for case, m, dd in points
                 for r in READOUTS)
    return Campaign("readouts_runs", jobs, _task, SCHEMA,
                    key_columns=("name", "model", "readout", "d", "seed"),
                    key=lambda j: (j[0].name, j[1], j[2], j[3], j[5]), rank=_rank,
                    cell=g10_cell, record=lambda j: (replace(j[0], purpose=""), *j[1:]))


def run(names: Sequence[str] | None = None, *, d: int | None = None, seeds: int = SEEDS,
        seed: int = SEED, store: str | Path | None = None, csv: str | Path | None = None,
        progress: bool | None = True, models: Sequence[str] = MODELS, n_jobs: int = 1) -> int:
    """Simulate the tasks of :func:`campaign` that the SQLite ``store`` lacks (default beside
    the CSV; it starts from the CSV and its keys file), then export every stored run to ``csv``
    (default: the committed CSV in a checkout, else the user cache). ``progress``: the run's
    progress on stderr. Returns the number of tasks run."""
    c = campaign(names, d=d, seeds=seeds, seed=seed, models=models)
    read, write = paths()
    csv_path = Path(csv) if csv is not None else write
    with Store(Path(store) if store is not None else write.with_suffix(".sqlite")) as st:
        for source in dict.fromkeys([csv_path, *(() if csv is not None else (read,))]):
            if source.exists():
                st.import_csv(c, source)
        out = run_campaign(c, st, n_jobs=n_jobs, progress=progress is not False)
        st.export_csv(c, csv_path)
    return out.ran


# ------------------------------------------------------------------------------------------------
# the report


def add_theory(points, finite_p: bool = False, progress: bool | None = None):
    """``theory`` (p = infinity) or ``theory_p`` (the finite-width closure of THEORY.md §10.6 at
    the simulated p) at every (setting, readout, alpha) of ``points`` (:func:`risk_readout`).
    ``progress``: a report per point on stderr (False: none)."""
    from asymptotics.core.progress import Progress
    from asymptotics.spiked.readouts import risk_readout

    cache: dict = {}
    out = []
    desc = "readout theory" + (" at p" if finite_p else "")
    with Progress(len(points), desc, unit="points", enabled=progress) as bar:
        for row in bar.iter(points.itertuples(index=False)):
            p = int(round(row.beta * row.d)) if finite_p else None
            key = (row.sigma, row.target, row.eta, row.alpha0, row.lam, row.beta, row.readout,
                   row.alpha, p)
            if key not in cache:
                cache[key] = risk_readout(row.alpha, readout=row.readout, sigma=row.sigma,
                                          target=row.target, alpha0=row.alpha0, eta=row.eta,
                                          lam=row.lam, beta=row.beta, p=p).risk
            out.append(cache[key])
    points = points.copy()
    points["theory_p" if finite_p else "theory"] = out
    return points


def summarize(runs, progress: bool | None = None):
    """One row per (setting, model, readout, d, alpha): seeds, mean, s.e., theory, z, gap
    (``progress``: the theory's progress on stderr)."""
    keys = ["name", "model", "readout", "sigma", "target", "eta", "alpha0", "lam", "beta", "d",
            "alpha"]
    g = runs.groupby(keys, sort=False).risk
    pts = g.agg(seeds="size", mean="mean", sd="std").reset_index()
    pts["se"] = pts.sd / np.sqrt(pts.seeds)
    pts = add_theory(pts, progress=progress)
    pts["z"] = (pts["mean"] - pts.theory) / pts.se
    pts["gap"] = (pts["mean"] - pts.theory) / pts.theory
    pts = add_theory(pts, finite_p=True, progress=progress)
    pts["z_p"] = (pts["mean"] - pts.theory_p) / pts.se
    return pts


def network_theory(points):
    """``theory_net``: the project's network theory of the constant readout
    (``asymptotics.risk(model="network")``, p = infinity) where ``readout == "constant"``, NaN
    elsewhere (it has no K-group counterpart): context for the network's departures."""
    import asymptotics as A

    cache: dict = {}
    out = []
    for row in points.itertuples(index=False):
        if row.readout != "constant":
            out.append(math.nan)
            continue
        key = (row.sigma, row.target, row.eta, row.alpha0, row.lam, row.beta, row.alpha)
        if key not in cache:
            cache[key] = A.risk(row.alpha, sigma=row.sigma, target=row.target,
                                alpha0=row.alpha0, eta=row.eta, lam=row.lam, beta=row.beta,
                                model="network").risk
        out.append(cache[key])
    points = points.copy()
    points["theory_net"] = out
    return points


def paired_differences(runs):
    """pm1 minus constant, per (setting, model, alpha), paired over repetitions (the two readouts
    of one repetition share the weights, the teacher and every sample stream)."""
    import pandas as pd

    keys = ["name", "model", "d", "alpha", "rep"]
    wide = runs.pivot_table(index=keys, columns="readout", values="risk").reset_index()
    wide = wide.dropna(subset=list(READOUTS))
    wide["diff"] = wide["pm1"] - wide["constant"]
    g = wide.groupby(["name", "model", "d", "alpha"], sort=False)["diff"]
    out = g.agg(seeds="size", mean="mean", sd="std").reset_index()
    out["se"] = out.sd / np.sqrt(out.seeds)
    return pd.DataFrame(out)


def _f(x: float, digits: int = 4) -> str:
    return "nan" if not np.isfinite(x) else f"{x:.{digits}f}"


def _d_scan(allpts) -> list[str]:
    """The points simulated at several d: mean ± s.e., the gap to the p = infinity theory and z
    against the finite-width theory at that d (THEORY.md §10.6)."""
    counts = allpts.groupby(["name", "readout", "model"]).d.nunique()
    keys = counts[counts > 1].index
    if len(keys) == 0:
        return []
    ds = sorted(allpts.d.unique())
    lines = ["", "## Dependence on d", "",
             "Network (and, where simulated, sRF) points at several d, p = d: mean ± s.e. "
             "(relative gap to the p = infinity theory; z against the theory at that p). A gap "
             "that shrinks like 1/d is a finite-size effect; one that stays is structural.", "",
             "| setting | readout | model | alpha | theory | "
             + " | ".join(f"d = {d}" for d in ds) + " |",
             "|---|---|---|---|---|" + "---|" * len(ds)]
    for name, readout, model in keys:
        sub = allpts[(allpts.name == name) & (allpts.readout == readout)
                     & (allpts.model == model)]
        for alpha, grp in sub.groupby("alpha"):
            cells = []
            for d in ds:
                r = grp[grp.d == d]
                cells.append("-" if r.empty else
                             f"{_f(r['mean'].iloc[0])} ± {_f(r.se.iloc[0])} "
                             f"({100 * r.gap.iloc[0]:+.1f}%, {r.z_p.iloc[0]:+.1f})")
            lines.append(f"| {name} | {readout} | {model} | {alpha:g} | "
                         f"{_f(grp.theory.iloc[0])} | " + " | ".join(cells) + " |")
    return lines


def notes_names(runs, allpts) -> dict:
    """What the discussion's placeholders and claims can use (:func:`validation.notes.render`):
    ``pts`` (the points at :data:`D`), ``allpts`` (every d), ``diffs`` (pm1 - constant, paired,
    with the theory's difference ``theory`` and ``z``), ``P(name, readout, model, alpha, d)``
    (one point), ``sub(name=..., readout=..., model=..., d=...)`` (a selection) and the
    formatting helpers of :mod:`validation.notes`."""
    from ..notes import num, pct, signed, span

    pts = allpts[allpts.d == D]
    diffs = paired_differences(runs[runs.d == D])
    th = pts.pivot_table(index=["name", "alpha"], columns="readout", values="theory",
                         aggfunc="first")
    diffs["theory"] = [float(th.loc[(n, a), "pm1"] - th.loc[(n, a), "constant"])
                       for n, a in zip(diffs.name, diffs.alpha, strict=True)]
    diffs["z"] = (diffs["mean"] - diffs.theory) / diffs.se

    def sub(frame=None, **eq):
        f = pts if frame is None else frame
        for col, v in eq.items():
            f = f[f[col].isin(v if isinstance(v, list | tuple) else [v])]
        return f

    def P(name: str, readout: str, model: str, alpha: float, d: int = D):
        return one_row(sub(allpts, name=name, readout=readout, model=model, alpha=alpha, d=d))

    names = dict(pts=pts, allpts=allpts, diffs=diffs, sub=sub, P=P, th=th, D=D, num=num,
                 pct=pct, signed=signed, span=span, np=np, math=math)
    for f in (len, min, max, abs, all, any, round, sorted, set, sum, int, float, str, zip):
        names[f.__name__] = f
    return names


def one_row(frame):
    if len(frame) != 1:
        raise ValueError(f"expected one point, got {len(frame)}")
    return frame.iloc[0]


def build_report(runs, progress: bool | None = None, allpts=None) -> str:
    """The text of READOUTS.md from the per-repetition rows (``progress``: the theory's;
    ``allpts``: :func:`summarize` with :func:`network_theory`, when computed already)."""
    if allpts is None:
        allpts = network_theory(summarize(runs, progress=progress))
    pts = allpts[allpts.d == D]
    lines = [
        "# One giant step with a finite-support readout: theory against Monte Carlo",
        "",
        "Generated by `python -m validation.spiked readouts report` from "
        "`validation/reports/data/readouts_runs.csv` (simulated by "
        "`python -m validation.spiked readouts run`; module `validation/spiked/readouts.py`). "
        "Theory: `asymptotics.risk_readout` (docs/THEORY.md §11, p = infinity), the K-group "
        "sRF model of the step. Two simulations per point: the trained network of THEORY.md §1 "
        "with `a0_j = eps_j/sqrt(p)`, `eps_j` i.i.d. (pm1: +-1 with probability 1/2; constant: "
        "1), and the K-group sRF model of the mapping (`validation/spiked/simulator.py`). "
        "Per repetition: one first layer, nested ridge batches along alpha, "
        "`n_test = max(10000, 2d)` test inputs. z = (mean - theory)/s.e.",
        "",
    ]
    d_vals = sorted(pts.d.unique())
    seeds = sorted(allpts.seeds.unique())
    hours = runs.drop_duplicates(["name", "model", "readout", "d", "rep"]).seconds.sum() / 3600
    others = sorted(set(allpts.d) - {D})
    lines += [f"d = {', '.join(map(str, d_vals))}"
              + (f" (the d-scan at d = {', '.join(map(str, others))} is its own section)"
                 if others else "")
              + ", beta = 1 (p = d), alpha0 = 2, lam = 0.01, "
              f"seeds per point: {', '.join(map(str, seeds))}. Simulation time: "
              f"{hours:.2f} hours of wall-clock summed over the repetitions (BLAS on at most "
              f"2 cores of a shared machine: at most {2 * hours:.2f} core-hours).", ""]
    lines += ["## Summary", "",
              "Theory at p = infinity; the last column counts the points within 3 s.e. of the "
              "finite-width theory at the simulated p (THEORY.md §10.6, each group's mean "
              "channel priced).", "",
              "| setting | readout | model | within 3 s.e. | median abs. rel. gap | "
              "max abs. rel. gap | within 3 s.e. (finite p) |", "|---|---|---|---|---|---|---|"]

    def _row(label: str, readout: str, model: str, grp) -> str:
        gaps = grp.gap.abs()
        return (f"| {label} | {readout} | {model} | {int((grp.z.abs() <= 3).sum())}/{len(grp)} | "
                f"{100 * gaps.median():.2f}% | {100 * gaps.max():.2f}% | "
                f"{int((grp.z_p.abs() <= 3).sum())}/{len(grp)} |")

    for (name, readout, model), grp in pts.groupby(["name", "readout", "model"], sort=False):
        lines.append(_row(name, readout, model, grp))
    for model in MODELS:
        lines.append(_row("**all**", "", model, pts[pts.model == model]))
    lines += ["", "## Points", "",
              "Theory: p = infinity; at p: the finite-width closure at the simulated p; "
              "network theory: `asymptotics.risk(model=\"network\")`, the project's theory of "
              "the trained network (constant readout only; z of the network against it in "
              "brackets).", "",
              "| setting | readout | alpha | theory | theory at p | network (z) | sRF (z) | "
              "network theory (z) |",
              "|---|---|---|---|---|---|---|---|"]
    for (name, readout, alpha), grp in pts.groupby(["name", "readout", "alpha"], sort=False):
        cells = {}
        for model in MODELS:
            r = grp[grp.model == model]
            cells[model] = ("-" if r.empty else
                            f"{_f(r['mean'].iloc[0])} ± {_f(r.se.iloc[0])} ({r.z.iloc[0]:+.1f})")
        net = grp[grp.model == "network"]
        tn = float(grp.theory_net.iloc[0])
        zn = ("-" if net.empty or not np.isfinite(tn) else
              f"{_f(tn)} ({(net['mean'].iloc[0] - tn) / net.se.iloc[0]:+.1f})")
        lines.append(f"| {name} | {readout} | {alpha:g} | {_f(grp.theory.iloc[0])} | "
                     f"{_f(grp.theory_p.iloc[0])} | {cells['network']} | {cells['srf']} | "
                     f"{zn} |")
    diffs = paired_differences(runs[runs.d == D])
    if not diffs.empty:
        th = pts.pivot_table(index=["name", "d", "alpha"], columns="readout",
                             values="theory", aggfunc="first")
        lines += ["", "## pm1 minus constant", "",
                  "The change of the risk from the constant to the pm1 readout, paired over "
                  "repetitions (both readouts of one repetition share `W0`, the teacher and "
                  "every sample stream), against the theory's difference.", "",
                  "| setting | alpha | theory | network (z) | sRF (z) |", "|---|---|---|---|---|"]
        for (name, d, alpha), grp in diffs.groupby(["name", "d", "alpha"], sort=False):
            t = th.loc[(name, d, alpha)]
            tdiff = round(float(t["pm1"] - t["constant"]), 10) + 0.0  # no "-0.0000"
            cells = {}
            for model in MODELS:
                r = grp[grp.model == model]
                if r.empty:
                    cells[model] = "-"
                    continue
                m, se = float(r["mean"].iloc[0]), float(r.se.iloc[0])
                z = (m - tdiff) / se if se > 0 else math.nan
                cells[model] = f"{m:+.4f} ± {se:.4f} ({z:+.1f})"
            lines.append(f"| {name} | {alpha:g} | {tdiff:+.4f} | {cells['network']} | "
                         f"{cells['srf']} |")
    if others:
        lines += _d_scan(allpts)
    lines += ["", "## Settings", ""]
    for c in SETTINGS:
        lines.append(f"- `{c.name}`: sigma = {c.sigma}, g = {c.target}, eta_tilde = {c.eta:g}"
                     + (f" ({c.purpose})" if c.purpose else ""))
    return "\n".join(lines) + "\n"


def write_report(out: str | Path | None = None, store: str | Path | None = None,
                 notes: str = "", figure: bool = True, progress: bool | None = None) -> Path:
    """Write READOUTS.md (``notes``: the discussion appended at the end, a template whose
    numbers and claims are computed from the points, :func:`notes_names`); ``figure``:
    show ``validation/reports/figures/readouts.png`` (``python -m figures.fig_readouts``);
    ``progress``: the theory's progress on stderr (False: none)."""
    runs = load(store)
    if runs.empty:
        raise ValueError(f"no runs in {store or STORE}; run `python -m validation.spiked readouts "
                         "run` first")
    allpts = network_theory(summarize(runs, progress=progress))
    text = build_report(runs, allpts=allpts)
    if figure:  # drawn by the figures layer (python -m figures.fig_readouts), not from here
        text += ("\n## Figure\n\nRisk vs alpha: theory (lines, p = infinity), network (filled "
                 "circles) and K-group sRF model (open squares), mean ± 1 s.e. Drawn from the "
                 "same rows by `python -m figures.fig_readouts` (`figures/fig_readouts.py`)."
                 "\n\n![risk vs alpha, constant vs pm1](figures/readouts.png)\n")
    if notes:
        from ..notes import render

        text += "\n" + render(notes, notes_names(runs, allpts), source="readouts_notes.md")
    from ..campaign.report import report_dir

    path = Path(out) if out is not None else report_dir(None) / REPORT.name
    path.write_text(text, encoding="utf-8")
    return path
