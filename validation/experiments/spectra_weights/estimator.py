"""Which simulated quantity estimates the weights' ``learned span`` overlap without bias: a check
on a synthetic spiked matrix whose population spike is known (docs/THEORY.md §16.6, "Which
direction the learned-span overlap is against").

The model is §16.6's own, with the parameters of the trained layers: ``p = beta d`` rows
``w_i = eps_i s + x_i``, ``s = sqrt(s2) e_1`` (the population spike, known here), the bulk part
``x_i = a w0_i + b n_i`` (``w0_i``, ``n_i`` uniform on the sphere, ``a = rho sqrt(c)``,
``a^2 + b^2 = c``: a bulk of variance ``c`` correlated ``rho`` with the row's initialisation
``w0_i``, as after the steps), ``eps_i = 1`` or +-1 (half each). Per draw, with ``v`` the top
right singular vector of W, four numbers:

* ``truth``: ``(v . e_1)^2``, the quantity the theory predicts;
* ``mean rows``: the span of the readout values' mean rows of ``W - W0`` (the campaign's former
  estimator) and ``mean rows of W``: of W itself;
* ``shadow``: :func:`validation.experiments.spectra_weights.steps.population_overlaps` on
  ``p/4`` further rows of the same law, independent of W (the campaign's estimator now, with
  its number of shadow rows).

The first-order bias of the mean rows (§16.6): ``truth (c - 1)/(p s2)`` for ``W - W0`` and
``truth c/(p s2)`` for W, independent of ``rho``; the shadow estimator's is O(1/(p d)).

    python -m validation.experiments.spectra_weights.estimator [--quiet]

A :class:`validation.campaign.Campaign` (one task per (setting, d), keyed by its full record),
exported with its keys file to ``validation/reports/data/spectra_theory_steps_estimator.csv``
(about 3 core-minutes); :func:`section` is its part of validation/reports/SPECTRA_THEORY.md."""

from __future__ import annotations

import math
import sys
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from validation.campaign import Campaign, Schema
from validation.experiments.spectra_sim import sphere
from validation.experiments.spectra_weights.cells import refresh, setting_campaign

ROOT = Path(__file__).resolve().parents[3]
CSV = ROOT / "validation" / "reports" / "data" / "spectra_theory_steps_estimator.csv"
COMMAND = "python -m validation.experiments.spectra_weights.estimator"
VERSION = "1"
#: the estimators (columns ``<name>``, ``<name>_se``, and ``<name>_off``, ``<name>_off_se``: the
#: paired offset from ``truth``)
ESTIMATORS = ("mean_rows", "mean_rows_w", "shadow")
SCHEMA = Schema.of(setting=str, d=int, draws=int, c=float, s2=float, readout=str, rho=float,
                   beta=float, theory=float, truth=float, truth_se=float,
                   **{f"{e}{x}": float for e in ESTIMATORS
                      for x in ("", "_se", "_off", "_off_se")},
                   bias_mean_rows=float, bias_mean_rows_w=float)


@dataclass(frozen=True)
class EstimatorSetting:
    """A synthetic layer (module docstring): ``c`` the bulk's variance, ``s2`` the spike's
    squared norm, ``rho`` the bulk's correlation with W0."""
    name: str
    c: float
    s2: float
    readout: str
    rho: float
    beta: float = 0.5


#: c and s2 = |l|^2 of the route's groups after two and three steps (tanh, alpha0 = 2,
#: eta_tilde = 1; ``spectrum(...).params``), rho as measured on trained layers (0.98); then
#: rho = 0 and a bulk wider than W0 (c > 1, as after one step) to test the bias's form
SETTINGS = (
    EstimatorSetting("2 steps, constant readout", 0.9648, 0.4092, "constant", 0.98),
    EstimatorSetting("3 steps, constant readout", 0.8970, 0.5863, "constant", 0.98),
    EstimatorSetting("3 steps, pm1 readout", 0.8970, 0.5863, "pm1", 0.98),
    EstimatorSetting("3 steps, constant readout, rho = 0", 0.8970, 0.5863, "constant", 0.0),
    EstimatorSetting("c = 1.3, rho = 1/sqrt(c)", 1.3, 0.5863, "constant", 1.0 / math.sqrt(1.3)),
)
DRAWS = {500: 400, 1000: 100, 2000: 30}


