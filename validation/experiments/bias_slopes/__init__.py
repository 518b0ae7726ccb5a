"""The finite-d bias of the sampled quantities that Monte Carlo tests compare with a d -> infinity
limit, measured: their mean over independent draws at d = 200, 400, 800, the bias against the
limit fitted as c/d, and from the fit the allowance a test at its own d may add to its
statistical band (|c| + 3 s.e.(c))/d.

The quantities are those of the network theory's population covariance of one giant step,
C = (I + a M)^2 + bq Q (docs/DERIVATIONS.md §7; a = eta c1, bq = eta^2 E zeta^2/alpha0, M and Q
the weighted Wishart matrices of a first batch, theta*.x_i stratified as the sampled device
draws them): per draw, the device's spectral sums over Sigma = Pi C Pi (``c`` = mean eigenvalue,
``bulk`` = mean of 1/(1 + lam), ``tch`` = the t-channel sum of t_j^2 lam_j/(1 + lam_j)), and
for the resolvent settings tr((C - zeta)^-1)/d at four zeta and the forms of (C + 1)^-1 on
theta* and u = n0^-1 sum_i e_i x_i (an independent numpy eigendecomposition of C). Limits: the
closed-form trace for ``c``, the Gauss rules of the deterministic measure for ``bulk`` and
``tch``, :func:`asymptotics.measures.population.population_resolvent` for the rest.

The same for the K-group model with a linear activation (``ridge.py``: the exact risk of ridge
on its Gaussian features for a sampled W against the theory at p = infinity and at p = d) and
for the block resolvent against its exact p x p evaluation (``blocks.py``), and for sampled
spectra against their predictions (``spectrum.py``: the sRF outliers at the simulated d, the
Marchenko-Pastur atoms), and for the semi-empirical measure of sampled first layers
(``channels.py``: sRF weights, the trained network's step covariances, the two-step network's
group covariances), and for the overlaps of a network trained by two steps (``steps.py``).

One task per (setting, d, repetition), keyed by its full parameter record, on the campaign
runner; exported to ``validation/reports/data/bias_slopes_runs.csv`` (one row per quantity).
The report: ``python -m validation.experiments.bias_slopes`` (``report.py``).
"""

from __future__ import annotations

import functools
import math
import pathlib
import zlib
from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd
from scipy.special import ndtri

from validation.campaign import Campaign, Schema, run_rows
from validation.paths import data_file

from .blocks import BLOCKS, BlockSetting, block_draw, block_theory
from .channels import CHANNELS, ChannelSetting, channel_draw, channel_theory
from .ridge import ALPHA_FW, ALPHAS, RidgeSetting, finite_width_draw, linear_draw, theory
from .spectrum import SPECTRA, SpectrumSetting, spectrum_draw, spectrum_theory
from .steps import STEPS, StepsSetting, steps_draw, steps_theory

REPORTS = pathlib.Path(__file__).resolve().parents[2] / "reports"
RUNS = REPORTS / "data" / "bias_slopes_runs.csv"
SEED = 35000
DS = (200, 400, 800)
REPS = 32
ZETAS = (-1.0, -0.2, 0.5 + 0.5j, 2.0 + 0.3j)
SCHEMA = Schema.of(setting=str, sigma=str, target=str, alpha0=float, eta=float, d=int, rep=int,
                   quantity=str, value=float)
REGENERATE = "python -m validation.experiments.bias_slopes --simulate --out validation/reports"
#: the allowance's width in standard errors of the fitted slope
SLOPE_SE = 3.0


@dataclass(frozen=True)
class BiasSetting:
    """One (sigma, target, alpha0, eta) of the step; ``resolvent``: also the forms of C."""

    name: str
    sigma: str
    target: str
    alpha0: float
    eta: float
    resolvent: bool = False


POPULATION = (
    BiasSetting("relu-relu-0.5-3", "relu", "relu", 0.5, 3.0),
    BiasSetting("relu-tanh-2-1", "relu", "tanh", 2.0, 1.0),
    BiasSetting("tanh-sin-20-1", "tanh", "sin", 20.0, 1.0),
    BiasSetting("relu-relu-2-3", "relu", "relu", 2.0, 3.0, resolvent=True),
    BiasSetting("erf-sin-0.5-3", "erf", "sin", 0.5, 3.0, resolvent=True),
)
#: the K-group model with a linear activation (``ridge.py``): risks at p = infinity and p = d
RIDGE = (RidgeSetting("linear-3groups", "linear"), RidgeSetting("finite-width-2groups",
                                                                 "finite_width"))
