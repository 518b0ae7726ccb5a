"""``asymptotics.spectrum``: the limiting spectra of the learned features and weights with their
outliers, at d -> infinity or at the user's d (docs/THEORY.md §16)."""

from __future__ import annotations

import math
import sys
from collections import OrderedDict
from dataclasses import replace

import numpy as np

from asymptotics.coefficients.functions import Function, get_function
from asymptotics.core import checks
from asymptotics.core.parameters import default
from asymptotics.spectra.features import features_bulk, features_outliers
from asymptotics.spectra.law import Outlier, SpectralLaw
from asymptotics.spectra.weights import (
    network_forms,
    population,
    weights_bulk,
    weights_outliers,
)

OF = ("features", "weights")
MODELS = ("srf", "network", "rf")
#: the largest finite d of a spectrum: the outliers sit at a location of order d, and beyond
#: ~1e11 the features' mean outlier drifts from its d-scaling (location/d moves by 1.6e-5 at
#: 1e12, 3e-3 at 1e14, fails at 1e16); the weights' outlier breaks beyond 1e20
MAX_D = 1e10


def _groups(sigma, target, *, alpha0, eta, delta, readout, steps, model) -> dict:
    """The K-group parameters (loadings, bulk, fractions, overlaps, target) of the features."""
    from asymptotics.step.srf import srf_mapping

    if steps != 1:
        from asymptotics.multiindex.steps import steps_mapping

        tname = target if isinstance(target, str) else getattr(target, "name", None)
        if not isinstance(tname, str):
            raise TypeError(f"target must be an expression in z1..zk for steps > 1, got {target!r}")
        return steps_mapping(sigma, tname, steps=steps, alpha0=alpha0, eta=eta, delta=delta,
                             readout=readout).spiked_params()
    if not (isinstance(readout, str) and readout == "constant"):
        from asymptotics.spiked.readouts import readout_mapping

        rm = readout_mapping(sigma, target, alpha0=alpha0, eta=eta, delta=delta, readout=readout)
        return dict(rm.spiked_params(), target=target)
    sp = srf_mapping(sigma, target, alpha0=alpha0, eta=eta, delta=delta)
    return dict(loadings=[[sp.r]], bulk=[sp.c], fractions=[1.0], overlaps=[[sp.gamma]],
                target=target)


def _check_spread(s: Function) -> None:
    """Refuse a sigma constant on N(0, 1) up to rounding ('1', '0*z', '1e-300*tanh(z)'): the
    features are then a constant (rank-one or zero) matrix without a bulk, where the law's
    solver would search for one without end."""
    z, w = np.polynomial.hermite_e.hermegauss(64)
    w = w / w.sum()
    with np.errstate(all="ignore"):
        v = np.asarray(s(z), dtype=np.float64)
        second = float(w @ (v * v))
        var = float(w @ (v - float(w @ v)) ** 2)
    if not (math.isfinite(var) and var > 1e-12 * second and var > 1e-280):
        raise ValueError(f"sigma {s.name!r} is constant on N(0, 1) (variance {var:.3g}): the "
                         "features have no bulk spectrum; give a non-constant activation")