def _rows(rng: np.random.Generator, s: EstimatorSetting, p: int, d: int, eps: np.ndarray
          ) -> tuple[np.ndarray, np.ndarray]:
    """(W0, W) of p rows of the synthetic law."""
    a = s.rho * math.sqrt(s.c)
    b = math.sqrt(max(s.c - a * a, 0.0))
    W0 = sphere(rng, p, d)
    W = a * W0 + b * sphere(rng, p, d)
    W[:, 0] += eps * math.sqrt(s.s2)
    return W0, W


def _top_right(W: np.ndarray, eps: np.ndarray) -> np.ndarray:
    """W's top right singular vector (power iteration from W^T eps: the outlier is far above
    the bulk, 60 iterations leave an error far below 1e-12)."""
    v = W.T @ eps
    for _ in range(60):
        v = W.T @ (W @ v)
        v /= np.linalg.norm(v)
    return v


def _span_overlap(v: np.ndarray, M: np.ndarray, eps: np.ndarray) -> float:
    """v's squared projection on the span of the readout values' mean rows of M."""
    means = np.stack([M[eps == g].mean(axis=0) for g in np.unique(eps)])
    Q, sv, _ = np.linalg.svd(means.T, full_matrices=False)
    Q = Q[:, sv > 1e-8 * sv[0]]
    return float(np.sum((v @ Q) ** 2))