SETTINGS = POPULATION + RIDGE + BLOCKS + SPECTRA + CHANNELS + STEPS
Setting = (BiasSetting | RidgeSetting | BlockSetting | SpectrumSetting | ChannelSetting
           | StepsSetting)
BY_NAME = {s.name: s for s in SETTINGS}


def _zeta_name(z: complex) -> str:
    z = complex(z)
    return f"{z.real:g}" if z.imag == 0 else f"{z.real:g}{z.imag:+g}i"


@functools.cache
def quantities(setting: Setting) -> tuple[str, ...]:
    """The names of the quantities measured for ``setting``, in the rows' order."""
    if isinstance(setting, BlockSetting):
        return tuple(block_theory(setting, DS[0]))
    if isinstance(setting, SpectrumSetting):
        return tuple(spectrum_theory(setting, DS[0]))
    if isinstance(setting, ChannelSetting):
        return tuple(channel_theory(setting))
    if isinstance(setting, StepsSetting):
        return tuple(steps_theory(setting))
    if isinstance(setting, RidgeSetting):
        return tuple(f"risk@{a:g}" for a in (ALPHAS if setting.kind == "linear"
                                              else (ALPHA_FW,)))
    out = ["c", "bulk", "tch"]
    if setting.resolvent:
        for z in ZETAS:
            out += [f"trace_re@{_zeta_name(z)}", f"trace_im@{_zeta_name(z)}"]
        out += ["theta_theta", "theta_u", "u_u", "u_norm2", "mu1"]
    return tuple(out)


def step_coefficients(setting: BiasSetting) -> tuple[float, float, float]:
    """``(a, bq, mu0)`` of the step's population covariance."""
    from asymptotics.coefficients.cget import ge_coefficients
    from asymptotics.coefficients.functions import get_function

    k = ge_coefficients(get_function(setting.sigma), get_function(setting.target))
    a = setting.eta * k.c1
    bq = setting.eta**2 * max(k.s2 - k.c1**2, 0.0) / setting.alpha0
    return a, bq, k.mu0


def first_batch(setting: BiasSetting, d: int, rng: np.random.Generator
                ) -> tuple[np.ndarray, np.ndarray]:
    """``(X, e)``: n0 = alpha0 d Gaussian inputs, theta* the first coordinate, theta*.x_i
    stratified (one uniform draw per quantile cell of N(0, 1)), e_i = g(theta*.x_i) - mu0."""
    from asymptotics.coefficients.functions import get_function

    n0 = max(int(round(setting.alpha0 * d)), 1)
    X = rng.standard_normal((n0, d))
    X[:, 0] = ndtri((np.arange(n0) + rng.random(n0)) / n0)
    return X, get_function(setting.target)(X[:, 0]) - step_coefficients(setting)[2]


def draw(setting: Setting, d: int, rep: int) -> dict[str, float]:
    """The quantities of one independent draw at dimension ``d`` (repetition ``rep``): a first
    batch of the step, or a sampled W of the linear K-group model."""
    from asymptotics.measures import population as N

    rng = np.random.default_rng([SEED, zlib.crc32(setting.name.encode()), d, rep])
    if isinstance(setting, RidgeSetting):
        return (linear_draw if setting.kind == "linear" else finite_width_draw)(d, rng)
    if isinstance(setting, BlockSetting):
        return block_draw(setting, d, rng)
    if isinstance(setting, SpectrumSetting):
        return spectrum_draw(setting, d, rng)
    if isinstance(setting, ChannelSetting):
        return channel_draw(setting, d, rng)
    if isinstance(setting, StepsSetting):
        return steps_draw(setting, d, rng)
    X, e = first_batch(setting, d, rng)
    n0 = X.shape[0]
    a, bq, _ = step_coefficients(setting)
    lam, _, tv, _ = N._batch_atoms(N._batch_sample(X, e, reduce=n0 < d - 1), a, bq)
    out = {"c": float(np.mean(lam)), "bulk": float(np.mean(1.0 / (1.0 + lam))),
           "tch": float(np.sum(tv * tv * lam / (1.0 + lam)))}
    if setting.resolvent:
        out.update(covariance_forms(setting, X, e))
    return out