def spectrum(of: str, alpha: float | None = None, *,
             sigma: str | Function = default("sigma"), target: str | Function = default("target"),
             alpha0: float = default("alpha0"), eta: float = default("eta"),
             lam: float = default("lam"), beta: float = default("beta"),
             delta: float = default("delta"), model: str | None = None,
             readout: object = "constant",
             steps: int = 1, d: float | None = None,
             exponents: tuple[float, float] | None = None) -> SpectralLaw:
    """The limiting spectral law (docs/THEORY.md §16) of
    ``of="features"``: the p eigenvalues of F^T F, F = sigma(X W^T)/sqrt(p) on n = alpha d fresh
    inputs (the matrix of the readout's ridge normal equations; ``lam`` only shifts it); or
    ``of="weights"``: the p eigenvalues of W W^T (squared singular values of the first layer).
    ``model``: "network" (the trained network after one step with the constant readout: the
    population covariance of its bulk rows, §16.1/§16.3), "srf" (the spiked random features of
    the step; with ``readout`` and ``steps`` the K-group model of §10-§12, for the weights
    §16.6) or "rf" (eta = 0). None (default): "network" for eta > 0 after several steps
    (features and weights, §16.6, §16.8) and for the features at one step with the constant
    readout, else "srf" (one step with another readout; the weights at one step).
    ``d``: the input dimension at which the outliers are located (None: the limit, where the
    features' mean and the weights' spike diverge, location inf).
    ``exponents=(a1, a2)``: the weights after two steps with eta_t = eta_t p^(1/2 + a_t)
    (``eta=(eta1, eta2)`` the prefactors) and a Gaussian readout at the given d (§16.7;
    ``of="weights"``, ``steps=2``, ``readout="gaussian"``, a single-index target).
    A law asked again with the same arguments (and the same settings of the spectra modules it
    used) is the same object, from a bounded cache (:data:`CACHE_SIZE` laws, least recently
    used first out; :func:`clear_cache` forgets them); its ``params`` and outliers' ``overlaps``
    are read-only mappings (nested lists as tuples), so the shared object cannot be altered."""
    args = dict(alpha=alpha, sigma=sigma, target=target, alpha0=alpha0, eta=eta, lam=lam,
                beta=beta, delta=delta, model=model, readout=readout, steps=steps, d=d,
                exponents=exponents)
    key = _cache_key(of, args)
    if key is not None:
        hit = _CACHE.get(key)
        if hit is not None and _same_settings(hit[1]):
            _CACHE.move_to_end(key)
            return hit[0]
    law = _frozen_law(_spectrum(of, **args))
    if key is not None:
        _CACHE[key] = (law, _settings())
        while len(_CACHE) > CACHE_SIZE:
            _CACHE.popitem(last=False)
    return law


