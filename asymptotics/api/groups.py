"""The one dispatch of the theory's entry points between the one-spike equations (THEORY.md §5)
and the K-group ones (§10): several steps (§12), a finite-support readout (§11), a given K-group
model (§10.1) or a multi-index target all go to the K-group engine, one compiled solver
(``asymptotics.spiked``) giving the one result record of every route
(:class:`~asymptotics.core.result.RiskResult`). Options a route cannot honour are refused in one
line naming them.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

from asymptotics.core import checks

if TYPE_CHECKING:
    import pandas as pd

    from asymptotics.core.result import RiskResult

GIVEN = ("loadings", "bulk", "fractions", "overlaps")


def route(*, steps: object, readout: object, given: dict, target: object, model: object,
          batch: object = "fresh") -> str:
    """``"one-spike"`` (the equations of §5) or the K-group route: ``"steps"``, ``"readout"``,
    ``"given"`` (a K-group model passed in) or ``"multi-index"`` (a target in z1..zk, k >= 2,
    or with He_n, after one step). ``batch="reused"`` changes nothing at one step."""
    from asymptotics.core.parameters import check

    check("batch", batch)
    steps = checks.integer("steps", steps, 1)
    if any(v is not None for v in given.values()):
        missing = [k for k, v in given.items() if v is None]
        if missing:
            raise ValueError(f"a given K-group model needs {', '.join(GIVEN)}; missing "
                             f"{', '.join(missing)}")
        return "given"
    if steps > 1:
        return "steps"
    if needs_groups(target):  # with any readout: the K-group model of one step
        return "multi-index"
    if readout != "constant":  # (the K-group modules only where needed: the cold start)
        from asymptotics.spiked.readouts import parse_readout

        if not parse_readout(readout).is_constant:
            return "readout"
    return "one-spike"


def needs_groups(target: object) -> bool:
    """``asymptotics.multiindex.steps_risk.needs_groups``, importing the several-steps modules
    only for a text that is not a function of one variable (the one-step route's targets)."""
    return isinstance(target, str) and _needs_groups_text(target)


@functools.lru_cache(maxsize=256)
def _needs_groups_text(target: str) -> bool:
    """:func:`needs_groups` of a text, kept per text (an expression's parse costs ~0.1 ms and the
    route asks on every point); a refusal is raised afresh each time (not kept)."""
    from asymptotics.coefficients.functions import is_function_name

    if is_function_name(target):
        return False
    from asymptotics.multiindex.steps_risk import needs_groups as of_text

    return of_text(target)


def route_fields(how: str, *, steps: object, alpha0: object, eta: object, readout: object,
                 batch: object, json_text: bool = False) -> dict:
    """What produced a K-group route's point beyond its groups (the K-group solver knows only
    the groups): ``asymptotics.core.result.after_steps_fields`` (the schedule as JSON text if
    ``json_text``: a frame's column); a given K-group model (``how="given"``) has no step: its
    step fields are None."""
    from asymptotics.core.result import after_steps_fields, step_fields
    from asymptotics.multiindex.steps import eta_schedule
    from asymptotics.spiked.readouts import parse_readout

    if how == "given":
        return step_fields(None, None, None, None)
    schedule = eta_schedule(eta, checks.integer("steps", steps, 1))
    return after_steps_fields(float(alpha0), schedule,  # type: ignore[arg-type]
                              parse_readout(readout).name, str(batch), json_text)


def solve_k_group(alphas: list[float], *, curve: bool, how: str, steps: object, readout: object,
                  given: dict, model: object, engine: object, overrides: dict, lam: Any,
                  eta: Any, sigma: Any, target: Any, alpha0: Any, beta: Any, delta: Any, p: Any,
                  strict: bool, solver: Any, progress: bool | None = None,
                  batch: str = "fresh", fields: bool = False
                  ) -> tuple[RiskResult | pd.DataFrame | None, Any]:
    """``(answer, eta)``: one point (``curve=False``, ``alphas`` of length 1) or a curve on the
    K-group route ``how`` of :func:`route`. ``answer`` None (``model="network"`` only): the case
    is exactly the one-step network theory at the returned ``eta`` (THEORY.md §15), which the
    caller's one-spike route answers. ``fields``: a curve carries :func:`route_fields` (at the
    returned ``eta``) as columns, each one value in every row."""
    from asymptotics.core.parameters import check
    from asymptotics.models.problem import cap_lam
    from asymptotics.spiked.solve import curve_frame, risk_spiked

    what = {"steps": f"steps={steps}", "readout": f"readout={readout!r}",
            "given": "a given K-group model", "multi-index": f"target={target!r}"}[how]
    if check("engine", engine) != "compiled":
        raise ValueError(f"engine={engine!r} is not available with {what}: the K-group equations "
                         "have one (compiled) engine; omit engine")
    if how == "steps" and isinstance(eta, str):  # a comma list "2,8,16", as risk() reads it
        from asymptotics.multiindex.steps import eta_schedule

        eta = eta_schedule(eta, checks.integer("steps", steps, 1))
    lam = cap_lam(lam, p)
    pt = dict(sigma=sigma, target=target, alpha0=alpha0, beta=beta, delta=delta, p=p,
              strict=strict, solver=solver)
    if model == "network" and how != "given":  # the network theory of the groups, §15
        if batch != "fresh" and checks.integer("steps", steps, 1) > 1:
            raise ValueError(f"batch={batch!r} after several steps is implemented for "
                             "model='srf' (THEORY.md §14); pass model='srf'")
        from asymptotics.network.schur import blas_threads

        with blas_threads():  # small products throughout (schur.BLAS_THREADS)
            df, eta = _network(alphas, curve=curve, how=how, steps=steps, readout=readout,
                               lam=lam, eta=eta, overrides=overrides, progress=progress, **pt)
        if fields and curve and df is not None:
            for name, value in _fields(how, steps, alpha0, eta, readout, batch).items():
                df[name] = [value] * len(df) if value is None else value
        return df, eta
    if how == "steps" and not curve:  # the named doors (their own checks and messages)
        from asymptotics.multiindex.steps_risk import api_steps_risk

        return api_steps_risk(alphas[0], steps, model=model, overrides=overrides, lam=lam,
                              eta=eta, readout=readout, batch=batch, **pt), eta
    if how == "readout":
        from asymptotics.spiked.readouts import api_readout_risk, check_model, parse_readout

        if not curve:
            return api_readout_risk(alphas[0], readout, model=model, lam=lam, eta=eta,
                                    **overrides, **pt), eta
        check_model(model, parse_readout(readout))
    if model != "srf":
        which = "model='srf'" if how == "given" else "model='network' or model='srf'"
        raise ValueError(f"{what} is implemented for {which} (the K-group models, THEORY.md "
                         f"§10-§12, §15); got model={model!r}")
    refused = [k for k, v in overrides.items() if v is not None]
    refused += [k for k, v in (("lam", lam), ("eta", eta)) if isinstance(v, str)]
    if refused:
        raise ValueError(f"{what} does not support {', '.join(refused)} (the K-group model is "
                         "built from the step's parameters)")
    params = _groups(how, steps=steps, readout=readout, given=given, sigma=sigma,
                     target=target, alpha0=alpha0, eta=eta, delta=delta, batch=batch)
    kw = dict(sigma=sigma, lam=lam, beta=beta, delta=delta, p=p, strict=strict, solver=solver,
              **params)
    if not curve:
        return risk_spiked(alphas[0], **kw), eta
    extra = _fields(how, steps, alpha0, eta, readout, batch) if fields else {}
    return curve_frame(alphas, how, extra, progress=progress, **kw), eta


def _fields(how: str, steps: object, alpha0: object, eta: object, readout: object,
            batch: object) -> dict:
    """A curve's :func:`route_fields` (the schedule as JSON text)."""
    return route_fields(how, steps=steps, alpha0=alpha0, eta=eta, readout=readout, batch=batch,
                        json_text=True)


def _network(alphas: list[float], *, curve: bool, how: str, steps, readout, lam, eta,
             overrides: dict, progress, sigma, target, alpha0, beta, delta, p, strict, solver):
    """``model="network"`` on a K-group route (THEORY.md §15): the point's door
    (``asymptotics.network.route.api_network_risk``, its checks and the one-step cases it hands
    back), then the rest of a curve on the same groups."""
    import pandas as pd

    from asymptotics.core.progress import Progress
    from asymptotics.equations.ladder import PROBES
    from asymptotics.network.route import (
        api_network_risk,
        network_door,
        network_problem,
        risk_network,
        risk_network_curve,
    )

    kw = dict(alpha0=alpha0, beta=beta, delta=delta, p=p, strict=strict, solver=solver)
    long_curve = curve and len(alphas) > 2 * len(PROBES)
    if long_curve:  # the checks only: the curve's own pass solves every point
        handed_back, eta = network_door(steps=steps, readout=readout, eta=eta, lam=lam,
                                        overrides=overrides, sigma=sigma, target=target)
        if handed_back:
            return None, eta
    else:
        first, eta = api_network_risk(alphas[0], steps=steps, readout=readout, eta=eta,
                                      lam=lam, overrides=overrides, sigma=sigma, target=target,
                                      **kw)
        if first is None or not curve:
            return first, eta
    problem = network_problem(sigma=sigma, target=target, steps=steps, alpha0=alpha0, eta=eta,
                              delta=delta, readout=readout)
    if long_curve:  # the curve's kappa rule decided once, by probes (§10.8)
        rows = risk_network_curve(alphas, steps=steps, readout=readout, eta=eta, lam=lam,
                                  sigma=sigma, target=target, problem=problem,
                                  progress=progress, **kw)
        frames = [res.to_frame() for res in rows]
    else:  # a short curve: each point its own climb (the first point's is done)
        frames = [first.to_frame()]
        with Progress(len(alphas) - 1, "network curve", unit="pt", enabled=progress) as bar:
            for a in bar.iter(alphas[1:]):
                frames.append(risk_network(a, steps=steps, readout=readout, eta=eta, lam=lam,
                                           sigma=sigma, target=target, problem=problem,
                                           **kw).to_frame())
    df = pd.concat(frames, ignore_index=True)
    df.insert(1, "route", how)
    return df, eta


def _groups(how: str, *, steps, readout, given, sigma, target, alpha0, eta, delta,
            batch: str = "fresh") -> dict:
    """The K-group model of the route (keyword arguments of ``risk_spiked``)."""
    if how == "given":
        return dict(target=target, **given)
    if how == "readout":
        from asymptotics.spiked.readouts import readout_mapping

        mp = readout_mapping(sigma, target, alpha0=alpha0, eta=eta, delta=delta,
                             readout=readout)
        return dict(target=target, **mp.spiked_params())
    from asymptotics.multiindex.steps import steps_mapping
    from asymptotics.multiindex.steps_risk import mapping_params

    mp = steps_mapping(sigma, target, steps=steps, alpha0=alpha0, eta=eta, delta=delta,
                       readout=readout, batch=batch)  # cached: once per parameter set
    return mapping_params(mp, mp.steps)  # (the same rotated target: the tables' cache hits)
