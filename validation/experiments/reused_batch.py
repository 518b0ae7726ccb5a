"""Two giant steps on a fresh vs a reused batch: Monte Carlo of the trained network against
the reused-batch theory (docs/THEORY.md §14).

Protocol: :mod:`validation.multistep` (x ~ N(0, I_d), rows of W0 on the unit sphere, frozen
readout 1/sqrt(p) or +-1/sqrt(p), ``eta_t = eta_tilde_t p``, batches of ``n0 = alpha0 d``).
One run draws W0, the target directions and the first batch; step 1 is shared; step 2 is taken
once on a new batch (fresh) and once on the first batch again (reused), so the two are paired.
Recorded after steps 0, 1 and 2: the mean over rows of ``|<w_i, theta_j>| / |w_i|``, the
step's drift ``mean_i eps_i <w_i(t) - w_i(t-1), theta_j>`` (``eps_i = sqrt(p) a_i``), the
overlaps ``|<u_t, theta_j>|`` of the leading right singular vector of ``W_t - W_(t-1)``, and the
test error of ridge on the readout (``n = alpha d`` fresh samples, ``lam``; the test set's power
replaced by the exact ``E g^2``, a control variate with the same mean).

    python -m validation.experiments.reused_batch run [--d 1000 2000] [--seeds 6 4]
        [--store FILE.sqlite] [--no-scan] [--quiet]
    python -m validation.experiments.reused_report [--store FILE.sqlite]

``run`` is a :class:`validation.campaign.Campaign` (:func:`campaign`: one task per (setting,
d, seed), keyed by its full parameter record -- the setting, d, the seed, the protocol's
constants and :data:`VERSION`), run into a SQLite store (``--store``; default beside the
exported CSV: ``validation/reports/data/reused_batch.sqlite`` in a checkout, else the user cache,
:func:`validation.paths.data_file`) that starts from the committed CSV and its keys file, so
stored runs are not rerun; every stored run is exported, sorted by setting, d, seed, step and
batch, atomically to ``reused_batch.csv`` with its keys file. The report
(:mod:`validation.experiments.reused_report`) puts the theory beside that CSV (or beside a
store's rows, ``--store``) and writes ``validation/reports/REUSED.md`` and its figure.
"""

from __future__ import annotations

import argparse
import math
import pathlib
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from asymptotics.coefficients.functions import get_function
from asymptotics.coefficients.targets import target_callable
from validation.campaign import Campaign, Schema, Store, refresh_csv
from validation.campaign.store import bad_store_arg
from validation.multistep.simulator import giant_step, readout_vector, ridge_test_error
from validation.paths import data_file
from validation.protocol import montecarlo as mc

SIGMA = "tanh"
ALPHA0 = 2.0
LAM = 0.01
ALPHA = 2.0  # ridge sample ratio n/d
N_TEST = 3000
TARGETS = {"He3": "He3(z1)/sqrt(6)", "z1+He3": "z1 + He3(z2)/sqrt(6)", "He2": "He2(z1)/sqrt(2)"}
READOUTS = {"constant": "constant", "pm1": "hypercube"}
#: the protocol's version (part of every task's key): raise it when run_once changes
VERSION = "1"
RUNS = pathlib.Path(__file__).resolve().parents[1] / "reports" / "data" / "reused_batch.csv"
#: the committed CSV's columns (k = 2 targets add overlap2, direction2, drift2; a quantity a row
#: does not have is NaN, an empty cell)
SCHEMA = Schema.of(setting=str, target=str, readout=str, eta=float, d=int, seed=int, batch=str,
                   step=int, overlap1=float, seconds=float, direction1=float, drift1=float,
                   err=float, test_power=float, risk=float, overlap2=float, direction2=float,
                   drift2=float)


@dataclass(frozen=True)
class Setting:
    """One configuration of the campaign (module docstring)."""

    target: str  # a key of TARGETS
    readout: str  # a key of READOUTS
    eta: float = 1.0
    risk: bool = True

    @property
    def name(self) -> str:
        return f"{self.target}_{self.readout}_eta{self.eta:g}"


