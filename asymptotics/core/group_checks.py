"""Validation of the inputs beyond one step (one home for the messages): the K-group model's
shapes and bounds (docs/THEORY.md §10.1), the width p with several groups (§10.6), eta per step
(§12), the growth of a multi-index target expression and the groups read off a first layer
(§12.4). Errors name the parameter, the value and what is allowed. Imports only ``checks``."""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Iterator, Sequence

import numpy as np

from asymptotics.core import checks

#: at most this many neuron groups K: the solve's cost grows steeply with K (measured 0.2-0.5 s
#: at K = 32, 5-11 s at K = 64, r = 1-2; K = 200 ran for minutes, K = 1000 ran out of memory)
MAX_GROUPS = 64
#: at most this many spike directions r: the kappa rule is a tensor rule in r dimensions (the
#: refinement ladder of asymptotics.spiked.solve reaches 33^4 ~ 1.2e6 nodes at r = 4)
MAX_SPIKES = 4
#: a multi-index target must grow slower than exp(|z|^2 / 4) along every probed ray
GROWTH_RTOL = 1e-6
PROBE = np.linspace(-12.0, 12.0, 481)


def _brief(value: object) -> str:
    """``repr(value)`` on one line (an array's repr spans several), at most 120 characters."""
    text = " ".join(repr(value).split())
    return text if len(text) <= 120 else text[:117] + "..."


@contextlib.contextmanager
def in_float64(what: str, *, divisions: bool = False, **values: object) -> Iterator[None]:
    """Turn an overflow of float64 inside ``what`` (OverflowError, FloatingPointError and, with
    ``divisions``, a ZeroDivisionError from an underflow) into a one-line ValueError naming
    the parameters ``values`` that produced it."""
    kinds = (OverflowError, FloatingPointError) + ((ZeroDivisionError,) if divisions else ())
    try:
        yield
    except kinds:
        shown = ", ".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={_brief(v)}"
                          for k, v in values.items())
        raise ValueError(f"float64 overflows in {what} at {shown}; use less extreme values"
                         ) from None


#: at most this bulk standard deviation sqrt(c) of a group after a step: the xi rules' fine
#: reference has ~200 sqrt(c) nodes per moment (sqrt(c) = 1e8, sigma = sin(1e8 z), asked for
#: 89 GiB); a smooth sigma at the documented step sizes stays below ~10
MAX_BULK_SCALE = 1e3


def bulk_scale(sc: float, sigma: str) -> float:
    """``sc``, a group's sqrt(c) after a step (THEORY.md §12), if the steps' quadrature can
    resolve it (<= :data:`MAX_BULK_SCALE`); else a ValueError naming sigma."""
    if not sc <= MAX_BULK_SCALE:
        raise ValueError(f"a step gives a neuron group the bulk scale sqrt(c) = {sc:.3g} (sigma "
                         f"{sigma!r}: E sigma'^2 times eta^2, grown by the batch noise at a "
                         f"small alpha0); the steps' quadrature resolves sqrt(c) <= "
                         f"{MAX_BULK_SCALE:g}: use a smaller eta, a larger alpha0 or a smoother "
                         "sigma")
    return sc


