"""One giant step with a finite-support initial readout (docs/THEORY.md §11).

The protocol of THEORY.md §1 with the initial second layer drawn i.i.d. from a finite set,
``a0_j = eps_j / sqrt(p)`` with ``eps_j = eps_g`` with probability ``pi_g``: ``"constant"`` is
``{1: 1}`` (THEORY.md §1 itself), ``"pm1"`` is ``{+1: 1/2, -1: 1/2}``. The step of row j is
``eps_j`` times the step of the constant readout with the residual ``e = y - mu0 E[eps]``, so
the neurons split into K groups by ``eps_j`` (Dandi, Pesce, Cui, Krzakala, Lu, Loureiro 2024,
arXiv 2410.18938), one spike direction ``v`` shared by all groups:

    E e   = mu0_star - mu0 E[eps],
    E e^2 = mu2_star + Delta - 2 mu0 E[eps] mu0_star + mu0^2 E[eps]^2,
    |u|^2 = mu1_star^2 + E e^2 / alpha0,      gamma = mu1_star / |u|,
    u_g   = eps_g eta_tilde E[sigma'] |u|       (the loading of group g along v),
    s_g   = 1 + eps_g eta_tilde E[z sigma'] E e,
    c_g   = s_g^2 + eps_g^2 eta_tilde^2 s2 E e^2 / alpha0,

the K-group model of THEORY.md §10 with r = 1 (``loadings = [[u_g]]``, ``bulk = [c_g]``,
``fractions = [pi_g]``, ``overlaps = [[gamma]]``). ``{1: 1}`` is
:func:`asymptotics.step.srf.srf_mapping`
exactly; ``alpha0 = inf`` is the limit of an infinite first batch (``|u| = |mu1_star|``,
``c_g = s_g^2``). :func:`risk_readout` solves it (``model="srf"``, the surrogate the equations
describe exactly; ``model="network"`` through ``asymptotics.risk`` is the network theory of the
groups, THEORY.md §15, ``asymptotics.network``)."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace

from asymptotics.coefficients.cget import GECoefficients, ge_coefficients
from asymptotics.coefficients.functions import Function
from asymptotics.core import group_checks
from asymptotics.core.parameters import default
from asymptotics.core.result import after_steps_fields
from asymptotics.equations.solver import SolverConfig
from asymptotics.step.srf import step_moments

#: the named readouts: value (times sqrt p) -> weight
NAMED_READOUTS = {"constant": {1.0: 1.0}, "pm1": {1.0: 0.5, -1.0: 0.5}}
SUM_TOL = 1e-9


@dataclass(frozen=True)
class Readout:
    """A finite-support initial readout: ``a0_j = values[g] / sqrt(p)`` w.p. ``weights[g]``."""

    name: str
    values: tuple[float, ...]
    weights: tuple[float, ...]

    @property
    def mean(self) -> float:
        """E[eps]."""
        return math.fsum(w * v for v, w in zip(self.values, self.weights, strict=True))

    @property
    def second_moment(self) -> float:
        """E[eps^2]."""
        return math.fsum(w * v * v for v, w in zip(self.values, self.weights, strict=True))

    @property
    def is_constant(self) -> bool:
        """The readout of THEORY.md §1 (every a0_j = 1/sqrt p)."""
        return self.values == (1.0,)


def _number(name: str, value: object) -> float:
    if isinstance(value, (bool, str, bytes)):
        raise TypeError(f"{name} must be a real number, got {value!r}")
    try:
        return float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a real number, got {value!r}") from None


def parse_readout(spec: object = "constant") -> Readout:
    """A :class:`Readout` from ``"constant"``, ``"pm1"``, a mapping value -> weight (values
    finite and nonzero, weights > 0 summing to 1) or a :class:`Readout`. Errors say what is
    allowed."""
    if isinstance(spec, Readout):
        return spec
    if isinstance(spec, str):
        if spec not in NAMED_READOUTS:
            raise ValueError(f"readout must be 'constant', 'pm1' or a mapping value -> weight, "
                             f"got {spec!r}")
        name, table = spec, NAMED_READOUTS[spec]
    elif isinstance(spec, Mapping):
        name, table = "", spec
    else:
        raise TypeError(f"readout must be 'constant', 'pm1' or a mapping value -> weight (e.g. "
                        f"{{1: 0.5, -1: 0.5}}), got {spec!r}")
    if len(table) == 0:
        raise ValueError("readout must have at least one value, got an empty mapping")
    if len(table) > group_checks.MAX_GROUPS:
        raise ValueError(f"readout has {len(table)} values (one neuron group each); at most "
                         f"{group_checks.MAX_GROUPS} are supported")
    values, weights = [], []
    for v, w in table.items():
        fv = _number("readout value", v)
        if fv == 0.0 or not math.isfinite(fv):
            raise ValueError("readout values must be finite and nonzero (a neuron with a0 = 0 "
                             f"takes no step), got {fv:g}")
        fw = _number("readout weight", w)
        if not (fw > 0.0 and math.isfinite(fw)):
            raise ValueError(f"readout weights must be > 0, got {fw:g} for value {fv:g}")
        values.append(fv)
        weights.append(fw)
    if len(set(values)) != len(values):
        raise ValueError(f"readout values must be distinct, got {values}")
    order = sorted(range(len(values)), key=lambda i: -values[i])  # canonical: descending
    values, weights = [values[i] for i in order], [weights[i] for i in order]
    total = math.fsum(weights)
    if abs(total - 1.0) > SUM_TOL:
        raise ValueError(f"readout weights must sum to 1, got {total:g}")
    if not name:
        name = next((k for k, t in NAMED_READOUTS.items()
                     if sorted(t.items()) == sorted(zip(values, weights, strict=True))),
                    "{" + ", ".join(f"{v:g}: {w:g}" for v, w in zip(values, weights,
                                                                     strict=True)) + "}")
    return Readout(name, tuple(values), tuple(weights))


@dataclass(frozen=True)
class ReadoutMapping:
    """The K-group sRF model of one giant step with a finite-support readout (THEORY.md §11):
    group g (``fractions[g]``) has rows ``sqrt(bulk[g]) G_i + loadings[g][0] v``."""

    readout: Readout
    loadings: list  # K x 1
    bulk: list
    fractions: list
    gamma: float
    rho: float
    scales: list  # s_g
    residual_mean: float  # E e
    residual_second_moment: float  # E e^2
    u_norm: float  # |u|

    def spiked_params(self) -> dict:
        """The keyword arguments of :func:`asymptotics.spiked.risk_spiked` for this model."""
        return dict(loadings=self.loadings, bulk=self.bulk, fractions=self.fractions,
                    overlaps=[[self.gamma]])


def readout_mapping(sigma: str | Function, target: str | Function, *, alpha0: float,
                    eta: float, delta: float = 0.0, readout: object = "constant",
                    ge: GECoefficients | None = None) -> ReadoutMapping:
    """The groups of one giant step with eta = eta_tilde p on n0 = alpha0 d samples and the
    initial readout ``readout`` (THEORY.md §11); ``alpha0 = inf``: an infinite first batch."""
    ro = parse_readout(readout)
    group_checks.readout_step(alpha0, eta, delta)
    if not (alpha0 > 0):
        raise ValueError(f"alpha0 must be > 0 (inf: an infinite first batch), got {alpha0}")
    if not (eta >= 0 and math.isfinite(eta)):
        raise ValueError(f"eta must be >= 0 and finite, got {eta}")
    if not (delta >= 0 and math.isfinite(delta)):
        raise ValueError(f"delta must be >= 0 and finite, got {delta}")
    k = ge if ge is not None else ge_coefficients(sigma, target)
    with group_checks.in_float64("the readout's step", eta=float(eta), alpha0=float(alpha0),
                                 delta=float(delta), readout=ro.name):
        m = step_moments(k, alpha0=alpha0, eta=eta, delta=delta, values=tuple(ro.values),
                         mean=ro.mean)
    ee, ee2, u_norm, gamma = m.residual_mean, m.residual_second_moment, m.u_norm, m.gamma
    loadings = [[float(load)] for load, _, _ in m.groups]
    scales = [float(s) for _, s, _ in m.groups]
    bulk = [float(c) for _, _, c in m.groups]
    return ReadoutMapping(readout=ro, loadings=loadings, bulk=bulk, fractions=list(ro.weights),
                          gamma=float(gamma), rho=math.sqrt(max(1.0 - gamma * gamma, 0.0)),
                          scales=scales, residual_mean=float(ee),
                          residual_second_moment=float(ee2), u_norm=float(u_norm))


def check_model(model: object, ro: Readout) -> None:
    """A finite-support readout is solved on the K-group sRF model only: one line otherwise."""
    if model == "srf":
        return
    if model == "network":
        raise ValueError(f"readout={ro.name!r} with model='network' is answered by "
                         "asymptotics.risk (THEORY.md §15); risk_readout is the K-group sRF "
                         "model of the step (model='srf', THEORY.md §11)")
    raise ValueError(f"model must be 'srf' for a finite-support readout, got {model!r}")


def risk_readout(alpha: float, *, readout: object = "pm1",
                 sigma: str | Function | Callable = default("sigma"),
                 target: str | Function | Callable = default("target"),
                 alpha0: float = default("alpha0"), eta: float = default("eta"),
                 lam: float = default("lam"), beta: float = default("beta"),
                 delta: float = default("delta"), model: str = "srf",
                 p: float | None = default("p"), strict: bool = False,
                 solver: SolverConfig = SolverConfig(), n_kappa: int | None = None):
    """Asymptotic test error after one giant step whose initial readout has finite support
    (THEORY.md §11): the K-group sRF model of :func:`readout_mapping` solved by
    :func:`asymptotics.spiked.risk_spiked` (a :class:`~asymptotics.RiskResult` carrying the
    step's ``alpha0`` and ``eta``). Defaults as :func:`asymptotics.risk`;
    ``readout="constant"`` is ``asymptotics.risk(model="srf")`` (to solver precision). ``p``:
    finite width (§10.6)."""
    from asymptotics.spiked.solve import risk_spiked

    ro = parse_readout(readout)
    check_model(model, ro)
    mp = readout_mapping(sigma, target, alpha0=alpha0, eta=eta, delta=delta, readout=ro)
    res = risk_spiked(alpha, sigma=sigma, target=target, lam=lam, beta=beta, delta=delta, p=p,
                      strict=strict, solver=solver, n_kappa=n_kappa, **mp.spiked_params())
    return replace(res, **after_steps_fields(float(alpha0), (float(eta),), ro.name, "fresh"))


def risk_readout_curve(alphas: Iterable[float], *, readout: object = "pm1",
                       sigma: str | Function | Callable = default("sigma"),
                       target: str | Function | Callable = default("target"),
                       alpha0: float = default("alpha0"), eta: float = default("eta"),
                       lam: float = default("lam"), beta: float = default("beta"),
                       delta: float = default("delta"), model: str = "srf",
                       p: float | None = default("p"), strict: bool = False,
                       solver: SolverConfig = SolverConfig(), progress: bool | None = None):
    """:func:`risk_readout` along alpha (warm starts) as a DataFrame with a ``readout`` column
    (``progress`` as in :func:`asymptotics.spiked.solve.risk_spiked_curve`)."""
    from asymptotics.spiked.solve import risk_spiked_curve

    ro = parse_readout(readout)
    check_model(model, ro)
    mp = readout_mapping(sigma, target, alpha0=alpha0, eta=eta, delta=delta, readout=ro)
    df = risk_spiked_curve(alphas, sigma=sigma, target=target, lam=lam, beta=beta, delta=delta,
                           p=p, strict=strict, solver=solver, progress=progress,
                           **mp.spiked_params())
    for name, value in after_steps_fields(float(alpha0), (float(eta),), ro.name, "fresh",
                                          json_text=True).items():
        df[name] = value  # the step's, as on risk_readout's
    return df


def api_readout_risk(alpha: float, readout: object, *, model: str, spike: object,
                     gamma: object, measure: object, common_row: object, lam: object,
                     eta: object, **kw):
    """``asymptotics.risk(..., readout=...)``: None for the constant readout (the caller's own
    path, unchanged), else :func:`risk_readout` after checking that nothing the K-group route
    cannot honour was asked for."""
    ro = parse_readout(readout)
    if ro.is_constant:
        return None
    check_model(model, ro)
    given = [name for name, v in (("spike", spike), ("gamma", gamma), ("measure", measure),
                                  ("common_row", common_row)) if v is not None]
    given += [name for name, v in (("lam", lam), ("eta", eta)) if isinstance(v, str)]
    if given:
        raise ValueError(f"readout={ro.name!r} does not support {', '.join(given)} (the K-group "
                         "model of THEORY.md §11/§15 is built from the step's parameters)")
    return risk_readout(alpha, readout=ro, lam=lam, eta=eta, **kw)
