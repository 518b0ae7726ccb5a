"""Test error after T = 0..3 giant steps with fresh batches, at large d, with the statistics a
population theory of the steps predicts (per readout group: mean projections on the target,
bulk variance, Gram matrix of the group means): Monte Carlo ground truth to compare with it.

``python -m validation.multistep.risk [--quick] [--force] [--budget S]
[--big-d-seeds N] [--summary]``: runs what the data lack (one task per repetition, a SQLite store
beside the CSV, resumable; a progress line per repetition, also when the output is not a terminal),
exports ``validation/reports/data/multistep_risk.csv`` (``--quick``: small sizes,
``multistep_risk_quick.csv``) after every (setting, d) block, so that an interrupted run leaves
usable data; ``--summary`` prints mean +- standard error over seeds of the test error per
setting, d, step and ridge size, and of the main group statistics per setting, d and step, from
the CSV, and simulates nothing.

Settings (all: ``sigma = erf(z-1)``, ``beta = 1`` (``p = d``), ``T = 3`` steps, ``delta = 0``,
``lam = 0.01``, ridge sizes ``alpha_r = 0.5, 2, 4`` (the first ``round(alpha_r d)`` samples of one
pool), ``n_test = 10000``; conventions of :mod:`validation.multistep.simulator`: ``n = alpha0 d``
fresh
samples per step, ``eta_t = eta_tilde_t p``, readout ``+-1/sqrt p`` halves (hypercube) or
``1/sqrt p`` (constant), never trained by the steps):

====  =============================  =========  ======  ==========
name  target                         readout    alpha0  eta_tilde
====  =============================  =========  ======  ==========
A     z1 + z1*z2                     hypercube  16      2, 8, 16
B     z1 + z1*z2 + z1*z2*z3          hypercube  16      2, 8, 16
C     tanh(z1) + z1*z2               hypercube  16      2, 8, 16
D     z1 + z1*z2                     constant   16      2, 8, 16
E     z1 + z1*z2                     hypercube  64      2, 8, 16
F     z1 + z1*z2                     hypercube  16      1, 1, 1
====  =============================  =========  ======  ==========

at ``d = 1000`` (6 seeds; 8 for F, whose several-steps check in the tests needs 8) and then
``d = 2000`` (11 seeds, every setting alike: first 3, then 3 more, then 5 more in rounds of one
repetition of every setting, the next repetitions of the same root seed; in the order A, F, D,
B, C, E, so that a partial run has the most useful ones).
Root seed of a (setting, d): ``100000 (i + 1) + d`` (``i`` = 0..5 for A..F);
repetition ``r`` is child ``r`` of ``SeedSequence(root)``.

Rows (tidy, wide in the group statistics): one per (repetition, step ``t = 0..3``, ridge size),
columns

* the parameters: ``setting, d, target, sigma, steps, alpha0, kappa, beta, eta`` (text, one
  ``eta_tilde`` per step), ``readout, delta, lam, n_test, p, n, k, ridge_alphas`` (text),
  ``seed`` (the root seed), ``repetition``, ``step``;
* ``ridge_alpha``, ``n_ridge = round(ridge_alpha d)``, ``test_error = E (g - f)^2`` on the
  noiseless test inputs, ``target_power = E g^2`` on them (the error of ``f = 0``);
* ``subspace_fraction = |W Theta^T|_F / |W|_F``, ``weight_norm`` (mean row norm),
  ``train_loss`` (``L`` of ``W_t`` with the fixed readout on the next step's fresh batch; NaN at
  ``t = 3``), ``seconds`` (wall time of the whole repetition);
* the statistics of :mod:`validation.multistep.groups` of ``W_t`` (the same in the three rows of
  a step): ``n_g0, n_g1`` (rows per group: readout sign + and -), ``a_g<g>_j<j>`` (mean over the
  group's rows of ``<w_i, theta_j>``, ``j = 1..3``), ``c_g<g>`` (bulk variance
  ``mean |w_i - wbar_g|^2``), ``B_00, B_01, B_11`` (``<wbar_g, wbar_h> - [g == h] c_g / n_g``),
  ``Bperp_00, Bperp_01, Bperp_11`` (``B_gh - a_g . a_h``); NaN where a setting has no group 1
  (constant readout) or no ``theta_3`` (``k = 2``).
"""

from __future__ import annotations

import argparse
import math
import pathlib
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from validation.campaign import Campaign, Schema, Store, run_campaign
from validation.multistep.groups import group_columns, risk_rows
from validation.multistep.simulator import MultiStepConfig, run_repetitions
from validation.paths import data_file
from validation.protocol.rows import g10_cell

REPORTS = pathlib.Path(__file__).resolve().parents[1] / "reports"
SIGMA = "erf(z-1)"
RIDGE_ALPHAS = (0.5, 2.0, 4.0)
LAM = 0.01
STEPS = 3
ETA = (2.0, 8.0, 16.0)

