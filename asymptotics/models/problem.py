"""The problem of one theory point, everything but alpha: validated parameters, the one-step
spike, the cGET tables on the kappa rule and the spectral measure (docs/THEORY.md §3-§6).

:func:`build_problem` validates every input (the message names the parameter and what is
allowed) and precomputes what does not depend on alpha; :class:`Problem` is what the solvers
(``asymptotics.api.points`` in Python, ``asymptotics.api.paths`` compiled) take.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from asymptotics.coefficients.cget import (
    ConditionalCoefficients,
    conditional_coefficients,
    ge_coefficients,
)
from asymptotics.coefficients.functions import Function, get_function
from asymptotics.core import checks, group_checks
from asymptotics.core.parameters import check, default
from asymptotics.measures.spectral import SpectralMeasure, marchenko_pastur
from asymptotics.step.srf import SpikeMapping, srf_mapping

#: which trained model a result describes: the sRF surrogate, the network itself (deterministic
#: network theory, or the semi-empirical one with ``measure=from_weights(W1, v, theta)``), or
#: random features (eta = 0).
MODELS = ("srf", "network", "rf")


#: beyond these, at p = infinity, the limit is no longer a description of a finite network
#: (:func:`warn_limits`)
LAM_LIMIT = 1e4
#: at a finite width, a larger lam is evaluated here (:func:`cap_lam`)
LAM_CAP = 1e100
#: a larger finite beta is evaluated at BETA_CAP, a smaller positive one at BETA_FLOOR
#: (:func:`cap_beta`)
BETA_CAP = 1e100
BETA_FLOOR = 1e-50
#: a larger finite alpha is evaluated here (:func:`check_alpha`)
ALPHA_CAP = 1e100
BETA_LIMIT = 1e-3
ALPHA_LIMIT = 1e-3


class LimitWarning(UserWarning):
    """The p -> infinity theory is asked for a number outside the regime it describes."""


def warn_small_alpha(alphas, p: float | None) -> None:
    """At p = infinity with almost no samples (alpha < :data:`ALPHA_LIMIT`) the unpenalised mean
    channel still fits the target's mean along the spike, which n -> 0 samples cannot: warn."""
    import warnings

    small = [a for a in alphas if a < ALPHA_LIMIT]
    if p is None and small:
        warnings.warn(
            f"alpha = {min(small):g} at p = infinity: with n = alpha d -> 0 samples the limit "
            "still fits the features' unpenalised mean channel, which no finite network can; "
            f"below alpha = {ALPHA_LIMIT:g} pass the width of your network, p=... (--p)",
            LimitWarning, stacklevel=3)


def warn_limits(lam: float, beta: float, p: float | None) -> None:
    """At p = infinity the theory's mean channel is unpenalised (docs/DERIVATIONS.md §8): as lam
    grows its risk tends to that of the mean channel alone, below E g^2, while every finite
    network tends to E g^2 once lam >~ p. Warn, with the fix, where lam > :data:`LAM_LIMIT` or
    beta < :data:`BETA_LIMIT` without a width."""
    import warnings

    if p is not None:
        return
    if lam > LAM_LIMIT:
        warnings.warn(
            f"lam = {lam:g} at p = infinity: the limit keeps the features' mean channel "
            "unpenalised, so its risk stays below E g^2 however large lam is, unlike any finite "
            f"network (where lam >~ p switches every channel off); above lam = {LAM_LIMIT:g} "
            "pass the width of your network, p=... (--p)", LimitWarning, stacklevel=3)
    if beta < BETA_LIMIT:
        warnings.warn(
            f"beta = {beta:g} at p = infinity: p = beta d neurons with p -> infinity needs "
            f"d >> 1/beta = {1 / beta:.3g}; for a network of a given width pass p=... (--p)",
            LimitWarning, stacklevel=3)


def check_value(name: str, value: float, *, positive: bool = False,
                allow_zero: bool = True) -> float:
    """A finite real ``> 0`` (``positive``) or ``>= 0``: the one validator of ``checks``."""
    return checks.positive(name, value, allow_zero=allow_zero and not positive)


