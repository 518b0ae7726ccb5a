"""``model="network"`` beyond the constant readout and one step (THEORY.md §15): the entry the
dispatcher calls. :func:`network_problem` builds the K-group problem of the network (the groups
of §12 and their channels), :func:`risk_network` solves it; the cases that are the one-step
network theory of THEORY.md §3/DERIVATIONS.md §7 exactly (one step with the constant readout,
or with an odd sigma and a readout of one magnitude) are sent there."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from asymptotics.coefficients.functions import get_function
from asymptotics.core.group_checks import MAX_GROUPS
from asymptotics.equations.solver import SolverConfig
from asymptotics.network.groups import network_params
from asymptotics.network.schur import blas_threads
from asymptotics.network.solve import risk_network_groups_curve
from asymptotics.spiked.readouts import parse_readout

ODD_TOL = 1e-12
#: the groups' bulk outside E (risk_network's ``outside``)
OUTSIDE = ("coupled", "spectrum", "isotropic")


def _is_odd(sigma) -> bool:
    s = get_function(sigma)
    z = np.linspace(-4.0, 4.0, 33)
    return bool(np.max(np.abs(np.asarray(s(z)) + np.asarray(s(-z)))) < ODD_TOL)


def _single_index(target) -> bool:
    from asymptotics.spiked.problem import resolve_target

    return resolve_target(target)[1] == 1


def one_step_equivalent(sigma, readout: object, steps: int) -> float | None:
    """The factor ``|eps|`` when one step with ``readout`` is the constant readout's step with
    ``eta_tilde |eps|`` (the constant readout itself, or an odd sigma with every ``|eps_g|``
    equal: flipping a row and its readout changes nothing, THEORY.md §11); else None."""
    ro = parse_readout(readout)
    if steps != 1:
        return None
    mags = {abs(v) for v in ro.values}
    if ro.values == (1.0,):
        return 1.0
    if len(mags) == 1 and (len(ro.values) == 1 and ro.values[0] > 0 or _is_odd(sigma)):
        return mags.pop()
    return None


def network_problem(*, sigma, target: str, steps: int, alpha0: float,
                    eta: float | Sequence[float], delta: float = 0.0,
                    readout: object = "constant") -> dict:
    """The keyword arguments of :func:`asymptotics.network.solve.risk_network_groups` (the
    K-group problem with the network's channels) after ``steps`` giant steps (kept per setting,
    :func:`asymptotics.network.groups.network_params`)."""
    return network_params(sigma, target, steps=steps, alpha0=alpha0, eta=eta, delta=delta,
                          readout=parse_readout(readout))


def risk_network(alpha: float, *, steps: int = 1, readout: object = "constant",
                 sigma="tanh", target: str = "tanh", alpha0: float = 2.0,
                 eta: float | Sequence[float] = 1.0, lam: float = 0.01, beta: float = 1.0,
                 delta: float = 0.0, p: float | None = None, strict: bool = False,
                 solver: SolverConfig = SolverConfig(), problem: dict | None = None,
                 outside: str = "coupled", row_scale: bool = True):
    """The network theory's risk after ``steps`` giant steps with the initial readout
    ``readout`` by the K-group route (THEORY.md §15; a
    :class:`~asymptotics.spiked.SpikedResult`). ``problem``: a :func:`network_problem` to
    reuse. The one-step cases of :func:`one_step_equivalent` are answered by
    ``asymptotics.risk(model="network")`` (the dispatcher sends them there).
    ``outside``: the groups' bulk outside the span E of the targets and spikes
    (docs/DERIVATIONS.md §9.7): ``"coupled"`` (default: its population covariances after the
    steps from the sampled device, and their coupling to the bulk's coordinates on E),
    ``"spectrum"`` (the covariances without the coupling), ``"isotropic"`` (``c_g I``, the
    closure of §9.1). ``row_scale``: the rows' outside scale in the mean channel
    (DERIVATIONS.md §12: each row's own bulk variance, regressed on its spike coordinates;
    False: one common ``c_g`` per group, the route before)."""
    return risk_network_curve([alpha], steps=steps, readout=readout,
                              sigma=sigma, target=target, alpha0=alpha0, eta=eta, lam=lam,
                              beta=beta, delta=delta, p=p, strict=strict, solver=solver,
                              problem=problem, outside=outside, progress=False,
                              row_scale=row_scale)[0]


def risk_network_curve(alphas: Sequence[float], *, steps: int = 1,
                       readout: object = "constant", sigma="tanh", target: str = "tanh",
                       alpha0: float = 2.0, eta: float | Sequence[float] = 1.0,
                       lam: float = 0.01, beta: float = 1.0, delta: float = 0.0,
                       p: float | None = None, strict: bool = False,
                       solver: SolverConfig = SolverConfig(), problem: dict | None = None,
                       outside: str = "coupled", progress: bool | None = None,
                       row_scale: bool = True) -> list:
    """:func:`risk_network` along alpha (one result per alpha): the kappa rule decided once for
    the curve (:func:`asymptotics.network.solve.risk_network_groups_curve`, THEORY.md §10.8)."""
    if outside not in OUTSIDE:
        raise ValueError(f"outside must be one of {', '.join(OUTSIDE)}, got {outside!r}")
    params, kw = route_setup(sigma, target, steps=steps, alpha0=alpha0, eta=eta, delta=delta,
                             readout=readout, outside=outside, row_scale=row_scale,
                             problem=problem)
    try:
        return risk_network_groups_curve(alphas, sigma=sigma, lam=lam, beta=beta, delta=delta,
                                         p=p, strict=strict, solver=solver, progress=progress,
                                         **kw, **params)
    finally:  # (a kept setup keeps no point's intermediate results: every point forgets them
        for v in kw.values():  # at its start anyway)
            getattr(v, "forget", lambda: None)()


#: the most readout values (groups) of the network route beyond one step: its device holds K x n
#: blocks per direction block (peak memory measured 0.8 GB at K = 6, 1.7 GB at 10, one step)
NETWORK_GROUPS = 8

#: the setups :func:`route_setup` keeps (each holds the device's arrays, no copy)
SETUP_SIZE = 8


def route_setup(sigma, target: str, *, steps: int, alpha0: float,
                eta: float | Sequence[float], delta: float = 0.0, readout: object = "constant",
                outside: str = "coupled", row_scale: bool = True, problem: dict | None = None
                ) -> tuple[dict, dict]:
    """``(params, kw)`` of :func:`risk_network_curve`: the K-group problem and the bulk's
    keyword (:func:`network_problem`, :func:`outside_kw`, :func:`with_row_scale`), kept per
    setting with the device (an exact function of the setting; cleared with the device's
    cache). ``problem`` given: built around it, not kept."""
    from asymptotics.network import device

    key = None
    if problem is None:
        e = tuple(eta)[:steps] if isinstance(eta, Sequence) and not isinstance(eta, str) \
            else eta
        key = ("route", sigma, target, int(steps), float(alpha0), e, float(delta),
               parse_readout(readout), outside, bool(row_scale))
        try:
            hit = device._CACHE.get(key)
        except TypeError:  # an unhashable sigma or target: not kept
            key, hit = None, None
        if hit is not None:
            return hit
    with blas_threads():  # (the device's and the bulk's small products: see schur.BLAS_THREADS)
        params = problem if problem is not None else network_problem(
            sigma=sigma, target=target, steps=steps, alpha0=alpha0, eta=eta, delta=delta,
            readout=readout)
        kw = outside_kw(sigma, target, steps=steps, alpha0=alpha0, eta=eta, delta=delta,
                        readout=readout, outside=outside)
        if row_scale:
            params, kw = with_row_scale(params, kw, sigma, target, steps=steps,
                                        alpha0=alpha0, eta=eta, delta=delta, readout=readout)
    if key is not None:
        kept = [k for k in device._CACHE if isinstance(k, tuple) and k and k[0] == "route"]
        for k in kept[:max(0, len(kept) + 1 - SETUP_SIZE)]:
            device._CACHE.pop(k, None)
        device._CACHE[key] = (params, kw)
    return params, kw


def with_row_scale(params: dict, kw: dict, sigma, target: str, *, steps: int, alpha0: float,
                   eta: float | Sequence[float], delta: float = 0.0,
                   readout: object = "constant") -> tuple[dict, dict]:
    """The K-group problem ``params`` and the bulk keyword ``kw`` (:func:`outside_kw`) with the
    rows' outside scale as one more V-type channel coordinate (DERIVATIONS.md §12): the
    channels on ``[V, S, T]`` from :func:`asymptotics.network.rowvar.row_variance` (its E
    block, with the scale's coupling fed back, replaces the route's) and, for the coupled bulk,
    the coupling's share unchanged (``S`` is not coupled to the bulk outside E: it is quadratic
    in it) and the residual the rest (its positive part)."""
    from asymptotics.network.coupling import CoupledChannels
    from asymptotics.network.rowvar import row_variance

    if isinstance(eta, Sequence) and not isinstance(eta, str):
        eta = tuple(eta)[:steps]
    rv = row_variance(sigma, target, steps=steps, alpha0=alpha0, eta=eta, delta=delta,
                      readout=parse_readout(readout))
    sig = np.asarray(rv.sig_scale)
    r = np.asarray(params["loadings"]).shape[1]
    if sig.shape[1] != np.asarray(params["channels"]).shape[1] + 1:
        raise RuntimeError("the rows' scale channels do not match the route's groups")
    params = dict(params, channels=sig)
    cp = kw.get("coupled")
    if cp is not None:
        explained = np.asarray(rv.sig_route) - cp.ecov  # the coupling's share of the route's
        ex = np.insert(np.insert(explained, r, 0.0, axis=1), r, 0.0, axis=2)
        res = sig - ex
        w, U = np.linalg.eigh(0.5 * (res + np.swapaxes(res, 1, 2)))
        ecov = np.einsum("gij,gj,gkj->gik", U, np.maximum(w, 0.0), U)
        a = np.insert(cp.a, r, 0.0, axis=2)
        kw = dict(kw, coupled=CoupledChannels(cp.bulk, a, ecov, r + 1, cp.k))
    return params, kw


def outside_kw(sigma, target: str, *, steps: int, alpha0: float,
               eta: float | Sequence[float], delta: float = 0.0, readout: object = "constant",
               outside: str = "coupled") -> dict:
    """The keyword (``coupled=`` or ``outside=``) of
    :func:`asymptotics.network.solve.risk_network_groups` for the bulk outside E after
    ``steps`` steps (:func:`risk_network`'s ``outside``); empty at ``alpha0 = inf``, where the
    bulk outside E is exactly isotropic (no batch noise, no sampled coupling)."""
    if outside == "isotropic" or not np.isfinite(alpha0):
        return {}
    from asymptotics.multiindex.steps import eta_schedule
    from asymptotics.network.device import network_bulk, network_coupled

    if isinstance(eta, Sequence) and not isinstance(eta, str):
        eta = tuple(eta)[:steps]  # a longer schedule's first steps
    dev = dict(steps=steps, alpha0=alpha0, eta=eta_schedule(eta, steps), delta=delta,
               readout=readout)
    if outside == "coupled":
        return {"coupled": network_coupled(sigma, target, **dev)}
    return {"outside": network_bulk(sigma, target, **dev)}


def network_door(*, steps: object, readout: object, eta: object, lam: object,
                 overrides: dict, sigma, target) -> tuple[bool, object]:
    """The checks of ``model="network"`` with ``steps`` or ``readout``, nothing solved:
    ``(handed_back, eta)``. ``handed_back`` True: the one-step network theory answers, at ``eta``
    (the constant readout's eta_tilde of :func:`one_step_equivalent`)."""
    from asymptotics.core import checks

    steps = checks.integer("steps", steps, 1)
    ro = parse_readout(readout)
    factor = one_step_equivalent(sigma, ro, steps) if _single_index(target) else None
    if factor is not None:
        e = eta[0] if isinstance(eta, Sequence) and not isinstance(eta, str) and len(eta) == 1 \
            else eta
        if isinstance(e, str) and factor != 1.0:
            raise ValueError(f"eta={e!r} is not supported with readout={ro.name!r}")
        return True, e if isinstance(e, str) else float(e) * factor
    given = [name for name, v in overrides.items() if v is not None]
    given += [name for name, v in (("lam", lam), ("eta", eta)) if isinstance(v, str)]
    if given:
        raise ValueError(f"model='network' with readout={ro.name!r}, steps={steps} does not "
                         f"support {', '.join(given)} (the groups are built from the steps' "
                         "parameters, THEORY.md §15)")
    if len(ro.values) > NETWORK_GROUPS:
        raise ValueError(f"model='network' with steps or a readout takes at most "
                         f"{NETWORK_GROUPS} readout values (one neuron group each; the sampled "
                         f"device's memory grows like their square, 1.7 GB at 10), got "
                         f"{len(ro.values)}; model='srf' takes up to {MAX_GROUPS}")
    return False, eta


def api_network_risk(alpha: float, *, steps: object, readout: object, eta: object,
                     lam: object, overrides: dict, sigma, target, **kw):
    """``asymptotics.risk(..., model="network")`` with ``steps`` or ``readout``: ``(result,
    eta)``. ``result`` None means: the one-step network theory answers, at ``eta``
    (:func:`network_door`)."""
    handed_back, eta = network_door(steps=steps, readout=readout, eta=eta, lam=lam,
                                    overrides=overrides, sigma=sigma, target=target)
    if handed_back:
        return None, eta
    from asymptotics.core import checks

    return risk_network(alpha, steps=checks.integer("steps", steps, 1),
                        readout=parse_readout(readout), eta=eta, lam=lam, sigma=sigma,
                        target=target, **kw), eta