def draw(s: EstimatorSetting, d: int, k: int) -> dict:
    """One draw's four numbers (module docstring)."""
    from validation.experiments.spectra_weights.steps import SHADOW_ROWS, population_overlaps

    rng = np.random.default_rng([7100, zlib.crc32(s.name.encode()), d, k])
    p = round(s.beta * d)
    eps = np.ones(p)
    if s.readout == "pm1":
        eps[: p // 2] = -1.0
    W0, W = _rows(rng, s, p, d, eps)
    v = _top_right(W, eps)
    ps = round(SHADOW_ROWS * p)  # shadow rows: the same law, independent of W
    seps = np.ones(ps)
    if s.readout == "pm1":
        seps[: ps // 2] = -1.0
    S0, S = _rows(rng, s, ps, d, seps)
    return {"truth": float(v[0] ** 2), "mean_rows": _span_overlap(v, W - W0, eps),
            "mean_rows_w": _span_overlap(v, W, eps),
            "shadow": float(population_overlaps(v[None, :], S - S0, seps)[0])}


def cell(s: EstimatorSetting, d: int, n: int) -> list[dict]:
    """One (setting, d): means and s.e. over ``n`` draws, the paired offsets from the truth,
    the theory of §16.6 (isotropic groups) and the first-order biases."""
    from asymptotics.spectra.weights import lowrank_outliers, rowvar_top

    rows = [draw(s, d, k) for k in range(n)]
    df = pd.DataFrame(rows)
    p = round(s.beta * d)
    c, fr = np.array([s.c]), np.array([1.0])
    edge, mt = rowvar_top(c, fr, s.beta)
    lam, qv, _ = lowrank_outliers(mt, edge, p=p, c=c, w=fr, left=np.array([[math.sqrt(s.s2)]]),
                                  gram=np.eye(1))[0]
    theory = float(qv @ qv)

    def se(x: pd.Series) -> float:
        return float(x.std(ddof=1) / math.sqrt(len(x)))

    out = dict(setting=s.name, d=d, draws=n, c=s.c, s2=s.s2, readout=s.readout, rho=s.rho,
               beta=s.beta, theory=theory, truth=float(df.truth.mean()), truth_se=se(df.truth))
    for e in ESTIMATORS:
        out.update({e: float(df[e].mean()), f"{e}_se": se(df[e]),
                    f"{e}_off": float((df[e] - df.truth).mean()),
                    f"{e}_off_se": se(df[e] - df.truth)})
    out.update(bias_mean_rows=theory * (s.c - 1.0) / (p * s.s2),
               bias_mean_rows_w=theory * s.c / (p * s.s2))
    return [out]


def _task(job: tuple) -> list[dict]:
    return cell(*job)


def _record(job: tuple) -> dict:
    return {"setting": job[0], "d": job[1], "draws": job[2]}


def campaign() -> Campaign:
    """One task per (setting, d) of :data:`SETTINGS` x :data:`DRAWS`."""
    jobs = tuple((s, d, n) for s in SETTINGS for d, n in DRAWS.items())
    return setting_campaign("spectra_theory_steps_estimator", jobs, _task, SCHEMA, VERSION,
                            SETTINGS, _record)


def run(*, quiet: bool = False) -> Path:
    return refresh(campaign(), CSV, quiet=quiet)


def section(df: pd.DataFrame | None = None) -> list[str]:
    """The report's paragraph (from the committed CSV when ``df`` is None; empty without it)."""
    if df is None:
        if not CSV.exists():
            return []
        df = pd.read_csv(CSV)
    out = ["The estimator, checked where the population spike is known (`" + COMMAND + "`; raw "
           "rows `validation/reports/data/spectra_theory_steps_estimator.csv`): a synthetic "
           "layer of §16.6's law, p = beta d rows `eps_i s + x_i` with `s` known, the bulk "
           "`x_i` of variance c correlated rho with the row's W0 (c and |s|^2 those of the "
           "route's groups after two and three steps, rho = 0.98 as measured on the trained "
           "layers; then rho = 0 and c > 1). Per draw the top right singular vector's squared "
           "overlap with `s` (`truth`, what the theory predicts), and its estimates: the mean "
           "rows of W - W0 (the former estimator), of W, and `(v.sA)(v.sB)/(sA.sB)` from p/4 "
           "independent rows of the same law (shadow rows: the campaign's estimator now). "
           "Offsets are paired per draw (estimate - truth), with the first-order bias "
           "`truth (c - 1)/(p |s|^2)` (W - W0) and `truth c/(p |s|^2)` (W) of docs/THEORY.md "
           "§16.6:", "",
           "| setting | d | draws | theory | truth (se) | z | mean rows W - W0: offset (se) | "
           "predicted | mean rows W: offset (se) | predicted | shadow: offset (se) | z |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    zt, zs, zb, zw = [], [], [], []
    for _, r in df.iterrows():
        z_t = (r.truth - r.theory) / r.truth_se
        z_s = r.shadow_off / r.shadow_off_se
        zt.append(abs(z_t))
        zs.append(abs(z_s))
        zb.append(abs((r.mean_rows_off - r.bias_mean_rows) / r.mean_rows_off_se))
        zw.append(abs((r.mean_rows_w_off - r.bias_mean_rows_w) / r.mean_rows_w_off_se))
        out.append(f"| {r.setting} | {r.d} | {r.draws} | {r.theory:.6f} | {r.truth:.6f} "
                   f"({r.truth_se:.1g}) | {z_t:+.1f} | {r.mean_rows_off:+.3g} "
                   f"({r.mean_rows_off_se:.1g}) | {r.bias_mean_rows:+.3g} | "
                   f"{r.mean_rows_w_off:+.3g} ({r.mean_rows_w_off_se:.1g}) | "
                   f"{r.bias_mean_rows_w:+.3g} | {r.shadow_off:+.2g} ({r.shadow_off_se:.1g}) | "
                   f"{z_s:+.1f} |")
    n = len(df)
    out += ["", f"- The shadow estimator's offset from the truth: {sum(z <= 3 for z in zs)} of "
            f"{n} within 3 s.e. (largest |z| {max(zs):.1f}); the mean rows' offsets against "
            f"their first-order bias: W - W0 {sum(z <= 3 for z in zb)} of {n}, W "
            f"{sum(z <= 3 for z in zw)} of {n} within 3 s.e. (largest |z| {max(zb):.1f}, "
            f"{max(zw):.1f}); the truth against the theory of the isotropic groups "
            f"{sum(z <= 3 for z in zt)} of {n} (largest |z| {max(zt):.1f}).", ""]
    return out


def main(argv: list[str] | None = None) -> int:
    from asymptotics.cli.common import Parser, add_quiet, apply_quiet

    parser = Parser(prog=COMMAND, description=" ".join(__doc__.split("\n\n")[0].split()))
    add_quiet(parser)
    args = parser.parse_args(argv)
    out = run(quiet=apply_quiet(args))
    print("\n".join(section(pd.read_csv(out))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
