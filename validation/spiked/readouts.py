"""Monte Carlo of one giant step with a finite-support initial readout (docs/THEORY.md §11).

Two simulated models per setting, against the theory :func:`asymptotics.risk_readout`:

- ``network``: the protocol of THEORY.md §1 with ``a0_j = eps_j / sqrt(p)``, ``eps_j`` drawn
  i.i.d. from the readout's support (``pm1``: ``+-1`` with probability 1/2 each; the group sizes
  are therefore binomial); the step is :func:`validation.protocol.montecarlo.giant_step` with that
  ``a0``
  (``rate = eta_tilde / n0``, ``eta = eta_tilde p``), then the ridge readout and the test error of
  :mod:`validation.protocol.simulator`. Seeds: repetition ``i`` is child ``i`` of
  ``SeedSequence(seed)``;
  inside it the streams of :data:`validation.protocol.simulator.STREAMS` in the same order and roles
  (random stream 2), plus an eighth child ``readout`` for the draw of ``eps``. With
  ``readout="constant"`` a repetition is the repetition of
  ``validation.protocol.simulator.simulate(Setting(model="network", ...))`` number for number;
- ``srf``: the K-group spiked random-features model of the mapping
  (:func:`asymptotics.readout_mapping`), simulated by :mod:`validation.spiked.simulator`
  (group ``g`` holds ``round(pi_g p)`` rows, one spike direction for all groups).

``python -m validation.spiked readouts run`` simulates the campaign (:data:`SETTINGS` at
:data:`D`, and the network at the d of :data:`D_SCAN`) as a :class:`validation.campaign.Campaign`
(one task per setting, model, readout and d, keyed by its full parameter record) into a SQLite
store, exported to ``validation/reports/data/readouts_runs.csv`` (one row per repetition and
alpha; in a checkout, else the user cache); ``python -m validation.spiked readouts report``
writes ``validation/reports/READOUTS.md`` (:mod:`validation.spiked.readouts_report`) and
``python -m figures.fig_readouts`` its figure.
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

from ..campaign import Campaign, Schema, Store, run_campaign
from ..paths import data_file
from ..protocol import montecarlo as mc
from ..protocol.rows import g10_cell
from ..protocol.simulator import STREAMS, estimate_test_error, fit_readouts, network_step
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