def cap_lam(lam: Any, p: Any) -> Any:
    """At a finite width p the risk tends to E g^2 as lam grows (every channel switched off,
    docs/DERIVATIONS.md §8), at a distance of order p/lam, and the equations' variables of
    order 1/lam^2 leave float64 beyond lam ~ 1e150. A real lam > :data:`LAM_CAP` at a real
    finite p is evaluated at LAM_CAP, with a warning; anything else is returned as given (and
    checked by the caller)."""
    import warnings

    real = (isinstance(lam, (int, float, np.floating)) and not isinstance(lam, bool)
            and isinstance(p, (int, float, np.floating, np.integer)) and not isinstance(p, bool))
    if real and LAM_CAP < lam < math.inf and 1 <= p < math.inf:
        warnings.warn(f"lam = {lam:g} at p = {p:g} is evaluated at lam = {LAM_CAP:g}: the risk "
                      "there is its lam -> infinity limit E g^2 to double precision (the gap "
                      "is of order p/lam); beyond ~1e150 the equations leave double precision",
                      LimitWarning, stacklevel=3)
        return LAM_CAP
    return lam


def cap_beta(beta: Any) -> Any:
    """As beta = p/d grows (shrinks) the risk tends to its beta -> infinity (beta -> 0) value
    at a distance of order 1/beta (beta): it moves by 1e-10 from beta = 1e10 to 1e30 and not in
    double precision from 1e30 to 1e150 (or from 1e-12 to 1e-80), while the equations' variables
    leave float64 beyond beta ~ 1e150 (below ~1e-90 on the network's groups). A real beta above
    :data:`BETA_CAP` (below :data:`BETA_FLOOR`) is evaluated there, with a warning; anything
    else is returned as given (THEORY.md §6)."""
    import warnings

    if not isinstance(beta, (int, float, np.floating)) or isinstance(beta, bool) \
            or not 0.0 < beta < math.inf or BETA_FLOOR <= beta <= BETA_CAP:
        return beta
    at, side = (BETA_CAP, "infinity") if beta > 1.0 else (BETA_FLOOR, "0")
    warnings.warn(f"beta = {beta:g} is evaluated at beta = {at:g}: the risk there is its "
                  f"beta -> {side} value to double precision (the gap is of order "
                  f"{'1/beta' if beta > 1.0 else 'beta'}); beyond it the equations leave double "
                  "precision", LimitWarning, stacklevel=3)
    return at


def check_alpha(alpha: Any) -> float:
    """alpha = n/d, a finite real > 0; above :data:`ALPHA_CAP` it is evaluated at ALPHA_CAP
    with a warning: the risk tends to its alpha -> infinity value at a distance of order
    1/alpha (the same to every printed digit from alpha = 1e20 to 1e150 on every route), and the
    equations leave double precision beyond ~1e150 (THEORY.md §7)."""
    import warnings

    alpha = check_value("alpha", alpha, positive=True)
    if alpha > ALPHA_CAP:
        warnings.warn(f"alpha = {alpha:g} is evaluated at alpha = {ALPHA_CAP:g}: the risk there "
                      "is its alpha -> infinity value to double precision (the gap is of order "
                      "1/alpha); beyond ~1e150 the equations leave double precision",
                      LimitWarning, stacklevel=3)
        return ALPHA_CAP
    return alpha


def check_width(p: float | None) -> float | None:
    """Validate the width p of the finite-p theory (the parameter table's rule): None or +inf
    (the limit), else a real p >= 1."""
    return check("p", p)