MAIN = tuple(Setting(t, r) for t in TARGETS for r in READOUTS)
SCAN = tuple(Setting("He3", "constant", e, risk=False) for e in (0.5, 2.0, 4.0))
LARGE = tuple(s for s in MAIN if s.readout == "constant" or s.target == "He3")  # at d >= 2000


def power(target: str, nodes: int = 40) -> float:
    """``E g^2`` by tensor Gauss-Hermite quadrature (exact for polynomial targets)."""
    from asymptotics.spiked.coefficients import tensor_rule

    g, k = target_callable(target)
    Z, w = tensor_rule(k, nodes)
    return float(w @ g(Z) ** 2)


def top_right(M: np.ndarray, iters: int = 200, tol: float = 1e-12) -> np.ndarray:
    """Leading right singular vector of ``M`` (power iteration on ``M^T M``)."""
    rng = np.random.default_rng(0)
    v = rng.standard_normal(M.shape[1])
    v /= np.linalg.norm(v)
    for _ in range(iters):
        w = M.T @ (M @ v)
        w /= np.linalg.norm(w)
        if abs(abs(w @ v) - 1.0) < tol:
            return w
        v = w
    return v


def run_once(s: Setting, d: int, seed: int) -> pd.DataFrame:
    """One paired run (module docstring): rows per (batch, step)."""
    text = TARGETS[s.target]
    g, k = target_callable(text)
    sigma = get_function(SIGMA)
    p, n0 = d, round(ALPHA0 * d)
    streams = mc.streams(np.random.SeedSequence([seed, d, sum(map(ord, s.name))]),
                         ("weights", "teacher", "batch1", "batch2", "ridge", "ridge_noise",
                          "test"))
    W0 = mc.sphere_rows(np.random.default_rng(streams["weights"]), p, d)
    theta = mc.teacher_directions(np.random.default_rng(streams["teacher"]), k, d)
    a = readout_vector(p, READOUTS[s.readout])
    eg2 = power(text)
    rows = []

    def step(W, batch):
        return giant_step(W, a, theta, g, sigma, n=n0, eta=s.eta * p, delta=0.0,
                          rng=np.random.default_rng(streams[batch]))[0]

    def record(W, W_prev, step_t: int, batch: str):
        t0 = time.perf_counter()
        ov = (np.abs(W @ theta.T) / np.linalg.norm(W, axis=1, keepdims=True)).mean(axis=0)
        row = dict(setting=s.name, target=s.target, readout=s.readout, eta=s.eta, d=d, seed=seed,
                   batch=batch, step=step_t)
        for j in range(k):
            row[f"overlap{j + 1}"] = float(ov[j])
        if W_prev is not None:
            u = top_right(W - W_prev)
            drift = (math.sqrt(p) * a) @ ((W - W_prev) @ theta.T) / p  # mean eps_i <dw_i, theta>
            for j in range(k):
                row[f"direction{j + 1}"] = float(abs(u @ theta[j]))
                row[f"drift{j + 1}"] = float(drift[j])
        if s.risk and step_t > 0:  # step 0 is random features (a settled theory)
            err, pw = ridge_test_error(W, theta, g, sigma, n_ridge=round(ALPHA * d), lam=LAM,
                                       n_test=N_TEST, delta=0.0, ridge_seed=streams["ridge"],
                                       noise_seed=streams["ridge_noise"],
                                       test_seed=streams["test"])
            row.update(err=err, test_power=pw, risk=err - pw + eg2)
        row["seconds"] = time.perf_counter() - t0
        rows.append(row)

    record(W0, None, 0, "both")
    W1 = step(W0, "batch1")
    record(W1, W0, 1, "both")
    record(step(W1, "batch2"), W1, 2, "fresh")
    record(step(W1, "batch1"), W1, 2, "reused")
    return pd.DataFrame(rows)