#: the settings: target, readout, alpha0, eta_tilde per step
SETTINGS: dict[str, dict] = {
    "A": dict(target="z1 + z1*z2", readout="hypercube", alpha0=16.0, eta=ETA),
    "B": dict(target="z1 + z1*z2 + z1*z2*z3", readout="hypercube", alpha0=16.0, eta=ETA),
    "C": dict(target="tanh(z1) + z1*z2", readout="hypercube", alpha0=16.0, eta=ETA),
    "D": dict(target="z1 + z1*z2", readout="constant", alpha0=16.0, eta=ETA),
    "E": dict(target="z1 + z1*z2", readout="hypercube", alpha0=64.0, eta=ETA),
    "F": dict(target="z1 + z1*z2", readout="hypercube", alpha0=16.0, eta=(1.0, 1.0, 1.0)),
}


@dataclass(frozen=True)
class Plan:
    """Sizes: ``blocks`` = ``(d, seeds, setting order)`` run in this order; ``n_test``."""

    blocks: tuple[tuple[int, int, str], ...]
    n_test: int
    prefix: str

    def with_seeds(self, d: int, seeds: int) -> Plan:
        """The plan with ``seeds`` repetitions at dimension ``d``."""
        return replace(self, blocks=tuple((dd, seeds if dd == d else s, o)
                                          for dd, s, o in self.blocks))


#: repetitions of every setting at d = 2000
BIG_D_SEEDS = 11
FULL = Plan(blocks=((1000, 6, "ABCDE"), (1000, 8, "F"), (2000, BIG_D_SEEDS, "AFDBCE")),
            n_test=10_000,
            prefix="multistep_risk")
QUICK = Plan(blocks=((24, 2, "ABCDEF"), (32, 1, "AFDBCE")), n_test=500,
             prefix="multistep_risk_quick")


def config(name: str, d: int, n_test: int) -> MultiStepConfig:
    """Setting ``name`` at dimension ``d`` (module docstring)."""
    return MultiStepConfig(d=d, sigma=SIGMA, steps=STEPS, beta=1.0, delta=0.0, lam=LAM,
                           ridge_alphas=RIDGE_ALPHAS, n_test=n_test, groups=True,
                           **SETTINGS[name])


FIRST_SEEDS = 2


def root_seed(name: str, d: int) -> int:
    return 100_000 * (list(SETTINGS).index(name) + 1) + d


@dataclass(frozen=True)
class Job:
    """One task: repetition ``rep`` of setting ``name`` at ``d``."""

    name: str
    config: MultiStepConfig
    seed: int
    rep: int


def jobs(plan: Plan) -> tuple[Job, ...]:
    """The tasks in the order they run: block by block; in a block, the first
    :data:`FIRST_SEEDS` repetitions of every setting (in the block's order), then the next
    repetition of every setting, and so on (a run cut short keeps >= 2 seeds everywhere)."""
    out = []
    for d, seeds, order in plan.blocks:
        passes = [range(min(seeds, FIRST_SEEDS))] + [range(r, r + 1)
                                                     for r in range(FIRST_SEEDS, seeds)]
        out += [Job(name, config(name, d, plan.n_test), root_seed(name, d), rep)
                for reps in passes for name in order for rep in reps]
    return tuple(out)


GROUP_COLUMNS = group_columns()
SCHEMA = Schema.of(
    setting=str, d=int, target=str, sigma=str, steps=int, alpha0=float, kappa=float, beta=float,
    eta=str, readout=str, delta=float, lam=float, n_test=int, p=int, n=int, k=int,
    ridge_alphas=str, seed=int, repetition=int, step=int, ridge_alpha=float, n_ridge=int,
    test_error=float, target_power=float, subspace_fraction=float, weight_norm=float,
    train_loss=float, seconds=float, **{c: float for c in GROUP_COLUMNS})
KEYS = ("setting", "d", "seed", "repetition")


def task(job: Job, log: Callable[[str], None] | None = None) -> list[dict]:
    """The rows of one repetition (module docstring)."""
    (run,) = run_repetitions(job.config, np.random.SeedSequence(job.seed).spawn(job.rep + 1),
                             [job.rep])
    rows = []
    for r in risk_rows(run):
        rows.append({"setting": job.name, **{k: v for k, v in r.items() if k in SCHEMA.names},
                     "seed": job.seed})
    if log is not None:
        last = [r["test_error"] for r in rows if r["step"] == STEPS]
        log(f"  {job.name} d={job.config.d} rep {job.rep}: {run.seconds:.1f} s, test error after "
            f"step {STEPS} = " + ", ".join(f"{e:.4f}" for e in last)
            + f" (alpha_r = {', '.join(f'{a:g}' for a in RIDGE_ALPHAS)})")
    return rows