def check_common_row(common_row: float | str | None, sigma: Function, target: Function, *,
                     alpha0: float, eta: float, delta: float) -> float:
    """Validate ``common_row`` of :func:`build_problem` and return the ratio omega (> 0)."""
    if common_row is None:
        return 1.0
    if isinstance(common_row, str):
        if common_row != "network":
            raise ValueError(f"common_row must be None, 'network' or a number > 0, "
                             f"got {common_row!r}")
        from asymptotics.step.srf import common_row_ratio

        return common_row_ratio(sigma, target, alpha0=alpha0, eta=eta, delta=delta)
    if isinstance(common_row, bool) or not isinstance(
            common_row, (int, float, np.integer, np.floating)):
        raise TypeError(f"common_row must be None, 'network' or a number > 0, got {common_row!r}")
    v = float(common_row)
    if not (math.isfinite(v) and v > 0):
        raise ValueError(f"common_row must be a finite number > 0, got {v:g}")
    return v


def _function(name: str, spec: object) -> Function:
    """``get_function(spec)``, its errors prefixed with the parameter's name."""
    try:
        return get_function(spec)
    except (ValueError, TypeError) as exc:  # (not type(exc): a UnicodeError has 5 arguments)
        raise (TypeError if isinstance(exc, TypeError) else ValueError)(f"{name}: {exc}"
                                                                        ) from None


def function_name(fn: Function) -> str:
    return fn.name


class MapArgs(NamedTuple):
    """The arguments of the kernels of ``equations.fixed_point`` and ``equations.solver_kernels``,
    by name and in the kernels' order (a tuple, so ``*args`` passes them positionally): the
    kappa tables, the point (A = alpha/beta, lam), the noise, the measure, the width channel."""

    weights: np.ndarray
    kappa: np.ndarray
    mu0: np.ndarray
    mu1: np.ndarray
    mu_star2: np.ndarray
    h: np.ndarray
    h1: np.ndarray
    h2: np.ndarray
    A: float
    lam: float
    delta: float
    measure_code: int
    measure_beta: float
    c: float
    rho: np.ndarray
    F: np.ndarray
    H: np.ndarray
    G: np.ndarray
    p_inv: float
    common_row: float

    def measure(self) -> tuple:
        """The measure and width arguments (``measure_code`` .. ``common_row``)."""
        return tuple(self)[self._fields.index("measure_code"):]

    def without_point(self) -> tuple:
        """Every argument but (A, lam): what a path kernel takes besides its points."""
        return tuple(self)[:self._fields.index("A")] + tuple(self)[self._fields.index("delta"):]


@dataclass(frozen=True)
class Problem:
    """Everything but alpha: functions, the sRF mapping, cGET tables and the spectral measure."""

    sigma: Function
    target: Function
    alpha0: float
    eta: float
    lam: float
    beta: float
    delta: float
    spike: SpikeMapping
    coefficients: ConditionalCoefficients
    measure: SpectralMeasure
    model: str = "srf"
    p: float | None = None  # finite width (docs/DERIVATIONS.md §8); None: the p -> infinity limit
    # the network's bulk-variance channel (docs/DERIVATIONS.md §7): lam_v nu(k)/mu1(k) on the
    # kappa nodes, added to kappa in the kernels (they use kappa only through kappa mu1); None: 0
    kappa_shift: np.ndarray | None = None
    # the network's initial output (docs/DERIVATIONS.md §8): p |Pi wbar|^2 / c of the rows' mean
    # outside v, 1 for a generic mean row (the default closure; sRF); only used at finite p
    common_row: float = 1.0

    @property
    def p_inv(self) -> float:
        return 0.0 if self.p is None else 1.0 / self.p

    def map_args(self, alpha: float, lam: float | None = None) -> MapArgs:
        """The arguments of the kernels of ``fixed_point`` (and ``solver_kernels``) at alpha."""
        k, ms = self.coefficients, self.measure
        kap = k.kappa if self.kappa_shift is None else k.kappa + self.kappa_shift
        return MapArgs(k.weights, kap, k.mu0, k.mu1, k.mu_star2, k.h, k.h1, k.h2,
                       alpha / self.beta, self.lam if lam is None else lam, self.delta, ms.code,
                       ms.beta, ms.c, ms.rho, ms.F, ms.H, ms.G, self.p_inv, self.common_row)


