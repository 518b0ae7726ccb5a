"""The predicted spectra (:func:`asymptotics.spectrum`, docs/THEORY.md §16) against Monte Carlo
of the trained network and of its sRF surrogate: bulk Kolmogorov distances, the outliers'
locations and squared overlaps (mean over draws, standard error, z = (sim - theory)/s.e.).

    python -m validation.experiments.spectra_theory [--quick] [--large] [--store FILE.sqlite]
        [--onestep] [--report-only] [--quiet]

The simulation is a :class:`validation.campaign.Campaign` (:func:`campaign`: one task per
(setting, d) cell, keyed by its full parameter record -- every field of the setting, d, the
number of draws, the theory's models and :data:`VERSION`), run into a SQLite store (``--store``;
default beside the exported CSV: ``validation/reports/data/spectra_theory.sqlite`` in a
checkout, else the user cache, :func:`validation.paths.data_file`) that starts from the
committed CSV and its keys file, so stored cells are not rerun; every stored cell is exported,
in the settings' order then d, atomically to ``spectra_theory.csv`` with its keys file, and the
report ``validation/reports/SPECTRA_THEORY.md`` is written from that CSV (full mode: about 8
core-minutes; ``--large``: the first setting at d = 4000 too, and the two-step one with 3
draws, ~20 core-minutes more).
``--report-only`` rewrites the report from the CSV; ``--quick`` prints the report of d = 1000
with 2 draws and writes nothing."""

from __future__ import annotations

import math
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from asymptotics import spectrum, srf_mapping
from validation.campaign import Campaign, Schema, Store, refresh_csv, run_campaign
from validation.campaign.store import bad_store_arg
from validation.experiments import spectra_sim
from validation.experiments.spectra_sim import kolmogorov, simulate_network, simulate_srf

ROOT = Path(__file__).resolve().parents[2]
CSV = ROOT / "validation" / "reports" / "data" / "spectra_theory.csv"
REPORT = ROOT / "validation" / "reports" / "SPECTRA_THEORY.md"
ONESTEP_DATA = ROOT / "validation" / "reports" / "data" / "spectra_onestep.csv"
ONESTEP_CSV = ROOT / "validation" / "reports" / "data" / "spectra_theory_onestep.csv"
#: Gauss-Hermite groups standing for the Gaussian initial readout of the eta ~ p^(1/2 + a) runs
READOUT_GROUPS = 6
COMMAND = "python -m validation.experiments.spectra_theory"
#: the protocol's version (part of every task's key): raise it when a cell's rows change
VERSION = "1"
#: the committed CSV's columns
SCHEMA = Schema.of(setting=str, simulated=str, sim=float, d=int, of=str, model=str, seeds=int,
                   sigma=str, target=str, beta=float, alpha=float, alpha0=float, eta=float,
                   steps=int, quantity=str, theory=float, se=float, worst=float, seconds=float)


@dataclass(frozen=True)
class Setting:
    """One comparison: the simulated object (``sim``: 'network' or 'srf'), its parameters and
    the models of the theory for the features and the weights."""

    name: str
    sim: str
    sigma: str = "tanh"
    target: str = "tanh"
    beta: float = 0.5
    alpha: float = 4.0
    alpha0: float = 2.0
    eta: float = 1.0
    steps: int = 1
    weights_model: str | None = "network"
    dims: tuple = (1000, 2000)
    seeds: dict = field(default_factory=lambda: {1000: 6, 2000: 3, 4000: 5})


SETTINGS = (
    Setting("network, one step", "network"),
    Setting("network, one step, n < p, small batch", "network", beta=1.0, alpha=0.5,
            alpha0=0.5, eta=2.0),
    Setting("network, relu, one step", "network", sigma="relu", target="relu", alpha=2.0,
            alpha0=1.0),
    Setting("network, two steps", "network", target="tanh(z1)", steps=2, weights_model=None),
    Setting("sRF surrogate", "srf", alpha=2.0, eta=2.0, weights_model="srf"),
    Setting("random features, relu", "srf", sigma="relu", target="relu", alpha=2.0, eta=0.0,
            weights_model="rf"),
)


