"""The risk of the ridge readout after several giant steps (docs/THEORY.md §12): the groups of
:func:`asymptotics.multiindex.steps.steps_mapping` through the K-group equations of §10, the
entry of ``asymptotics.risk(..., steps=T)`` (the table of the risk after each step, of both models,
is :func:`asymptotics.api.by_step.risk_by_step`)."""

from __future__ import annotations

import functools
from collections.abc import Sequence

import numpy as np

from asymptotics.coefficients.functions import Function
from asymptotics.core import checks, group_checks
from asymptotics.core.result import after_steps_fields
from asymptotics.models.problem import check_alpha
from asymptotics.multiindex.steps import (
    GroupState,
    RotatedTarget,
    StepsMapping,
    factor,
    steps_mapping,
)
from asymptotics.spiked.readouts import parse_readout


def risk_steps(alpha: float, *, steps: int, sigma: str | Function, target: str,
               alpha0: float, eta: float | Sequence[float], lam: float, beta: float,
               delta: float = 0.0, readout: object = "constant", p: float | None = None,
               strict: bool = False, solver=None, mapping: StepsMapping | None = None,
               batch: str = "fresh"):
    """Asymptotic test error of ridge on the readout after ``steps`` giant steps with fresh
    batches (THEORY.md §12): :func:`steps_mapping` then :func:`asymptotics.spiked.risk_spiked`
    (a :class:`~asymptotics.spiked.SpikedResult`). ``mapping``: reuse a computed one;
    ``batch="reused"``: every step on the same batch (THEORY.md §14)."""
    from asymptotics.equations.solver import SolverConfig
    from asymptotics.spiked.solve import risk_spiked

    alpha = check_alpha(alpha)
    if mapping is not None:
        check_mapping(mapping, steps=steps, sigma=sigma, target=target, alpha0=alpha0, eta=eta,
                      delta=delta, readout=readout, batch=batch)
    group_checks.ridge(lam, beta, p, (mapping.readout if mapping is not None
                                      else parse_readout(readout)).weights)
    mp = mapping if mapping is not None else steps_mapping(
        sigma, target, steps=steps, alpha0=alpha0, eta=eta, delta=delta, readout=readout,
        batch=batch)
    res = risk_spiked(alpha, sigma=sigma, lam=lam, beta=beta, delta=delta, p=p, strict=strict,
                      solver=solver if solver is not None else SolverConfig(),
                      **mapping_params(mp, steps))
    return res.with_fields(**after_steps_fields(mp.alpha0, mp.eta[:steps], mp.readout.name,
                                                mp.batch))


#: the rotated targets of the last ROTATED_SIZE (text, Q) asked for
ROTATED_SIZE = 32
_ROTATED: dict = {}


def mapping_params(mp: StepsMapping, step: int) -> dict:
    """``mp.spiked_params(step)`` with its rotated target (THEORY.md §12.3) the object returned
    before for the same text and the same Q, bit for bit: the K-group tables' cache
    (``spiked.problem``) keys on the target's identity, so a curve or point of a mapping asked
    again (a cached mapping is a new object with equal groups) reuses the tables of its rules
    instead of building them again."""
    params = mp.spiked_params(step)
    t = params["target"]
    if isinstance(t, RotatedTarget):
        key = (t.text, t.Q.shape, t.Q.tobytes())
        seen = _ROTATED.get(key)
        if seen is None:
            _ROTATED[key] = t
            while len(_ROTATED) > ROTATED_SIZE:
                _ROTATED.pop(next(iter(_ROTATED)))
        else:
            params["target"] = seen
    return params


def check_mapping(mapping: StepsMapping, *, steps: int, sigma: object, target: object,
                  alpha0: float, eta: object, delta: float, readout: object,
                  batch: str = "fresh") -> None:
    """A given mapping must be the one of the other arguments: one line naming what differs."""
    from asymptotics.coefficients.functions import get_function
    from asymptotics.multiindex.steps import eta_schedule
    from asymptotics.spiked.readouts import parse_readout

    if not isinstance(mapping, StepsMapping):
        raise TypeError(f"mapping must be a StepsMapping (asymptotics.steps_mapping), got "
                        f"{type(mapping).__name__}")
    steps = checks.integer("steps", steps, 1)
    if steps > mapping.steps:
        raise ValueError(f"mapping has {mapping.steps} steps, fewer than steps={steps}")
    etas = eta_schedule(eta, steps)
    given = dict(sigma=(mapping.sigma, get_function(sigma).name), target=(mapping.target, target),
                 alpha0=(mapping.alpha0, float(alpha0)), eta=(mapping.eta[:steps], etas),
                 delta=(mapping.delta, float(delta)),
                 readout=(mapping.readout, parse_readout(readout)),
                 batch=(mapping.batch, batch))
    for name, (have, want) in given.items():
        if have != want:
            raise ValueError(f"mapping was computed with {name}={have!r}, not the {name}={want!r} "
                             "passed (omit mapping, or pass its parameters)")