def _task(job: tuple[Setting, int, int]) -> list[dict]:
    rows = run_once(*job).to_dict("records")
    return [{c: r.get(c, math.nan) for c in SCHEMA.names} for r in rows]


def _record(job: tuple[Setting, int, int]) -> dict:
    """A task's parameter record: the setting, d, the seed and the protocol's constants."""
    s, d, seed = job
    return {"setting": s, "d": d, "seed": seed, "sigma": SIGMA, "alpha0": ALPHA0, "lam": LAM,
            "alpha": ALPHA, "n_test": N_TEST, "target": TARGETS[s.target],
            "readout": READOUTS[s.readout]}


def plan(d_seeds: Sequence[tuple[int, int]], scan: bool = True) -> list[tuple[Setting, int, int]]:
    """MAIN at each (d, seeds) (LARGE at d >= 2000); SCAN at the first d, at most 3 seeds."""
    jobs = [(s, d, i) for d, n in d_seeds for s in (MAIN if d < 2000 else LARGE)
            for i in range(n)]
    if scan and d_seeds:
        d, n = d_seeds[0]
        jobs += [(s, d, i) for s in SCAN for i in range(min(n, 3))]
    return jobs


#: the committed campaign: d = 1000 with 6 seeds, d = 2000 with 4, the scan
COMMITTED_PLAN = ((1000, 6), (2000, 4))


def _cell(v: object) -> str:
    from validation.protocol.rows import exact_or_empty_cell

    return exact_or_empty_cell(v)


def campaign(d_seeds: Sequence[tuple[int, int]] = COMMITTED_PLAN, scan: bool = True) -> Campaign:
    """One task per (setting, d, seed) of :func:`plan`."""
    return Campaign("reused_batch", tuple(plan(d_seeds, scan)), _task, SCHEMA,
                    key_columns=("setting", "d", "seed"), key=lambda j: (j[0].name, j[1], j[2]),
                    order=("setting", "d", "seed", "step", "batch"), cell=_cell,
                    version=VERSION, record=_record)


def paths() -> tuple[pathlib.Path, pathlib.Path]:
    """``(read, write)`` of the runs' CSV (:func:`validation.paths.data_file`)."""
    return data_file(RUNS, "validation", "reports", "data")


def run(d_seeds: Sequence[tuple[int, int]], *, store: str | pathlib.Path | None = None,
        scan: bool = True, quiet: bool = False) -> pathlib.Path:
    """Run the tasks of :func:`campaign` the store lacks and export every stored run to the
    runs' CSV (module docstring); returns the CSV written."""
    c = campaign(d_seeds, scan)
    read, write = paths()
    refresh_csv(c, read, write, store=store, progress=not quiet)
    return write


def stored(store: str | pathlib.Path) -> pd.DataFrame:
    """Every run held by the SQLite store ``store``, sorted as the export."""
    with Store(store) as st:
        return st.frame(campaign())


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m validation.experiments.reused_batch",
                                     description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="the Monte Carlo campaign (missing runs only)")
    r.add_argument("--d", type=int, nargs="+", default=[1000, 2000])
    r.add_argument("--seeds", type=int, nargs="+", default=[6, 4])
    r.add_argument("--store", help="the SQLite store (.sqlite; default beside the exported CSV)")
    r.add_argument("--no-scan", action="store_true", help="skip the eta_tilde scan")
    r.add_argument("--quiet", action="store_true")
    args = parser.parse_args(argv)
    if len(args.d) != len(args.seeds) or min(args.d) < 8 or min(args.seeds) < 1:
        print("error: --d and --seeds need one value each, d >= 8, seeds >= 1, got "
              f"{args.d}, {args.seeds}", file=sys.stderr)
        return 2
    if bad_store_arg(args.store):
        return 2
    out = run(list(zip(args.d, args.seeds, strict=True)), store=args.store,
              scan=not args.no_scan, quiet=args.quiet)
    print(f"runs: {out}; report: python -m validation.experiments.reused_report")
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
