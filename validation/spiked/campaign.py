"""The validation campaign of the K-group, r-spike model: its settings, its store, its runner.

Settings are fixed here, before any comparison (:data:`SETTINGS`): K in 1..4, r in 1..3, four
activations, single- and multi-index targets, beta in {0.5, 1, 2}, lam in [0.001, 0.1] (SUM
loss, not scaled by n), two alphas each away from the interpolation point alpha = beta. The
campaign runs at d = 1000 (p = beta d = 500, 1000, 2000); settings that miss are re-run at
d = 2000 and 500 for the trend in d.

Runs: a :class:`validation.campaign.Campaign` (one task per (setting, d, seed)) in a SQLite store
(:mod:`validation.campaign.store`), exported to ``validation/reports/data/spiked_runs.csv``
(sorted by setting name, d, seed, then repetition and alpha), one row per repetition and alpha,
every parameter (matrices as JSON); a killed run resumes at the first missing task and a stored
task is never re-run.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from ..campaign import Campaign, Schema, Store, run_campaign
from ..paths import data_file
from .simulator import SpikedSetting, simulate_spiked

COMMITTED = Path(__file__).resolve().parents[1] / "reports" / "data" / "spiked_runs.csv"
D = 1000
SEEDS = 16
SEED = 20260
#: the rows: one per repetition and alpha, every parameter (matrices as JSON)
SCHEMA = Schema.of(name=str, sigma=str, target=str, K=int, r=int, k=int, loadings=str, bulk=str,
                   fractions=str, overlaps=str, lam=float, beta=float, d=int, p=int,
                   delta=float, n_test=int, alpha=float, n=int, seed=int, seeds=int,
                   n_alphas=int, rep=int, risk=float, seconds=float)
COLUMNS = list(SCHEMA.names)


@dataclass(frozen=True)
class CampaignSetting:
    """One named setting of the campaign and its alphas."""

    name: str
    setting: SpikedSetting
    alphas: tuple[float, ...]
    purpose: str = ""

    def at(self, d: int) -> SpikedSetting:
        return self.setting.with_(d=int(d))


def _s(name: str, sigma: str, target: str, loadings, bulk, fractions, overlaps, *,
       beta: float, lam: float, alphas: Sequence[float], purpose: str = "") -> CampaignSetting:
    setting = SpikedSetting(sigma=sigma, target=target, loadings=loadings, bulk=bulk,
                            fractions=fractions, overlaps=overlaps, alpha=alphas[0], lam=lam,
                            beta=beta, d=D)
    return CampaignSetting(name, setting, tuple(float(a) for a in alphas), purpose)


I2 = [[1.0, 0.0], [0.0, 1.0]]
Q4 = [0.25, 0.25, 0.25, 0.25]
T3 = [1 / 3, 1 / 3, 1 - 2 / 3]

#: the campaign, fixed before any comparison
SETTINGS: tuple[CampaignSetting, ...] = (
    # K = 1 (one spiked group)
    _s("K1r1-tanh-tanh", "tanh", "tanh(z1)", [[1.0]], [1.0], [1.0], [[0.8]],
       beta=1, lam=0.01, alphas=(0.5, 3), purpose="the sRF model of one step"),
    _s("K1r1-relu-he2lin", "relu", "He2(z1) + z1", [[1.5]], [0.8], [1.0], [[0.9]],
       beta=0.5, lam=0.05, alphas=(1, 3)),
    _s("K1r1-tanh-rf", "tanh", "tanh(z1)", [[0.0]], [1.0], [1.0], [[1.0]],
       beta=1, lam=0.01, alphas=(0.5, 3), purpose="u = 0: random features"),
    _s("K1r2-erf-add", "erf", "tanh(z1) + tanh(z2)", [[1.0, 1.0]], [1.0], [1.0], I2,
       beta=1, lam=0.01, alphas=(0.5, 3)),
    _s("K1r3-tanh-prod", "tanh", "z1*z2", [[1.0, 0.5, -0.5]], [1.0], [1.0],
       [[0.6, 0.2], [0.3, 0.6], [0.2, 0.3]], beta=1, lam=0.01, alphas=(0.5, 3)),
    # K = 2
    _s("K2r1-tanh-pm", "tanh", "tanh(z1) + z1*z2", [[1.2], [-1.2]], [1.0, 1.0], [0.5, 0.5],
       [[0.9, 0.0]], beta=1, lam=0.01, alphas=(0.5, 3), purpose="+u/-u, odd sigma (= K = 1)"),
    _s("K2r1-relu-pm", "relu", "He2(z1) + z1", [[1.5], [-1.5]], [1.0, 1.0], [0.5, 0.5],
       [[1.0]], beta=1, lam=0.05, alphas=(0.5, 3), purpose="+u/-u, relu (not = K = 1)"),
    _s("K2r1-sigmoid-pm", "sigmoid", "tanh(z1)", [[2.0], [-1.0]], [0.5, 1.5], [0.3, 0.7],
       [[0.9]], beta=2, lam=0.1, alphas=(1, 3), purpose="opposite groups, unequal"),
    _s("K2r2-tanh-add", "tanh", "tanh(z1) + tanh(z2)", [[1.5, 0.0], [0.0, 1.5]], [1.0, 1.0],
       [0.5, 0.5], I2, beta=1, lam=0.01, alphas=(0.5, 3), purpose="one direction per group"),
    _s("K2r2-relu-prod", "relu", "z1*z2", [[1.0, 1.0], [1.0, -1.0]], [1.0, 1.0], [0.5, 0.5],
       [[0.7, 0.0], [0.0, 0.7]], beta=1, lam=0.05, alphas=(0.5, 3)),
    _s("K2r2-erf-prod", "erf", "z1*z2", [[1.5, 1.5], [1.5, -1.5]], [0.8, 0.8], [0.5, 0.5], I2,
       beta=0.5, lam=0.05, alphas=(1, 3), purpose="spikes matter (Gamma = I)"),
    _s("K2r2-sigmoid-pm", "sigmoid", "tanh(z1) + tanh(z2)", [[1.5, 1.0], [-1.5, -1.0]],
       [1.0, 1.0], [0.5, 0.5], [[0.8, 0.3], [0.3, 0.8]], beta=2, lam=0.1, alphas=(1, 3),
       purpose="+u/-u in r = 2"),
    _s("K2r2-tanh-weak", "tanh", "tanh(z1) + z1*z2", [[0.3, 0.0], [0.0, 0.3]], [1.0, 1.0],
       [0.5, 0.5], [[0.9, 0.0], [0.0, 0.9]], beta=1, lam=0.01, alphas=(0.5, 3),
       purpose="weak spikes"),
    _s("K2r3-relu-add", "relu", "tanh(z1) + tanh(z2)", [[1.5, 0.0, 0.5], [0.0, 1.5, -0.5]],
       [1.0, 1.0], [0.5, 0.5], [[0.9, 0.0], [0.0, 0.9], [0.0, 0.0]], beta=1, lam=0.05,
       alphas=(0.5, 3)),
    # K = 3
    _s("K3r1-erf-zero", "erf", "He2(z1) + z1", [[2.0], [0.0], [-2.0]], [1.0, 1.0, 1.0],
       [0.25, 0.5, 0.25], [[1.0]], beta=1, lam=0.05, alphas=(0.5, 3),
       purpose="a group without spike between +u and -u"),
    _s("K3r2-sigmoid-mixed", "sigmoid", "tanh(z1) + z1*z2", [[1.0, 0.0], [0.0, 1.0],
                                                              [-1.0, -1.0]],
       [1.0, 1.5, 0.8], [0.3, 0.3, 0.4], [[0.8, 0.3], [0.2, 0.7]], beta=1, lam=0.01,
       alphas=(0.5, 3)),
    _s("K3r2-tanh-mixed", "tanh", "tanh(z1) + z1*z2", [[1.0, 0.0], [0.0, 1.0], [-1.0, -1.0]],
       [1.0, 1.5, 0.8], [0.3, 0.3, 0.4], [[0.8, 0.3], [0.2, 0.7]], beta=2, lam=0.01,
       alphas=(1, 3)),
    _s("K3r3-erf-add", "erf", "tanh(z1) + tanh(z2)", [[1.2, 0.0, 0.0], [0.0, 1.2, 0.0],
                                                      [0.0, 0.0, 1.2]],
       [1.0, 1.0, 1.0], T3, [[1.0, 0.0], [0.0, 1.0], [0.0, 0.0]], beta=1, lam=0.01,
       alphas=(0.5, 3)),
    _s("K3r3-relu-he2lin", "relu", "He2(z1) + z1", [[1.5, 0.0, 0.0], [0.0, 1.5, 0.0],
                                                     [0.0, 0.0, 1.5]],
       [1.0, 1.0, 1.0], T3, [[0.6], [0.6], [0.3]], beta=0.5, lam=0.05, alphas=(1, 3)),
    # K = 4
    _s("K4r1-sigmoid-ladder", "sigmoid", "tanh(z1) + z1*z2", [[2.0], [1.0], [-1.0], [-2.0]],
       [1.0, 1.0, 1.0, 1.0], Q4, [[0.9, 0.3]], beta=1, lam=0.05, alphas=(0.5, 3)),
    _s("K4r2-tanh-quadrants", "tanh", "z1*z2", [[1.0, 1.0], [-1.0, -1.0], [1.0, -1.0],
                                                [-1.0, 1.0]],
       [1.0, 1.0, 1.0, 1.0], Q4, [[0.8, 0.0], [0.0, 0.8]], beta=1, lam=0.01, alphas=(0.5, 3),
       purpose="four groups, +-u in both directions"),
    _s("K4r2-relu-quadrants", "relu", "z1*z2", [[1.0, 1.0], [-1.0, -1.0], [1.0, -1.0],
                                                [-1.0, 1.0]],
       [1.0, 1.0, 1.0, 1.0], Q4, [[0.8, 0.0], [0.0, 0.8]], beta=2, lam=0.05, alphas=(1, 3)),
    _s("K4r3-sigmoid-he2lin", "sigmoid", "He2(z1) + z1", [[1.0, 0.5, 0.0], [-1.0, 0.0, 0.5],
                                                          [0.0, 1.0, -1.0], [0.5, -0.5, 1.0]],
       [0.5, 1.0, 1.5, 1.0], Q4, [[0.6], [0.5], [0.3]], beta=1, lam=0.05, alphas=(0.5, 3)),
    _s("K4r3-erf-mixed", "erf", "tanh(z1) + z1*z2", [[1.5, 0.0, 0.0], [0.0, 1.5, 0.0],
                                                      [0.0, 0.0, 1.5], [-1.0, -1.0, -1.0]],
       [1.0, 1.0, 1.0, 1.0], [0.2, 0.3, 0.2, 0.3], [[0.7, 0.2], [0.3, 0.7], [0.1, 0.1]],
       beta=0.5, lam=0.05, alphas=(1, 3)),
    # small risk: the spikes span the target, Gamma = I, large alpha, small lam
    _s("small-K1r1-tanh", "tanh", "tanh(z1)", [[1.0]], [0.3], [1.0], [[1.0]],
       beta=1, lam=0.001, alphas=(3, 8), purpose="small risk"),
    _s("small-K2r2-tanh-add", "tanh", "tanh(z1) + tanh(z2)", [[1.0, 0.0], [0.0, 1.0]],
       [0.3, 0.3], [0.5, 0.5], I2, beta=1, lam=0.001, alphas=(3, 8), purpose="small risk"),
    _s("small-K2r2-erf-add", "erf", "tanh(z1) + tanh(z2)", [[1.2, 0.0], [0.0, 1.2]],
       [0.5, 0.5], [0.5, 0.5], I2, beta=2, lam=0.001, alphas=(3, 8), purpose="small risk"),
)
BY_NAME = {s.name: s for s in SETTINGS}


def _task(job: tuple[CampaignSetting, int, int, int]) -> list[dict]:
    """The rows of one run of a setting: ``(setting, d, seeds, seed)`` -> one row per repetition
    and alpha (every parameter, matrices as JSON)."""
    c, d, seeds, seed = job
    res = simulate_spiked(c.at(d), c.alphas, seeds=seeds, seed=seed)
    return [dict(r, name=c.name, seeds=seeds, n_alphas=len(c.alphas)) for r in res.rows()]


def campaign(names: Sequence[str] | None = None, *, d: int = D, seeds: int = SEEDS,
             seed: int = SEED) -> Campaign:
    """The campaign over the settings ``names`` (default all) at ``d``: one task per
    (setting, d, seed), keyed by those columns, with all ``seeds`` repetitions and alphas."""
    chosen = list(SETTINGS) if not names else [BY_NAME[n] for n in names]
    return Campaign(
        "spiked_runs", tuple((c, int(d), int(seeds), int(seed)) for c in chosen), _task, SCHEMA,
        key_columns=("name", "d", "seed"), key=lambda job: (job[0].name, job[1], job[3]),
        record=record)


def record(job: tuple) -> tuple:
    """A task's parameter record: the setting without its description, d, seeds, seed."""
    c, *rest = job
    return (replace(c, purpose=""), *rest)


