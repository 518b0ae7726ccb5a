"""Bad input beyond one step: the K-group model (shapes, values, the bounds on K, r and the
quadrature), readout mappings, several steps (step counts, eta per step, the groups of a first
layer), multi-index target expressions, polynomial spikes, and the ``steps`` and ``spectrum``
commands. Every case ends in a one-line error naming what was wrong (CLI: exit status 2 and one
``error:`` line, no traceback), before any long work; a SIGALRM guard fails a hang fast. Then the
regressions of the same review: ``risk("2")``, the simulator's random features with a step, the
figures' backend, the import circle of the callables, and ``tanh(z1)`` against ``tanh``; one call
for every T (``steps=1`` with a target in z1..zk); and the jump of K >= 2 groups at p = infinity
(NaN with status ``needs_width`` where the limit needs a width, continuity at a given width)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import asymptotics as A
from asymptotics.cli.curve import main as asym_main
from asymptotics.equations.solver import SolverConfig
from asymptotics.multiindex.steps import Quadrature
from asymptotics.spiked.readouts import parse_readout
from validation.cli import main as val_main

ROOT = Path(__file__).resolve().parents[1]
MISSING = "/nonexistent-giantstep-dir/out"
GUARD = 20  # seconds: every bad input is refused long before this


@pytest.fixture(autouse=True)
def _no_hang(request):
    """A case that hangs fails after GUARD seconds instead of stalling the suite. Tests marked
    ``computes`` (valid inputs, real numbers) are not guarded: on an empty numba cache their
    first call compiles kernels for longer than GUARD, which is no hang."""
    if request.node.get_closest_marker("computes") is not None:
        yield
        return

    def _timeout(signum, frame):
        raise TimeoutError(f"no answer within {GUARD} s: a hang")

    old = signal.signal(signal.SIGALRM, _timeout)
    signal.alarm(GUARD)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, old)


def _one_line(exc: BaseException, word: str) -> None:
    msg = str(exc)
    assert word.lower() in msg.lower(), msg
    assert "\n" not in msg.strip(), msg
    assert len(msg) < 400, msg


# ------------------------------------------------------------------------------------------------
# the K-group model: risk_spiked, risk_spiked_curve, risk_spiked_grid, spike_contributions

G2 = dict(sigma="relu", target="z1 + z1*z2", loadings=[[1.0, 0.0], [0.5, 0.5]], bulk=[1.0, 1.0],
          fractions=[0.5, 0.5], overlaps=[[1.0, 0.0], [0.0, 1.0]], lam=0.01, beta=1.0)


def _k(K: int, r: int = 1) -> dict:
    return dict(G2, target="z1", loadings=np.full((K, r), 0.5), bulk=np.ones(K),
                fractions=np.full(K, 1.0 / K), overlaps=np.eye(r, 1))


SPIKED = [  # (id, changes to G2, error class, keyword)
    ("ragged loadings", dict(loadings=[[1.0, 0.0], [0.5]]), ValueError, "ragged"),
    ("r = 0", dict(loadings=[[], []]), ValueError, "r >= 1"),
    ("K = 0", dict(loadings=np.zeros((0, 2))), ValueError, "K >= 1"),
    ("loadings empty list", dict(loadings=[]), ValueError, "K x r"),
    ("loadings scalar", dict(loadings=1.0), ValueError, "K x r"),
    ("loadings 1-D", dict(loadings=[1.0, 0.5]), ValueError, "K x r"),
    ("loadings 3-D", dict(loadings=np.ones((2, 2, 1))), ValueError, "K x r"),
    ("loadings string", dict(loadings="[[1, 0], [0, 1]]"), TypeError, "loadings"),
    ("loadings None", dict(loadings=None), TypeError, "loadings"),
    ("loadings dict", dict(loadings={"a": 1}), TypeError, "loadings"),
    ("loadings with a string", dict(loadings=[[1.0, "a"], [0.5, 0.5]]), TypeError, "loadings"),
    ("loadings booleans", dict(loadings=[[True, False], [False, True]]), TypeError, "loadings"),
    ("loadings complex", dict(loadings=[[1 + 1j, 0.0], [0.5, 0.5]]), TypeError, "loadings"),
    ("loadings None entry", dict(loadings=[[None, 0.0], [0.5, 0.5]]), TypeError, "loadings"),
    ("loadings nan", dict(loadings=[[np.nan, 0.0], [0.5, 0.5]]), ValueError, "finite"),
    ("loadings inf", dict(loadings=[[np.inf, 0.0], [0.5, 0.5]]), ValueError, "finite"),
    ("K = 65", _k(65), ValueError, "at most 64"),
    ("K = 200", _k(200), ValueError, "at most 64"),
    ("K = 1000", _k(1000), ValueError, "at most 64"),
    ("r = 5", dict(_k(1, 5), overlaps=np.eye(5, 1)), ValueError, "at most 4"),
    ("r = 50", dict(_k(2, 50), overlaps=np.eye(50, 1)), ValueError, "at most 4"),
    ("bulk scalar", dict(bulk=1.0), ValueError, "bulk"),
    ("bulk too long", dict(bulk=[1.0, 1.0, 1.0]), ValueError, "K = 2 entries"),
    ("bulk too short", dict(bulk=[1.0]), ValueError, "K = 2"),
    ("bulk 2-D", dict(bulk=[[1.0, 1.0]]), ValueError, "bulk"),
    ("bulk ragged", dict(bulk=[[1.0], 1.0]), ValueError, "ragged"),
    ("bulk negative", dict(bulk=[-1.0, 1.0]), ValueError, ">= 0"),
    ("bulk nan", dict(bulk=[np.nan, 1.0]), ValueError, "finite"),
    ("bulk inf", dict(bulk=[np.inf, 1.0]), ValueError, "finite"),
    ("bulk string", dict(bulk="1,1"), TypeError, "bulk"),
    ("fractions sum 1.1", dict(fractions=[0.5, 0.6]), ValueError, "sum to 1"),
    ("fractions zero", dict(fractions=[1.0, 0.0]), ValueError, "> 0"),
    ("fractions negative", dict(fractions=[1.5, -0.5]), ValueError, "> 0"),
    ("fractions short", dict(fractions=[1.0]), ValueError, "K = 2"),
    ("fractions nan", dict(fractions=[np.nan, 0.5]), ValueError, "finite"),
    ("fractions None", dict(fractions=None), TypeError, "fractions"),
    ("overlaps 1-D", dict(overlaps=[1.0, 0.0]), ValueError, "r x k"),
    ("overlaps one row for r = 2", dict(overlaps=[[1.0, 0.0]]), ValueError, "r x k = 2 x 2"),
    ("overlaps k = 1 for a target in z1, z2", dict(overlaps=[[1.0], [0.0]]), ValueError,
     "r x k"),
    ("overlaps column norm 2", dict(overlaps=[[2.0, 0.0], [0.0, 1.0]]), ValueError, "norm"),
    ("overlaps nan", dict(overlaps=[[np.nan, 0.0], [0.0, 1.0]]), ValueError, "finite"),
    ("overlaps string", dict(overlaps="eye"), TypeError, "overlaps"),
    ("overlaps ragged", dict(overlaps=[[1.0, 0.0], [0.0]]), ValueError, "ragged"),
    ("p = 0.5", dict(p=0.5), ValueError, "p must be"),
    ("p = 1 with two groups", dict(p=1), ValueError, "p must be >= K = 2"),
    ("p = 1.5 with two groups", dict(p=1.5), ValueError, "whole number"),
    ("p = 2.5 with two groups", dict(p=2.5, fractions=[0.9, 0.1]), ValueError, "whole number"),
    ("p = -inf", dict(p=-np.inf), ValueError, "p must be"),
    ("p nan", dict(p=np.nan), ValueError, "p must be"),
    ("p string", dict(p="100"), TypeError, "p must be"),
    ("p bool", dict(p=True), TypeError, "p must be"),
    ("lam negative", dict(lam=-1.0), ValueError, "lam"),
    ("lam 'optimal'", dict(lam="optimal"), TypeError, "lam"),
    ("beta 0", dict(beta=0.0), ValueError, "beta"),
    ("delta negative", dict(delta=-1.0), ValueError, "delta"),
    ("n_kappa 0", dict(n_kappa=0), ValueError, "n_kappa"),
    ("n_kappa -3", dict(n_kappa=-3), ValueError, "n_kappa"),
    ("n_kappa 1.5", dict(n_kappa=1.5), ValueError, "n_kappa"),
    ("n_kappa 10000 at r = 2", dict(n_kappa=10_000), ValueError, "kappa nodes"),
    ("n_omega 0", dict(n_omega=0), ValueError, "n_omega"),
    ("solver string", dict(solver="fast"), TypeError, "solver"),
    ("strict string", dict(strict="yes"), TypeError, "strict"),
    ("sigma unknown", dict(sigma="foo"), ValueError, "unknown function"),
    ("sigma grows", dict(sigma="exp(z**2)"), ValueError, "grows too fast"),
    ("target number", dict(target=42), TypeError, "target"),
    ("target callable without arguments", dict(target=lambda: 1.0), ValueError, "positional"),
    ("target of 8 non-polynomial directions", dict(target="tanh(z1+z2+z3+z4+z5+z6+z7+z8)",
                                                   overlaps=np.eye(2, 8)), ValueError,
     "at most 20000"),
]


@pytest.mark.parametrize("change,exc,word", [c[1:] for c in SPIKED], ids=[c[0] for c in SPIKED])
def test_risk_spiked(change, exc, word):
    kw = dict(G2, **change)
    with pytest.raises(exc) as info:
        A.risk_spiked(1.0, **kw)
    _one_line(info.value, word)


SPIKED_CALLS = [
    ("alpha 0", lambda: A.risk_spiked(0.0, **G2), ValueError, "alpha"),
    ("alpha string", lambda: A.risk_spiked("1", **G2), TypeError, "alpha"),
    ("alpha nan", lambda: A.risk_spiked(np.nan, **G2), ValueError, "alpha"),
    ("curve no alpha", lambda: A.risk_spiked_curve([], **G2), ValueError, "at least one"),
    ("curve scalar alphas", lambda: A.risk_spiked_curve(1.0, **G2), TypeError, "sequence"),
    ("curve negative alpha", lambda: A.risk_spiked_curve([1.0, -1.0], **G2), ValueError,
     "alpha"),
    ("curve string alpha", lambda: A.risk_spiked_curve(["a"], **G2), TypeError, "alpha"),
    ("curve progress string", lambda: A.risk_spiked_curve([1.0], progress="yes", **G2),
     TypeError, "progress"),
    ("curve ragged loadings", lambda: A.risk_spiked_curve(
        [1.0], **dict(G2, loadings=[[1.0, 0.0], [1.0]])), ValueError, "ragged"),
    ("curve r = 0", lambda: A.risk_spiked_curve([1.0], **dict(G2, loadings=[[], []])),
     ValueError, "r >= 1"),
    ("curve K = 1000", lambda: A.risk_spiked_curve([1.0], **_k(1000)), ValueError,
     "at most 64"),
    ("curve missing loadings", lambda: A.risk_spiked_curve(
        [1.0], **{k: v for k, v in G2.items() if k != "loadings"}), TypeError, "loadings"),
    ("curve p = 1.5", lambda: A.risk_spiked_curve([1.0], p=1.5, **G2), ValueError,
     "whole number"),
    ("curve solver", lambda: A.risk_spiked_curve([1.0], solver=1e-8, **G2), TypeError,
     "solver"),
    ("grid no lam", lambda: A.risk_spiked_grid([1.0], [], **G2), ValueError, "at least one"),
    ("grid scalar lams", lambda: A.risk_spiked_grid([1.0], 0.01, **G2), TypeError, "lams"),
    ("grid negative lam", lambda: A.risk_spiked_grid([1.0], [-1.0], **G2), ValueError, "lam"),
    ("grid scalar alphas", lambda: A.risk_spiked_grid(1.0, [0.01], **G2), TypeError, "alphas"),
    ("contributions ragged", lambda: A.spike_contributions(
        1.0, **dict(G2, loadings=[[1.0, 0.0], [1.0]])), ValueError, "ragged"),
    ("contributions missing loadings", lambda: A.spike_contributions(
        1.0, sigma="relu", target="z1"), TypeError, "loadings"),
]


# ------------------------------------------------------------------------------------------------
# readout mappings

READOUTS = [
    ("unknown name", lambda: parse_readout("pm2"), ValueError, "readout"),
    ("empty mapping", lambda: parse_readout({}), ValueError, "at least one"),
    ("value zero", lambda: parse_readout({0.0: 1.0}), ValueError, "nonzero"),
    ("value inf", lambda: parse_readout({np.inf: 1.0}), ValueError, "finite"),
    ("value string", lambda: parse_readout({"a": 1.0}), TypeError, "readout value"),
    ("value bool", lambda: parse_readout({True: 1.0}), TypeError, "readout value"),
    ("weight string", lambda: parse_readout({1.0: "1"}), TypeError, "readout weight"),
    ("weight negative", lambda: parse_readout({1.0: 2.0, -1.0: -1.0}), ValueError, "> 0"),
    ("weight nan", lambda: parse_readout({1.0: np.nan}), ValueError, "> 0"),
    ("weights sum 1.1", lambda: parse_readout({1.0: 0.5, -1.0: 0.6}), ValueError, "sum to 1"),
    ("one value of weight 1/2", lambda: parse_readout({1: 0.5}), ValueError, "sum to 1"),
    ("a list", lambda: parse_readout([1.0, -1.0]), TypeError, "mapping"),
    ("a number", lambda: parse_readout(1.0), TypeError, "mapping"),
    ("100 values", lambda: parse_readout({float(i): 0.01 for i in range(1, 101)}), ValueError,
     "at most 64"),
    ("network model", lambda: A.risk_readout(1.0, readout="pm1", model="network"), ValueError,
     "model='srf'"),
    ("rf model", lambda: A.risk_readout(1.0, readout="pm1", model="rf"), ValueError, "srf"),
    ("eta 'optimal'", lambda: A.risk_readout(1.0, readout="pm1", eta="optimal"), TypeError,
     "eta"),
    ("eta negative", lambda: A.risk_readout(1.0, readout="pm1", eta=-1.0), ValueError, "eta"),
    ("eta nan", lambda: A.risk_readout(1.0, readout="pm1", eta=np.nan), ValueError, "eta"),
    ("alpha0 string", lambda: A.readout_mapping("relu", "tanh", alpha0="2", eta=1.0),
     TypeError, "alpha0"),
    ("alpha0 zero", lambda: A.readout_mapping("relu", "tanh", alpha0=0.0, eta=1.0),
     ValueError, "alpha0"),
    ("delta negative", lambda: A.readout_mapping("relu", "tanh", alpha0=2.0, eta=1.0,
                                                 delta=-1.0), ValueError, "delta"),
    ("alpha negative", lambda: A.risk_readout(-1.0, readout="pm1"), ValueError, "alpha"),
    ("p = 1.5 with two groups", lambda: A.risk_readout(1.0, readout="pm1", p=1.5), ValueError,
     "whole number"),
    ("p = 2 for three values", lambda: A.risk_readout(
        1.0, readout={1.0: 0.5, -1.0: 0.25, 2.0: 0.25}, p=2), ValueError, "p must be >= K = 3"),
    ("curve no alpha", lambda: A.risk_readout_curve([], readout="pm1"), ValueError,
     "at least one"),
    ("risk(): rf model", lambda: A.risk(1.0, readout="pm1", model="rf"), ValueError, "'srf'"),
    ("risk(): with spike", lambda: A.risk(1.0, readout="pm1", model="srf", gamma=0.5),
     ValueError, "does not support gamma"),
    ("risk(): a number", lambda: A.risk(1.0, readout=3), TypeError, "readout"),
]


# ------------------------------------------------------------------------------------------------
# several steps: risk(steps=T), risk_steps, risk_by_step, steps_mapping, state_from_weights

ST = dict(model="srf", sigma="relu", target="z1 + z1*z2", alpha0=16.0, eta=(2.0, 8.0, 16.0),
          readout="pm1", steps=3)


def _steps(**change):
    return lambda: A.risk(1.0, **dict(ST, **change))


def _mapping(**change):
    kw = {**dict(sigma="relu", target="z1 + z1*z2", steps=2, alpha0=16.0, eta=1.0), **change}
    sigma, target = kw.pop("sigma"), kw.pop("target")
    return lambda: A.steps_mapping(sigma, target, **kw)


def _weights(W=None, eps=None, theta=None, values=None):
    rng = np.random.default_rng(0)
    W = rng.normal(size=(6, 4)) if W is None else W
    eps = np.array([1.0, -1.0] * 3) if eps is None else eps
    theta = np.eye(4)[:1] if theta is None else theta
    return lambda: A.state_from_weights(W, eps, theta, values)


STEPS = [
    ("steps 0", _steps(steps=0), ValueError, "steps"),
    ("steps -1", _steps(steps=-1), ValueError, "steps"),
    ("steps 1.5", _steps(steps=1.5), ValueError, "steps must be an integer"),
    ("steps True", _steps(steps=True), ValueError, "steps"),
    ("steps '3'", _steps(steps="3"), ValueError, "steps"),
    ("steps 9", _steps(steps=9, eta=1.0), ValueError, "<= 8"),
    ("steps 1000", _steps(steps=1000, eta=1.0), ValueError, "<= 8"),
    ("rf model", _steps(model="rf"), ValueError, "'srf'"),
    ("reused batch, network model", _steps(model="network", batch="reused"), ValueError,
     "model='srf'"),
    ("eta too short", _steps(eta=(1.0, 2.0)), ValueError, "one value per step"),
    ("eta too long", _steps(eta=(1.0, 2.0, 3.0, 4.0)), ValueError, "one value per step"),
    ("eta empty", _steps(eta=()), ValueError, "one value per step"),
    ("eta negative entry", _steps(eta=(1.0, -2.0, 3.0)), ValueError, "eta[1]"),
    ("eta nan entry", _steps(eta=(1.0, np.nan, 3.0)), ValueError, "eta[1]"),
    ("eta string entry", _steps(eta=(1.0, "2", 3.0)), TypeError, "eta[1]"),
    ("eta 'optimal'", _steps(eta="optimal"), ValueError, "one step"),
    ("eta '2,,16'", _steps(eta="2,,16"), ValueError, "one number per step"),
    ("eta 'abc'", _steps(eta="abc"), ValueError, "one number per step"),
    ("eta '2,8' for 3 steps", _steps(eta="2,8"), ValueError, "one value per step"),
    ("eta '-1'", _steps(eta="-1"), ValueError, "eta"),
    ("eta None", _steps(eta=None), TypeError, "eta"),
    ("eta dict", _steps(eta={"a": 1}), TypeError, "eta"),
    ("lam 'optimal'", _steps(lam="optimal"), ValueError, "one step"),
    ("lam negative", _steps(lam=-1.0), ValueError, "lam"),
    ("alpha0 zero", _steps(alpha0=0.0), ValueError, "alpha0"),
    ("alpha0 nan", _steps(alpha0=np.nan), ValueError, "alpha0"),
    ("alpha0 string", _steps(alpha0="16"), ValueError, "alpha0"),
    ("delta negative", _steps(delta=-1.0), ValueError, "delta"),
    ("beta zero", _steps(beta=0.0), ValueError, "beta"),
    ("p = 1.5 with two groups", _steps(p=1.5), ValueError, "whole number"),
    ("spike given", _steps(spike=object()), ValueError, "does not support spike"),
    ("gamma given", _steps(gamma=0.5), ValueError, "does not support gamma"),
    ("readout unknown", _steps(readout="pm2"), ValueError, "readout"),
    ("target callable", _steps(target=lambda z1, z2: z1 * z2), TypeError, "expression"),
    ("sigma unknown", _steps(sigma="foo"), ValueError, "unknown function"),
    ("strict string", _steps(strict="yes"), TypeError, "strict"),
    ("solver string", _steps(solver="x"), TypeError, "solver"),
    ("alpha string", lambda: A.risk("1", **ST), TypeError, "alpha"),
    ("mapping of another type", lambda: A.risk_steps(
        1.0, steps=2, sigma="relu", target="z1", alpha0=16.0, eta=1.0, lam=0.01, beta=1.0,
        mapping="x"), TypeError, "mapping"),
    ("by step: no alpha", lambda: A.risk_by_step([], steps=2), ValueError, "at least one"),
    ("by step: negative alpha", lambda: A.risk_by_step([-1.0], steps=2), ValueError, "alpha"),
    ("by step: progress string", lambda: A.risk_by_step([1.0], steps=1, progress="yes"),
     TypeError, "progress"),
    ("by step: on_step not callable", lambda: A.risk_by_step([1.0], steps=1, on_step=5),
     TypeError, "on_step"),
    ("by step: steps 0", lambda: A.risk_by_step([1.0], steps=0), ValueError, "steps"),
    ("mapping: steps 9", _mapping(steps=9), ValueError, "<= 8"),
    ("mapping: eta list too long", _mapping(eta=[1.0, 2.0, 3.0]), ValueError,
     "one value per step"),
    ("mapping: eta inf", _mapping(eta=np.inf), ValueError, "eta"),
    ("mapping: alpha0 -1", _mapping(alpha0=-1.0), ValueError, "alpha0"),
    ("mapping: delta nan", _mapping(delta=np.nan), ValueError, "delta"),
    ("mapping: quad string", _mapping(quad="x"), TypeError, "quad"),
    ("mapping: readout list", _mapping(readout=[1, -1]), TypeError, "readout"),
    ("mapping: step 5 of 2", lambda: _mapping()().spiked_params(5), ValueError, "step"),
    ("mapping: step '1'", lambda: _mapping()().spiked_params("1"), ValueError, "step"),
    ("weights: W string", _weights(W="abc"), TypeError, "W"),
    ("weights: W 1-D", _weights(W=np.ones(4)), ValueError, "W (p x d)"),
    ("weights: eps length", _weights(eps=np.ones(5)), ValueError, "eps"),
    ("weights: theta not orthonormal", _weights(theta=np.ones((1, 4))), ValueError,
     "orthonormal"),
    ("weights: theta of another d", _weights(theta=np.eye(3)[:1]), ValueError, "theta"),
    ("weights: W nan", _weights(W=np.full((6, 4), np.nan)), ValueError, "W must be finite"),
    ("weights: eps nan", _weights(eps=np.array([1.0, np.nan] * 3)), ValueError, "finite"),
    ("weights: values miss a used one", _weights(values=[1.0]), ValueError, "readout value"),
    ("weights: 100 groups", _weights(W=np.ones((100, 4)), eps=np.arange(1.0, 101.0)),
     ValueError, "at most 64"),
    ("weights: no rows", _weights(W=np.zeros((0, 4)), eps=np.zeros(0)), ValueError,
     "at least one row"),
]


# ------------------------------------------------------------------------------------------------
# multi-index target expressions (the K-group model, several steps, the spectrum's simulator)


def _spiked_target(text: str, overlaps=None):
    kw = dict(G2, target=text, loadings=[[1.0]], bulk=[1.0], fractions=[1.0],
              overlaps=overlaps if overlaps is not None else [[1.0, 0.0]])
    return lambda: A.risk_spiked(1.0, **kw)


TARGETS = [
    ("exp(z1**2) + z2", _spiked_target("exp(z1**2) + z2"), ValueError, "grows too fast"),
    ("exp(z1**2/4) + z2", _spiked_target("exp(z1**2/4) + z2"), ValueError, "grows too fast"),
    ("exp(z1*z2)", _spiked_target("exp(z1*z2)"), ValueError, "grows too fast"),
    ("cosh(z1)**(z2**2)", _spiked_target("cosh(2*z1*z2)"), ValueError, "grows too fast"),
    ("log(z1) + z2", _spiked_target("log(z1) + z2"), ValueError, "not finite"),
    ("sqrt(z1) * z2", _spiked_target("sqrt(z1) * z2"), ValueError, "not finite"),
    ("z2 / z1", _spiked_target("z2 / z1"), ValueError, "finite"),
    ("1e200 * exp(z1) * z2", _spiked_target("1e200 * exp(z1) * z2"), ValueError, "overflow"),
    ("z1*z9", _spiked_target("z1*z9"), ValueError, "at most 8"),
    ("z1 +", _spiked_target("z1 +"), ValueError, "parse"),
    ("empty", _spiked_target(""), ValueError, "non-empty"),
    ("He31(z1)", _spiked_target("He31(z1)", [[1.0]]), ValueError, "Hermite degree"),
    ("z1**41 * z2", _spiked_target("z1**41 * z2"), ValueError, "degree"),
    ("z + z1", _spiked_target("z + z1"), ValueError, "either z"),
    ("foo(z1) + z2", _spiked_target("foo(z1) + z2"), ValueError, "not allowed"),
    ("import os", _spiked_target("__import__('os')"), ValueError, "not allowed"),
    ("steps: exp(z1**2)", _steps(target="exp(z1**2)"), ValueError, "grows too fast"),
    ("steps: exp(z1**2/4)", _steps(target="exp(z1**2/4)"), ValueError, "grows too fast"),
    ("steps: exp(z1*z2)", _steps(target="exp(z1*z2)"), ValueError, "grows too fast"),
    ("steps: log(z1)", _steps(target="log(z1) + z2"), ValueError, "not finite"),
    ("steps: z1*z9", _steps(target="z1*z9"), ValueError, "at most 8"),
    ("steps: 8 non-polynomial directions", _steps(target="tanh(z1+z2+z3+z4+z5+z6+z7+z8)",
                                                  eta=1.0), ValueError, "at most"),
    ("one step: exp(z1**2/4)", lambda: A.risk(1.0, target="exp(z1**2/4)"), ValueError,
     "grows too fast"),
    ("one step: a multi-index target with the rf model",
     lambda: A.risk(1.0, target="z1 + z1*z2", model="rf"), ValueError, "'srf'"),
    ("one step: exp(z1*z2) with the surrogate",
     lambda: A.risk(1.0, target="exp(z1*z2)", model="srf"), ValueError, "grows too fast"),
]


# ------------------------------------------------------------------------------------------------
# polynomial spikes

POLY = [
    ("a = 1/3 (threshold of order 3, tanh)", dict(a=1 / 3), ValueError, "threshold"),
    ("a = float32(1/3)", dict(a=np.float32(1 / 3)), ValueError, "threshold"),
    ("a = 1 - 2/3 (round-off of 1/3)", dict(a=1 - 2 / 3), ValueError, "threshold"),
    ("a = 0 (threshold of order 1)", dict(a=0.0), ValueError, "threshold"),
    ("a = 1/4 with relu (order 2)", dict(a=0.25, sigma="relu"), ValueError, "threshold"),
    ("a = 0.375 opens order 3", dict(a=0.375), ValueError, "order 3"),
    ("a = 0.49", dict(a=0.49), ValueError, "implemented for ell <= 2"),
    ("a = 0.5", dict(a=0.5), ValueError, "[0, 1/2)"),
    ("a = -0.1", dict(a=-0.1), ValueError, "[0, 1/2)"),
    ("a nan", dict(a=np.nan), ValueError, "[0, 1/2)"),
    ("a string", dict(a="0.2"), TypeError, "a must be"),
    ("a bool", dict(a=True), TypeError, "a must be"),
    ("alpha0 negative", dict(a=0.2, alpha0=-1.0), ValueError, "alpha0"),
    ("lam negative", dict(a=0.2, lam=-1.0), ValueError, "lam"),
    ("beta zero", dict(a=0.2, beta=0.0), ValueError, "beta"),
    ("delta negative", dict(a=0.2, delta=-1.0), ValueError, "delta"),
    ("eta negative", dict(a=0.2, eta=-1.0), ValueError, "eta"),
    ("sigma unknown", dict(a=0.2, sigma="foo"), ValueError, "unknown function"),
    ("target in z1, z2", dict(a=0.2, target="z1*z2"), ValueError, "z2"),
]


@pytest.mark.parametrize("kw,exc,word", [c[1:] for c in POLY], ids=[c[0] for c in POLY])
def test_polynomial_spike_risk(kw, exc, word):
    with pytest.raises(exc) as info:
        A.polynomial_spike_risk(1.0, **kw)
    _one_line(info.value, word)


def test_polynomial_spike_risk_alpha():
    with pytest.raises(ValueError) as info:
        A.polynomial_spike_risk(0.0, a=0.2)
    _one_line(info.value, "alpha")


CALLS = SPIKED_CALLS + READOUTS + STEPS + TARGETS


@pytest.mark.parametrize("call,exc,word", [c[1:] for c in CALLS], ids=[c[0] for c in CALLS])
def test_api(call, exc, word):
    with pytest.raises(exc) as info:
        call()
    _one_line(info.value, word)


# ------------------------------------------------------------------------------------------------
# the steps command and the spectrum command (in-process through main(argv))


def run(main, argv, capsys) -> tuple[int, str, str]:
    try:
        rc = main(argv)
    except SystemExit as exc:
        rc = exc.code
    out, err = capsys.readouterr()
    return rc, out, err


STEPS_CLI = [
    (["--steps", "0"], "--steps"),
    (["--steps", "9"], "--steps"),
    (["--steps", "x"], "--steps"),
    (["--steps", "1.5"], "--steps"),
    (["--eta", "-1"], "--eta"),
    (["--eta", "1,,2"], "empty item"),
    (["--eta", "1,2"], "--eta"),
    (["--eta", "nan"], "--eta"),
    (["--eta", "1,2,3,4"], "--eta"),
    (["--alpha0", "0"], "--alpha0"),
    (["--alpha0", "-inf"], "--alpha0"),
    (["--alpha0", "x"], "--alpha0"),
    (["--readout", "nope"], "invalid choice"),
    (["--alpha", "0"], "> 0"),
    (["--alpha", "1,,2"], "empty item"),
    (["--alpha", "-1,2"], "> 0"),
    (["--lam", "-1"], "--lam"),
    (["--lam", "inf"], "--lam"),
    (["--beta", "0"], "--beta"),
    (["--delta", "-1"], "--delta"),
    (["--target", "exp(z1**2)"], "grows too fast"),
    (["--target", "exp(z1**2/4)"], "grows too fast"),
    (["--target", "z1*z9"], "at most 8"),
    (["--target", "z1 +"], "parse"),
    (["--target", ""], "non-empty"),
    (["--target", "tanh(z1+z2+z3+z4+z5+z6+z7+z8)", "--eta", "1", "--model", "srf"], "at most"),
    # the network theory's groups (the default model) refuse the same rule in their own words
    (["--target", "tanh(z1+z2+z3+z4+z5+z6+z7+z8)", "--eta", "1"], "nodes exceeds"),
    (["--sigma", "foo"], "unknown function"),
    (["--sigma", "exp(z**2)"], "grows too fast"),
    (["--plot", "f.txt"], "file type"),
    (["--plot", MISSING + "/x.png"], "--plot"),
    (["--out", MISSING + "/x.csv"], "--out"),
    (["--stepz", "3"], "unrecognized"),
]


@pytest.mark.parametrize("argv,word", STEPS_CLI, ids=lambda v: " ".join(v) if
                         isinstance(v, list) else None)
def test_steps_cli(argv, word, capsys):
    rc, out, err = run(asym_main, ["steps", "--alpha", "1", "--quiet", *argv]
                       if "--alpha" not in argv else ["steps", "--quiet", *argv], capsys)
    assert rc == 2, (out, err)
    assert err.startswith("error:") and err.strip().count("\n") == 0, err
    assert "Traceback" not in err and out == ""
    assert word.lower() in err.lower(), err


def test_steps_cli_plot_suffix_is_checked_before_any_work(capsys, monkeypatch):
    import asymptotics.api.by_step as sr

    def never(*args, **kwargs):
        raise AssertionError("computed before checking --plot")

    monkeypatch.setattr(sr, "risk_by_step", never)
    rc, out, err = run(asym_main, ["steps", "--alpha", "1", "--plot", "f.txt"], capsys)
    assert rc == 2 and "file type" in err


SPECTRUM_CLI = [
    (["--d", "100000"], "entries"),
    (["--d", "3000", "--beta", "64"], "entries"),
    (["--d", "20000", "--alpha0", "64"], "entries"),
    (["--d", "15"], "d must be"),
    (["--d", "x"], "--d"),
    (["--beta", "0"], "beta"),
    (["--beta", "100"], "beta"),
    (["--alpha0", "0"], "alpha0"),
    (["--steps", "3"], "invalid choice"),
    (["--steps", "x"], "--steps"),
    (["--a1", "nan"], "a1"),
    (["--a1", "0.5"], "a1"),
    (["--a2", "-1"], "a2"),
    (["--eta1", "-1"], "eta1"),
    (["--eta2", "inf"], "eta2"),
    (["--sigma", "foo"], "unknown function"),
    (["--sigma", "exp(z**2)"], "grows too fast"),
    (["--target", "exp(z1**2)"], "grows too fast"),
    (["--target", "exp(z1*z2)"], "grows too fast"),
    (["--target", "log(z1)"], "finite"),
    (["--target", "z1*z9"], "at most 8"),
    (["--target", "z1 +"], "parse"),
    (["--target", ""], "non-empty"),
    (["--batch", "nope"], "invalid choice"),
    (["--readout", "nope"], "invalid choice"),
    (["--delta", "-1"], "delta"),
    (["--seed", "-1"], "seed"),
    (["--kappa", "-1"], "kappa"),
    (["--edge", "nope"], "invalid choice"),
    (["--plot", "f.txt"], "file type"),
    (["--plot", MISSING + "/x.png"], "--plot"),
    (["--d", "20", "--beta", "0.01"], "beta*d"),
]


@pytest.mark.parametrize("argv,word", SPECTRUM_CLI, ids=lambda v: " ".join(v) if
                         isinstance(v, list) else None)
def test_spectrum_cli(argv, word, capsys):
    rc, out, err = run(val_main, ["spectrum", "--quiet", *argv], capsys)
    assert rc == 2, (out, err)
    assert err.startswith("error:") and err.strip().count("\n") == 0, err
    assert "Traceback" not in err and out == ""
    assert word.lower() in err.lower(), err


@pytest.mark.parametrize("argv,word", [  # one real process: the commands' own entry point
    (["-m", "validation.spectrum", "spectrum", "--plot", "f.txt"], "file type"),
])
def test_subprocess(argv, word):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, *argv], capture_output=True, text=True, timeout=GUARD,
                          env=env, cwd=ROOT)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr and word in proc.stderr, proc.stderr


# ------------------------------------------------------------------------------------------------
# regressions


def test_risk_of_a_string_is_refused_before_the_small_alpha_warning():
    with pytest.raises(TypeError) as info:
        A.risk("2")
    _one_line(info.value, "alpha must be a real number")


def test_simulator_refuses_random_features_with_a_step():
    from validation.protocol.simulator import Setting

    with pytest.raises(ValueError) as info:
        Setting(model="rf", sigma="tanh", target="tanh", alpha=1.0, alpha0=2.0, eta=1.0,
                lam=0.01)
    _one_line(info.value, "random features")
    Setting(model="rf", sigma="tanh", target="tanh", alpha=1.0, alpha0=2.0, eta=0.0, lam=0.01)


def test_figures_choose_the_backend_without_touching_the_environment(monkeypatch, capsys):
    import matplotlib

    from figures.__main__ import main as fig_main

    monkeypatch.delenv("MPLBACKEND", raising=False)
    assert fig_main(["--list"]) == 0
    assert "MPLBACKEND" not in os.environ
    assert matplotlib.get_backend().lower() == "agg"


def test_callables_do_not_import_functions():
    grimp = pytest.importorskip("grimp")
    graph = grimp.build_graph("asymptotics", cache_dir=None, exclude_type_checking_imports=False)
    assert "asymptotics.coefficients.functions" not in graph.find_modules_directly_imported_by(
        "asymptotics.coefficients.callables")


@pytest.mark.computes
def test_tanh_of_z1_is_tanh_after_steps():
    """Same function, two spellings: the same numbers at every step (they differed by ~1e-6 at
    t = 0, where the unlearned direction of a parsed z1 target had a 40-node Gauss-Hermite rule
    and the registered function the kink-aware rule of the one-step theory)."""
    kw = dict(steps=2, sigma="erf(z-1)", alpha0=16.0, eta=1.0, progress=False)
    a = A.risk_by_step([0.5, 1.0], target="tanh", **kw).risk.to_numpy()
    b = A.risk_by_step([0.5, 1.0], target="tanh(z1)", **kw).risk.to_numpy()
    assert np.all(np.isfinite(a))
    np.testing.assert_allclose(b, a, rtol=1e-12, atol=0)


@pytest.mark.computes
def test_steps_one_takes_a_multi_index_target():
    """A loop over T = 1, 2 keeps its call: T = 1 is the K-group model of one step, the same
    number as risk_steps(steps=1)."""
    kw = dict(model="srf", sigma="relu", target="z1 + z1*z2", alpha0=16.0, eta=2.0, lam=0.01,
              readout="pm1")
    one = A.risk(1.0, steps=1, **kw)
    ref = A.risk_steps(1.0, steps=1, sigma="relu", target="z1 + z1*z2", alpha0=16.0, eta=2.0,
                       lam=0.01, beta=1.0, readout="pm1")
    assert one.converged and one.risk == ref.risk
    two = A.risk(1.0, steps=2, **dict(kw, eta=(2.0, 8.0)))
    assert two.converged and np.isfinite(two.risk)


def test_the_cases_are_many():
    n = (len(SPIKED) + len(CALLS) + len(POLY) + 1 + len(STEPS_CLI) + 1 + len(SPECTRUM_CLI) + 1)
    assert n >= 150, n


@pytest.mark.computes
def test_solver_config_still_accepted():
    res = A.risk_spiked(1.0, solver=SolverConfig(), **dict(G2, target="z1", loadings=[[1.0],
                                                                                    [0.5]],
                                                           overlaps=[[1.0]]))
    assert res.converged


@pytest.mark.computes
def test_quadrature_default_still_accepted():
    assert A.steps_mapping("relu", "z1", steps=1, alpha0=16.0, eta=1.0,
                           quad=Quadrature()).steps == 1


# ------------------------------------------------------------------------------------------------
# the jump at p = infinity: K >= 2 groups whose loadings differ by a little


def _contrast(u: float, **kw):
    return A.risk_spiked(1.0, sigma="relu", target="tanh", loadings=[[u], [-u]],
                         bulk=[1.0, 1.0], fractions=[0.5, 0.5], overlaps=[[0.5]], lam=0.01,
                         beta=1.0, **kw)


@pytest.mark.computes
@pytest.mark.parametrize("u", [1e-8, 1e-6, 1e-4, 1e-3])
def test_contrast_channel_at_p_infinity_asks_for_the_width(u):
    """Tiny loading differences open the groups' contrast channel at p = infinity (it needs
    networks of ~1/u^2 neurons): NaN with a status and a message naming the finite-width route,
    where the risk was a number that jumped (or NaN from the solver without a reason)."""
    res = _contrast(u)
    assert not res.converged and np.isnan(res.risk) and res.status == "needs_width"
    assert "p=" in res.message and "finite-width" in res.message and "\n" not in res.message
    with pytest.raises(A.ConvergenceError, match="finite-width"):
        _contrast(u, strict=True)


@pytest.mark.computes
def test_contrast_channel_is_continuous_at_a_given_width():
    """At a width p the channel has a price: the finite-width risk tends to the one at loadings 0
    as the loadings do (continuity, quadratically in u; the p = infinity limit jumps from 0.587
    to ~0.46 instead), and the limit itself is kept where no width is needed (exactly zero
    loadings, loadings of order 1)."""
    at0 = _contrast(0.0, p=1000).risk
    gaps = [abs(_contrast(u, p=1000).risk - at0) / at0 for u in (1e-3, 1e-4)]
    assert gaps[0] < 1e-3 and gaps[1] < 1e-5 and gaps[1] < gaps[0] / 30, gaps
    assert _contrast(0.0).converged and _contrast(0.5).converged


@pytest.mark.computes
def test_contrast_channel_between_warns_and_keeps_the_number():
    """pm1 readout, relu, small step eta = 0.1: the groups' loadings are ~0.1 apart, the limit
    needs ~800 neurons (the finite-width theory at p = 1000 gives 0.44 against the limit's 0.26):
    a number with a LimitWarning and the width in the message."""
    from asymptotics.models.problem import LimitWarning

    with pytest.warns(LimitWarning, match="contrast channel"):
        res = A.risk_readout(1.0, readout="pm1", sigma="relu", target="tanh", eta=0.1)
    assert res.converged and np.isfinite(res.risk) and "neurons" in res.message


# ------------------------------------------------------------------------------------------------
# fresh inputs of a later audit: each was a traceback (OverflowError, KeyError, AttributeError), a
# multi-line message or a hang before its fix

FRESH = [
    (lambda: A.risk(2.0, alpha0=10**400), ValueError, "alpha0 must be > 0 and finite"),
    (lambda: A.risk(10**400), ValueError, "alpha must be > 0 and finite"),
    (lambda: A.risk(2.0, lam=-10**400), ValueError, "lam must be >= 0"),
    (lambda: A.risk(2.0, p=10**400), ValueError, "p must be >= 1 and finite"),
    (lambda: A.risk_by_step([1.0], steps=10**20, progress=False), ValueError,
     "steps must be <= 8"),  # was a hang: the default schedule built 1e20 etas first
    (lambda: A.risk(2.0, sigma="z/0"), ValueError, "sigma: expression 'z/0' is not finite"),
    (lambda: A.risk(2.0, target="log(0)*z"), ValueError, "target: expression"),
    (lambda: A.solve_point("x", 2.0), TypeError, "problem must be a Problem"),
    # grids beyond a million points are refused before any work (8e9 combinations hung, building
    # them in memory)
    (lambda: A.risk_grid(alpha=np.linspace(0.1, 5, 2000), eta=np.linspace(0, 3, 2000),
                         lam=np.linspace(0.01, 1, 2000), model="srf"), ValueError,
     "2000 alpha x 2000 eta x 2000 lam"),
    (lambda: A.risk_grid(alpha=np.linspace(0.1, 5, 2000), eta=[(2, 8)] * 1000, steps=2,
                         model="srf", sigma="erf(z-1)", target="z1 + z1*z2", alpha0=16),
     ValueError, "at most 1e+06"),
    (lambda: A.risk_curve(np.linspace(0.1, 5, 2_000_000), model="srf"), ValueError,
     "alphas has 2000000 values"),
    # an oscillating sigma gives the groups a bulk scale sqrt(c) ~ 6e7 after a step: its xi rule's
    # reference asked for 89 GiB
    (lambda: A.risk(2.0, steps=2, sigma="sin(1e8*z)", target="z1 + z1*z2", alpha0=16,
                    eta=(2, 8), readout="pm1", model="srf"), ValueError, "sqrt(c) <= 1000"),
    # the several-steps comparison's simulation at d = 1e6 tried to allocate p x d (a raw numpy
    # MemoryError after the theory's work)
    (lambda: __import__("validation.experiments.steps_compare", fromlist=["x"]).compare_steps(
        [1.0], steps=1, d=10**6, seeds=2, progress=False), ValueError, "lower d, beta or n_jobs"),
    # the features' law of a constant sigma searched for a bulk without end (a hang)
    (lambda: A.spectrum("features", alpha=2.0, sigma="0*z", d=1000), ValueError,
     "sigma '0*z' is constant"),
    (lambda: A.spectrum("features", alpha=2.0, sigma="1e-300*tanh(z)", model="srf"), ValueError,
     "no bulk spectrum"),
    # float64 overflows inside the mappings (were OverflowError / ZeroDivisionError)
    (lambda: A.risk(2.0, alpha0=5e-324), ValueError, "spike the scale c = inf"),
    (lambda: A.risk(2.0, alpha0=1e-300, readout="pm1"), ValueError, "alpha0=1e-300"),
    (lambda: A.risk(2.0, readout={1e300: 1.0}, model="srf"), ValueError, "readout's step"),
    (lambda: A.risk(2.0, readout={1e10: 1.0}), ValueError, "scales the step to eta * a"),
    (lambda: A.risk(2.0, steps=2, sigma="erf(z-1)", target="z1 + z1*z2", alpha0=16,
                    eta=(1e300, 1e300), readout="pm1", model="srf"), ValueError,
     "steps' mapping"),
    (lambda: A.risk(2.0, steps=2, sigma="erf(z-1)", target="z1 + z1*z2", alpha0=16,
                    eta=(2, 8), readout="pm1", delta=1e300), ValueError, "delta=1e+300"),
    (lambda: A.risk_spiked(2.0, sigma="tanh", target="tanh(z1) + z1*z2",
                           loadings=np.array([[1, None], [0, 1]], dtype=object), bulk=[1, 1],
                           fractions=[0.5, 0.5], overlaps=[[0.9, 0], [0, 0.8]]),
     TypeError, "loadings must be a K x r matrix"),
]


@pytest.mark.parametrize("call,kind,words", FRESH)
def test_fresh_bad_inputs_are_one_line_errors(call, kind, words):
    with pytest.raises(kind) as info:
        call()
    _one_line(info.value, words)


def test_first_layer_checks_its_inputs_and_takes_an_int_seed():
    """validation's ``first_layer`` (the guide's semi-empirical example): an int seed is its
    SeedSequence's entropy and names are functions (same weights); bad inputs name themselves."""
    from validation.protocol.simulator import Setting, first_layer

    s = Setting(model="network", sigma="relu", target="relu", alpha=5, alpha0=20, eta=3,
                lam=0.01, d=40)
    a = first_layer(s, 0, "relu", "relu")[0]
    b = first_layer(s, np.random.SeedSequence(0), A.get_function("relu"),
                    A.get_function("relu"))[0]
    assert np.array_equal(a, b)
    for args, kind, word in (((s, -1, "relu", "relu"), ValueError, "seed"),
                             (("s", 0, "relu", "relu"), TypeError, "setting"),
                             ((s, 0, "foo", "relu"), ValueError, "unknown function")):
        with pytest.raises(kind) as info:
            first_layer(*args)
        _one_line(info.value, word)


@pytest.mark.computes
def test_network_device_refuses_a_batch_beyond_memory():
    """Where the resolvent's checks fail the network measure falls back to the sampled device,
    whose first batch at alpha0 = 1e10 asked for 728 TiB (after the resolvent's attempt: not
    under the hang guard)."""
    with pytest.raises(ValueError) as info:
        A.risk(2.0, alpha0=1e10, eta=1e5)
    _one_line(info.value, "sampled device at alpha0=1e+10")


def test_network_route_caps_its_groups_before_any_work(monkeypatch):
    """A readout of many values on the network route beyond one step is refused in one line
    before the device is built (its memory grows like K^2: 1.7 GB measured at K = 10)."""
    from asymptotics.network import device, route

    monkeypatch.setattr(device, "coupled_device", lambda *a, **k: pytest.fail("device built"))
    vals = {round(0.5 + 0.1 * i, 1): 1.0 / 20 for i in range(20)}
    with pytest.raises(ValueError, match=r"at most 8 readout values .* got 20"):
        A.risk(2.0, readout=vals, steps=2)
    assert route.NETWORK_GROUPS == 8
