"""A direct Monte Carlo of the trained first layer against the rows' bulk with its outside scale
(:func:`asymptotics.network.rowvar.row_variance`, docs/DERIVATIONS.md §10): per group, the
bulk's variance along the learned direction ``Sig_vv = d Var(b.v)/c`` and the slope of the rows'
squared bulk norms on their spike coordinate ``lam = Cov(|b_i|^2, b_i.v)/Var(b_i.v)`` (v oriented
along the group's spike). A diagnostic simulation separate from the validation cells: its own
seeds (:data:`SEED0` + draw), the protocol of :mod:`validation.experiments.spectra_weights.steps`
(``train``), and the learned direction estimated from ``p`` shadow rows per readout value
trained on the same batches but not part of the layer (independent of its bulk; the mean rows
of ``W - W0`` are the campaign's estimator, reported beside).

    python -m validation.experiments.spectra_weights.rowvar [--store S.sqlite] [--quiet]

runs the draws as a :class:`validation.campaign.Campaign` (one task per (setting, d, seed),
keyed by the hash of its full record and :data:`VERSION`; a SQLite store beside the export or
``--store``, so a killed run resumes), exports the per-draw rows with exact cells and their
keys file to ``validation/reports/data/spectra_rowvar_draws.csv``, then derives from that export
the check table ``spectra_rowvar_check.csv`` (per (setting, d): means and s.e. over the draws and
the theory's columns, written whole, atomically; about 10 core-minutes from scratch, seconds
once the draws are stored). ``--batch``: two constant-readout steps at d = 1000 with p = 4000
rows (beta = 4, many rows for a small s.e.) at alpha0 = 2 and 20 (seeds :data:`BATCH_SEED0` +
draw), which separates the population map (exact at alpha0 -> infinity) from the batch noise's
terms: the draws in ``spectra_rowvar_batch_draws.csv``, the table ``spectra_rowvar_batch.csv``
(about 5 core-minutes)."""

from __future__ import annotations

import math
import os
import sys
from collections.abc import Callable
from functools import partial
from pathlib import Path

import numpy as np
import pandas as pd

from validation.campaign import Campaign, Schema
from validation.campaign.store import bad_store_arg
from validation.experiments.spectra_weights.cells import refresh
from validation.experiments.spectra_weights.steps import SETTINGS, train

ROOT = Path(__file__).resolve().parents[3]
DATA = ROOT / "validation" / "reports" / "data"
CSV = DATA / "spectra_rowvar_check.csv"
DRAWS_CSV = DATA / "spectra_rowvar_draws.csv"
COMMAND = "python -m validation.experiments.spectra_weights.rowvar"
VERSION = "1"  # the draws' protocol: raise it when a task computes something else
SEED0 = 7_000  # the draws' seeds are SEED0 + draw (the validation cells use 0..7)
DRAWS = {1000: 24, 2000: 6}
BATCH_CSV = DATA / "spectra_rowvar_batch.csv"
BATCH_DRAWS_CSV = DATA / "spectra_rowvar_batch_draws.csv"
BATCH_SEED0 = 9_100
BATCH = ((2.0, 8), (20.0, 6))  # (alpha0, draws) at d = 1000, p = 4000, two steps, tanh
BATCH_D, BATCH_P, BATCH_STEPS, BATCH_BLOCK = 1000, 4000, 2, 4000
#: the per-draw estimates (:func:`measure`), in the check table's order
QUANTITIES = ("sig_vv_shadow", "lam_shadow", "sig_vv_rows", "lam_rows")
DRAW_SCHEMA = Schema.of(setting=str, d=int, seed=int, **dict.fromkeys(QUANTITIES, float),
                        seconds=float)
BATCH_SCHEMA = Schema.of(alpha0=float, d=int, p=int, seed=int, lam=float, sig_vv=float,
                         seconds=float)