def covariance_forms(setting: BiasSetting, X: np.ndarray, e: np.ndarray) -> dict[str, float]:
    """tr((C - zeta)^-1)/d at :data:`ZETAS` and the forms of (C + 1)^-1 on theta* and u, from
    a direct eigendecomposition of C (numpy, no code of the device)."""
    n0, d = X.shape
    a, bq, _ = step_coefficients(setting)
    L = np.eye(d) + a * (X.T * e) @ X / n0
    lam, E = np.linalg.eigh(L @ L + bq * (X.T * (e * e)) @ X / n0)
    u_raw = X.T @ e / n0
    th, u = E[0], E.T @ u_raw
    out = {}
    for z in ZETAS:
        tr = complex(np.mean(1.0 / (lam - z)))
        out[f"trace_re@{_zeta_name(z)}"] = tr.real
        out[f"trace_im@{_zeta_name(z)}"] = tr.imag
    r = 1.0 / (lam + 1.0)
    out.update(theta_theta=float(r @ (th * th)), theta_u=float(r @ (th * u)),
               u_u=float(r @ (u * u)), u_norm2=float(u_raw @ u_raw), mu1=float(u_raw[0]))
    return out


@functools.cache
def limits(setting: Setting, d: int | None = None) -> dict[str, float]:
    """The d -> infinity value of every quantity of ``setting`` (module docstring); for the
    finite-width setting the theory at p = ``d``."""
    if isinstance(setting, RidgeSetting):
        return theory(setting.kind, int(d) if setting.kind == "finite_width" else 0)
    if isinstance(setting, BlockSetting):
        return block_theory(setting, int(d))
    if isinstance(setting, SpectrumSetting):
        return spectrum_theory(setting, int(d))
    if isinstance(setting, ChannelSetting):
        return channel_theory(setting)
    if isinstance(setting, StepsSetting):
        return steps_theory(setting)
    from asymptotics.coefficients.functions import get_function
    from asymptotics.measures import population_quadrature as PQ
    from asymptotics.measures.population import population_resolvent

    s, g = get_function(setting.sigma), get_function(setting.target)
    a, bq, mu0 = step_coefficients(setting)
    zq, wq = np.polynomial.hermite_e.hermegauss(120)
    wq = wq / wq.sum()
    ev = g(zq) - mu0
    e1, e2 = float(wq @ ev), float(wq @ (ev * ev))
    out = {"c": 1.0 + 2 * a * e1 + a * a * (e1 * e1 + e2 / setting.alpha0) + bq * e2}
    r = PQ.population_rules(s, g, setting.alpha0, setting.eta, 0.0)
    out["bulk"] = float(r.weights[0] @ (1.0 / (1.0 + r.nodes[0])))
    out["tch"] = float(r.weights[2] @ (r.nodes[2] / (1.0 + r.nodes[2])))
    if setting.resolvent:
        res = population_resolvent(s, g, alpha0=setting.alpha0, eta=setting.eta,
                                   zeta=np.array(ZETAS))
        if not res.converged:
            raise RuntimeError(f"{setting.name}: the resolvent did not converge")
        for z, tr in zip(ZETAS, res.trace, strict=True):
            out[f"trace_re@{_zeta_name(z)}"] = float(tr.real)
            out[f"trace_im@{_zeta_name(z)}"] = float(tr.imag)
        out.update(theta_theta=float(res.theta_theta[0].real),
                   theta_u=float(res.theta_u[0].real), u_u=float(res.u_u[0].real),
                   u_norm2=float(res.u_norm2), mu1=float(res.mu1))
    return out


def _task(job: tuple[Setting, int, int]) -> list[dict]:
    s, d, rep = job
    vals = draw(s, d, rep)
    if not isinstance(s, BiasSetting):
        head = dict(sigma="z", target="", alpha0=math.nan, eta=math.nan)
    else:
        head = dict(sigma=s.sigma, target=s.target, alpha0=s.alpha0, eta=s.eta)
    return [dict(setting=s.name, **head, d=d, rep=rep, quantity=q, value=vals[q])
            for q in quantities(s)]