def _spectrum(of: str, alpha: float | None = None, *, sigma, target, alpha0: float, eta: float,
              lam: float, beta: float, delta: float, model: str | None, readout: object,
              steps: int, d: float | None, exponents: tuple[float, float] | None
              ) -> SpectralLaw:
    """:func:`spectrum` without its cache."""
    if of not in OF:
        raise ValueError(f"of must be one of {OF}, got {of!r}")
    if exponents is not None or readout == "gaussian":
        return _two_step(of, exponents, sigma=sigma, target=target, alpha0=alpha0, eta=eta,
                         beta=beta, delta=delta, model=model, readout=readout, steps=steps, d=d)
    if model is None:  # the network's law where it is measured (THEORY.md §16.8, §16.6)
        one = steps == 1 and isinstance(readout, str) and readout == "constant"
        model = "network" if eta != 0.0 and (steps != 1 or (of == "features" and one)) \
            else "srf"
    if model not in MODELS:
        raise ValueError(f"model must be one of {MODELS}, got {model!r}")
    beta = checks.positive("beta", beta)
    alpha0 = checks.positive("alpha0", alpha0)
    eta = checks.positive("eta", eta, allow_zero=True)
    delta = checks.positive("delta", delta, allow_zero=True)
    lam = checks.positive("lam", lam, allow_zero=True)
    if d is not None:
        d = checks.real("d", d, 1.0)
        if d > MAX_D:
            raise ValueError(f"d must be <= {MAX_D:g} for a spectrum at finite d, got {d:g}: "
                             "beyond, the outliers (at a location of order d) lose float64 "
                             "precision; d=None gives the d -> infinity law")
    steps = checks.integer("steps", steps, 1)
    if model == "rf" and eta != 0.0:
        raise ValueError(f"eta must be 0 for model='rf' (random features), got {eta:g}")
    s = get_function(sigma)
    params = dict(sigma=s.name, target=getattr(target, "name", str(target)), alpha0=alpha0,
                  eta=eta, lam=lam, beta=beta, delta=delta, readout=str(readout), steps=steps)
    if of == "features":
        if alpha is None:
            raise ValueError("alpha must be given for of='features' (n = alpha d fresh inputs)")
        _check_spread(s)
        alpha = checks.positive("alpha", alpha)
        net = model == "network" and eta > 0.0
        from asymptotics.spiked.problem import build_spiked_problem

        if net and (steps != 1 or not (isinstance(readout, str) and readout == "constant")):
            return _network_steps_features(s, target, alpha, alpha0=alpha0, eta=eta, lam=lam,
                                           beta=beta, delta=delta, readout=readout,
                                           steps=steps, d=d, params=params)
        gp = _groups(s, target, alpha0=alpha0, eta=eta, delta=delta, readout=readout,
                     steps=steps, model=model)
        prob = build_spiked_problem(sigma=s, lam=lam, beta=beta, delta=delta, **gp)
        sol = network = None
        if net:
            from asymptotics.core.group_checks import bulk_scale
            from asymptotics.spectra.features import network_channels, network_features_solver

            # the population law of C resolved (tanh: the law's mean 0.2% off at sqrt(c) = 971,
            # 0.8% at 1.4e3, mass 0.04 at 1.4e5; the sRF law keeps mass and mean at 1.4e9)
            try:
                bulk_scale(math.sqrt(float(gp["bulk"][0])), s.name)
            except ValueError as e:
                raise ValueError(f"{e} (or model='srf', the surrogate's law)") from None
            g = get_function(target)
            sol = network_features_solver(prob, alpha, sigma=s, target=g, alpha0=alpha0,
                                          eta=eta, delta=delta)
            network = network_channels(prob, s, g, alpha0=alpha0, eta=eta, delta=delta)
        sol, support, atom = features_bulk(prob, alpha, sol)
        edge = support[-1][1] if support else 0.0
        outs = features_outliers(prob, alpha, sol, edge, d, network)
        matrix = "F^T F (p x p), F = sigma(X W^T)/sqrt(p), X: n = alpha d fresh inputs"
        params.update(alpha=alpha, loadings=gp["loadings"], bulk=gp["bulk"],
                      fractions=gp["fractions"], overlaps=gp["overlaps"])
    else:
        if steps != 1 or not (isinstance(readout, str) and readout == "constant"):
            if model not in ("srf", "network"):
                raise ValueError("model must be 'srf' or 'network' for of='weights' with "
                                 f"steps > 1 or a non-constant readout, got {model!r}")
            from asymptotics.spectra.netsteps import network_steps_weights
            from asymptotics.spectra.weights import steps_weights

            tname = target if isinstance(target, str) else getattr(target, "name", None)
            if model == "network" and not isinstance(tname, str):
                raise TypeError("target must be an expression in z1..zk for of='weights' with "
                                f"steps > 1 or a non-constant readout, got {target!r}")
            build = network_steps_weights if model == "network" else steps_weights
            sol, support, atom, outs, extra = build(
                s, tname if model == "network" else target, alpha0=alpha0, eta=eta,
                delta=delta, beta=beta, readout=readout, steps=steps, d=d)
            params.update(alpha=alpha, **extra)
            return _law(of, "W W^T (p x p): the squared singular values of the first layer",
                        model, params, support, atom, outs, d, sol)
        from asymptotics.step.srf import srf_mapping

        g = get_function(target)
        sp = srf_mapping(s, g, alpha0=alpha0, eta=eta, delta=delta)
        nodes, wts = population(s, g, alpha0=alpha0, eta=eta, delta=delta, model=model)
        exact = None
        if model == "network" and eta > 0.0:
            from asymptotics.spectra.weights import network_gmp_solver

            exact = network_gmp_solver(s, g, alpha0=alpha0, eta=eta, delta=delta, beta=beta,
                                       mean=float(nodes @ wts))
        sol, support, atom = weights_bulk(nodes, wts, beta, exact)
        edge = support[-1][1] if support else 0.0
        forms = (network_forms(s, g, alpha0=alpha0, eta=eta, delta=delta)
                 if model == "network" and eta > 0.0 else None)
        outs = weights_outliers(sol, edge, r=sp.r, gamma=sp.gamma, c=sp.c, beta=beta, d=d,
                                forms=forms)
        matrix = "W W^T (p x p): the squared singular values of the first layer"
        params.update(alpha=alpha, r=sp.r, c=sp.c, gamma=sp.gamma)
    return _law(of, matrix, model, params, support, atom, outs, d, sol)