def features_models(s: Setting) -> tuple[str, ...]:
    """The features' theories, the one the setting checks first: the network's law for the
    simulated network (``model=None``, the default: one step, and several steps, docs/THEORY.md
    §16.8) with, after several steps, the K-group sRF surrogate beside it (rows not counted in
    the summary's totals, counted on a line of their own); sRF for the simulated surrogate, rf
    at eta 0."""
    if s.eta == 0.0:
        return ("rf",)
    if s.sim != "network":
        return ("srf",)
    return ("network",) if s.steps == 1 else ("network", "srf")


def features_model(s: Setting) -> str:
    """The features' theory the setting checks (the first of :func:`features_models`)."""
    return features_models(s)[0]


def _theory(s: Setting, of: str, d: int, model: str | None = None):
    if model is None:
        model = features_model(s) if of == "features" else "rf" if s.eta == 0.0 \
            else s.weights_model
    return spectrum(of, alpha=s.alpha, sigma=s.sigma, target=s.target, alpha0=s.alpha0,
                    eta=s.eta, beta=s.beta, steps=s.steps, model=model, d=d)


def _draw(s: Setting, d: int, seed: int):
    if s.sim == "network":
        tg = s.target if s.steps == 1 else s.target.replace("(z1)", "")
        return simulate_network(sigma=s.sigma, target=tg, d=d, beta=s.beta, alpha=s.alpha,
                                alpha0=s.alpha0, eta=s.eta, seed=seed, steps=s.steps)
    sp = srf_mapping(s.sigma, s.target, alpha0=s.alpha0, eta=s.eta)
    return simulate_srf(sigma=s.sigma, r=sp.r, c=sp.c, gamma=sp.gamma, d=d, beta=s.beta,
                        alpha=s.alpha, seed=seed)


def _rows(s: Setting, d: int, n_seeds: int) -> list[dict]:
    """The rows of one (setting, d) cell with ``n_seeds`` draws: per matrix, the bulk's
    Kolmogorov distance, its edge, each predicted outlier and its overlaps."""
    rows = []
    t0 = time.time()
    laws = [("features", _theory(s, "features", d, m)) for m in features_models(s)]
    if s.weights_model is not None:
        laws.append(("weights", _theory(s, "weights", d)))
    draws = [_draw(s, d, seed) for seed in range(n_seeds)]
    for of, law in laws:
        eig = [dr.f_eig if of == "features" else dr.w_eig for dr in draws]
        ovs = [dr.f_overlaps if of == "features" else dr.w_overlaps for dr in draws]
        k = len(law.outliers)
        ks = [kolmogorov(e, law.cdf, k) for e in eig]
        base = dict(setting=s.name, simulated=s.sim, d=d, of=of, model=law.model,
                    seeds=n_seeds, sigma=s.sigma, target=s.target, beta=s.beta,
                    alpha=s.alpha, alpha0=s.alpha0, eta=s.eta, steps=s.steps)
        rows.append(dict(base, quantity="KS bulk", theory=0.0, sim=float(np.mean(ks)),
                         se=float(np.std(ks, ddof=1) / math.sqrt(n_seeds)),
                         worst=float(np.max(ks))))
        nxt = [np.sort(e)[-k - 1] for e in eig]
        rows.append(dict(base, quantity="bulk edge (largest bulk eigenvalue)",
                         theory=law.edge, **_stat(nxt)))
        for i, o in enumerate(law.outliers):
            vals = [np.sort(e)[-1 - i] for e in eig]
            rows.append(dict(base, quantity=f"outlier {i + 1} ({o.channel})",
                             theory=o.location, **_stat(vals)))
            for name, val in o.overlaps.items():
                # the weights' learned 1 is the population direction; the driver's v_hat
                # (unit mean row of W1 - W0) beside it, an extra row not counted in the summary
                extra = [name + " (v_hat)"] if name + " (v_hat)" in ovs[0] else []
                for sim_name in [name] * (name in ovs[0]) + extra:
                    sims = [ov[sim_name][i] for ov in ovs]
                    rows.append(dict(base, quantity=f"outlier {i + 1}: overlap {sim_name}",
                                     theory=val, **_stat(sims)))
    for r in rows:
        r["seconds"] = time.time() - t0
    return rows


def _task(job: tuple[Setting, int, int]) -> list[dict]:
    return _rows(*job)