def batch_draw(d: int, p: int, alpha0: float, seed: int, steps: int = 2) -> tuple[float, float]:
    """(lam, Sig_vv) of one draw of the constant-readout protocol (tanh, target tanh(z1),
    eta_tilde = 1; the batch in blocks of 4000 samples; v the mean row of W - W0)."""
    n0 = int(alpha0 * d)
    rng = np.random.default_rng(seed)
    W0 = rng.standard_normal((p, d))
    W0 /= np.linalg.norm(W0, axis=1, keepdims=True)
    W = W0.copy()
    for _ in range(steps):
        G = np.zeros_like(W)
        for lo in range(0, n0, 4000):
            X = rng.standard_normal((min(4000, n0 - lo), d))
            H = X @ W.T
            e = np.tanh(X[:, 0]) - np.tanh(H).mean(axis=1)
            G += ((1.0 - np.tanh(H) ** 2) * e[:, None]).T @ X
        W = W + G / n0
    v = (W - W0).mean(axis=0)
    v /= np.linalg.norm(v)
    B = W - W.mean(axis=0)
    bv = (B @ v) * np.sign(W.mean(axis=0) @ v)
    ck = np.sum(B**2, axis=1)
    return (float(np.cov(ck, bv)[0, 1] / np.var(bv, ddof=1)),
            float(d * np.var(bv, ddof=1) / ck.mean()))


def measure(s, d: int, seed: int) -> dict:
    """Per draw: Sig_vv and lam averaged over the groups (v from the shadow rows and from the
    mean rows of W - W0)."""
    p = round(s.beta * d)
    _, W0, W, eps, (S0, S, seps) = train(s, d, seed, shadow=p)
    out = {}
    vals = np.unique(eps)[::-1]
    means = np.stack([(W - W0)[eps == v].mean(axis=0) for v in vals])
    v_rows = np.linalg.svd(means.T, full_matrices=False)[0][:, 0]
    sh = np.stack([(S - S0)[seps == v].mean(axis=0) for v in vals])
    v_sh = np.linalg.svd(sh.T, full_matrices=False)[0][:, 0]
    for tag, v in (("shadow", v_sh), ("rows", v_rows)):
        svv, lam = [], []
        for gi, val in enumerate(vals):
            rows = eps == val
            B = W[rows] - W[rows].mean(axis=0)
            u = v * np.sign(sh[gi] @ v)  # along the group's spike
            bv, ck = B @ u, np.sum(B**2, axis=1)
            svv.append(d * np.var(bv, ddof=1) / np.mean(ck))
            lam.append(np.cov(ck, bv)[0, 1] / np.var(bv, ddof=1))
        out[f"sig_vv_{tag}"] = float(np.mean(svv))
        out[f"lam_{tag}"] = float(np.mean(lam))
    return out


# -- the campaigns: one task per draw ------------------------------------------------------------


def _draw_task(job: tuple) -> list[dict]:
    """One draw of the check: ``job = (setting, d, seed)``."""
    import time

    s, d, seed = job
    t0 = time.perf_counter()
    out = measure(s, d, seed)
    return [dict(setting=s.name, d=d, seed=seed, **out, seconds=time.perf_counter() - t0)]


def _draw_record(job: tuple) -> dict:
    """A draw's parameter record: every field of the setting, d, the seed and the shadow rows."""
    s, d, seed = job
    return {"setting": s, "d": d, "seed": seed, "shadow": round(s.beta * d)}


def _draw_rank(names: tuple, row: dict) -> tuple:
    """The export's order: the settings' order, then d, then the seed."""
    return (names.index(row["setting"]) if row["setting"] in names else len(names), row["d"],
            row["seed"])


def draw_campaign(settings=SETTINGS, draws: dict[int, int] | None = None,
                  seed0: int = SEED0) -> Campaign:
    """The check's draws: one task per (setting, d, seed ``seed0 + i``, ``i < draws[d]``);
    exported with exact cells (the table derived from the export is the one from the run)."""
    draws = DRAWS if draws is None else draws
    jobs = tuple((s, d, seed0 + i) for s in settings for d, n in draws.items() for i in range(n))
    return Campaign("spectra_rowvar_draws", jobs, _draw_task, DRAW_SCHEMA,
                    key_columns=("setting", "d", "seed"), key=lambda j: (j[0].name, j[1], j[2]),
                    version=VERSION, record=_draw_record,
                    rank=partial(_draw_rank, tuple(s.name for s in settings)))


def _batch_task(job: tuple) -> list[dict]:
    """One draw of the batch check: ``job = (alpha0, d, p, steps, seed)``."""
    import time

    alpha0, d, p, steps, seed = job
    t0 = time.perf_counter()
    lam, svv = batch_draw(d, p, alpha0, seed, steps=steps)
    return [dict(alpha0=alpha0, d=d, p=p, seed=seed, lam=lam, sig_vv=svv,
                 seconds=time.perf_counter() - t0)]