def _two_step(of: str, exponents: object, *, sigma, target, alpha0: float, eta: object,
              beta: float, delta: float, model: str | None, readout: object, steps: int,
              d: float | None) -> SpectralLaw:
    """``spectrum`` with ``exponents``: :func:`asymptotics.spectra.twostep.two_step_law`."""
    from asymptotics.spectra.twostep import two_step_law

    got = (f"got of={of!r}, steps={steps}, readout={readout!r}, exponents={exponents!r}, "
           f"model={model!r}, d={d!r}")
    ok = (of == "weights" and steps == 2 and readout == "gaussian" and exponents is not None
          and model in (None, "network") and d is not None)
    if not ok:
        raise ValueError("exponents=(a1, a2) covers of='weights', steps=2, readout='gaussian', "
                         f"model='network' at a given d (docs/THEORY.md §16.7); {got}")
    try:
        a1, a2 = (float(a) for a in exponents)
    except (TypeError, ValueError):
        raise ValueError(f"exponents must be a pair (a1, a2) of numbers in [0, 1/2), got "
                         f"{exponents!r}") from None
    if isinstance(eta, str) or not hasattr(eta, "__len__"):
        eta1 = eta2 = eta
    elif len(eta) == 2:
        eta1, eta2 = eta
    else:
        raise ValueError(f"eta must be a number or a pair (eta1, eta2) with exponents, got {eta!r}")
    return two_step_law(sigma, target, a1=a1, a2=a2, d=d, eta1=eta1, eta2=eta2, beta=beta,
                        alpha0=alpha0, delta=delta)


def _network_steps_features(s: Function, target, alpha: float, *, alpha0: float, eta: float,
                            lam: float, beta: float, delta: float, readout: object, steps: int,
                            d: float | None, params: dict) -> SpectralLaw:
    """The network's features after ``steps`` steps or with a finite-support readout
    (docs/THEORY.md §16.8): the K-group V-part on the network route's groups and its bulk
    outside E (:mod:`asymptotics.spectra.netbulk`), the outliers of the means and of the
    bulk's columns on E coupled to it (:mod:`asymptotics.spectra.netsteps`)."""
    from asymptotics.spectra.netbulk import blas_threads, outside_solver
    from asymptotics.spectra.netsteps import (
        network_steps_outliers,
        network_steps_outside,
        network_steps_params,
    )
    from asymptotics.spiked.problem import build_spiked_problem

    tname = target if isinstance(target, str) else getattr(target, "name", None)
    if not isinstance(tname, str):
        raise TypeError(f"target must be an expression in z1..zk for model='network' with "
                        f"steps or a readout, got {target!r}")
    from asymptotics.network.rowvar import row_variance

    gp, sig, values = network_steps_params(s, tname, steps=steps, alpha0=alpha0, eta=eta,
                                           delta=delta, readout=readout)
    prob = build_spiked_problem(sigma=s, lam=lam, beta=beta, delta=delta, **gp)
    coupled = network_steps_outside(s, tname, steps=steps, alpha0=alpha0, eta=eta, delta=delta,
                                    readout=readout)
    sol = None if coupled is None else outside_solver(prob, alpha, coupled.bulk)
    sol, support, atom = features_bulk(prob, alpha, sol)
    edge = support[-1][1] if support else 0.0
    # the channels' Sig and the bulk-variance channel from the rows' outside scale (§16.9)
    rv = row_variance(s, tname, steps=steps, alpha0=alpha0, eta=eta, delta=delta,
                      readout=readout)
    sig = rv.sig
    with blas_threads():  # (the outliers' Acal: dense inverses, no faster on more threads)
        outs = network_steps_outliers(prob, alpha, sol, edge, d, sig, values,
                                      row_slope=rv.slope, coupled=coupled)
    params.update(alpha=alpha, loadings=gp["loadings"], bulk=gp["bulk"],
                  fractions=gp["fractions"], overlaps=gp["overlaps"],
                  channels=sig.tolist(), row_slope=rv.slope.tolist())
    return _law("features", "F^T F (p x p), F = sigma(X W^T)/sqrt(p), X: n = alpha d fresh "
                "inputs", "network", params, support, atom, outs, d, sol)


