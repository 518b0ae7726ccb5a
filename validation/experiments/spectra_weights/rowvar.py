"""A direct Monte Carlo of the trained first layer against the rows' bulk with its outside scale
(:func:`asymptotics.spectra.rowvar.row_variance`, docs/DERIVATIONS.md §10): per group, the
bulk's variance along the learned direction ``Sig_vv = d Var(b.v)/c`` and the slope of the rows'
squared bulk norms on their spike coordinate ``lam = Cov(|b_i|^2, b_i.v)/Var(b_i.v)`` (v oriented
along the group's spike). A diagnostic simulation separate from the validation cells: its own
seeds (:data:`SEED0` + draw), the protocol of :mod:`validation.experiments.spectra_weights.steps`
(``train``), and the learned direction estimated from ``p`` shadow rows per readout value
trained on the same batches but not part of the layer (independent of its bulk; the mean rows
of ``W - W0`` are the campaign's estimator, reported beside).

    python -m validation.experiments.spectra_weights.rowvar [--quiet]

writes ``validation/reports/data/spectra_rowvar_check.csv`` (about 10 core-minutes);
``--batch`` writes ``spectra_rowvar_batch.csv``: two constant-readout steps at d = 1000 with
p = 4000 rows (beta = 4, many rows for a small s.e.) at alpha0 = 2 and 20 (seeds
:data:`BATCH_SEED0` + draw), which separates the population map (exact at alpha0 -> infinity)
from the batch noise's terms (about 5 core-minutes)."""

from __future__ import annotations

import math
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

from validation.experiments.spectra_weights.steps import SETTINGS, train

ROOT = Path(__file__).resolve().parents[3]
CSV = ROOT / "validation" / "reports" / "data" / "spectra_rowvar_check.csv"
COMMAND = "python -m validation.experiments.spectra_weights.rowvar"
SEED0 = 7_000  # the draws' seeds are SEED0 + draw (the validation cells use 0..7)
DRAWS = {1000: 24, 2000: 6}
BATCH_CSV = ROOT / "validation" / "reports" / "data" / "spectra_rowvar_batch.csv"
BATCH_SEED0 = 9_100
BATCH = ((2.0, 8), (20.0, 6))  # (alpha0, draws) at d = 1000, p = 4000, two steps, tanh


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


def run_batch(*, quiet: bool = False) -> Path:
    from asymptotics.spectra.rowvar import row_variance

    rows = []
    for alpha0, n in BATCH:
        rv = row_variance("tanh", "tanh(z1)", steps=2, alpha0=alpha0, eta=1.0)
        t0 = time.perf_counter()
        x = np.array([batch_draw(1000, 4000, alpha0, BATCH_SEED0 + i) for i in range(n)])
        m, se = x.mean(axis=0), x.std(axis=0, ddof=1) / math.sqrt(n)
        # along the spike: the loading is negative on the model's V (THEORY.md §16.9)
        from asymptotics.network.groups import network_groups

        L = network_groups("tanh", "tanh(z1)", steps=2, alpha0=alpha0,
                           eta=1.0).states[-1].spiked_model()[0]
        rows.append(dict(alpha0=alpha0, d=1000, p=4000, draws=n, seed0=BATCH_SEED0,
                         lam=m[0], lam_se=se[0],
                         lam_theory=float(rv.slope[0, 0] * np.sign(L[0, 0])),
                         sig_vv=m[1], sig_vv_se=se[1], sig_vv_theory=float(rv.sig[0, 0, 0]),
                         sig_vv_route=float(rv.sig_route[0, 0, 0]),
                         seconds=time.perf_counter() - t0))
        if not quiet:
            print(rows[-1], file=sys.stderr, flush=True)
    pd.DataFrame(rows).to_csv(BATCH_CSV, index=False, float_format="%.10g")
    return BATCH_CSV


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


def run(*, quiet: bool = False) -> Path:
    from asymptotics.spectra.rowvar import row_variance

    rows = []
    for s in SETTINGS:
        rv = row_variance(s.sigma, s.target, steps=s.steps, alpha0=s.alpha0, eta=s.eta,
                          readout=s.readout)
        from asymptotics.network.groups import network_groups

        L = network_groups(s.sigma, s.target, steps=s.steps, alpha0=s.alpha0, eta=s.eta,
                           readout=s.readout).states[-1].spiked_model()[0]
        lam_th = float(np.mean(rv.slope[:, 0] * np.sign(L[:, 0])))
        for d, n in DRAWS.items():
            t0 = time.perf_counter()
            draws = [measure(s, d, SEED0 + i) for i in range(n)]
            row = dict(setting=s.name, d=d, draws=n, seed0=SEED0,
                       sig_vv_theory=float(rv.sig[:, 0, 0].mean()),
                       sig_vv_route=float(rv.sig_route[:, 0, 0].mean()), lam_theory=lam_th)
            for key in draws[0]:
                x = np.array([dr[key] for dr in draws])
                row[key] = float(x.mean())
                row[f"{key}_se"] = float(x.std(ddof=1) / math.sqrt(n))
            row["seconds"] = time.perf_counter() - t0
            rows.append(row)
            if not quiet:
                print(f"{s.name} d={d}: Sig_vv {row['sig_vv_shadow']:.4f} +- "
                      f"{row['sig_vv_shadow_se']:.4f} (theory {row['sig_vv_theory']:.4f}, route "
                      f"{row['sig_vv_route']:.4f}); lam {row['lam_shadow']:.4f} +- "
                      f"{row['lam_shadow_se']:.4f} (theory {lam_th:.4f}) "
                      f"[{row['seconds']:.0f} s]", file=sys.stderr, flush=True)
    CSV.parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(rows).to_csv(CSV, index=False, float_format="%.10g")
    return CSV


def main(argv: list[str] | None = None) -> int:
    from asymptotics.cli.common import Parser, add_quiet, apply_quiet

    parser = Parser(prog=COMMAND, description=" ".join(__doc__.split("\n\n")[0].split()))
    parser.add_argument("--batch", action="store_true",
                        help="the alpha0 = 2 and 20 check at p = 4000 (spectra_rowvar_batch.csv)")
    add_quiet(parser)
    args = parser.parse_args(argv)
    quiet = apply_quiet(args)
    print(run_batch(quiet=quiet) if args.batch else run(quiet=quiet))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