def _record(job: tuple[Setting, int, int]) -> dict:
    """A task's parameter record: every field of the setting, d, the number of draws and the
    models of the theory (features, weights)."""
    s, d, n_seeds = job
    out = {"setting": s, "d": d, "draws": n_seeds,
           "features_model": ", ".join(features_models(s)),
           "weights_model": None if s.weights_model is None else
           "rf" if s.eta == 0.0 else s.weights_model}
    if s.sim == "network" and s.steps == 1 and out["weights_model"] is not None:
        # the simulated weights' learned direction (spectra_sim.population_direction), v_hat
        # beside it: only the cells whose rows it changes rerun
        out["weights_learned"] = "v_pop, v_hat"
    return out


def _rank(row: dict) -> tuple:
    """The export's order of the tasks: the settings' order in :data:`SETTINGS`, then d."""
    names = [s.name for s in SETTINGS]
    return (names.index(row["setting"]) if row["setting"] in names else len(names), row["d"])


def _cell(v: object) -> str:
    from validation.protocol.rows import exact_or_empty_cell

    return exact_or_empty_cell(v)


def plan(quick: bool = False, large: bool = False) -> list[tuple[Setting, int, int]]:
    """The (setting, d, draws) cells: every setting at its dims (``quick``: d = 1000 only, 2
    draws), and with ``large`` the first setting at d = 4000 and the two-step one (3 draws)."""
    jobs = [(s, d, 2 if quick else s.seeds[d]) for s in SETTINGS for d in s.dims
            if not (quick and d > 1000)]
    if large and not quick:
        jobs += [(SETTINGS[0], 4000, SETTINGS[0].seeds[4000]), (SETTINGS[3], 4000, 3)]
    return jobs


def campaign(quick: bool = False, large: bool = False) -> Campaign:
    """One task per (setting, d) cell of :func:`plan`, keyed by its parameter record
    (:func:`_record`) and :data:`VERSION`; exported in the settings' order (:func:`_rank`)."""
    return Campaign("spectra_theory", tuple(plan(quick, large)), _task, SCHEMA,
                    key_columns=("setting", "d"), key=lambda j: (j[0].name, j[1]),
                    cell=_cell, version=VERSION, record=_record, rank=_rank)


#: the committed campaign: every setting at its dims and the first one at d = 4000
COMMITTED = dict(large=True)


def paths() -> tuple[Path, Path]:
    """``(read, write)`` of the CSV (:func:`validation.paths.data_file`)."""
    from validation.paths import data_file

    return data_file(CSV, "validation", "reports", "data")


def run(large: bool = False, *, store: str | Path | None = None, quiet: bool = False) -> Path:
    """Run the cells of :func:`campaign` the store lacks and export every stored cell to the
    CSV (module docstring); returns the CSV written."""
    c = campaign(large=large)
    read, write = paths()
    refresh_csv(c, read, write, store=store, progress=not quiet)
    return write


def quick_rows(quiet: bool = False) -> list[dict]:
    """The rows of the quick plan (d = 1000, 2 draws), computed in an in-memory store."""
    c = campaign(quick=True)
    with Store(None) as st:
        run_campaign(c, st, progress=not quiet)
        return st.frame(c).to_dict("records")


def onestep_rows(groups: int = READOUT_GROUPS) -> list[dict]:
    """The features' outliers after one step with eta = eta_tilde p^(1/2 + a) and a Gaussian
    readout at the simulated d (validation/reports/SPECTRA.md, section 1), predicted by the
    K-group features theory: the readout as ``groups`` Gauss-Hermite values, eta_tilde
    p^(a - 1/2) in the units of the protocol, sigma centred by E sigma(z) as the simulation
    centres the features; singular values of F/sqrt(n) (F^T F/p eigenvalues times p/n)."""
    import pandas as pd

    from asymptotics.coefficients.functions import get_function
    from asymptotics.coefficients.quadrature import gauss_hermite

    data = pd.read_csv(ONESTEP_DATA)
    z, w = gauss_hermite(160)
    out = []
    g, wg = gauss_hermite(groups)
    readout = {float(v): float(q) for v, q in zip(g, wg, strict=True)}
    for _, r in data.iterrows():
        mu0 = float(np.sum(w * get_function(r.sigma)(z)))
        law = spectrum("features", alpha=r.n / r.d, beta=r.beta, alpha0=r.alpha0,
                       eta=r.eta1 * r.p ** (r.a1 - 0.5), sigma=f"{r.sigma} - {mu0!r}",
                       target="z" if r.target == "z1" else r.target, readout=readout, d=r.d)
        scale = r.p / r.n
        sv = [math.sqrt(o.location * scale) for o in law.outliers]
        out.append(dict(d=int(r.d), a=r.a1, eta1=r.eta1, measured=int(r.feature_outliers),
                        asymptotic=int(r.predicted), predicted=len(sv),
                        threshold=r.feature_threshold, edge=math.sqrt(law.edge * scale),
                        fsv1=r.fsv1, fsv2=r.fsv2, sv1=sv[0] if sv else math.nan,
                        sv2=sv[1] if len(sv) > 1 else math.nan,
                        sv3=sv[2] if len(sv) > 2 else math.nan, groups=groups))
    return out