def _law(of: str, matrix: str, model: str, params: dict, support: list, atom: float,
         outs: list, d: float | None, sol: object) -> SpectralLaw:
    outs = sorted(outs, key=lambda o: -o.location)
    ok = bool(support) and all(math.isfinite(a) for iv in support for a in iv)
    return SpectralLaw(of=of, matrix=matrix, model=model, params=params, support=tuple(support),
                       atom=float(atom), outliers=tuple(outs), d=d,
                       status="converged" if ok else "failed",
                       message="" if ok else "the bulk's support was not found", _solver=sol)


#: the laws kept by :func:`spectrum` (least recently used first out), each with the settings of
#: the spectra modules it was computed with (:func:`_settings`)
CACHE_SIZE = 32
_CACHE: OrderedDict = OrderedDict()
#: the modules whose settings (upper-case module constants: bool, int, float, str, None) a cached
#: law must share with the call: a law computed with another setting is not returned
_SETTING_MODULES = tuple(f"asymptotics.spectra.{m}" for m in (
    "bbp", "branch", "features", "law", "netbulk", "netsteps", "topguard", "twostep",
    "weights", "traces.net_branch", "traces.net_chord", "traces.net_jacobian", "traces.net_line",
    "traces.outside_kernels", "traces.outside_scalar", "traces.srf_kernels", "traces.srf_scan",
    "traces.srf_solver"))


def clear_cache() -> None:
    """Forget the laws :func:`spectrum` keeps (benchmarks time a first computation; a module
    setting changed by hand is checked on a hit, a function replaced at run time is not)."""
    _CACHE.clear()


def _settings() -> tuple:
    """The settings of the spectra modules loaded (after a law's computation: every module it
    used), as (module, name, value)."""
    out = []
    for name in _SETTING_MODULES:
        mod = sys.modules.get(name)
        if mod is not None:
            out += [(mod, k, v) for k, v in vars(mod).items()
                    if k.isupper() and isinstance(v, (bool, int, float, str, type(None)))]
    return tuple(out)


def _same_settings(saved: tuple) -> bool:
    return all(getattr(mod, k, _MISSING) == v for mod, k, v in saved)


_MISSING = object()


def _hashable(v: object) -> object:
    """A key of an argument exactly as given (a readout's dict in its order; types kept apart
    where equal values would not give the same law, e.g. True and 1)."""
    if isinstance(v, dict):
        return ("dict", tuple((_hashable(k), _hashable(x)) for k, x in v.items()))
    if isinstance(v, (list, tuple)):
        return (type(v).__name__, tuple(_hashable(x) for x in v))
    if isinstance(v, np.ndarray):
        return ("ndarray", v.dtype.str, v.shape, v.tobytes())
    return (type(v).__name__, v)


def _cache_key(of: str, args: dict) -> tuple | None:
    """The cache's key of a call: every argument as given (None: an argument that cannot be a
    key, the law is not cached)."""
    try:
        key = (_hashable(of), tuple((k, _hashable(v)) for k, v in args.items()))
        hash(key)
    except TypeError:
        return None
    return key


class FrozenDict(dict):
    """A read-only dict (a cached law's ``params`` and outliers' ``overlaps``): reading, copying
    (``dict(x)``) and pickling as a dict; every mutation raises TypeError."""

    def _read_only(self, *args: object, **kwargs: object) -> None:
        raise TypeError("a SpectralLaw's mappings are read-only (the law may be shared by "
                        "spectrum's cache): copy it with dict(...)")

    __setitem__ = __delitem__ = clear = pop = popitem = setdefault = update = _read_only
    __ior__ = _read_only

    def __reduce__(self) -> tuple:
        return (FrozenDict, (dict(self),))


def _freeze(v: object) -> object:
    if isinstance(v, dict):
        return FrozenDict({k: _freeze(x) for k, x in v.items()})
    if isinstance(v, (list, tuple)):
        return tuple(_freeze(x) for x in v)
    if isinstance(v, np.ndarray):
        v = v.copy()
        v.flags.writeable = False
    return v


def _frozen_law(law: SpectralLaw) -> SpectralLaw:
    """``law`` with read-only ``params`` and outliers' ``overlaps`` (the same numbers)."""
    outs = tuple(Outlier(location=o.location, channel=o.channel, overlaps=_freeze(o.overlaps))
                 for o in law.outliers)
    return replace(law, params=_freeze(law.params), outliers=outs)
