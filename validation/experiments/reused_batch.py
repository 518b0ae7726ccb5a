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

    python -m validation.experiments.reused_batch run [--d 1000 2000] [--seeds 6 4] [--out DIR]
    python -m validation.experiments.reused_report [--store DIR]

``run`` writes one CSV per (setting, d, seed) to the store (the user cache, ``--out`` to
choose); the report (:mod:`validation.experiments.reused_report`) collects the store into
``validation/reports/data/reused_batch.csv``, puts the theory beside it and writes
``validation/reports/REUSED.md`` and its figure (with no store, from the committed CSV).
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
from validation.multistep.simulator import giant_step, readout_vector, ridge_test_error
from validation.paths import user_cache
from validation.protocol import montecarlo as mc

SIGMA = "tanh"
ALPHA0 = 2.0
LAM = 0.01
ALPHA = 2.0  # ridge sample ratio n/d
N_TEST = 3000
TARGETS = {"He3": "He3(z1)/sqrt(6)", "z1+He3": "z1 + He3(z2)/sqrt(6)", "He2": "He2(z1)/sqrt(2)"}
READOUTS = {"constant": "constant", "pm1": "hypercube"}


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


def store_dir(out: str | None) -> pathlib.Path:
    return pathlib.Path(out) if out else user_cache("reused_batch")


def run(d_seeds: Sequence[tuple[int, int]], *, out: str | None = None, scan: bool = True,
        quiet: bool = False) -> pathlib.Path:
    """Every missing run of the campaign (MAIN at each (d, seeds); SCAN at the first d)."""
    from asymptotics.core.progress import Progress

    root = store_dir(out)
    root.mkdir(parents=True, exist_ok=True)
    todo = [(s, d, i) for d, n in d_seeds for s in (MAIN if d < 2000 else LARGE)
            for i in range(n)]
    if scan and d_seeds:
        d, n = d_seeds[0]
        todo += [(s, d, i) for s in SCAN for i in range(min(n, 3))]
    todo = [j for j in todo if not (root / f"{j[0].name}_d{j[1]}_s{j[2]}.csv").exists()]
    with Progress(len(todo), "reused-batch runs", unit="run", enabled=not quiet) as bar:
        for s, d, i in todo:
            run_once(s, d, i).to_csv(root / f"{s.name}_d{d}_s{i}.csv", index=False)
            bar.update(1)
    return root


def collect(root: pathlib.Path) -> pd.DataFrame:
    files = sorted(root.glob("*.csv"))
    return pd.concat([pd.read_csv(f) for f in files], ignore_index=True) if files else None


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m validation.experiments.reused_batch",
                                     description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="the Monte Carlo campaign (missing runs only)")
    r.add_argument("--d", type=int, nargs="+", default=[1000, 2000])
    r.add_argument("--seeds", type=int, nargs="+", default=[6, 4])
    r.add_argument("--out", help="the store directory (default: the user cache)")
    r.add_argument("--no-scan", action="store_true", help="skip the eta_tilde scan")
    r.add_argument("--quiet", action="store_true")
    args = parser.parse_args(argv)
    if len(args.d) != len(args.seeds) or min(args.d) < 8 or min(args.seeds) < 1:
        print("error: --d and --seeds need one value each, d >= 8, seeds >= 1, got "
              f"{args.d}, {args.seeds}", file=sys.stderr)
        return 2
    root = run(list(zip(args.d, args.seeds, strict=True)), out=args.out,
               scan=not args.no_scan, quiet=args.quiet)
    print(f"store: {root}; report: python -m validation.experiments.reused_report "
          f"--store {root}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