def onestep_section() -> list[str]:
    """The report's section of :func:`onestep_rows` (from its committed CSV)."""
    import pandas as pd

    if not ONESTEP_CSV.exists():
        return []
    df = pd.read_csv(ONESTEP_CSV)
    agree = int((df.measured == df.predicted).sum())
    agree_asym = int((df.measured == df.asymptotic).sum())
    out = ["## Outliers at the simulated d: one step, eta ~ p^(1/2 + a)", "",
           "The features' outliers of `validation/reports/SPECTRA.md` section 1 (one draw each, "
           "`sigma = tanh(z+0.5)` centred, Gaussian readout, `eta = eta_tilde p^(1/2 + a)`, "
           "beta = 0.5, alpha0 = alpha = 1, d = 2000) against the K-group features theory at "
           f"that d (the readout as {int(df.groups.iloc[0])} Gauss-Hermite groups; 8 give the "
           "same counts). Singular values of `(sigma(X W^T) - E sigma)/sqrt(n)`; `measured` "
           "counts those above the simulation's fitted edge (`threshold`), `asymptotic` is "
           "`#{l >= 1: a > (l-1)/(2l)}`.", "",
           "| a | eta_tilde | measured | predicted at d | asymptotic | threshold (sim) | "
           "edge (theory) | sv1 sim / theory | sv2 sim / theory | sv3 theory |",
           "|---|---|---|---|---|---|---|---|---|---|"]
    for _, r in df.iterrows():
        out.append(f"| {r.a:g} | {r.eta1:g} | {int(r.measured)} | {int(r.predicted)} | "
                   f"{int(r.asymptotic)} | "
                   f"{r.threshold:.3f} | {r.edge:.3f} | {r.fsv1:.3f} / {r.sv1:.3f} | "
                   f"{r.fsv2:.3f} / {r.sv2:.3f} | {r.sv3:.3f} |")
    out += ["", f"The count predicted at d agrees with the measured one in {agree} of {len(df)} "
            f"rows (the asymptotic count in {agree_asym}). Of the two misses, one predicted "
            "outlier sits between the theory's edge and the simulation's threshold, which "
            "keeps a margin of two local spacings (a = 0.3, eta_tilde = 2: 1.214 against 1.228), "
            "the other above it (a = 0.42, eta_tilde = 2: 1.306 against 1.200) and is not seen "
            "in the one draw. The leading singular value is predicted 2-4% above the "
            "simulated one.", ""]
    return out


def _stat(v: list) -> dict:
    v = np.asarray(v, dtype=float)
    se = float(np.std(v, ddof=1) / math.sqrt(v.size)) if v.size > 1 else math.nan
    return dict(sim=float(v.mean()), se=se, worst=float(np.max(v)))