def _batch_record(job: tuple) -> dict:
    alpha0, d, p, steps, seed = job
    return {"alpha0": alpha0, "d": d, "p": p, "steps": steps, "seed": seed, "sigma": "tanh",
            "target": "tanh(z1)", "eta": 1.0, "block": BATCH_BLOCK}


def batch_campaign(batch=BATCH, d: int = BATCH_D, p: int = BATCH_P,
                   seed0: int = BATCH_SEED0) -> Campaign:
    """The batch check's draws: one task per (alpha0, seed ``seed0 + i``, ``i < draws``)."""
    jobs = tuple((float(a), d, p, BATCH_STEPS, seed0 + i) for a, n in batch for i in range(n))
    return Campaign("spectra_rowvar_batch_draws", jobs, _batch_task, BATCH_SCHEMA,
                    key_columns=("alpha0", "d", "p", "seed"),
                    key=lambda j: (j[0], j[1], j[2], j[4]),
                    version=VERSION, record=_batch_record)


# -- the derived tables ---------------------------------------------------------------------------


def setting_theory(s) -> dict:
    """The theory's columns of a setting: ``Sig_vv`` with the scale's coupling and the route's,
    and the slope along each group's spike, averaged over the groups (THEORY.md §16.9)."""
    from asymptotics.network.groups import network_groups
    from asymptotics.network.rowvar import row_variance

    rv = row_variance(s.sigma, s.target, steps=s.steps, alpha0=s.alpha0, eta=s.eta,
                      readout=s.readout)
    L = network_groups(s.sigma, s.target, steps=s.steps, alpha0=s.alpha0, eta=s.eta,
                       readout=s.readout).states[-1].spiked_model()[0]
    return dict(sig_vv_theory=float(rv.sig[:, 0, 0].mean()),
                sig_vv_route=float(rv.sig_route[:, 0, 0].mean()),
                lam_theory=float(np.mean(rv.slope[:, 0] * np.sign(L[:, 0]))))


def batch_theory(alpha0: float) -> dict:
    """The theory's columns of the batch check at ``alpha0`` (the slope along the spike: the
    loading is negative on the model's V, THEORY.md §16.9)."""
    from asymptotics.network.groups import network_groups
    from asymptotics.network.rowvar import row_variance

    rv = row_variance("tanh", "tanh(z1)", steps=BATCH_STEPS, alpha0=alpha0, eta=1.0)
    L = network_groups("tanh", "tanh(z1)", steps=BATCH_STEPS, alpha0=alpha0,
                       eta=1.0).states[-1].spiked_model()[0]
    return dict(lam_theory=float(rv.slope[0, 0] * np.sign(L[0, 0])),
                sig_vv_theory=float(rv.sig[0, 0, 0]), sig_vv_route=float(rv.sig_route[0, 0, 0]))


def _mean_se(x: np.ndarray) -> tuple[float, float]:
    return float(x.mean()), float(x.std(ddof=1) / math.sqrt(len(x)))


def check_table(draws: pd.DataFrame, c: Campaign, theory: Callable[[object], dict]) -> pd.DataFrame:
    """The check table from the per-draw rows of ``c``'s plan: per (setting, d), the number of
    draws, the first seed, ``theory(setting)``'s columns, the mean and s.e. of each of
    :data:`QUANTITIES` over the draws (in the seeds' order) and the draws' seconds summed.
    ``ValueError`` when a draw of the plan is missing."""
    cells: dict[tuple, list] = {}
    for s, d, seed in c.settings:
        cells.setdefault((s, d), []).append(seed)
    rows, memo = [], {}
    for (s, d), seeds in cells.items():
        g = draws[(draws.setting == s.name) & (draws.d == d)].set_index("seed")
        missing = sorted(set(seeds) - set(g.index))
        if missing:
            raise ValueError(f"{s.name}, d = {d}: draws {missing} are not stored; run {COMMAND}")
        g = g.loc[seeds]
        if s.name not in memo:
            memo[s.name] = theory(s)
        row = dict(setting=s.name, d=d, draws=len(seeds), seed0=min(seeds), **memo[s.name])
        for key in QUANTITIES:
            row[key], row[f"{key}_se"] = _mean_se(g[key].to_numpy(float))
        row["seconds"] = float(g.seconds.sum())
        rows.append(row)
    return pd.DataFrame(rows)