def _array(name: str, value: object, shape: str) -> np.ndarray:
    """``value`` as a float64 array, or a one-line error naming ``name`` and ``shape``."""
    if isinstance(value, (str, bytes, dict)) or value is None:
        raise TypeError(f"{name} must be {shape} of real numbers, got {_brief(value)}")
    try:
        raw = np.asarray(value)
    except ValueError:  # ragged nesting (numpy: "inhomogeneous shape")
        raise ValueError(f"{name} must be {shape} (rows of equal length), got a ragged "
                         f"nesting {_brief(value)}") from None
    kind = raw.dtype.kind
    if kind in "bcSUV" or (kind == "O" and any(
            isinstance(x, (bool, str, bytes, complex)) or x is None for x in raw.ravel())):
        raise TypeError(f"{name} must be {shape} of real numbers, got {_brief(value)}")
    try:
        a = np.asarray(raw, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be {shape} of real numbers, got {_brief(value)}") from None
    return a


def spiked_inputs(loadings: object, bulk: object, fractions: object, overlaps: object,
                  p: object = None, n_kappa: object = None, n_omega: object = None
                  ) -> tuple[int, int]:
    """Check the shapes and bounds of the K-group model before any work (THEORY.md §10.1):
    ``loadings`` K x r with 1 <= K <= :data:`MAX_GROUPS`, 1 <= r <= :data:`MAX_SPIKES`;
    ``bulk``, ``fractions`` K numbers; ``overlaps`` r x k; the width :func:`group_width`; the
    caller's rules :func:`quadrature_nodes`.
    Returns (K, r); the values themselves are checked by ``build_spiked_problem``."""
    U = _array("loadings", loadings, "a K x r matrix")
    if U.ndim != 2:
        raise ValueError(f"loadings must be a K x r matrix (one row per group, one column per "
                         f"spike direction), got shape {U.shape}")
    K, r = U.shape
    if K < 1 or r < 1:
        raise ValueError(f"loadings must be K x r with K >= 1 groups and r >= 1 spike "
                         f"directions (a group without a spike: a column of zeros), got shape "
                         f"{U.shape}")
    if K > MAX_GROUPS:
        raise ValueError(f"loadings has K = {K} groups; at most {MAX_GROUPS} are supported (the "
                         "solve takes ~10 s at K = 64 and grows steeply): merge groups of "
                         "similar rows")
    if r > MAX_SPIKES:
        raise ValueError(f"loadings has r = {r} spike directions; at most {MAX_SPIKES} are "
                         f"supported (need r <= {MAX_SPIKES}: the kappa quadrature is a "
                         "tensor rule in r dimensions)")
    if not np.all(np.isfinite(U)):
        raise ValueError(f"loadings must be finite, got {U.tolist()}")
    for name, value in (("bulk", bulk), ("fractions", fractions)):
        a = _array(name, value, "a list of K numbers")
        if a.ndim != 1:
            raise ValueError(f"{name} must be a list of K = {K} numbers (one per row of "
                             f"loadings), got shape {a.shape}")
        if a.shape[0] != K:
            raise ValueError(f"{name} must have K = {K} entries (one per row of loadings), "
                             f"got {a.shape[0]}")
    G = _array("overlaps", overlaps, "an r x k matrix")
    if G.ndim != 2:  # (its r x k shape is checked against the target's k where k is known)
        raise ValueError(f"overlaps must be an r x k matrix with r = {r} rows (the columns of "
                         f"loadings) and k columns (the target's variables), got shape "
                         f"{G.shape}")
    group_width(p, _array("fractions", fractions, "a list of K numbers"))
    quadrature_nodes(n_kappa, n_omega, r)
    return K, r


def group_width(p: object, fractions: np.ndarray) -> None:
    """The width p with K >= 2 groups (THEORY.md §10.6): None or inf (the limit), else a whole
    number of neurons p >= K (the groups are fractions of p neurons; a fraction below 1/p is
    kept as given, as a quadrature node of a continuous readout is); one group: a real p >= 1
    (the one-step rule)."""
    if p is None or (isinstance(p, (int, float, np.integer, np.floating))
                     and not isinstance(p, bool) and p == math.inf):
        return
    v = checks.real("p", p, 1.0)
    fr = np.asarray(fractions, dtype=np.float64).ravel()
    if fr.size < 2:
        return
    if v != round(v):
        raise ValueError(f"p must be a whole number of neurons with K = {fr.size} groups (each "
                         f"group holds fractions[g] * p of them), got {v:g}")
    if v < fr.size:
        raise ValueError(f"p must be >= K = {fr.size} (a whole number of neurons, at least one "
                         f"per group), got {v:g}")


def steps_eta(eta: object, steps: int) -> tuple[float, ...]:
    """eta_tilde of each of ``steps`` steps (THEORY.md §12): one number, one per step (a
    sequence or a comma list such as ``"2,8,16"``), each finite and >= 0."""
    if isinstance(eta, str):
        if eta.strip() == "optimal":
            raise ValueError(f"eta='optimal' (the minimiser over eta_tilde) is for one step; with "
                             f"steps={steps} give one eta_tilde or one per step, e.g. "
                             f"eta=(2, 8, 16)")
        parts = [s.strip() for s in eta.split(",")]
        try:
            eta = [float(s) for s in parts]
        except ValueError:
            raise ValueError(f"eta must be a number or one number per step (e.g. '2,8,16'), got "
                             f"{eta!r}") from None
        if len(eta) == 1:
            eta = eta[0]
    if isinstance(eta, np.ndarray) and eta.ndim == 0:
        eta = float(eta)
    if isinstance(eta, (int, float, np.integer, np.floating)) and not isinstance(eta, bool):
        return (checks.real("eta", eta, 0.0),) * steps
    if isinstance(eta, (bool, bytes, dict)) or not isinstance(eta, (Sequence, np.ndarray)):
        raise TypeError(f"eta must be a number or one number per step, got {eta!r}")
    if len(eta) != steps:
        raise ValueError(f"eta needs one value per step (steps={steps}), got {len(eta)}")
    return tuple(checks.real(f"eta[{t}]", e, 0.0) for t, e in enumerate(eta))


def steps_strings(lam: object, eta: object, steps: int) -> object:
    """``risk(..., steps=T)``: refuse ``lam`` given as a string (the optimum over lam is for one
    step) and return eta with a comma list parsed (:func:`steps_eta`)."""
    if isinstance(lam, str):
        raise ValueError(f"steps={steps} does not support lam={lam!r} (the optimum over lam is "
                         "searched for one step): give lam as a number >= 0")
    return steps_eta(eta, steps) if isinstance(eta, str) else eta


def target_growth(g: Callable[[np.ndarray], np.ndarray], k: int, name: str) -> None:
    """Refuse a multi-index target ``g(Z)``, Z (..., k), that is not finite or grows too fast for
    E g(z)^2 (z ~ N(0, I_k)) to be finite in float64, probed along the axes, the diagonal and the
    pairs (e_i +- e_j)/sqrt 2 on |t| <= 12 (the one-step rule of ``check_finite``: g^2 times the
    Gaussian density must have decayed at the ends by GROWTH_RTOL)."""
    rays = [np.eye(k)[i] for i in range(k)] + [np.ones(k) / math.sqrt(k)]
    for i in range(k):
        for j in range(i + 1, k):
            for s in (1.0, -1.0):
                u = np.zeros(k)
                u[i], u[j] = 1.0 / math.sqrt(2), s / math.sqrt(2)
                rays.append(u)
    U = np.array(rays)
    Z = PROBE[None, :, None] * U[:, None, :]
    with np.errstate(all="ignore"):
        vals = np.asarray(g(Z), dtype=np.float64)
    vals = np.broadcast_to(vals, Z.shape[:-1])
    bad = ~np.isfinite(vals)
    if bad.any():
        i, t = np.argwhere(bad)[0]
        at = ", ".join(f"z{j + 1}={Z[i, t, j]:.3g}" for j in range(k))
        raise ValueError(f"target {name!r} is not finite at {at}; targets must be finite on the "
                         "whole space")
    top = float(np.max(np.abs(vals)))
    if top > 1e150:
        raise ValueError(f"target {name!r} reaches |g| = {top:.3g} for |z| <= 12; its Gaussian "
                         "moments would overflow float64 (allowed: |g| <= 1e150 there)")
    if top == 0.0:
        return
    with np.errstate(divide="ignore"):
        logw = 2.0 * np.log(np.abs(vals)) - 0.5 * PROBE[None, :] ** 2
    edge = np.maximum(logw[:, 0], logw[:, -1])
    with np.errstate(invalid="ignore"):  # a ray where g vanishes: -inf - -inf, not a growth
        excess = np.nan_to_num(edge - np.max(logw, axis=1), nan=-np.inf)
    worst = int(np.argmax(excess))
    if edge[worst] > float(np.max(logw[worst])) + math.log(GROWTH_RTOL):
        nz = np.flatnonzero(U[worst])
        along = (f"z{nz[0] + 1}" if nz.size == 1
                 else f"the direction {np.round(U[worst], 3).tolist()}")
        raise ValueError(f"target {name!r} grows too fast along {along}: g^2 times the Gaussian "
                         "density has not decayed at |z| = 12, so E g(z)^2 is infinite or "
                         "overflows float64 (allowed: growth slower than exp(|z|^2/4))")


def weights_groups(W: np.ndarray, eps: np.ndarray, theta: np.ndarray, values: object) -> None:
    """``state_from_weights`` (THEORY.md §12.4): finite W (p x d), eps (p), theta (k x d) with
    k < d, and at most :data:`MAX_GROUPS` distinct readout values (the groups)."""
    for name, a in (("W", W), ("eps", eps), ("theta", theta)):
        if not np.all(np.isfinite(a)):
            raise ValueError(f"{name} must be finite")
    if W.ndim == 2 and W.shape[0] < 1:
        raise ValueError("W must have at least one row (p >= 1)")
    groups = np.unique(eps) if values is None else np.asarray(values, dtype=np.float64)
    if groups.size > MAX_GROUPS:
        raise ValueError(f"eps takes {groups.size} distinct readout values (one group each); at "
                         f"most {MAX_GROUPS} groups are supported: bin the readout values")


#: at most this many kappa nodes (n_kappa ** r) of a rule given by the caller: the largest rule
#: of the refinement ladder (33^4)
MAX_KAPPA_NODES = 1_200_000
#: at most this many nodes of the tensor rule over a target's unlearned directions
MAX_OMEGA_NODES = 20_000
#: at most this many evaluations of the target in one quadrature table (~15 s at the measured
#: 1.4e8 evaluations/s of a step's integrals)
MAX_EVALUATIONS = 2_000_000_000


def quadrature_nodes(n_kappa: object, n_omega: object, r: int) -> None:
    """``n_kappa`` / ``n_omega`` of the K-group theory: None (the defaults) or integers >= 1,
    with ``n_kappa ** r <= MAX_KAPPA_NODES``."""
    for name, n in (("n_kappa", n_kappa), ("n_omega", n_omega)):
        if n is not None:
            checks.integer(name, n, 1)
    if n_kappa is not None and float(n_kappa) ** r > MAX_KAPPA_NODES:
        raise ValueError(f"n_kappa = {n_kappa} gives {float(n_kappa) ** r:.2g} kappa nodes in "
                         f"r = {r} dimensions; at most {MAX_KAPPA_NODES:.2g}")


def quadrature_size(evaluations: float, omega_nodes: int, what: str) -> None:
    """Refuse a quadrature of more than :data:`MAX_EVALUATIONS` target evaluations, or a rule
    over the unlearned directions of more than :data:`MAX_OMEGA_NODES` nodes, before it runs
    (a target of many non-polynomial directions would otherwise run for hours)."""
    if omega_nodes > MAX_OMEGA_NODES or evaluations > MAX_EVALUATIONS:
        raise ValueError(f"target: {what} needs {omega_nodes} nodes over the directions the "
                         f"spikes do not span ({evaluations:.2g} evaluations); at most "
                         f"{MAX_OMEGA_NODES} ({MAX_EVALUATIONS:.0e}): use fewer variables or "
                         "a polynomial target (exact with degree + 1 nodes), or pass n_omega")


def instance(name: str, value: object, cls: type, example: str) -> None:
    """TypeError naming ``name`` unless ``value`` is a ``cls``."""
    if not isinstance(value, cls):
        raise TypeError(f"{name} must be a {cls.__name__} (e.g. {example}), got {value!r}")


def readout_step(alpha0: object, eta: object, delta: object) -> None:
    """The step of one finite-support readout (THEORY.md §11): alpha0 > 0 (inf: an infinite
    batch), eta_tilde >= 0 and delta >= 0, finite real numbers."""
    if not (isinstance(alpha0, (int, float, np.integer, np.floating)) and alpha0 == math.inf):
        checks.positive("alpha0", alpha0)
    checks.positive("eta", eta, allow_zero=True)
    checks.positive("delta", delta, allow_zero=True)


def by_step_options(progress: object, on_step: object) -> None:
    """``risk_by_step``'s ``progress`` (None, True or False) and ``on_step`` (None or callable)."""
    checks.optional_flag("progress", progress)
    if on_step is not None and not callable(on_step):
        raise TypeError(f"on_step must be None or a callable on_step(t), got {on_step!r}")


def real_array(name: str, value: object) -> np.ndarray:
    """``value`` as a float64 array (any shape), or a one-line error naming ``name``."""
    return _array(name, value, "an array")


def ridge(lam: object, beta: object, p: object = None, fractions: object = (1.0,)) -> None:
    """The readout's ridge before the steps are computed (THEORY.md §12): lam >= 0, beta > 0 and
    the width p of the groups (:func:`group_width`)."""
    checks.positive("lam", lam, allow_zero=True)
    checks.positive("beta", beta)
    group_width(p, np.asarray(fractions, dtype=np.float64))


#: the widest network the p = infinity limit of K >= 2 groups is reported for without a width:
#: beyond, the limit depends on the order of p -> infinity and of the groups' loading differences
#: -> 0 (the contrast channel, THEORY.md §10.6)
MAX_LIMIT_WIDTH = 1e6
#: beyond this width (and up to MAX_LIMIT_WIDTH) the point is reported with a LimitWarning: at
#: p = 1000 the limit was off by 16 % where p_needed = 88 and by 72 % where it was 780
WARN_LIMIT_WIDTH = 100.0
#: a direction of the mean design counts if the target's power along it exceeds this fraction
CONTRAST_POWER = 1e-4


def contrast_width(design: np.ndarray, target: np.ndarray, A: float,
                   V2: np.ndarray) -> tuple[float, float]:
    """(p_needed, s2): the width beyond which the p = infinity mean channel of K groups is the
    finite-width one (THEORY.md §10.6). At width p the channel m solves the least-squares
    problem of ``design`` (rows sqrt(w/(1+V)) mu0) with the ridge eps_g = 1/(A p V2_g); the limit
    drops eps, which is right only where eps << s_i^2 for every direction i of the design that
    the target (rows sqrt(w/(1+V)) h) uses: p >> 1/(A min_g V2_g s_i^2). s2 is the smallest such
    s_i^2 relative to the largest. Directions below the solver's 1e-12 cut are its null space."""
    if design.shape[1] < 2 or not (np.all(np.isfinite(design)) and np.all(np.isfinite(target))):
        return 0.0, 1.0
    U, s, _ = np.linalg.svd(design, full_matrices=False)
    return contrast_need(s, (U.T @ target) ** 2, float(target @ target), A, V2)


def contrast_need(s: np.ndarray, power: np.ndarray, total: float, A: float,
                  V2: np.ndarray) -> tuple[float, float]:
    """:func:`contrast_width` from the design's singular values ``s``, the target's power along
    its left singular vectors and the target's total power ``total``."""
    # (Python floats: a handful of entries, once per solved point of a curve; the same numbers
    # as numpy's masks and minima)
    sl, pl, vl = s.tolist(), power.tolist(), V2.tolist()
    if not sl or sl[0] == 0.0:
        return 0.0, 1.0
    cut, floor = 1e-12 * sl[0], CONTRAST_POWER * max(total, 1e-300)
    used = [x for x, pw in zip(sl, pl, strict=True) if x > cut and pw > floor]
    if not used:
        return 0.0, 1.0
    weakest = min(used) ** 2
    v2 = math.nan if any(math.isnan(x) for x in vl) else min(vl)
    need = math.inf if not (A * v2 > 0) else 1.0 / (A * v2 * weakest)
    return need, weakest / sl[0] ** 2