#: the largest spike scale c of a one-step problem: the kappa rule of the conditional
#: coefficients (THEORY.md §4) resolves features of scale sqrt(c) up to here. Measured: tanh,
#: erf and sigmoid turn non-finite from c ~ 7e10-2.6e11, relu from ~1e15, and softplus's risk
#: drifts by 4e-8 at c ~ 5e16 while still "converging"; below 1e10 every registered sigma is
#: flat or smooth in eta (tests/test_spike_scale.py)
MAX_SPIKE_SCALE = 1e10


def check_spike_scale(spike: SpikeMapping, where: str) -> SpikeMapping:
    """``spike`` if its scale c is at most :data:`MAX_SPIKE_SCALE`, else a one-line ValueError
    naming ``where`` (c ~ eta^2 (mu2* + delta) / alpha0, THEORY.md §3)."""
    if not spike.c <= MAX_SPIKE_SCALE:
        raise ValueError(f"{where} gives the step's spike the scale c = {spike.c:.3g}; the "
                         f"one-step equations resolve c <= {MAX_SPIKE_SCALE:g} (c grows like "
                         "eta^2 (mu2* + delta) / alpha0): use a smaller eta or delta or a larger "
                         "alpha0")
    return spike


def build_problem(
    *,
    sigma: str | Function = default("sigma"),
    target: str | Function = default("target"),
    alpha0: float = default("alpha0"),
    eta: float = default("eta"),
    lam: float = default("lam"),
    beta: float = default("beta"),
    delta: float = default("delta"),
    spike: SpikeMapping | None = None,
    gamma: float | None = None,
    measure: SpectralMeasure | None = None,
    n_kappa: int = 120,
    model: str = default("model"),
    p: float | None = default("p"),
    common_row: float | str | None = default("common_row"),
) -> Problem:
    """Validate parameters and precompute what does not depend on alpha.

    ``spike`` overrides the one-step mapping (e.g. r = 0.9, c = gamma = 1 of the bounds,
    THEORY.md §7);
    ``gamma`` overrides only the split of theta* between v and t (at eta = 0 the risk must not
    depend on it: a test of the equations). ``p``: the width of the finite-p theory
    (docs/DERIVATIONS.md §8, :func:`check_width`); None is the p -> infinity limit.
    ``common_row``: an optional finite-d correction of the finite-p theory (docs/DERIVATIONS.md
    §8, "The network's initial output"): the ratio omega = p |Pi wbar|^2 / c of the rows' mean
    outside v to a generic one; "network" is the trained network's
    (:func:`asymptotics.step.srf.common_row_ratio`: the step's residual contains the network's
    initial output, which shrinks the mean row of W0), a number is used as given; None (the
    default) is "network" for the network theory at finite p (``model="network"``, eta > 0, a
    theory measure of the step, not one ``from_weights``) and omega = 1, the closure of §8,
    otherwise (sRF, random features). It changes nothing at p = infinity."""
    alpha0 = check_value("alpha0", alpha0, positive=True)
    eta = check_value("eta", eta)
    lam = check_value("lam", lam)
    beta = cap_beta(check_value("beta", beta, positive=True))
    delta = check_value("delta", delta)
    s, g = _function("sigma", sigma), _function("target", target)
    p = check_width(p)
    lam = cap_lam(lam, p)
    warn_limits(lam, beta, p)
    if common_row is not None and p is None:
        raise ValueError(f"common_row={common_row!r} is a correction of the finite-p theory and "
                         "needs a finite width p (p=...); at p = infinity it changes nothing")
    if measure is not None and not isinstance(measure, SpectralMeasure):
        raise TypeError("measure must be a SpectralMeasure (e.g. from_weights(W1, v, theta) or "
                        f"marchenko_pastur(beta, c)) or None, got {measure!r}")
    if spike is not None and not isinstance(spike, SpikeMapping):
        raise TypeError(f"spike must be a SpikeMapping or None, got {spike!r}")
    if spike is not None:
        check_spike_scale(spike, "the given spike")
    if model not in MODELS:
        raise ValueError(f"model must be one of {', '.join(MODELS)}, got {model!r}")
    if model == "rf" and eta != 0:
        raise ValueError(f"model 'rf' is random features (eta = 0), got eta={eta:g}")
    lam_v = 0.0

    def one_step() -> SpikeMapping:
        try:
            sp = srf_mapping(s, g, alpha0=alpha0, eta=eta, delta=delta,
                             ge=ge_coefficients(s, g))
        except (OverflowError, FloatingPointError, ZeroDivisionError):
            raise ValueError(
                f"the one-step mapping overflows float64 at eta={eta:g}, alpha0={alpha0:g}, "
                f"delta={delta:g} (sigma={s.name}, target={g.name}); use smaller values"
            ) from None
        return check_spike_scale(sp, f"eta={eta:g}, alpha0={alpha0:g}, delta={delta:g} "
                                     f"(sigma={s.name}, target={g.name})")

    # the network theory builds on the one-step mapping: check it before its measure
    mapping = one_step() if model == "network" and spike is None and eta > 0 else None
    # a residual identically zero (labels equal to the network's initial output, e.g. g = 0
    # with mu0 = 0) makes the step null: the network stays random features at W0
    stepped = mapping is None or mapping.u_norm > 1e-12
    if model == "network" and measure is None and spike is None and eta > 0 and stepped:
        # network theory: the population covariance of the step's bulk rows, generalised MP
        # bulk and weighted channels (DERIVATIONS.md §7)
        from asymptotics.measures.population import population_measure

        with group_checks.in_float64("the network theory's population measure", divisions=True,
                                     alpha0=float(alpha0), eta=float(eta), delta=float(delta)):
            measure = population_measure(s, g, alpha0=alpha0, eta=eta, beta=beta, delta=delta)
    if (model == "network" and spike is None and eta > 0 and stepped
            and measure.kind != "weights"):
        # the network's bulk-variance channel (DERIVATIONS.md §7), with any theory measure of
        # the step; a measure from given weights (semi-empirical) stays the cGET of those weights
        from asymptotics.step.row_channel import row_variance_slope

        lam_v = row_variance_slope(s, g, alpha0=alpha0, eta=eta, delta=delta)
    if spike is None and measure is not None and math.isfinite(measure.r):
        # a measure built from a first layer fixes the spike it implies (docs/DERIVATIONS.md §6)
        gm = measure.gamma
        nan = math.nan
        spike = SpikeMapping(measure.r, measure.c, gm, math.sqrt(max(1 - gm * gm, 0.0)),
                             nan, nan, nan, nan)
    if spike is None:
        spike = mapping if mapping is not None else one_step()
    if gamma is not None:
        gamma = checks.real("gamma", gamma, -1.0, 1.0)
        spike = SpikeMapping(spike.r, spike.c, gamma, math.sqrt(1 - gamma * gamma),
                             spike.scale, spike.residual_mean, spike.residual_second_moment,
                             spike.u_norm)
    coeffs = conditional_coefficients(s, g, r=spike.r, c=spike.c, gamma=spike.gamma,
                                      n_kappa=n_kappa)
    if measure is None:
        measure = marchenko_pastur(beta, spike.c)
    shift = None
    if lam_v != 0.0:
        from asymptotics.step.row_channel import kappa_shift

        shift = kappa_shift(coeffs, s, g, spike=spike, lam_v=lam_v, n_kappa=n_kappa)
    if (common_row is None and model == "network" and p is not None and eta > 0
            and measure.kind != "weights"):
        common_row = "network"  # the network's own mean row (docs/DERIVATIONS.md §8)
    omega = check_common_row(common_row, s, g, alpha0=alpha0, eta=eta, delta=delta)
    return Problem(s, g, alpha0, eta, lam, beta, delta, spike, coeffs, measure, model, p,
                   shift, omega)


