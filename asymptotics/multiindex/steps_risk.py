"""The risk of the ridge readout after several giant steps (docs/THEORY.md §12): the groups of
:func:`asymptotics.multiindex.steps.steps_mapping` through the K-group equations of §10, the
entry of ``asymptotics.risk(..., steps=T)`` and the table of the risk after each step."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from asymptotics.coefficients.functions import Function
from asymptotics.core import checks
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

    mp = mapping if mapping is not None else steps_mapping(
        sigma, target, steps=steps, alpha0=alpha0, eta=eta, delta=delta, readout=readout)
    return risk_spiked(alpha, sigma=sigma, lam=lam, beta=beta, delta=delta, p=p, strict=strict,
                       solver=solver if solver is not None else SolverConfig(),
                       **mp.spiked_params(steps))


def risk_by_step(alphas: Sequence[float] | float, *, steps: int, sigma: str = "erf(z-1)",
                 target: str = "z1 + z1*z2", alpha0: float = 16.0,
                 eta: float | Sequence[float] = 1.0, lam: float = 0.01, beta: float = 1.0,
                 delta: float = 0.0, readout: object = "constant", p: float | None = None,
                 on_step: Callable[[int], None] | None = None,
                 progress: bool | None = None):
    """A DataFrame with the risk after each step ``t = 0..steps`` (0: random features) at each
    alpha, with the groups' state (``loadings``, ``bulk``, ``overlaps`` as JSON) and every
    parameter; unconverged points have risk NaN. ``on_step(t)`` is called after step ``t``;
    ``progress``: a report per point on stderr (:class:`asymptotics.core.progress.Progress`;
    False: none)."""
    import json

    import pandas as pd

    from asymptotics.core.progress import Progress
    from asymptotics.spiked.solve import risk_spiked

    alphas = [checks.positive("alpha", a) for a in np.atleast_1d(alphas)]
    mp = steps_mapping(sigma, target, steps=steps, alpha0=alpha0, eta=eta, delta=delta,
                       readout=readout)
    rows = []
    with Progress((steps + 1) * len(alphas), "risk by step", unit="pt", enabled=progress) as bar:
        for t in range(steps + 1):
            params = mp.spiked_params(t)
            for a in bar.iter(alphas):
                res = risk_spiked(a, sigma=sigma, lam=lam, beta=beta, delta=delta, p=p, **params)
                rows.append(dict(model="srf-groups", step=t, alpha=a,
                                 risk=res.risk if res.converged else math.nan,
                                 converged=bool(res.converged), sigma=mp.sigma, target=target,
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
    if model != "srf":  # model="network" is answered by asymptotics.risk (THEORY.md §14)
        raise ValueError(f"model must be 'network' or 'srf' for steps={steps} (THEORY.md §12, "
                         f"§14), got {model!r}")
    given = [name for name, v in overrides.items() if v is not None]
    given += [name for name, v in (("lam", lam), ("eta", eta)) if isinstance(v, str)]
    if given:
        raise ValueError(f"steps={steps} does not support {', '.join(given)} (the groups are "
                         "built from the steps' parameters, THEORY.md §12)")
    return risk_steps(alpha, steps=steps, lam=lam, eta=eta, **kw)