def batch_table(draws: pd.DataFrame, c: Campaign,
                theory: Callable[[float], dict]) -> pd.DataFrame:
    """The batch check's table from the per-draw rows of ``c``'s plan: per alpha0, the means
    and s.e. of the slope and ``Sig_vv`` and ``theory(alpha0)``'s columns."""
    cells: dict[tuple, list] = {}
    for alpha0, d, p, _, seed in c.settings:
        cells.setdefault((alpha0, d, p), []).append(seed)
    rows = []
    for (alpha0, d, p), seeds in cells.items():
        g = draws[(draws.alpha0 == alpha0) & (draws.d == d) & (draws.p == p)].set_index("seed")
        missing = sorted(set(seeds) - set(g.index))
        if missing:
            raise ValueError(f"alpha0 = {alpha0:g}: draws {missing} are not stored; run "
                             f"{COMMAND} --batch")
        g = g.loc[seeds]
        th = theory(alpha0)
        lam, lam_se = _mean_se(g.lam.to_numpy(float))
        svv, svv_se = _mean_se(g.sig_vv.to_numpy(float))
        rows.append(dict(alpha0=alpha0, d=d, p=p, draws=len(seeds), seed0=min(seeds), lam=lam,
                         lam_se=lam_se, lam_theory=th["lam_theory"], sig_vv=svv,
                         sig_vv_se=svv_se, sig_vv_theory=th["sig_vv_theory"],
                         sig_vv_route=th["sig_vv_route"], seconds=float(g.seconds.sum())))
    return pd.DataFrame(rows)


def write_table(df: pd.DataFrame, path: Path) -> Path:
    """Write a derived table whole, atomically (a temporary file renamed over ``path``), with
    ``%.10g`` cells."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    df.to_csv(tmp, index=False, float_format="%.10g")
    os.replace(tmp, path)
    return path


def _derive(c: Campaign, draws_csv: Path, table: Callable, theory: Callable, out: Path) -> Path:
    """The table ``out`` derived from the store's export ``draws_csv`` of campaign ``c``."""
    from validation.paths import data_file

    return write_table(table(pd.read_csv(draws_csv), c, theory),
                       data_file(out, "validation", "reports", "data")[1])


def run(*, store: str | Path | None = None, quiet: bool = False) -> Path:
    """Run the check's draws the store lacks, export them, derive the check table; returns its
    path."""
    c = draw_campaign()
    out = _derive(c, refresh(c, DRAWS_CSV, store=store, quiet=quiet), check_table,
                  setting_theory, CSV)
    if not quiet:
        for r in pd.read_csv(out).itertuples():
            print(f"{r.setting} d={r.d}: Sig_vv {r.sig_vv_shadow:.4f} +- {r.sig_vv_shadow_se:.4f} "
                  f"(theory {r.sig_vv_theory:.4f}, route {r.sig_vv_route:.4f}); lam "
                  f"{r.lam_shadow:.4f} +- {r.lam_shadow_se:.4f} (theory {r.lam_theory:.4f}) "
                  f"[{r.seconds:.0f} s]", file=sys.stderr, flush=True)
    return out


def run_batch(*, store: str | Path | None = None, quiet: bool = False) -> Path:
    """Run the batch check's draws the store lacks, export them, derive its table."""
    c = batch_campaign()
    out = _derive(c, refresh(c, BATCH_DRAWS_CSV, store=store, quiet=quiet), batch_table,
                  batch_theory, BATCH_CSV)
    if not quiet:
        print(pd.read_csv(out).to_string(index=False), file=sys.stderr, flush=True)
    return out


def main(argv: list[str] | None = None) -> int:
    from asymptotics.cli.common import Parser, add_quiet, apply_quiet

    parser = Parser(prog=COMMAND, description=" ".join(__doc__.split("\n\n")[0].split()))
    parser.add_argument("--batch", action="store_true",
                        help="the alpha0 = 2 and 20 check at p = 4000 (spectra_rowvar_batch.csv)")
    parser.add_argument("--store", default=None,
                        help="the SQLite store (.sqlite; default beside the exported draws)")
    add_quiet(parser)
    args = parser.parse_args(argv)
    if bad_store_arg(args.store):
        return 2
    quiet = apply_quiet(args)
    print((run_batch if args.batch else run)(store=args.store, quiet=quiet))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