def store_paths() -> tuple[Path, Path]:
    """``(read, write)`` paths of the campaign's CSV (the committed data, or a written copy)."""
    return data_file(COMMITTED, "validation", "reports", "data")


def default_store() -> Path:
    """The SQLite store of the runs: beside the CSV that is written (never committed)."""
    return store_paths()[1].with_suffix(".sqlite")


def load(path: str | Path | None = None):
    """The runs of the campaign's CSV (default: the committed one) as a DataFrame (empty if there
    is none)."""
    import pandas as pd

    path = Path(path) if path is not None else store_paths()[0]
    if not path.exists():
        return pd.DataFrame(columns=COLUMNS)
    df = pd.read_csv(path)
    if list(df.columns) != COLUMNS:
        raise ValueError(f"{path} has other columns than the spiked campaign's: "
                         f"{list(df.columns)[:6]}...")
    return df


def run(names: Sequence[str] | None = None, *, d: int = D, seeds: int = SEEDS, seed: int = SEED,
        store: str | Path | None = None, csv: str | Path | None = None, n_jobs: int = 1,
        budget: float | None = None, progress: bool = True) -> int:
    """Simulate the settings ``names`` (default all) at ``d`` that the store lacks
    (:func:`validation.campaign.run_campaign`: ``n_jobs`` workers, a time ``budget``), then
    export every stored run to ``csv`` (default: the committed CSV in a checkout). The store
    (SQLite, default :func:`default_store`) starts from the runs of the CSV, so that what is
    committed is never re-run. Returns the number of settings simulated."""
    c = campaign(names, d=d, seeds=seeds, seed=seed)
    csv_path = Path(csv) if csv is not None else store_paths()[1]
    with Store(Path(store) if store is not None else default_store()) as st:
        for source in dict.fromkeys([csv_path, *(() if csv is not None else store_paths()[:1])]):
            if source.exists():
                st.import_csv(c, source)
        out = run_campaign(c, st, n_jobs=n_jobs, budget=budget, progress=progress)
        st.export_csv(c, csv_path)
    return out.ran


def core_seconds(df) -> float:
    """CPU seconds of the stored runs (sum of the per-repetition wall times, one thread)."""
    if len(df) == 0:
        return 0.0
    per_rep = df.drop_duplicates(["name", "d", "seed", "rep"])
    return float(per_rep["seconds"].sum())


def z_of(mean: float, se: float, theory: float) -> float:
    """``(mean - theory) / se`` (NaN when either is missing)."""
    if not (math.isfinite(theory) and math.isfinite(se)) or se <= 0:
        return math.nan
    return (mean - theory) / se