def _task_logged(job: Job) -> list[dict]:
    return task(job, log=lambda s: print(s, flush=True))


def campaign(plan: Plan, logged: bool = False) -> Campaign:
    return Campaign(plan.prefix, jobs(plan), _task_logged if logged else task, SCHEMA,
                    key_columns=KEYS, order=("d", "setting", "repetition"), cell=g10_cell,
                    key=lambda j: (j.name, j.config.d, j.seed, j.rep),
                    record=lambda j: {"job": j, "ridge_alphas": RIDGE_ALPHAS})


def paths(plan: Plan) -> tuple[pathlib.Path, pathlib.Path]:
    """``(read, write)`` of the plan's CSV (:func:`validation.paths.data_file`)."""
    return data_file(REPORTS / "data" / f"{plan.prefix}.csv", "reports", "data")


# ------------------------------------------------------------------------------------------------
# cost


def work_units(c: MultiStepConfig) -> float:
    """A rough operation count of one repetition, ``d p`` times the sample passes: two per step
    sample (features and gradient), two per ridge sample (features and Gram) and one per test
    sample after every step, plus the ridge solves (``p^3/3`` each)."""
    pool = max(round(r * c.d) for r in c.ridge_levels) if c.ridge_levels else 0
    passes = 2 * c.steps * c.n + (c.steps + 1) * (2 * pool + c.n_test)
    return c.d * c.p * passes + (c.steps + 1) * len(c.ridge_levels) * c.p**3 / 3


def estimate(plan: Plan, seconds: float, measured: MultiStepConfig,
             todo: Sequence[Job]) -> float:
    """Wall seconds of ``todo`` at ``seconds`` for one repetition of ``measured``."""
    rate = seconds / work_units(measured)
    return sum(work_units(j.config) for j in todo) * rate


# ------------------------------------------------------------------------------------------------
# run


def run(plan: Plan, *, force: bool = False, budget: float | None = None,
        log: Callable[[str], None] = print) -> pd.DataFrame:
    """Run what the plan's CSV lacks in the order of :func:`jobs`, exporting the CSV after every
    run of consecutive tasks of one (setting, d); returns the exported rows. ``budget`` (s): no
    repetition starts that is predicted (:func:`work_units` at the measured rate) to end after
    it; the later, cheaper ones may still run (run again to go on)."""
    read, write = paths(plan)
    t0 = time.monotonic()
    c = campaign(plan, logged=True)
    with Store(write.with_suffix(".sqlite"), fresh=force) as st:
        if not force:
            for source in dict.fromkeys([write, read]):
                if source.exists():
                    st.import_csv(c, source)
        done = st.done(c)
        todo = [j for j in c.settings if c.key_text(j) not in done]
        log(f"{plan.prefix}: {len(c.settings) - len(todo)} of {len(c.settings)} repetitions "
            f"stored, {len(todo)} to run -> {write}")
        if todo:
            first = todo[0]
            log(f"timing one repetition: {first.name} d={first.config.d} rep {first.rep}")
            t1 = time.monotonic()
            run_campaign(c.with_settings([first]), st, progress=False)
            one = time.monotonic() - t1
            rest = estimate(plan, one, first.config, todo[1:])
            threads = _threads()
            log(f"one repetition: {one:.1f} s; the other {len(todo) - 1}: ~{rest / 60:.0f} min "
                f"wall, ~{rest * threads / 3600:.2f} core-hours ({threads} BLAS threads)")
            st.export_csv(c, write)
            rate, skipped, last = one / work_units(first.config), [], None
            for j in todo[1:]:
                need = 1.25 * rate * work_units(j.config)
                if budget is not None and time.monotonic() - t0 + need > budget:
                    skipped.append(j)
                    continue
                if (j.config.d, j.name) != last:
                    if last is not None:
                        st.export_csv(c, write)
                    last = (j.config.d, j.name)
                    log(f"{j.name} d={j.config.d} ({time.monotonic() - t0:.0f} s elapsed)")
                t1 = time.monotonic()
                run_campaign(c.with_settings([j]), st, progress=False)
                rate = 0.5 * rate + 0.5 * (time.monotonic() - t1) / work_units(j.config)
            if skipped:
                log(f"budget: {len(skipped)} repetitions not started ("
                    + ", ".join(f"{j.name} d={j.config.d} rep {j.rep}" for j in skipped)
                    + "); run again to go on")
        st.export_csv(c, write)
    log(f"{plan.prefix}: done in {time.monotonic() - t0:.0f} s -> {write}")
    return pd.read_csv(write)


def _threads() -> int:
    try:
        from threadpoolctl import threadpool_info

        return max((i.get("num_threads", 1) for i in threadpool_info()
                    if i.get("user_api") == "blas"), default=1)
    except ImportError:  # pragma: no cover
        return 1


