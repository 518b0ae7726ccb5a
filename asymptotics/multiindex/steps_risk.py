"""The risk of the ridge readout after several giant steps (docs/THEORY.md §12): the groups of
:func:`asymptotics.multiindex.steps.steps_mapping` through the K-group equations of §10, the
entry of ``asymptotics.risk(..., steps=T)`` and the table of the risk after each step."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from asymptotics.coefficients.functions import Function
from asymptotics.core import checks
from asymptotics.core.parameters import STEPS_EXAMPLE, steps_eta
from asymptotics.multiindex.steps import StepsMapping, steps_mapping


def risk_steps(alpha: float, *, steps: int, sigma: str | Function, target: str,
               alpha0: float, eta: float | Sequence[float], lam: float, beta: float,
               delta: float = 0.0, readout: object = "constant", p: float | None = None,
               strict: bool = False, solver=None, mapping: StepsMapping | None = None):
    """Asymptotic test error of ridge on the readout after ``steps`` giant steps with fresh
    batches (THEORY.md §12): :func:`steps_mapping` then :func:`asymptotics.spiked.risk_spiked`
    (a :class:`~asymptotics.spiked.SpikedResult`). ``mapping``: reuse a computed one."""
    from asymptotics.equations.solver import SolverConfig
    from asymptotics.spiked.solve import risk_spiked

    if mapping is not None:
        check_mapping(mapping, steps=steps, sigma=sigma, target=target, alpha0=alpha0, eta=eta,
                      delta=delta, readout=readout)
    mp = mapping if mapping is not None else steps_mapping(
        sigma, target, steps=steps, alpha0=alpha0, eta=eta, delta=delta, readout=readout)
    return risk_spiked(alpha, sigma=sigma, lam=lam, beta=beta, delta=delta, p=p, strict=strict,
                       solver=solver if solver is not None else SolverConfig(),
                       **mp.spiked_params(steps))


def check_mapping(mapping: StepsMapping, *, steps: int, sigma: object, target: object,
                  alpha0: float, eta: object, delta: float, readout: object) -> None:
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
                 readout=(mapping.readout, parse_readout(readout)))
    for name, (have, want) in given.items():
        if have != want:
            raise ValueError(f"mapping was computed with {name}={have!r}, not the {name}={want!r} "
                             "passed (omit mapping, or pass its parameters)")


_EX = STEPS_EXAMPLE


def risk_by_step(alphas: Sequence[float] | float, *, steps: int = _EX["steps"],
                 sigma: str = _EX["sigma"], target: str = _EX["target"],
                 alpha0: float = _EX["alpha0"], eta: float | Sequence[float] | None = None,
                 lam: float = _EX["lam"], beta: float = _EX["beta"],
                 delta: float = _EX["delta"], readout: object = _EX["readout"],
                 p: float | None = None, on_step: Callable[[int], None] | None = None,
                 progress: bool | None = None):
    """A DataFrame with the risk after each step ``t = 0..steps`` (0: random features) at each
    alpha, with the groups' state (``loadings``, ``bulk``, ``overlaps`` as JSON) and every
    parameter; unconverged points have risk NaN. The defaults are the parameter table's
    several-steps example (``asymptotics.core.parameters.STEPS_EXAMPLE``, also those of
    ``python -m asymptotics steps``); ``eta=None``: its schedule (2, 8, 16, the last repeated).
    Each step's groups are solved as one curve along alpha (one kappa rule per curve).
    ``on_step(t)`` is called after step ``t``; ``progress``: a report per step on stderr
    (:class:`asymptotics.core.progress.Progress`; False: none)."""
    import json

    import pandas as pd

    from asymptotics.core.progress import Progress
    from asymptotics.spiked.solve import risk_spiked_curve

    alphas = [checks.positive("alpha", a) for a in np.atleast_1d(alphas)]
    steps = checks.integer("steps", steps, 1)
    eta = steps_eta(steps) if eta is None else eta
    mp = steps_mapping(sigma, target, steps=steps, alpha0=alpha0, eta=eta, delta=delta,
                       readout=readout)
    rows = []
    with Progress(steps + 1, "risk by step", unit="steps", enabled=progress) as bar:
        for t in bar.iter(range(steps + 1)):
            params = mp.spiked_params(t)
            df = risk_spiked_curve(alphas, sigma=sigma, lam=lam, beta=beta, delta=delta, p=p,
                                   progress=False, **params)
            for a, risk, conv in zip(alphas, df.risk, df.converged, strict=True):
                rows.append(dict(model="srf-groups", step=t, alpha=a,
                                 risk=float(risk) if conv else math.nan,
                                 converged=bool(conv), sigma=mp.sigma, target=target,
                                 readout=mp.readout.name, alpha0=alpha0,
                                 eta=",".join(f"{e:g}" for e in mp.eta), lam=lam, beta=beta,
                                 delta=delta, p=p, loadings=json.dumps(params["loadings"]),
                                 bulk=json.dumps(params["bulk"]),
                                 overlaps=json.dumps(params["overlaps"])))
            if on_step is not None:
                on_step(t)
    return pd.DataFrame(rows)


def api_steps_risk(alpha: float, steps: object, *, model: str, overrides: dict, lam: object,
                   eta: object, **kw):
    """``asymptotics.risk(..., steps=T)``: None for T = 1 (the one-step path, unchanged), else
    :func:`risk_steps` after checking that nothing it cannot honour was asked for."""
    steps = checks.integer("steps", steps, 1)
    if steps == 1:
        return None
    if model != "srf":
        raise ValueError(f"steps={steps} is implemented for model='srf' (the K-group model of "
                         "several steps, THEORY.md §12); the network theory covers one step. "
                         f"Pass model='srf' (got model={model!r})")
    given = [name for name, v in overrides.items() if v is not None]
    given += [name for name, v in (("lam", lam), ("eta", eta)) if isinstance(v, str)]
    if given:
        raise ValueError(f"steps={steps} does not support {', '.join(given)} (the groups are "
                         "built from the steps' parameters, THEORY.md §12)")
    return risk_steps(alpha, steps=steps, lam=lam, eta=eta, **kw)