def needs_groups(target: object) -> bool:
    """True for a target text the one-step theory does not take but the K-group model of the
    steps does (an expression in z1..zk with k >= 2, or with He_n): ``risk(..., steps=1)`` then
    takes the route of several steps with T = 1 (THEORY.md §12), so a loop over T keeps its
    call. Texts neither parser takes stay on the one-step route, which reports them."""
    return isinstance(target, str) and _needs_groups_text(target)


@functools.lru_cache(maxsize=256)
def _needs_groups_text(target: str) -> bool:
    """:func:`needs_groups` of a text, kept per text (sympy's parses cost 0.1-1.3 ms a call and
    the route asks on every point); a refusal is raised afresh each time (not kept)."""
    from asymptotics.coefficients.functions import is_function_name
    from asymptotics.coefficients.targets import parse_target
    from asymptotics.spiked.problem import resolve_target

    if is_function_name(target):
        return False
    try:
        _, variables = parse_target(target)
    except ValueError:
        return False
    try:
        resolve_target(target)
    except ValueError:
        if len(variables) <= 1:  # one variable: the one-step route says what is wrong
            return False
        raise  # a multi-index text: its own errors (e.g. growth) are the ones to say
    return True


def api_steps_risk(alpha: float, steps: object, *, model: str, overrides: dict, lam: object,
                   eta: object, **kw):
    """``asymptotics.risk(..., steps=T)``: None for T = 1 (the one-step path, unchanged), else
    :func:`risk_steps` after checking that nothing it cannot honour was asked for."""
    steps = checks.integer("steps", steps, 1)
    from asymptotics.multiindex.reused import check_batch
    check_batch(kw.get("batch", "fresh"))
    # one step cannot tell a reused batch from a fresh one; a target in z1..zk needs the groups
    if steps == 1 and not needs_groups(kw.get("target")):
        return None
    if model != "srf":  # model="network" is answered by asymptotics.risk (THEORY.md §15)
        raise ValueError(f"model must be 'network' or 'srf' for steps={steps} (THEORY.md §12, "
                         f"§15), got {model!r}")
    eta = group_checks.steps_strings(lam, eta, steps)
    given = [name for name, v in overrides.items() if v is not None]
    given += [name for name, v in (("lam", lam), ("eta", eta)) if isinstance(v, str)]
    if given:
        raise ValueError(f"steps={steps} does not support {', '.join(given)} (the groups are "
                         "built from the steps' parameters, THEORY.md §12)")
    return risk_steps(alpha, steps=steps, lam=lam, eta=eta, **kw)


def state_from_weights(W: np.ndarray, eps: np.ndarray, theta: np.ndarray,
                       values: Sequence[float] | None = None) -> GroupState:
    """The groups of a given first layer (THEORY.md §12.4): rows ``W`` (p x d), each row's
    readout value ``eps`` (p; equal values form a group, ordered as ``values``, by default
    increasing), target
    directions ``theta`` (k x d, orthonormal rows). ``s_g`` is the group's mean row, ``c_g`` the
    mean squared distance of its rows to it; the Gram of the means loses the sampling bias
    ``c_g / p_g`` of a mean over ``p_g`` rows."""
    W = group_checks.real_array("W", W)
    theta = np.atleast_2d(group_checks.real_array("theta", theta))
    eps = group_checks.real_array("eps", eps).ravel()
    if W.ndim != 2 or eps.shape[0] != W.shape[0] or theta.shape[1] != W.shape[1]:
        raise ValueError(f"need W (p x d), eps (p) and theta (k x d); got {W.shape}, "
                         f"{eps.shape}, {theta.shape}")
    if not np.allclose(theta @ theta.T, np.eye(theta.shape[0]), atol=1e-8):
        raise ValueError("theta must have orthonormal rows")
    group_checks.weights_groups(W, eps, theta, values)
    groups = np.unique(eps) if values is None else np.asarray(values, dtype=np.float64)
    if not np.all(np.isin(eps, groups)) or any(np.sum(eps == v) == 0 for v in groups):
        raise ValueError(f"every readout value must be one of values={groups.tolist()}, each "
                         "used by some row")
    means = np.array([W[eps == v].mean(axis=0) for v in groups])
    counts = np.array([np.sum(eps == v) for v in groups])
    c = np.array([np.mean(np.sum((W[eps == v] - m) ** 2, axis=1))
                  for v, m in zip(groups, means, strict=True)])
    a = means @ theta.T
    gram = means @ means.T - np.diag(c / counts) - a @ a.T
    return GroupState(-1, a, factor(gram), c)