# ------------------------------------------------------------------------------------------------
# summary


def summary(df: pd.DataFrame) -> pd.DataFrame:
    """Mean and standard error over repetitions of the test error (and ``E g^2``) per setting,
    d, step and ridge size, with the repetitions counted."""
    by = ["setting", "d", "step", "ridge_alpha"]
    g = df.groupby(by, sort=True)
    out = g["test_error"].agg(["mean", "std", "count"])
    out["se"] = out["std"] / np.sqrt(out["count"].where(out["count"] > 1))
    out["target_power"] = g["target_power"].mean()
    out["seconds"] = g["seconds"].mean()
    return out.drop(columns="std").reset_index()


def summary_text(df: pd.DataFrame) -> str:
    """:func:`summary` as a fixed-width table: ``mean ± se`` per ridge size, a row per
    (setting, d, step)."""
    s = summary(df)
    s["cell"] = [f"{m:.4f} ± {e:.4f}" if math.isfinite(e) else f"{m:.4f}"
                 for m, e in zip(s["mean"], s["se"], strict=True)]
    wide = s.pivot_table(index=["setting", "d", "step"], columns="ridge_alpha", values="cell",
                         aggfunc="first")
    wide.columns = [f"alpha_r={a:g}" for a in wide.columns]
    reps = s.groupby(["setting", "d", "step"])["count"].min().rename("seeds")
    sec = s.groupby(["setting", "d", "step"])["seconds"].mean().rename("s/rep")
    power = s.groupby(["setting", "d", "step"])["target_power"].mean().rename("E g^2")
    out = wide.join(reps).join(power.round(4)).join(sec.round(1)).reset_index()
    return out.to_string(index=False)


#: the group statistics :func:`groups_text` shows
SHOWN_GROUP_STATS = ("a_g0_j1", "a_g0_j2", "a_g0_j3", "a_g1_j1", "a_g1_j2", "c_g0", "c_g1",
                     "B_00", "B_01", "Bperp_00", "Bperp_01", "Bperp_11")


def groups_text(df: pd.DataFrame, columns: Sequence[str] = SHOWN_GROUP_STATS) -> str:
    """Mean (standard error) over repetitions of the group statistics of ``W_t`` per setting, d
    and step (one row per repetition and step: the statistics do not depend on the ridge size);
    columns that are NaN throughout a row are left blank."""
    one = df.drop_duplicates(["setting", "d", "seed", "repetition", "step"])
    g = one.groupby(["setting", "d", "step"], sort=True)[list(columns)]
    mean, n = g.mean(), g.count()
    se = g.std(ddof=1) / np.sqrt(n.where(n > 1))
    cells = mean.copy().astype(object)
    for c in columns:
        cells[c] = [("" if not math.isfinite(m) else f"{m:.3f}" if not math.isfinite(e)
                     else f"{m:.3f}({e:.3f})") for m, e in zip(mean[c], se[c], strict=True)]
    return cells.reset_index().to_string(index=False)


# ------------------------------------------------------------------------------------------------
# command line


def build_parser() -> argparse.ArgumentParser:
    from asymptotics.cli.common import Parser, integer, real

    parser = Parser(
        prog="python -m validation.multistep.risk",
        description="Test error after 0..3 giant steps with fresh batches at d = 1000, 2000, "
                    "with the readout-group statistics (validation.multistep.risk).")
    parser.add_argument("--quick", action="store_true", help="small sizes (d = 24, 32)")
    parser.add_argument("--force", action="store_true", help="simulate everything afresh")
    parser.add_argument("--budget", type=real("budget", 0.0, strict_lo=True), default=None,
                        help="seconds: no repetition starts that would end after them "
                             "(run again to go on; default: none)")
    parser.add_argument("--big-d-seeds", type=integer("big-d-seeds", 1), default=None,
                        help="repetitions at the largest d (default: the plan's, "
                             f"{BIG_D_SEEDS})")
    parser.add_argument("--summary", action="store_true",
                        help="print the test-error and group-statistics tables of the CSV; "
                             "simulate nothing")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    plan = QUICK if args.quick else FULL
    if args.big_d_seeds is not None:
        plan = plan.with_seeds(max(d for d, _, _ in plan.blocks), args.big_d_seeds)
    if args.summary:
        read, _ = paths(plan)
        if not read.exists():
            print(f"error: {read} does not exist; run without --summary first", file=sys.stderr)
            return 2
        df = pd.read_csv(read)
        print(f"{read}\n\ntest error, mean ± s.e. over seeds\n{summary_text(df)}\n\n"
              f"group statistics of W_t, mean(s.e.) over seeds\n{groups_text(df)}")
        return 0
    run(plan, force=args.force, budget=args.budget, log=lambda s: print(s, flush=True))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
