"""The risk after each of T giant steps along alpha (docs/THEORY.md §12, §15), of either model:
the network theory of the groups (``model="network"``, the parameter table's default, as
``asymptotics.risk(..., steps=T)``) or their sRF surrogate (``model="srf"``); the numbers of
``python -m asymptotics steps``."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from asymptotics.core import checks, group_checks
from asymptotics.core.parameters import STEPS_EXAMPLE, check, default, steps_eta
from asymptotics.multiindex.steps import MAX_STEPS, steps_mapping
from asymptotics.spiked.readouts import parse_readout

_EX = STEPS_EXAMPLE
#: the models of :func:`risk_by_step` (step 0, random features, is the same number in both)
BY_STEP_MODELS = ("network", "srf")


def risk_by_step(alphas: Sequence[float] | float, *, steps: int = _EX["steps"],
                 sigma: str = _EX["sigma"], target: str = _EX["target"],
                 alpha0: float = _EX["alpha0"], eta: float | Sequence[float] | None = None,
                 lam: float = _EX["lam"], beta: float = _EX["beta"],
                 delta: float = _EX["delta"], readout: object = _EX["readout"],
                 p: float | None = None, on_step: Callable[[int], None] | None = None,
                 progress: bool | None = None, batch: str = "fresh",
                 model: str = default("model")):
    """A DataFrame with the risk after each step ``t = 0..steps`` (0: random features) at each
    alpha, with the groups' state (``loadings``, ``bulk``, ``overlaps`` as JSON), the ``model``
    and every parameter; unconverged points have risk NaN. The defaults are the parameter
    table's several-steps example (``asymptotics.core.parameters.STEPS_EXAMPLE``, also those of
    ``python -m asymptotics steps``) and its ``model`` (``"network"``, as ``risk``);
    ``eta=None``: the example's schedule (2, 8, 16, the last repeated).

    ``model="network"``: the network theory of the groups (THEORY.md §15), step t the number of
    ``asymptotics.risk(alpha, steps=t, model="network")`` (the one-step network theory where a
    step is exactly that, the groups computed once for all steps); ``model="srf"``: the sRF
    surrogate of the groups (§12), each step's groups solved as one curve along alpha (at most
    ten alphas: each point on its own kappa ladder, the numbers of
    ``risk(steps=t, model="srf")``; more: one kappa rule per curve, those numbers to the
    quadrature tolerance ``asymptotics.spiked.solve.QUADRATURE_RTOL``).
    ``on_step(t)`` is called after step ``t``; ``progress``: a report per step on stderr
    (:class:`asymptotics.core.progress.Progress`; False: none); ``batch="reused"``: every
    step on the same batch (THEORY.md §14; ``model="srf"``)."""
    alphas = [checks.positive("alpha", a) for a in checks.sequence("alphas",
                                                                   np.atleast_1d(alphas))]
    steps = checks.integer("steps", steps, 1)
    if steps > MAX_STEPS:  # before the schedule of steps values is built
        raise ValueError(f"steps must be <= {MAX_STEPS}, got {steps}")
    if model not in BY_STEP_MODELS:
        raise ValueError(f"model must be one of {', '.join(BY_STEP_MODELS)} for risk_by_step "
                         f"(step 0 is random features in both), got {model!r}")
    eta = steps_eta(steps) if eta is None else eta
    group_checks.by_step_options(progress, on_step)
    group_checks.ridge(lam, beta, p, parse_readout(readout).weights)
    kw = dict(sigma=sigma, target=target, alpha0=alpha0, eta=eta, lam=lam, beta=beta,
              delta=delta, readout=readout, p=p)
    check("batch", batch)
    from asymptotics.network.schur import blas_threads

    with blas_threads():  # small products throughout (schur.BLAS_THREADS)
        return _by_step(alphas, steps=steps, model=model, batch=batch, on_step=on_step,
                        progress=progress, **kw)


def _by_step(alphas: list[float], *, steps: int, model: str, batch: str, on_step, progress,
             **kw):
    """:func:`risk_by_step` after its checks."""
    import json

    import pandas as pd

    from asymptotics.core.progress import Progress

    target, alpha0, lam, beta, delta, p = (kw[k] for k in ("target", "alpha0", "lam", "beta",
                                                           "delta", "p"))
    if model == "network":
        if batch != "fresh" and steps > 1:
            raise ValueError(f"batch={batch!r} after several steps is implemented for "
                             "model='srf' (THEORY.md §14); pass model='srf' (giantstep steps: "
                             "--model srf)")
        mp, solve = _network_by_step(alphas, steps=steps, **kw)
    else:
        mp, solve = _srf_by_step(alphas, steps=steps, batch=batch, **kw)
    from asymptotics.multiindex.steps_risk import mapping_params

    rows = []
    with Progress(steps + 1, "risk by step", unit="steps", enabled=progress) as bar:
        for t in bar.iter(range(steps + 1)):
            params = mapping_params(mp, t)  # a repeated call reuses its tables
            for a, (risk, conv) in zip(alphas, solve(t, params), strict=True):
                rows.append(dict(model=model, step=t, alpha=a,
                                 risk=float(risk) if conv else math.nan,
                                 converged=bool(conv), sigma=mp.sigma, target=target,
                                 readout=mp.readout.name, batch=batch, alpha0=alpha0,
                                 eta=",".join(f"{e:g}" for e in mp.eta), lam=lam, beta=beta,
                                 delta=delta, p=p, loadings=json.dumps(params["loadings"]),
                                 bulk=json.dumps(params["bulk"]),
                                 overlaps=json.dumps(params["overlaps"])))
            if on_step is not None:
                on_step(t)
    return pd.DataFrame(rows)


def _srf_by_step(alphas: list[float], *, steps: int, batch: str, sigma, target, alpha0, eta,
                 lam, beta, delta, readout, p):
    """The sRF surrogate of the groups (THEORY.md §12): the mapping and a solver of step t."""
    from asymptotics.spiked.solve import risk_spiked_curve

    mp = steps_mapping(sigma, target, steps=steps, alpha0=alpha0, eta=eta, delta=delta,
                       readout=readout, batch=batch)

    def solve(t: int, params: dict) -> list[tuple[float, bool]]:
        df = risk_spiked_curve(alphas, sigma=sigma, lam=lam, beta=beta, delta=delta, p=p,
                               progress=False, **params)
        return list(zip(df.risk, df.converged, strict=True))

    return mp, solve


def _network_by_step(alphas: list[float], *, steps: int, sigma, target, alpha0, eta, lam, beta,
                     delta, readout, p):
    """The network theory of the groups (THEORY.md §15), by the route ``risk(alpha, steps=t,
    model="network")`` takes: the groups and their channels computed once for every step; step
    0 (``eta = 0``) and a first step that is exactly the one-step network theory (a single-index
    target with the constant readout, or an odd sigma and a readout of one magnitude) by the
    one-step theory's curve at the equivalent eta_tilde."""
    from asymptotics.api.risk import risk_curve
    from asymptotics.multiindex.steps import eta_schedule
    from asymptotics.network.groups import network_groups
    from asymptotics.network.route import one_step_equivalent, outside_kw, with_row_scale
    from asymptotics.network.solve import risk_network_groups_curve
    from asymptotics.spiked.problem import resolve_target

    ng = network_groups(sigma, target, steps=steps, alpha0=alpha0, eta=eta, delta=delta,
                        readout=readout)
    single = resolve_target(target)[1] == 1
    factor = one_step_equivalent(sigma, ng.readout, 1) if single else None
    eta1 = eta_schedule(eta, steps)[0]

    def solve(t: int, params: dict) -> list[tuple[float, bool]]:
        if t <= 1 and factor is not None:
            df = risk_curve(alphas, sigma=sigma, target=target, alpha0=alpha0,
                            eta=eta1 * factor if t else 0.0, lam=lam, beta=beta, delta=delta,
                            p=p, model="network", progress=False)
            return list(zip(df.risk, df.converged, strict=True))
        kw = outside_kw(sigma, target, steps=t, alpha0=alpha0, eta=eta, delta=delta,
                        readout=readout) if t >= 1 else {}
        if t >= 1:  # the rows' outside scale (DERIVATIONS.md §12), as risk(steps=t) has it
            params, kw = with_row_scale(params, kw, sigma, target, steps=t, alpha0=alpha0,
                                        eta=eta, delta=delta, readout=readout)
        rows = risk_network_groups_curve(alphas, sigma=sigma, lam=lam, beta=beta, delta=delta,
                                         p=p, progress=False, **kw, **params)
        return [(res.risk, res.converged) for res in rows]

    return ng, solve
