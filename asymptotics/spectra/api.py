"""``asymptotics.spectrum``: the limiting spectra of the learned features and weights with their
outliers, at d -> infinity or at the user's d (docs/THEORY.md §16)."""

from __future__ import annotations

import math

from asymptotics.coefficients.functions import Function, get_function
from asymptotics.core import checks
from asymptotics.core.parameters import default
from asymptotics.spectra.features import features_bulk, features_outliers
from asymptotics.spectra.law import SpectralLaw
from asymptotics.spectra.weights import (
    network_forms,
    population,
    weights_bulk,
    weights_outliers,
)

OF = ("features", "weights")
MODELS = ("srf", "network", "rf")


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


def spectrum(of: str, alpha: float | None = None, *,
             sigma: str | Function = default("sigma"), target: str | Function = default("target"),
             alpha0: float = default("alpha0"), eta: float = default("eta"),
             lam: float = default("lam"), beta: float = default("beta"),
             delta: float = default("delta"), model: str | None = None,
             readout: object = "constant",
             steps: int = 1, d: float | None = None) -> SpectralLaw:
    """The limiting spectral law (docs/THEORY.md §16) of
    ``of="features"``: the p eigenvalues of F^T F, F = sigma(X W^T)/sqrt(p) on n = alpha d fresh
    inputs (the matrix of the readout's ridge normal equations; ``lam`` only shifts it); or
    ``of="weights"``: the p eigenvalues of W W^T (squared singular values of the first layer).
    ``model``: "network" (the trained network after one step with the constant readout: the
    population covariance of its bulk rows, §16.1/§16.3), "srf" (the spiked random features of
    the step; with ``readout`` and ``steps`` the K-group model of §10-§12, for the weights
    §16.6) or "rf" (eta = 0). None (default): "network" for the features at one step with the
    constant readout and eta > 0, else "srf" (the weights: "srf").
    ``d``: the input dimension at which the outliers are located (None: the limit, where the
    features' mean and the weights' spike diverge, location inf)."""
    if of not in OF:
        raise ValueError(f"of must be one of {OF}, got {of!r}")
    if model is None:
        one = steps == 1 and isinstance(readout, str) and readout == "constant"
        model = "network" if of == "features" and one and eta != 0.0 else "srf"
    if model not in MODELS:
        raise ValueError(f"model must be one of {MODELS}, got {model!r}")
    beta = checks.positive("beta", beta)
    alpha0 = checks.positive("alpha0", alpha0)
    eta = checks.positive("eta", eta, allow_zero=True)
    delta = checks.positive("delta", delta, allow_zero=True)
    lam = checks.positive("lam", lam, allow_zero=True)
    if d is not None:
        d = checks.real("d", d, 1.0)
    steps = checks.integer("steps", steps, 1)
    if model == "rf" and eta != 0.0:
        raise ValueError(f"eta must be 0 for model='rf' (random features), got {eta:g}")
    s = get_function(sigma)
    params = dict(sigma=s.name, target=getattr(target, "name", str(target)), alpha0=alpha0,
                  eta=eta, lam=lam, beta=beta, delta=delta, readout=str(readout), steps=steps)
    if of == "features":
        if alpha is None:
            raise ValueError("alpha must be given for of='features' (n = alpha d fresh inputs)")
        alpha = checks.positive("alpha", alpha)
        net = model == "network" and eta > 0.0
        if net and (steps != 1 or not (isinstance(readout, str) and readout == "constant")):
            raise ValueError("model='network' for of='features' covers one step with the constant "
                             f"readout (steps=1, readout='constant'), got steps={steps}, "
                             f"readout={readout!r}; use model='srf' (the K-group surrogate)")
        from asymptotics.spiked.problem import build_spiked_problem

        gp = _groups(s, target, alpha0=alpha0, eta=eta, delta=delta, readout=readout,
                     steps=steps, model=model)
        prob = build_spiked_problem(sigma=s, lam=lam, beta=beta, delta=delta, **gp)
        sol = network = None
        if net:
            from asymptotics.spectra.features import network_channels, network_features_solver

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
            if model != "srf":
                raise ValueError("model must be 'srf' for of='weights' with steps > 1 or a "
                                 f"non-constant readout, got {model!r}")
            from asymptotics.spectra.weights import steps_weights

            sol, support, atom, outs, extra = steps_weights(
                s, target, alpha0=alpha0, eta=eta, delta=delta, beta=beta, readout=readout,
                steps=steps, d=d)
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


def _law(of: str, matrix: str, model: str, params: dict, support: list, atom: float,
         outs: list, d: float | None, sol: object) -> SpectralLaw:
    outs = sorted(outs, key=lambda o: -o.location)
    ok = bool(support) and all(math.isfinite(a) for iv in support for a in iv)
    return SpectralLaw(of=of, matrix=matrix, model=model, params=params, support=tuple(support),
                       atom=float(atom), outliers=tuple(outs), d=d,
                       status="converged" if ok else "failed",
                       message="" if ok else "the bulk's support was not found", _solver=sol)