def report(rows: list[dict]) -> str:
    import pandas as pd

    df = pd.DataFrame(rows)
    if "simulated" not in df:  # the first export named the column "sim" twice
        df["simulated"] = [next(s.sim for s in SETTINGS if s.name == n) for n in df.setting]
    out = ["# Predicted spectra against simulation", "",
           f"Generated by `{COMMAND}` (raw rows: `validation/reports/data/spectra_theory.csv`; "
           "theory: `asymptotics.spectrum`, docs/THEORY.md §16). Matrices: `F^T F` (p x p, "
           "F = sigma(X W^T)/sqrt(p) on n = alpha d fresh inputs) and `W W^T` (the squared "
           "singular values of the first layer). `sim` is the mean over the draws, `se` its "
           "standard error, `z = (sim - theory)/se`; `KS bulk` is the Kolmogorov distance "
           "between the predicted law (atom included) and the eigenvalues without the predicted "
           "outliers (mean, and worst draw). The theory of the features is the model named: for "
           "the simulated network the network's law (`network`, the default `model=None`: after "
           "one step docs/THEORY.md §16.1, after two steps §16.8), with after two steps the "
           "K-group sRF surrogate's law beside it (`srf`: rows not counted in the summary's "
           "totals, counted on a line of their own); for the simulated sRF model its own law "
           "(`srf`), for random features `rf`; of the weights, likewise. The "
           "bulk edge row compares the predicted edge with the largest non-outlier eigenvalue, "
           "which sits O(p^(-2/3)) below it (Tracy-Widom): no z there.", ""]
    for name, g in df.groupby("setting", sort=False):
        r0 = g.iloc[0]
        out += [f"## {name}", "",
                f"sigma = {r0.sigma}, target = {r0.target}, beta = {r0.beta:g}, alpha = "
                f"{r0.alpha:g}, alpha0 = {r0.alpha0:g}, eta_tilde = {r0.eta:g}, steps = "
                f"{r0.steps}; simulated: {r0.simulated}.", "",
                "| d | seeds | matrix | model | quantity | theory | sim | sim - theory | se | z "
                "| worst |",
                "|---|---|---|---|---|---|---|---|---|---|---|"]
        for _, r in g.iterrows():
            zok = r.quantity.startswith("outlier") and r.se > 0
            z = (r.sim - r.theory) / r.se if zok else math.nan
            diff = "" if r.quantity == "KS bulk" else f"{r.sim - r.theory:+.3g}"
            out.append(f"| {r.d} | {r.seeds} | {r['of']} | {r.model} | {r.quantity} | "
                       f"{r.theory:.4g} | {r.sim:.4g} | {diff} | {r.se:.2g} | "
                       f"{'' if math.isnan(z) else f'{z:+.1f}'} | {r.worst:.4g} |")
        out.append("")
    out += onestep_section()
    from validation.experiments.spectra_weights.steps import section as steps_section

    out += steps_section()  # the weights after several steps (their own CSV)
    from validation.experiments.spectra_weights.notes import section as notes_section

    out += notes_section()  # their notes: Sig_vv, theta, the learned span's estimator
    from validation.experiments.spectra_weights.estimator import section as estimator_section

    out += estimator_section()  # the learned span's estimator where the spike is known
    from validation.experiments.spectra_weights.features import section as features_section

    out += features_section()  # the features after several steps (their own CSV)
    out += spectra_sim.overlap_scan_section()
    from validation.experiments.spectra_weights.summary import summary

    out += summary(df, {s.name: features_model(s) for s in SETTINGS})
    return "\n".join(out + [""])


def write_onestep(path: Path = ONESTEP_CSV) -> Path:
    """The table of :func:`onestep_rows` (derived from ``spectra_onestep.csv`` by the theory, no
    simulation), written whole and atomically."""
    import pandas as pd

    tmp = path.with_name(path.name + ".tmp")
    pd.DataFrame(onestep_rows()).to_csv(tmp, index=False)
    os.replace(tmp, path)
    return path


def build_parser():
    from asymptotics.cli.common import Parser, add_quiet

    parser = Parser(prog=COMMAND, description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="d = 1000 only, 2 draws; print the report, write no files")
    parser.add_argument("--large", action="store_true",
                        help="add the first setting at d = 4000 (5 draws) and the two-step one (3 "
                             "draws; ~20 core-minutes) to the campaign and rewrite the report")
    parser.add_argument("--store", default=None,
                        help="the SQLite store (.sqlite; default beside the exported CSV)")
    parser.add_argument("--onestep", action="store_true",
                        help="predict the outliers of SPECTRA.md's one-step features at the "
                             "simulated d (~2 core-minutes) and rewrite the report")
    parser.add_argument("--report-only", action="store_true",
                        help="rewrite SPECTRA_THEORY.md from the committed CSV (no simulation)")
    add_quiet(parser)
    return parser


def main(argv: list[str] | None = None) -> int:
    import pandas as pd

    from asymptotics.cli.common import apply_quiet

    args = build_parser().parse_args(argv)
    if bad_store_arg(args.store):
        return 2
    quiet = apply_quiet(args)
    if args.onestep:
        write_onestep()
        args.report_only = True
    if args.report_only:
        REPORT.write_text(report(pd.read_csv(paths()[0]).to_dict("records")) + "\n")
        return 0
    if args.quick:
        print(report(quick_rows(quiet=quiet)))
        return 0
    out = run(large=args.large, store=args.store, quiet=quiet)
    text = report(pd.read_csv(out).to_dict("records"))
    REPORT.write_text(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