def campaign(ds=DS, reps: int = REPS, settings=SETTINGS) -> Campaign:
    """One task per (setting, d, repetition)."""
    jobs = tuple((s, int(d), rep) for s in settings for d in ds for rep in range(reps))
    names = [s.name for s in SETTINGS]
    return Campaign("bias_slopes_runs", jobs, _task, SCHEMA, key_columns=("setting", "d", "rep"),
                    key=lambda j: (j[0].name, j[1], j[2]),
                    rank=lambda r: (names.index(r["setting"]), r["d"], r["rep"],
                                    quantities(BY_NAME[r["setting"]]).index(r["quantity"])),
                    record=lambda j: {"setting": asdict(j[0]), "d": j[1], "rep": j[2],
                                      "seed": SEED, "zetas": [str(z) for z in ZETAS]})


def simulate(save: bool = True, progress: bool | None = True, n_jobs: int = 1,
             **plan) -> pd.DataFrame:
    """Run what the store lacks (from the committed CSV and its keys file) and export it."""
    c = campaign(**plan)
    read, write = data_file(RUNS, "validation", "reports", "data")
    return run_rows(c, read, write, save=save, n_jobs=n_jobs, progress=progress)


def load_runs() -> pd.DataFrame:
    """The committed (or refreshed) runs."""
    path = data_file(RUNS, "validation", "reports", "data")[0]
    return _read(str(path), path.stat().st_mtime_ns).copy()


@functools.lru_cache(maxsize=2)
def _read(path: str, mtime: int) -> pd.DataFrame:
    return pd.read_csv(path)


@dataclass(frozen=True)
class Slope:
    """The fitted finite-d bias ``c/d`` of one quantity against its limit: ``c`` and its
    standard error (inflated by sqrt(chi2/dof) when the 1/d law fits worse than the errors),
    chi2 of the fit on ``dof`` degrees of freedom, and the straight line's intercept against
    the limit in its own standard errors (``z_limit``: a check of the limit itself)."""

    setting: str
    quantity: str
    limit: float
    c: float
    se: float
    chi2: float
    dof: int
    z_limit: float
    draws: int

    def allowance(self, d: float) -> float:
        """The bias a test at dimension ``d`` may add to its statistical band."""
        return (abs(self.c) + SLOPE_SE * self.se) / d


def fit_slopes(df: pd.DataFrame) -> list[Slope]:
    """Weighted least squares of mean(d) - limit(d) = c/d over the measured d (weights
    1/s.e.^2), per setting and quantity, and the two-parameter line's intercept as a check
    (``limit``: that of the largest d)."""
    out = []
    for name, sub in df.groupby("setting", sort=False):
        for q, g in sub.groupby("quantity", sort=False):
            agg = g.groupby("d")["value"].agg(["mean", "std", "count"])
            x = 1.0 / agg.index.to_numpy(float)
            lim = np.array([limits(BY_NAME[name], int(d))[q] for d in agg.index])
            b = agg["mean"].to_numpy() - lim
            tiny = 1e-12 * max(1.0, float(np.max(np.abs(lim))))
            if np.all(np.abs(b) <= tiny) and np.all(agg["std"].to_numpy() <= tiny):  # exact
                out.append(Slope(name, q, float(lim[-1]), 0.0, 0.0, 0.0, len(x) - 1, 0.0,
                                 int(agg["count"].min())))
                continue
            w = agg["count"].to_numpy() / np.maximum(agg["std"].to_numpy() ** 2, 1e-300)
            sxx = float(np.sum(w * x * x))
            c = float(np.sum(w * x * b)) / sxx
            dof = len(x) - 1
            chi2 = float(np.sum(w * (b - c * x) ** 2))
            se = math.sqrt(max(1.0, chi2 / dof if dof else 1.0) / sxx)
            A = np.vstack([np.ones_like(x), x]).T * np.sqrt(w)[:, None]
            cov = np.linalg.inv(A.T @ A)
            coef = cov @ (A.T @ (b * np.sqrt(w)))
            out.append(Slope(name, q, float(lim[-1]), c, se, chi2, dof,
                             float(coef[0] / math.sqrt(cov[0, 0])), int(agg["count"].min())))
    return out


def slope(setting: str, quantity: str) -> Slope:
    """The committed measurement's :class:`Slope` of one quantity (what the tests read)."""
    df = load_runs()
    df = df[(df["setting"] == setting) & (df["quantity"] == quantity)]
    if df.empty:
        raise KeyError(f"no committed bias measurement of {quantity!r} for {setting!r}")
    return fit_slopes(df)[0]
