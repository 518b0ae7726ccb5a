"""A reproducible "new user" audit: bad and edge inputs to every public entry point.

A catalogue of inputs a new user might give -- wrong types, out-of-range values, unknown names,
user callables and expressions, the interpolation peak, abbreviated options, missing output
directories, ``--help`` / ``--version`` of every command -- over the Python API
(``asymptotics.risk``, ``risk_curve``, ``asymptotics.api.grid.risk_grid``, ``optimal_lam``,
``optimal_eta``, ``get_function``, ``from_weights``, ``validation.protocol.simulator.Setting`` /
``simulate``) and every command line (``python -m asymptotics``, ``python -m validation``,
``python -m validation.matrix``, ``python -m figures``, the report commands,
``python -m validation.matrix.finite_width``).

Every entry runs in a fresh subprocess (no cache leaks between entries, hangs are timed out) and
is classified by what it does:

* ``error``: API: ValueError / TypeError / ConvergenceError with a one-line message that names
  the parameter; CLI: exit status 2, a single ``error: ...`` line on stderr, no traceback;
* ``warning``: a Python warning written by the project (not a raw numpy/numba warning) or a
  stderr line starting ``warning:``, and a result;
* ``ok``: a finite result (CLI: exit status 0), no traceback;
* ``nan``: a NaN risk (status ``diverged``, ``max_iter``, ...), not a number;
* ``traceback``: a Python traceback printed, an exception of another type (KeyError,
  ZeroDivisionError, ...), or a raw warning carrying a file path (``...py:12: RuntimeWarning``);
* ``unclear``: a failure that is not a clear error (a clear type whose message spans several
  lines or does not name the parameter; a CLI exit status other than 0 and 2, or an argparse
  usage block instead of one ``error:`` line);
* ``hang``: no answer within the timeout;
* ``silent``: a finite number where the acceptable outcomes do not include ``ok`` (the
  interpolation peak returning 1e15), a check entry whose two numbers disagree (a lambda against
  the registered function, a result in one process against a fresh one), or a risk below
  E g^2 without a warning where the theory says it cannot be (lam -> infinity; beta -> 0 for
  random features).

Each entry lists its acceptable outcomes (what a demanding researcher expects, not what the code
does today) and, where it is not obvious, the reason. An entry is *unexpected* when its outcome
is not acceptable; ``traceback``, ``unclear``, ``hang`` and ``silent`` never are.

Run (from any checkout, against whatever ``asymptotics`` is importable; about 25 minutes with
``--jobs 2`` on two busy cores, ~3 s an entry: each is a fresh interpreter importing numpy, scipy,
sympy and numba's cached kernels; the simulations are tiny, d <= 100, and the matrix runner,
when it accepts a bad input, stops at a 5 s budget)::

    export NUMBA_CACHE_DIR=/tmp/audit-numba MPLBACKEND=Agg
    PYTHONPATH=<checkout> python benchmarks/new_user_audit.py [--jobs 2] [--only PATTERN]
        [--json FILE] [--timeout 120] [--list]

``--only`` is a regular expression searched in the entry ids (``--only 'cli\\.curve'``).
The commands run in a scratch directory with ``GIANTSTEP_CACHE`` pointing into it, so relative
outputs land there; no entry writes into the checkout (the script says so if one did).
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import math
import os
import re
import subprocess
import sys
import tempfile
import textwrap
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ERROR, WARNING, OK, NAN = "error", "warning", "ok", "nan"
TRACEBACK, UNCLEAR, HANG, SILENT = "traceback", "unclear", "hang", "silent"
CLASSES = (ERROR, WARNING, OK, NAN, TRACEBACK, UNCLEAR, HANG, SILENT)
NEVER_ACCEPTABLE = (TRACEBACK, UNCLEAR, HANG, SILENT)
LABELS = {ERROR: "clear error", WARNING: "warning", OK: "ok", NAN: "nan",
          TRACEBACK: "traceback", UNCLEAR: "unclear failure", HANG: "hang", SILENT: "silent"}

# E tanh(z)^2, z ~ N(0, 1): the risk of the zero predictor for the default target
_NODES, _WEIGHTS = np.polynomial.hermite_e.hermegauss(200)
EG2_TANH = float(np.sum(_WEIGHTS * np.tanh(_NODES) ** 2) / np.sqrt(2 * np.pi))
MISSING_DIR = "/proc/audit-missing-dir"  # cannot be created, even by root

# lam = 1e300, beta = 1e-12 (and alpha = 1e-12) at p = infinity: the theory's unpenalised mean
# channel (docs/DERIVATIONS.md §3-4) gives a risk below E g^2 that no finite network reaches
# (the limits do not commute): a number below E g^2 needs a warning
FREE_MEAN = ("p = inf: the free mean channel gives a risk below E g^2 that no finite network "
             "reaches; without a warning it is silent")

# the classes of the acceptable sets (shorthands)
E, W, K, N = frozenset({ERROR}), frozenset({WARNING}), frozenset({OK}), frozenset({NAN})
EW = E | W
OKW = K | W
ANY_NUM = K | W | E | N  # anything but a traceback, an unclear failure, a hang or a silent number
PEAK = N | W | E  # a divergent point: NaN with a status, or said so


@dataclass(frozen=True)
class Entry:
    """One input: ``code`` (API: a Python snippet that sets ``result`` or ``compare``) or
    ``argv`` (CLI: the arguments after ``python``), the acceptable outcomes, the parameter
    names a clear error must mention, an optional rule and a one-line reason."""

    id: str
    accept: frozenset
    code: str | None = None
    argv: tuple[str, ...] | None = None
    names: tuple[str, ...] = ()
    why: str = ""
    rule: str | None = None  # "below_eg2": a risk < E g^2 without a warning is silent
    timeout: float | None = None

    @property
    def kind(self) -> str:
        return "api" if self.code is not None else "cli"

    def call(self) -> str:
        if self.code is not None:
            return self.code
        return "python " + " ".join(_quote(a) for a in self.argv)


def _quote(a: str) -> str:
    return a if re.fullmatch(r"[\w.,:=/+@%-]+", a) else repr(a)


# ------------------------------------------------------------------------------------------------
# the catalogue

PRELUDE = """\
import math
import numpy as np
import asymptotics as A
from asymptotics import risk, risk_curve, get_function, from_weights
"""


def api(id_: str, code: str, accept, names=(), why: str = "", rule=None,
        timeout=None) -> Entry:
    if isinstance(names, str):
        names = (names,)
    return Entry(id_, frozenset(accept), code=textwrap.dedent(code).strip(), names=tuple(names),
                 why=why, rule=rule, timeout=timeout)


def cli(id_: str, argv: list[str] | str, accept, names=(), why: str = "", rule=None,
        timeout=None) -> Entry:
    if isinstance(argv, str):
        argv = argv.split()
    if isinstance(names, str):
        names = (names,)
    return Entry(id_, frozenset(accept), argv=("-m", *argv), names=tuple(names), why=why,
                 rule=rule, timeout=timeout)


def _values(prefix: str, call: str, param: str, cases: dict) -> list[Entry]:
    """One entry per value: ``call`` with ``{v}`` replaced by the value's code."""
    out = []
    for label, (value, accept, *rest) in cases.items():
        why = rest[0] if rest else ""
        rule = rest[1] if len(rest) > 1 else None
        out.append(api(f"{prefix}.{param}.{label}", f"result = {call.format(v=value)}", accept,
                       names=param, why=why, rule=rule))
    return out


def _numeric_cases(huge=ANY_NUM, tiny=ANY_NUM, zero=E, why_huge="", why_tiny="",
                   why_zero="", rule_huge=None, rule_tiny=None) -> dict:
    """The out-of-range values of a real parameter: negative, zero, nan, inf, 1e300, 1e-12,
    a string and a bool."""
    return {
        "negative": ("-1", E),
        "zero": ("0", zero, why_zero),
        "nan": ("float('nan')", E),
        "inf": ("float('inf')", E),
        "1e300": ("1e300", huge, why_huge, rule_huge),
        "1e-12": ("1e-12", tiny, why_tiny, rule_tiny),
        "str": ("'2'", E, "a string is not a number: TypeError, never float('2')"),
        "bool": ("True", E, "a bool is not a number"),
    }


def api_entries() -> list[Entry]:
    out: list[Entry] = []
    a = out.append
    # --- risk: the sample ratio alpha -------------------------------------------------------------
    a(api("api.risk.default", "result = risk(1.0)", K))
    a(api("api.risk.alpha.str", "result = risk('2')", E, "alpha",
          "a string is not a number: TypeError, never float('2')"))
    a(api("api.risk.alpha.bool", "result = risk(True)", E, "alpha"))
    a(api("api.risk.alpha.none", "result = risk(None)", E, "alpha"))
    a(api("api.risk.alpha.list", "result = risk([1.0, 2.0])", E, "alpha",
          "risk takes one alpha; risk_curve takes several"))
    a(api("api.risk.alpha.complex", "result = risk(1 + 0j)", E, "alpha"))
    a(api("api.risk.alpha.numpy_scalar", "result = risk(np.float64(2.0))", K))
    a(api("api.risk.alpha.numpy_0d", "result = risk(np.array(2.0))", K | E, "alpha",
          "a 0-d array is a number; refusing it is acceptable if clear"))
    a(api("api.risk.alpha.fraction", "from fractions import Fraction\n"
          "result = risk(Fraction(3, 2))", K))
    a(api("api.risk.alpha.negative", "result = risk(-1.0)", E, "alpha"))
    a(api("api.risk.alpha.zero", "result = risk(0.0)", E, "alpha",
          "alpha = n/d = 0 is no data; the theory needs alpha > 0"))
    a(api("api.risk.alpha.nan", "result = risk(float('nan'))", E, "alpha"))
    a(api("api.risk.alpha.inf", "result = risk(float('inf'))", E, "alpha"))
    a(api("api.risk.alpha.1e300", "result = risk(1e300)", ANY_NUM, "alpha",
          "the alpha -> infinity limit is finite; an error saying so is also fine"))
    a(api("api.risk.alpha.1e-12", "result = risk(1e-12)", OKW | E, "alpha",
          "no data: no finite network does better than E g^2; " + FREE_MEAN,
          rule="below_eg2"))
    # --- the other real parameters of risk ----------------------------------------------------
    out += _values("api.risk", "risk(1.5, model='srf', alpha0={v})", "alpha0", _numeric_cases(
        huge=ANY_NUM, tiny=ANY_NUM, why_huge="a population step; finite, or refused, or NaN "
        "with a status",
        why_tiny="a step on no data; finite or refused"))
    out += _values("api.risk", "risk(1.5, model='srf', eta={v})", "eta", _numeric_cases(
        huge=E | W | N, zero=K, why_huge="r ~ 1e300 overflows float64: refuse or say so",
        why_zero="eta = 0 is random features"))
    out += _values("api.risk", "risk(1.5, model='srf', lam={v})", "lam", _numeric_cases(
        huge=OKW, zero=K, why_huge=FREE_MEAN, rule_huge="below_eg2",
        why_zero="the ridgeless limit away from the peak"))
    out += _values("api.risk", "risk(1.5, model='srf', beta={v})", "beta", _numeric_cases(
        huge=ANY_NUM, tiny=OKW | E, why_huge="the kernel limit is finite; or refused, or NaN "
        "with a status", why_tiny=FREE_MEAN, rule_tiny="below_eg2"))
    out += _values("api.risk", "risk(1.5, model='srf', delta={v})", "delta", _numeric_cases(
        huge=ANY_NUM, zero=K, why_huge="a huge noise: a huge finite risk, or refused"))
    a(api("api.risk.beta.1e-12_rf", "result = risk(1.5, eta=0, model='rf', beta=1e-12)", OKW | E,
          "beta", "random features with p/d -> 0 explain nothing: risk -> E g^2, not below",
          rule="below_eg2"))
    a(api("api.risk.lam.1e300_network", "result = risk(1.5, lam=1e300)", OKW, "lam",
          FREE_MEAN, rule="below_eg2"))
    a(api("api.risk.lam.1e300_finite_p", "result = risk(1.5, lam=1e300, p=100, model='srf')",
          OKW, "lam", "at finite p the mean channel has its price: risk -> E g^2",
          rule="below_eg2"))
    a(api("api.risk.lam.optimal", "result = risk(1.5, model='srf', lam='optimal')", K))
    a(api("api.risk.lam.opt_typo", "result = risk(1.5, lam='opt')", E, "lam"))
    a(api("api.risk.eta.optimal", "result = risk(1.5, model='srf', eta='optimal')", K))
    a(api("api.risk.eta.best_typo", "result = risk(1.5, eta='best')", E, "eta"))
    a(api("api.risk.lam_eta.both_optimal", "result = risk(1.5, lam='optimal', eta='optimal')",
          E, ("lam", "eta")))
    a(api("api.risk.lam.1e-12_peak", "result = risk(1.0, lam=1e-12, model='srf')",
          OKW | N, "lam", "near the peak the risk is large but finite at lam > 0"))
    # --- the interpolation peak -----------------------------------------------------------------
    a(api("api.risk.peak.srf", "result = risk(1.0, lam=0, model='srf')", PEAK, "lam",
          "alpha = beta, lam = 0: the risk diverges; documented: NaN, status 'diverged'"))
    a(api("api.risk.peak.network", "result = risk(1.0, lam=0)", PEAK, "lam",
          "the same peak for the network theory"))
    a(api("api.risk.peak.rf", "result = risk(2.0, lam=0, eta=0, model='rf', beta=2.0)", PEAK,
          "lam", "random features at alpha = beta = 2, ridgeless"))
    a(api("api.risk.peak.strict", "result = risk(1.0, lam=0, model='srf', strict=True)", E,
          ("alpha", "diverge", "converge"), "strict=True must raise ConvergenceError"))
    a(api("api.risk.ridgeless.away", "result = risk(3.0, lam=0, model='srf')", K))
    # --- the width p and common_row ------------------------------------------------------------
    out += _values("api.risk", "risk(1.5, model='srf', p={v})", "p", {
        "zero": ("0", E), "half": ("0.5", E, "p is a width >= 1"), "negative": ("-1", E),
        "nan": ("float('nan')", E), "inf": ("float('inf')", K, "p = inf is the documented limit"),
        "one": ("1", OKW | E, "a single neuron: finite or refused"),
        "hundred": ("100", K), "1e300": ("1e300", K, "~ the p -> infinity limit"),
        "1e-12": ("1e-12", E), "str": ("'100'", E), "bool": ("True", E),
    })
    a(api("api.risk.common_row.without_p", "result = risk(1.5, common_row=0.5)", EW,
          ("common_row", "p"), "common_row changes nothing at p = infinity: silently ignoring "
          "an explicit correction hides a mistake"))
    a(api("api.risk.common_row.network_without_p", "result = risk(1.5, common_row='network')",
          EW, ("common_row", "p"), "as above"))
    out += _values("api.risk", "risk(1.5, p=100, common_row={v})", "common_row", {
        "negative": ("-1", E), "zero": ("0", E), "nan": ("float('nan')", E),
        "inf": ("float('inf')", E), "1e300": ("1e300", ANY_NUM), "1e-12": ("1e-12", OKW | E),
        "str": ("'foo'", E), "bool": ("True", E), "network": ("'network'", K),
        "half": ("0.5", K),
    })
    # --- flags and unknown names ------------------------------------------------------------------
    a(api("api.risk.strict.yes", "result = risk(1.5, strict='yes')", E, "strict",
          "a flag must be a bool; 'yes' and 'no' are both truthy"))
    a(api("api.risk.strict.int", "result = risk(1.5, strict=1)", K | E, "strict"))
    a(api("api.risk.measure.foo", "result = risk(1.5, measure='foo')", E, "measure"))
    a(api("api.risk.measure.mp_name", "result = risk(1.5, measure='mp')", E, "measure",
          "a name is not a SpectralMeasure (use marchenko_pastur(beta))"))
    a(api("api.risk.model.x", "result = risk(1.5, model='x')", E, "model"))
    a(api("api.risk.model.upper", "result = risk(1.5, model='SRF')", E | K, "model"))
    a(api("api.risk.model.rf_eta", "result = risk(1.5, model='rf')", E, ("rf", "eta"),
          "rf is eta = 0; the default eta = 1 contradicts it"))
    a(api("api.risk.model.rf_ok", "result = risk(1.5, model='rf', eta=0)", K))
    a(api("api.risk.engine.x", "result = risk(1.5, engine='x')", E, "engine"))
    a(api("api.risk.engine.python", "result = risk(1.5, engine='python', model='srf')", K))
    a(api("api.risk.solver.str", "result = risk(1.5, solver='fast')", E, "solver"))
    a(api("api.risk.spike.str", "result = risk(1.5, spike='x')", E, "spike"))
    a(api("api.risk.gamma.two", "result = risk(1.5, gamma=2.0)", E, "gamma"))
    a(api("api.risk.gamma.nan", "result = risk(1.5, gamma=float('nan'))", E, "gamma"))
    a(api("api.risk.gamma.str", "result = risk(1.5, gamma='0.5')", E, "gamma",
          "a string is not a number"))
    a(api("api.risk.kwarg.unknown", "result = risk(1.5, foo=1)", E, "foo"))
    a(api("api.risk.kwarg.alpha_twice", "result = risk(1.5, alpha=2.0)", E, "alpha"))
    a(api("api.risk.positional", "result = risk(1.5, 2.0)", E, "positional"))
    a(api("api.risk.missing_alpha", "result = risk()", E, "alpha"))
    # --- sigma / target: names, callables, expressions -------------------------------------------
    a(api("api.sigma.foo", "result = risk(1.5, sigma='foo')", E, ("foo", "sigma")))
    a(api("api.target.foo", "result = risk(1.5, target='foo')", E, ("foo", "target")))
    a(api("api.sigma.upper", "result = risk(1.5, sigma='TANH')", E | K, ("TANH", "sigma")))
    a(api("api.sigma.padded", "result = risk(1.5, sigma=' tanh ')", K))
    a(api("api.sigma.none", "result = risk(1.5, sigma=None)", E, ("sigma", "function")))
    a(api("api.sigma.int", "result = risk(1.5, sigma=42)", E, ("sigma", "function")))
    a(api("api.sigma.bytes", "result = risk(1.5, sigma=b'tanh')", E, ("sigma", "function")))
    a(api("api.sigma.math_tanh", "result = risk(1.5, sigma=math.tanh, model='srf')", K | E,
          ("sigma", "tanh", "scalar", "vectori"),
          "a scalar-only callable: vectorise it, or say it must take numpy arrays"))
    a(api("api.target.math_sin", "result = risk(1.5, target=math.sin, model='srf')", K | E,
          ("target", "sin", "scalar", "vectori"), "as above, for the target"))
    a(api("api.sigma.np_vectorize_check",
          "f = np.vectorize(math.tanh)\n"
          "compare = (risk(1.5, sigma=f, model='srf').risk,"
          " risk(1.5, sigma='tanh', model='srf').risk)", K,
          why="np.vectorize(math.tanh) is tanh: same risk to 1e-6"))
    a(api("api.sigma.lambda_relu", "result = risk(1.5, sigma=lambda z: np.maximum(z, 0), "
          "model='srf')", OKW))
    a(api("api.sigma.lambda_relu_check",
          "compare = (risk(1.5, sigma=lambda z: np.maximum(z, 0), model='srf').risk,"
          " risk(1.5, sigma='relu', model='srf').risk)", K,
          why="the lambda is relu: its risk must equal the registered relu's to 1e-6"))
    a(api("api.sigma.lambda_relu_check_network",
          "compare = (risk(1.5, sigma=lambda z: np.maximum(z, 0)).risk,"
          " risk(1.5, sigma='relu').risk)", K, why="as above, network theory"))
    a(api("api.sigma.lambda_tanh_check",
          "compare = (risk(1.5, sigma=lambda z: np.tanh(z), model='srf').risk,"
          " risk(1.5, sigma='tanh', model='srf').risk)", K, why="a smooth lambda against tanh"))
    a(api("api.target.lambda_relu_check",
          "compare = (risk(1.5, target=lambda z: np.maximum(z, 0), model='srf').risk,"
          " risk(1.5, target='relu', model='srf').risk)", K, why="a relu target as a lambda"))
    a(api("api.target.lambda_sign_check",
          "compare = (risk(1.5, target=lambda z: np.sign(z), model='srf').risk,"
          " risk(1.5, target='sign', model='srf').risk)", K, why="a jump as a lambda"))
    a(api("api.sigma.lambda_abs_curve_check",
          "df1 = risk_curve([0.5, 2.0], sigma=lambda z: np.abs(z), model='srf')\n"
          "df2 = risk_curve([0.5, 2.0], sigma='abs', model='srf')\n"
          "compare = (df1.risk.tolist(), df2.risk.tolist())", K, why="curves, abs as a lambda"))
    same_name = """\
        import subprocess, sys
        r_tanh = risk(2.0, {arg}=lambda z: np.tanh(z){kw}).risk
        r_relu = risk(2.0, {arg}=lambda z: np.maximum(z, 0){kw}).risk
        code = ("import numpy as np, asymptotics as A; "
                "print(repr(A.risk(2.0, {arg}=lambda z: np.maximum(z, 0){kw}).risk))")
        fresh = float(subprocess.run([sys.executable, '-c', code], capture_output=True,
                                     text=True, check=True).stdout.split()[-1])
        compare = (r_relu, fresh)
        """
    for arg in ("sigma", "target"):
        for kw, tag in ((", model='srf'", "srf"), ("", "network")):
            a(api(f"api.{arg}.two_lambdas_same_name.{tag}", same_name.format(arg=arg, kw=kw), K,
                  why="two different lambdas (both named '<lambda>') in one process: the second "
                  "must give the same risk as in a fresh process"))
    a(api("api.sigma.two_lambdas_curve",
          "import subprocess, sys\n"
          "risk_curve([2.0], sigma=lambda z: np.tanh(z), model='srf')\n"
          "r = float(risk_curve([2.0], sigma=lambda z: np.sin(z), model='srf').risk[0])\n"
          "code = ('import numpy as np, asymptotics as A; print(float(A.risk_curve([2.0], '\n"
          "        'sigma=lambda z: np.sin(z), model=\"srf\").risk[0]))')\n"
          "fresh = float(subprocess.run([sys.executable, '-c', code], capture_output=True,\n"
          "              text=True, check=True).stdout.split()[-1])\n"
          "compare = (r, fresh)", K, why="the same, through risk_curve"))
    a(api("api.sigma.def_same_name",
          "import subprocess, sys\n"
          "def f(z):\n    return np.tanh(z)\n"
          "risk(2.0, sigma=f, model='srf')\n"
          "def f(z):\n    return np.cos(z)\n"
          "r = risk(2.0, sigma=f, model='srf').risk\n"
          "code = ('import numpy as np, asymptotics as A; print(repr(A.risk(2.0, '\n"
          "        'sigma=np.cos, model=\"srf\").risk))')\n"
          "fresh = float(subprocess.run([sys.executable, '-c', code], capture_output=True,\n"
          "              text=True, check=True).stdout.split()[-1])\n"
          "compare = (r, fresh)", K, why="a function redefined under the same name"))
    a(api("api.sigma.lambda_nan", "result = risk(1.5, sigma=lambda z: z * np.nan)", E, "sigma"))
    a(api("api.sigma.lambda_str", "result = risk(1.5, sigma=lambda z: 'a')", E,
          ("sigma", "<lambda>", "real")))
    a(api("api.sigma.lambda_complex", "result = risk(1.5, sigma=lambda z: 1j * z)", E,
          ("sigma", "<lambda>", "complex")))
    a(api("api.sigma.lambda_no_arg", "result = risk(1.5, sigma=lambda: 0.0)", E,
          ("sigma", "<lambda>", "argument")))
    a(api("api.sigma.lambda_const", "result = risk(1.5, sigma=lambda z: 1.0, model='srf')",
          OKW | E, "sigma", "a constant activation: the features carry nothing; risk = E g^2"))
    a(api("api.sigma.lambda_exp_z2", "result = risk(1.5, sigma=lambda z: np.exp(z**2))", E,
          ("sigma", "<lambda>", "grow")))
    a(api("api.sigma.lambda_raises", "result = risk(1.5, sigma=lambda z: 1 / 0)", E,
          ("sigma", "<lambda>"), "an error inside the user's function, reported as such"))
    a(api("api.sigma.function_object", "result = risk(1.5, sigma=get_function('relu'))", K))
    expressions = {
        "tanh_2z": ("'tanh(2*z)'", K, ""),
        "z_pow_100": ("'z**100'", E, "E z^200 ~ 1e187: beyond a reliable float64 quadrature"),
        "exp_z2": ("'exp(z**2)'", E, "E exp(2 z^2) is infinite"),
        "exp_20z": ("'exp(20*z)'", E, "E exp(40 z) = e^800 overflows float64"),
        "zero": ("'0'", OKW | E, "a zero activation: risk = E g^2 (or refused)"),
        "import": ("\"__import__('os')\"", E, "never evaluated"),
        "import_system": ("\"__import__('os').system('echo pwned')\"", E, "never evaluated"),
        "attribute": ("'np.tanh(z)'", E, ""),
        "lambda_text": ("'lambda z: z'", E, ""),
        "sqrt_z": ("'z**0.5'", E, "complex for z < 0"),
        "one_over_z": ("'1/z'", E, "infinite at 0"),
        "log_z": ("'log(z)'", E, ""),
        "syntax": ("'z +'", E, ""),
        "unbalanced": ("'tanh(z'", E, ""),
        "empty": ("''", E, ""),
        "blank": ("'   '", E, ""),
        "x_variable": ("'tanh(2*x)'", E, "the variable is z"),
        "capital_z": ("'Z'", E, ""),
        "two_args": ("'tanh(z, 2)'", E, ""),
        "huge_const": ("'z*1e400'", E, "1e400 is inf"),
        "tower": ("'9**9**9'", E, ""),
        "long": ("'+'.join(['z'] * 400)", E | K, "over the length limit, or fine"),
        "relu_shift": ("'relu(z-0.5)'", K, ""),
        "abs": ("'abs(z)'", K, ""),
        "sin_sq": ("'sin(z)**2'", K, ""),
        "he2_poly": ("'z**2 - 1'", K, ""),
        "he_call": ("'He2(z)'", E | K, "He2 is a target-parser function; either works or "
                    "is refused clearly"),
        "keyword": ("'tanh(z=1)'", E, ""),
    }
    for label, (value, accept, why) in expressions.items():
        a(api(f"api.expr.{label}", f"result = risk(1.5, model='srf', sigma={value})", accept,
              ("sigma", "expression", "function", "z"), why))
    a(api("api.expr.target_zero", "result = risk(1.5, model='srf', target='0')", OKW | E,
          "target", "g = 0: the risk is 0 (or refused)"))
    a(api("api.expr.tanh_check",
          "compare = (risk(1.5, sigma='tanh(z)', model='srf').risk,"
          " risk(1.5, sigma='tanh', model='srf').risk)", K,
          why="the expression tanh(z) is the registered tanh"))
    a(api("api.expr.relu_check",
          "compare = (risk(1.5, sigma='relu(z)', model='srf').risk,"
          " risk(1.5, sigma='relu', model='srf').risk)", K,
          why="the expression relu(z) is the registered relu (kink at 0 found by sympy)"))
    # --- get_function ---------------------------------------------------------------------------
    gf = {"foo": ("'foo'", E), "none": ("None", E), "int": ("3", E), "bytes": ("b'tanh'", E),
          "relu": ("'relu'", K), "expr": ("'tanh(2*z)'", K),
          "math_tanh": ("math.tanh", K | E, "scalar-only callable: vectorised or refused"),
          "import": ("\"__import__('os').system('echo pwned')\"", E),
          "list": ("['tanh']", E)}
    for label, (value, accept, *why) in gf.items():
        a(api(f"api.get_function.{label}", f"f = get_function({value})\n"
              "result = float(f(np.array([0.3]))[0])", accept,
              ("function", "tanh", "callable", "foo", "scalar", "name"), *why))
    # --- risk_curve -----------------------------------------------------------------------------
    rc = {
        "str_list": ("'1,2'", E, "a string is not a list of numbers"),
        "str_digits": ("'12'", E, "'12' must not be read as the alphas [1, 2]"),
        "scalar": ("2.0", E | K, "a scalar: one point, or a clear 'alphas must be a sequence'"),
        "int_scalar": ("3", E | K, "as above"),
        "none": ("None", E), "empty": ("[]", E), "negative": ("[1.0, -1.0]", E),
        "nan": ("[1.0, float('nan')]", E), "inf": ("[1.0, float('inf')]", E),
        "strings": ("['1', '2']", E, "strings are not numbers"),
        "bools": ("[True]", E), "matrix": ("np.array([[0.5, 2.0]])", E | K),
        "range": ("range(1, 3)", K), "generator": ("(x for x in [0.5, 2.0])", K),
        "unsorted": ("[2.0, 0.5, 2.0]", K, "any order, duplicates allowed"),
        "linspace": ("np.linspace(0.2, 3, 5)", K),
    }
    for label, (value, accept, *why) in rc.items():
        a(api(f"api.risk_curve.{label}", f"result = risk_curve({value}, model='srf')", accept,
              ("alpha",), *why))
    a(api("api.risk_curve.peak", "result = risk_curve([0.5, 1.0, 2.0], lam=0, model='srf')",
          PEAK, ("alpha", "lam"), "the point alpha = beta = 1 diverges: NaN there"))
    a(api("api.risk_curve.progress_str", "result = risk_curve([1.0], progress='yes')", E,
          "progress"))
    a(api("api.risk_curve.lam_optimal", "result = risk_curve([1.0, 2.0], lam='optimal', "
          "model='srf')", K))
    a(api("api.risk_curve.both_optimal",
          "result = risk_curve([1.0], lam='optimal', eta='optimal')", E, ("lam", "eta")))
    a(api("api.risk_curve.lam_1e300", "result = risk_curve([0.5, 2.0], lam=1e300)", OKW, "lam",
          "lam -> infinity: risk -> E g^2", rule="below_eg2"))
    a(api("api.risk_curve.engine_x", "result = risk_curve([1.0], engine='x')", E, "engine"))
    # --- risk_grid, optimal_lam, optimal_eta ------------------------------------------------
    g = "from asymptotics.api.grid import risk_grid, optimal_lam, optimal_eta\n"
    grid = {
        "basic": ("alpha=[1.0, 2.0], eta=[0.0, 1.0], model='srf'", K, ""),
        "alpha_str": ("alpha='12', model='srf'", E, "a string is not a number"),
        "alpha_empty": ("alpha=[]", E, ""),
        "lam_negative": ("alpha=1.0, lam=[0.01, -1.0]", E, ""),
        "n_jobs_zero": ("alpha=1.0, n_jobs=0", E, "0 workers is meaningless"),
        "n_jobs_str": ("alpha=1.0, n_jobs='2'", E, "a string is not a count"),
        "model_x": ("alpha=1.0, model='x'", E, ""),
        "sigmas": ("alpha=1.0, sigma=['tanh', 'relu'], model='srf'", K, ""),
        "peak": ("alpha=[1.0], lam=0.0, model='srf'", PEAK, "alpha = beta, lam = 0"),
        "unknown_kw": ("alpha=1.0, foo=1", E, ""),
        "p": ("alpha=1.0, p=100", E | K, "no finite-p grid: a clear TypeError is fine"),
        "lam_1e300": ("alpha=[0.5, 2.0], lam=1e300", OKW, "lam -> infinity: risk -> E g^2"),
        "beta_zero": ("alpha=1.0, beta=[1.0, 0.0]", E, ""),
    }
    for label, (value, accept, why) in grid.items():
        a(api(f"api.risk_grid.{label}", f"{g}result = risk_grid({value})", accept,
              ("alpha", "lam", "n_jobs", "model", "foo", "p", "beta"), why,
              rule="below_eg2" if "1e300" in label else None))
    opt = {
        "lam_basic": ("optimal_lam([1.0], model='srf')", K, ""),
        "lam_bounds_reversed": ("optimal_lam([1.0], lam_bounds=(1.0, 0.1))", E, ""),
        "lam_bounds_zero": ("optimal_lam([1.0], lam_bounds=(0.0, 1.0))", E,
                            "a log-scale search cannot start at 0"),
        "lam_bounds_negative": ("optimal_lam([1.0], lam_bounds=(-1.0, 1.0))", E, ""),
        "lam_n_grid_1": ("optimal_lam([1.0], n_grid=1)", E, ""),
        "lam_n_grid_0": ("optimal_lam([1.0], n_grid=0)", E, ""),
        "lam_scalar": ("optimal_lam(1.0, model='srf')", E | K, ""),
        "lam_with_lam": ("optimal_lam([1.0], lam=0.1)", E, "lam is what is optimised"),
        "eta_basic": ("optimal_eta([1.0], model='srf')", K, ""),
        "eta_bounds_negative": ("optimal_eta([1.0], eta_bounds=(-1.0, 1.0))", E, ""),
        "eta_bounds_nan": ("optimal_eta([1.0], eta_bounds=(0.0, float('nan')))", E, ""),
        "eta_rf": ("optimal_eta([1.0], model='rf')", E, "rf has eta = 0: nothing to optimise"),
    }
    for label, (value, accept, why) in opt.items():
        a(api(f"api.optimal.{label}", f"{g}result = {value}", accept,
              ("lam", "eta", "n_grid", "bound", "rf", "alpha"), why))
    # --- validation.protocol.simulator
    # -------------------------------------------------------------------
    sim = ("from validation.protocol.simulator import Setting, simulate\n"
           "base = dict(model='network', sigma='tanh', target='tanh', alpha=1.0, alpha0=2.0, "
           "eta=1.0, lam=0.01, d=100, n_test=2000)\n")
    sims = {
        "basic": ("simulate(Setting(**base), seeds=2)", K, "", ()),
        "srf": ("simulate(Setting(**{**base, 'model': 'srf'}), seeds=2)", K, "", ()),
        "model_x": ("simulate(Setting(**{**base, 'model': 'x'}), seeds=1)", E, "", "model"),
        "d_one": ("simulate(Setting(**{**base, 'd': 1}), seeds=1)", E, "", "d"),
        "d_float": ("simulate(Setting(**{**base, 'd': 100.5}), seeds=1)", E, "", "d"),
        "d_str": ("simulate(Setting(**{**base, 'd': '100'}), seeds=1)", E, "", "d"),
        "alpha_negative": ("simulate(Setting(**{**base, 'alpha': -1}), seeds=1)", E, "",
                           "alpha"),
        "alpha_str": ("simulate(Setting(**{**base, 'alpha': '1'}), seeds=1)", E,
                      "a string is not a number", "alpha"),
        "alpha_tiny": ("simulate(Setting(**{**base, 'alpha': 1e-12}), seeds=1)", E,
                       "n = 0 samples", ("alpha", "n")),
        "sigma_foo": ("simulate(Setting(**{**base, 'sigma': 'foo'}), seeds=1)", E, "",
                      ("foo", "sigma")),
        "sigma_lambda": ("simulate(Setting(**{**base, 'sigma': lambda z: np.tanh(z)}), "
                         "seeds=1)", K | E, "a callable, or a clear 'sigma must be a name'",
                         "sigma"),
        "seeds_zero": ("simulate(Setting(**base), seeds=0)", E, "", "seeds"),
        "seeds_one": ("simulate(Setting(**base), seeds=1)", OKW, "one seed: no standard error",
                      ()),
        "seeds_float": ("simulate(Setting(**base), seeds=1.5)", E, "", "seeds"),
        "seed_negative": ("simulate(Setting(**base), seeds=1, seed=-1)", E, "", "seed"),
        "n_jobs_zero": ("simulate(Setting(**base), seeds=1, n_jobs=0)", E, "", "n_jobs"),
        "estimator_x": ("simulate(Setting(**{**base, 'estimator': 'x'}), seeds=1)", E, "",
                        "estimator"),
        "stream_3": ("simulate(Setting(**{**base, 'stream': 3}), seeds=1)", E, "", "stream"),
        "spike_network": ("simulate(Setting(**{**base, 'spike': (0.5, 1.0, 0.8)}), seeds=1)", E,
                          "a spike is for srf only", "spike"),
        "spike_bad": ("simulate(Setting(**{**base, 'model': 'srf', 'spike': (1, -1, 0)}), "
                      "seeds=1)", E, "", ("spike", "c")),
        "n_test_negative": ("simulate(Setting(**{**base, 'n_test': -1}), seeds=1)", E, "",
                            "n_test"),
        "beta_1e300": ("simulate(Setting(**{**base, 'beta': 1e300}), seeds=1)", E,
                       "p = 1e302 neurons cannot be simulated", ("beta", "p", "memory")),
        "eta_1e300": ("simulate(Setting(**{**base, 'eta': 1e300}), seeds=1)", ANY_NUM,
                      "tanh saturates: the eta -> infinity limit of sign features, no overflow "
                      "(checked: the same risk to the last digit as eta = 1e12 and 1e100)",
                      "eta"),
        "eta_1e6": ("simulate(Setting(**{**base, 'eta': 1e6}), seeds=1)", ANY_NUM, "", "eta"),
        "delta_nan": ("simulate(Setting(**{**base, 'delta': float('nan')}), seeds=1)", E, "",
                      "delta"),
        "lam_zero_peak": ("simulate(Setting(**{**base, 'lam': 0.0}), seeds=1)", OKW,
                          "a finite d interpolates with a large but finite risk", ()),
        "rf_with_eta": ("simulate(Setting(**{**base, 'model': 'rf'}), seeds=1)", EW,
                        "rf is eta = 0 (as the theory says); eta = 1 silently ignored",
                        ("rf", "eta")),
        "not_a_setting": ("simulate('network', seeds=1)", E, "", "setting"),
        "d_two": ("simulate(Setting(**{**base, 'd': 2}), seeds=2)", OKW | E,
                  "a tiny but legal d", ()),
        "n_jobs_two": ("simulate(Setting(**base), seeds=2, n_jobs=2)", K,
                       "two worker processes", ()),
    }
    for label, (value, accept, why, names) in sims.items():
        a(api(f"api.simulate.{label}", f"{sim}result = {value}", accept, names, why))
    # --- from_weights ---------------------------------------------------------------------
    fw = ("rng = np.random.default_rng(0)\n"
          "p_, d_ = 50, 100\n"
          "W = rng.standard_normal((p_, d_)) / np.sqrt(d_)\n"
          "W += 0.3 * np.ones((p_, 1)) * np.eye(d_)[0] \n"
          "theta = np.eye(d_)[0]\n")
    fws = {
        "basic": ("risk(2.0, measure=from_weights(W, None, theta))", K, ""),
        "basic_srf": ("risk(2.0, model='srf', measure=from_weights(W, None, theta))", OKW | E, ""),
        "w_1d": ("from_weights(W[0], None, theta)", E, "", "W"),
        "w_nan": ("from_weights(np.where(W > 0.2, np.nan, W), None, theta)", E, "", "W"),
        "w_complex": ("from_weights(W + 1j * W, None, theta)", E,
                      "the imaginary part must not be dropped", "W"),
        "w_zero": ("from_weights(np.zeros_like(W), None, theta)", E, "", ("v", "W")),
        "w_one_row": ("from_weights(W[:1], None, theta)", E, "", "W"),
        "w_list": ("risk(2.0, measure=from_weights(W.tolist(), None, theta))", K, ""),
        "w_huge": ("risk(2.0, measure=from_weights(W * 1e200, None, theta))", EW | N,
                   "overflows float64", "W"),
        "theta_unnormalised": ("from_weights(W, None, 2 * theta)", E | K,
                               "normalise or refuse", "theta"),
        "theta_zero": ("from_weights(W, None, 0 * theta)", E, "", "theta"),
        "theta_wrong_length": ("from_weights(W, None, theta[:10])", E, "", "theta"),
        "v_wrong_length": ("from_weights(W, theta[:10], theta)", E, "", "v"),
        "theta_none": ("from_weights(W, None, None)", E, "", "theta"),
        "measure_and_spike": ("risk(2.0, measure=from_weights(W, None, theta), gamma=0.5)",
                              OKW | E, "", ()),
    }
    for label, (value, accept, why, *names) in fws.items():
        a(api(f"api.from_weights.{label}", f"{fw}result = {value}", accept,
              names[0] if names else (), why))
    return out


# ------------------------------------------------------------------------------------------------
# command lines


def cli_entries() -> list[Entry]:
    out: list[Entry] = []
    a = out.append
    commands = {
        "asymptotics": "asymptotics", "asymptotics.curve": "asymptotics curve",
        "asymptotics.coefficients.hermite": "asymptotics hermite", "validation": "validation",
        "validation.compare": "validation compare", "validation.sweep": "validation sweep",
        "validation.spectrum": "validation spectrum",
        "validation.multistep": "validation multistep", "matrix_cli": "validation.matrix",
        "matrix_cli.run": "validation.matrix run",
        "matrix_cli.report": "validation.matrix report", "figures": "figures",
        "multistep_report": "figures.multistep_report",
        "spectra_report": "figures.spectra_report",
        "finite_width": "validation.matrix.finite_width",
    }
    for key, cmd in commands.items():
        a(cli(f"cli.{key}.help", f"{cmd} --help", K))
        a(cli(f"cli.{key}.version", f"{cmd} --version", K,
              why="every command says which version it is"))
        a(cli(f"cli.{key}.bogus_option", f"{cmd} --bogus-option", E, "bogus"))
    # --- python -m asymptotics curve ----------------------------------------------------------
    c = "asymptotics curve --quiet --alpha 0.5,2"
    curve = {
        "default": ("", K, "", ()),
        "srf": ("--model srf", K, "", ()),
        "abbrev_alph": ("--alph 1", E, "abbreviations are ambiguous and off", "alph"),
        "alpha_abc": ("--alpha abc", E, "", "alpha"),
        "alpha_zero": ("--alpha 0", E, "", "alpha"),
        "alpha_negative": ("--alpha -1", E, "", "alpha"),
        "alpha_nan": ("--alpha nan", E, "", "alpha"),
        "alpha_inf": ("--alpha inf", E, "", "alpha"),
        "alpha_1e300": ("--alpha 1e300", ANY_NUM, "", "alpha"),
        "alpha_1e-12": ("--alpha 1e-12", OKW | E, "no data: risk -> E g^2", "alpha"),
        "alpha_num_zero": ("--alpha 1:2:0", E, "", "alpha"),
        "alpha_descending": ("--alpha 2:1:3", K | E, "", "alpha"),
        "alpha_empty_item": ("--alpha 1,,2", E, "", "alpha"),
        "alpha_huge_num": ("--alpha 1:5:1000000000", E, "a billion points", "alpha"),
        "lam_1e300": ("--lam 1e300", OKW, FREE_MEAN, "lam"),
        "lam_negative": ("--lam -1", E, "", "lam"),
        "lam_nan": ("--lam nan", E, "", "lam"),
        "lam_inf": ("--lam inf", E, "", "lam"),
        "lam_foo": ("--lam foo", E, "", "lam"),
        "lam_optimal": ("--lam optimal --model srf", K, "", ()),
        "peak": ("--lam 0 --model srf --alpha 1", PEAK, "alpha = beta, lam = 0 diverges",
                 ("lam", "alpha")),
        "ridgeless": ("--lam 0 --model srf --alpha 3", K, "", ()),
        "eta_1e6": ("--eta 1e6 --model srf", ANY_NUM, "a huge step: finite or refused", "eta"),
        "eta_1e300": ("--eta 1e300 --model srf", EW | N, "overflows float64", "eta"),
        "eta_negative": ("--eta -1", E, "", "eta"),
        "eta_optimal": ("--eta optimal --model srf", K, "", ()),
        "beta_zero": ("--beta 0", E, "", "beta"),
        "beta_1e-12_rf": ("--beta 1e-12 --eta 0 --model rf", OKW | E,
                          "random features, p/d -> 0: risk -> E g^2", "beta"),
        "beta_1e-12": ("--beta 1e-12 --model srf", OKW | E, FREE_MEAN, "beta"),
        "lam_1e300_finite_p": ("--lam 1e300 --model srf --p 100", OKW,
                               "finite p: risk -> E g^2", "lam"),
        "beta_1e300": ("--beta 1e300 --model srf", ANY_NUM, "", "beta"),
        "alpha0_zero": ("--alpha0 0", E, "", "alpha0"),
        "alpha0_1e-12": ("--alpha0 1e-12 --model srf", ANY_NUM, "a step on no data", "alpha0"),
        "alpha0_1e300": ("--alpha0 1e300 --model srf", ANY_NUM, "", "alpha0"),
        "delta_negative": ("--delta -1", E, "", "delta"),
        "delta_1e300": ("--delta 1e300 --model srf", ANY_NUM, "", "delta"),
        "sigma_foo": ("--sigma foo", E, "", ("foo", "sigma")),
        "sigma_tanh2z": ("--sigma tanh(2*z) --model srf", K, "", ()),
        "sigma_z100": ("--sigma z**100", E, "", ("sigma", "exponent", "z**100")),
        "sigma_exp_z2": ("--sigma exp(z**2)", E, "", ("sigma", "exp")),
        "sigma_import": (["--sigma", "__import__('os')"], E, "never evaluated",
                         ("sigma", "__import__", "os")),
        "sigma_zero": ("--sigma 0 --model srf", OKW | E, "a zero activation", "sigma"),
        "target_zero": ("--target 0 --model srf", OKW | E, "g = 0: risk 0", "target"),
        "model_x": ("--model x", E, "", "model"),
        "model_rf_eta": ("--model rf --eta 1", EW,
                         "an explicit --eta 1 with rf is ignored: say so", ("eta", "rf")),
        "p_zero": ("--p 0", E, "", "p"),
        "p_half": ("--p 0.5", E, "", "p"),
        "p_nan": ("--p nan", E, "", "p"),
        "p_inf": ("--p inf --model srf", K, "", ()),
        "p_100": ("--p 100 --model srf", K, "", ()),
        "common_row_without_p": ("--common-row 0.5", EW,
                                 "changes nothing without --p: say so", ("common-row", "p")),
        "common_row_foo": ("--common-row foo --p 100", E, "", "common"),
        "common_row_zero": ("--common-row 0 --p 100", E, "", "common"),
        "common_row_nan": ("--common-row nan --p 100", E, "", "common"),
        "common_row_network": ("--common-row network --p 100", K, "", ()),
        "out_missing_dir": (f"--out {MISSING_DIR}/x.csv", E, "", "out"),
        "out_new_dir": ("--out newdir/x.csv --model srf", K | E,
                        "create the folder, or refuse before computing", "out"),
        "out_is_dir": ("--out . --model srf", E, "", "out"),
        "plot_txt": ("--plot x.txt", E, "", "plot"),
        "plot_missing_dir": (f"--plot {MISSING_DIR}/x.png", E, "", "plot"),
        "plot_png": ("--plot x.png --model srf", K, "", ()),
        "alpha_equals": ("--alpha=1", K, "", ()),
        "alpha_twice": ("--alpha 1 --alpha 2 --model srf", K, "the last one wins", ()),
        "extra_positional": ("extra", E, "", "extra"),
    }
    for label, (args, accept, why, names) in curve.items():
        extra = args.split() if isinstance(args, str) else args
        rule = "below_eg2" if label in ("lam_1e300", "beta_1e-12_rf", "alpha_1e-12",
                                        "beta_1e-12", "lam_1e300_finite_p") else None
        a(cli(f"cli.curve.{label}", c.split() + extra, accept, names, why, rule))
    a(cli("cli.asymptotics.no_subcommand", "asymptotics", E | K,
          why="usage as one error line, or the help"))
    a(cli("cli.asymptotics.abbrev_subcommand", "asymptotics curv", E, "curv"))
    # --- python -m asymptotics hermite ---------------------------------------------------------
    herm = {
        "staircase": (["z1 + z1*z2"], K, ""),
        "he3": (["He3(z1)"], K, ""),
        "quadrature": (["tanh(z1)*z2"], K, ""),
        "empty": ([""], E, ""),
        "foo": (["foo"], E, ""),
        "pow100": (["z1**100"], E, ""),
        "import": (["__import__('os')"], E, "never evaluated"),
        "exp_z2": (["exp(z1**2)"], E, ""),
        "plain_z": (["z"], K | E, "z is z1, or a clear 'use z1..zk'"),
        "missing_target": ([], E, ""),
        "max_degree_negative": (["tanh(z1)", "--max-degree", "-1"], E, ""),
        "nodes_zero": (["tanh(z1)", "--nodes", "0"], E, ""),
        "tol_negative": (["z1", "--tol", "-1"], E, ""),
        "tol_nan": (["z1", "--tol", "nan"], E, ""),
        "many_variables": (["z1*z2*z3*z4*z5*z6*z7*z8*z9*z10*z11*z12"], K | E,
                           "a degree-12 monomial in 12 variables: fine or refused quickly"),
    }
    for label, (args, accept, why) in herm.items():
        a(cli(f"cli.hermite.{label}", ["asymptotics", "hermite", *args], accept,
              ("target", "z", "expression", "max-degree", "nodes", "tol", "foo", "exponent"),
              why))
    # --- python -m validation compare -----------------------------------------------------------
    # five seeds: fewer make the command warn that its z-scores mean little (an entry below)
    cmp_ = ("validation compare --quiet --d 100 --seeds 5 --n-test 2000 --alpha 0.5,2 "
            "--model srf").split()
    compare = {
        "basic": ("", K, "", ()),
        "network": ("--model network", K, "", ()),
        "d_one": ("--d 1", E, "", "d"), "d_zero": ("--d 0", E, "", "d"),
        "d_float": ("--d 100.5", E, "", "d"), "d_negative": ("--d -5", E, "", "d"),
        "d_huge": ("--d 1000000", E, "p x d = 1e12 doubles: refuse before allocating",
                   ("d", "memory")),
        "seeds_zero": ("--seeds 0", E, "", "seeds"),
        "seeds_one": ("--seeds 1", OKW, "one seed: no standard error, no z", ()),
        "seeds_two": ("--seeds 2", OKW, "a z-score from two seeds means little: may say so",
                      ()),
        "seed_negative": ("--seed -1", E, "", "seed"),
        "n_jobs_zero": ("--n-jobs 0", E, "", "n-jobs"),
        "n_test_negative": ("--n-test -1", E, "", "n-test"),
        "stream_3": ("--stream 3", E, "", "stream"),
        "estimator_x": ("--estimator x", E, "", "estimator"),
        "model_x": ("--model x", E, "", "model"),
        "alpha_zero": ("--alpha 0", E, "", "alpha"),
        "abbrev_alph": ("--alph 1", E, "", "alph"),
        "lam_1e300": ("--lam 1e300", OKW, "lam -> infinity: theory -> E g^2", ()),
        "eta_1e6": ("--eta 1e6", ANY_NUM, "", "eta"),
        "peak": ("--lam 0 --alpha 1", PEAK | K,
                 "the theory diverges at alpha = beta (NaN or said so); the simulation is "
                 "finite", ("lam", "alpha")),
        "out_missing_dir": (f"--out {MISSING_DIR}/x.csv", E, "", "out"),
        "plot_txt": ("--plot x.txt", E, "", "plot"),
        "sigma_foo": ("--sigma foo", E, "", ("foo", "sigma")),
        "sigma_exp_z2": ("--sigma exp(z**2)", E, "", "sigma"),
        "rf_eta": ("--model rf --eta 1", EW, "eta ignored by rf: say so", ("rf", "eta")),
    }
    for label, (args, accept, why, names) in compare.items():
        rule = "below_eg2" if label == "lam_1e300" else None
        a(cli(f"cli.compare.{label}", cmp_ + args.split(), accept, names, why, rule))
    # --- python -m validation sweep ---------------------------------------------------------------
    sw = "validation sweep --quiet --kind theory --grid alpha=0.5,2".split()
    sweep = {
        "basic": ("", K, "", ()),
        "network_theory": ("--kind theory-network", K, "", ()),
        "kind_x": ("--kind x", E, "", "kind"),
        "grid_foo": ("--grid foo", E, "", "grid"),
        "grid_empty": ("--grid alpha=", E, "", ("grid", "alpha")),
        "grid_unknown": ("--grid bogus=1,2", E, "", ("grid", "bogus")),
        "grid_num_zero": ("--grid lam=0:1:0", E, "", ("grid", "lam")),
        "grid_negative_lam": ("--grid lam=-1,1", E, "", "lam"),
        "grid_duplicate": ("--grid alpha=1,3", E | K, "a second alpha axis: refuse or merge",
                           "alpha"),
        "n_jobs_zero": ("--n-jobs 0", E, "", "n-jobs"),
        "scheduler_x": ("--scheduler x", E, "", "scheduler"),
        "scheduler_unreachable": (
            "--scheduler local --scheduler-address tcp://127.0.0.1:1", E,
            "local contradicts an address, and nothing listens there: one error line",
            ("scheduler", "127.0.0.1")),
        "scheduler_address_bad": ("--scheduler-address notaurl", E, "",
                                  "scheduler-address"),
        "store_missing_dir": (f"--store {MISSING_DIR}/s.csv", E, "", "store"),
        "out_missing_dir": (f"--out {MISSING_DIR}/o.csv", E, "", "out"),
        "plot_1d": ("--plot x.png", E, "a heat map needs a 2-D grid", ("plot", "heat map")),
        "lam_1e300": ("--lam 1e300", OKW, "lam -> infinity: risk -> E g^2", ()),
        "eta_1e6": ("--eta 1e6", ANY_NUM, "", "eta"),
        "theory_with_d": ("--grid d=100,200", EW | K,
                          "d does not enter the theory: rows that differ only in d, or said so",
                          "d"),
        "sim_tiny": ("--kind network --d 50 --seeds 1 --n-jobs 1 --n-test 1000", K, "", ()),
        "abbrev": ("--kin theory", E, "", "kin"),
    }
    for label, (args, accept, why, names) in sweep.items():
        rule = "below_eg2" if label == "lam_1e300" else None
        a(cli(f"cli.sweep.{label}", sw + args.split(), accept, names, why, rule))
    # --- python -m validation spectrum ---------------------------------------------------------
    sp = "validation spectrum --d 64 --steps 1".split()
    spectrum = {
        "basic": ("", K, "", ()),
        "two_steps": ("--steps 2", K, "", ()),
        "d_small": ("--d 8", E, "", "d"),
        "a1_half": ("--a1 0.5", E, "at 1/2 the count is unbounded", "a1"),
        "a1_negative": ("--a1 -0.1", E, "", "a1"),
        "steps_3": ("--steps 3", E, "", "steps"),
        "beta_zero": ("--beta 0", E, "", "beta"),
        "target_pow": ("--target z1**100", E, "", ("target", "exponent")),
        "target_foo": ("--target foo", E, "", ("target", "foo")),
        "sigma_foo": ("--sigma foo", E, "", ("sigma", "foo")),
        "plot_missing_dir": (f"--plot {MISSING_DIR}/x.png", E, "", "plot"),
        "edge_x": ("--edge x", E, "", "edge"),
        "kappa_negative": ("--kappa -1", E, "", "kappa"),
        "eta1_1e6": ("--eta1 1e6", ANY_NUM, "", "eta1"),
        "seed_negative": ("--seed -1", E, "", "seed"),
    }
    for label, (args, accept, why, names) in spectrum.items():
        a(cli(f"cli.spectrum.{label}", sp + args.split(), accept, names, why))
    # --- python -m validation multistep --------------------------------------------------------
    ms = "validation multistep --d 32 --steps 1 --seeds 1 --alpha0 2 --n-test 500".split()
    multistep = {
        "basic": ("", K, "", ()),
        "d_small": ("--d 4", E, "", "d"),
        "steps_zero": ("--steps 0", E, "", "steps"),
        "kappa_half": ("--kappa 0.5", E, "", "kappa"),
        "eta_count": ("--steps 3 --eta 1,2", E | K,
                      "two rates for three steps: refuse, or repeat the last (documented)",
                      "eta"),
        "eta_abc": ("--eta abc", E, "", "eta"),
        "seeds_zero": ("--seeds 0", E, "", "seeds"),
        "target_empty": (["--target", ""], E, "", "target"),
        "readout_x": ("--readout x", E, "", "readout"),
        "out_missing_dir": (f"--out {MISSING_DIR}/x.csv", E, "", "out"),
        "ridge_alpha_negative": ("--ridge-alpha -1", E, "", ("ridge-alpha", "ridge_alpha")),
        "lam_negative": ("--lam -1", E, "", "lam"),
        "eta_1e6": ("--eta 1e6", ANY_NUM, "", "eta"),
        "alpha0_zero": ("--alpha0 0", E, "", "alpha0"),
    }
    for label, (args, accept, why, names) in multistep.items():
        extra = args.split() if isinstance(args, str) else args
        a(cli(f"cli.multistep.{label}", ms + extra, accept, names, why))
    a(cli("cli.validation.no_subcommand", "validation", E | K))
    a(cli("cli.validation.abbrev_subcommand", "validation compar", E, "compar"))
    # --- python -m validation.matrix (only inputs refused before any simulation) -----------
    mx = {
        "no_subcommand": ("", E | K, "", ()),
        "run_store_missing_dir": (f"run --store {MISSING_DIR}/m.csv", E, "", "store"),
        "run_d_zero": ("run --store m.csv --d 0", E, "", "d"),
        "run_seeds_zero": ("run --store m.csv --seeds 0", E, "", "seeds"),
        "run_only_unknown": (["run", "--store", "m.csv", "--only", "no such setting"], E, "",
                             ("only", "no such setting")),
        "run_models_x": ("run --store m.csv --models x", E, "", "models"),
        "run_targets_foo": ("run --store m.csv --targets foo", E, "", ("targets", "foo")),
        "run_estimator_x": ("run --store m.csv --estimator x", E, "", "estimator"),
        "run_time_budget_negative": ("run --store m.csv --time-budget -1", E, "",
                                     "time-budget"),
        "run_n_jobs_zero": ("run --store m.csv --n-jobs 0", E, "", "n-jobs"),
        "report_store_missing": (f"report --store {MISSING_DIR}/m.csv --out R.md", E, "",
                                 "store"),
        "report_out_missing_dir": (f"report --out {MISSING_DIR}/R.md", E, "", "out"),
        "report_d_zero": ("report --d 0 --out R.md", E, "", "d"),
        "abbrev": ("run --stor m.csv", E, "", "stor"),
    }
    for label, (args, accept, why, names) in mx.items():
        extra = args.split() if isinstance(args, str) else args
        if extra[:1] == ["run"]:  # an input accepted by mistake runs 5 s on one core, not hours
            extra += [] if "n_jobs" in label else ["--n-jobs", "1"]
            extra += [] if "time_budget" in label else ["--time-budget", "5"]
        a(cli(f"cli.matrix_cli.{label}", ["validation.matrix", *extra], accept, names, why))
    # --- python -m figures ------------------------------------------------------------------------
    fig = {
        "no_args": ("", K, "lists the figures", ()),
        "list": ("--list", K, "", ()),
        "unknown": ("foo", E, "", "foo"),
        "unknown_quick": ("--quick foo bar", E, "", ("foo", "bar")),
        "outdir_missing": (f"spectrum --quick --outdir {MISSING_DIR}/figs", E, "", "outdir"),
        "outdir_new": ("spectrum --quick --outdir newdir/figs", K | E, "create it, or refuse",
                       "outdir"),
        "abbrev": ("--outd x spectrum", E, "", "outd"),
        "all_missing": (f"all --outdir {MISSING_DIR}/figs", E, "refused before any work",
                        "outdir"),
    }
    for label, (args, accept, why, names) in fig.items():
        a(cli(f"cli.figures.{label}", ["figures", *args.split()], accept, names, why))
    # --- the report commands (only inputs that fail before any work or writing) ---------------
    a(cli("cli.spectra_report.threads_zero", "figures.spectra_report --threads 0", E, "threads"))
    a(cli("cli.spectra_report.threads_abc", "figures.spectra_report --threads abc", E,
          "threads"))
    a(cli("cli.spectra_report.abbrev", "figures.spectra_report --thr 1 --help", E, "thr"))
    a(cli("cli.multistep_report.abbrev", "figures.multistep_report --qui --help", E, "qui"))
    fw = {
        "ds_abc": ("--ds abc --no-report", E, "", "ds"),
        "ds_small": ("--ds 5 --no-report", E, "", "d"),
        "seeds_zero": ("--seeds 0 --no-report", E, "", "seeds"),
        "budget_negative": ("--budget-s -1 --no-report", E, "a negative budget is a mistake",
                            "budget"),
        "budget_nan": ("--budget-s nan --no-report", E, "", "budget"),
        "ds_empty_item": ("--ds 100,,200 --no-report", E, "", "ds"),
        "abbrev": ("--see 2 --no-report", E, "", "see"),
    }
    for label, (args, accept, why, names) in fw.items():
        a(cli(f"cli.finite_width.{label}",
              ["validation.matrix.finite_width", *args.split()], accept, names, why))
    return out


def catalogue() -> list[Entry]:
    entries = api_entries() + cli_entries()
    ids = [e.id for e in entries]
    dup = {i for i in ids if ids.count(i) > 1}
    if dup:
        raise SystemExit(f"duplicate entry ids: {sorted(dup)}")
    return entries


# ------------------------------------------------------------------------------------------------
# running one entry

MARK = "@@AUDIT@@"
WRAPPER = r"""
import json, math, sys, warnings
MARK = "@@AUDIT@@"
snippet = sys.stdin.read()
out = {"exception": None, "warnings": [], "values": None, "status": None, "compare": None}
ns = {"__name__": "__audit__"}


def floats(x):
    try:
        import numpy as np
        arr = np.asarray(x, dtype=np.float64).ravel()
        return [float(v) for v in arr]
    except Exception:
        return None


def summarise(res):
    if res is None:
        return None, None
    try:
        import pandas as pd
        if isinstance(res, pd.DataFrame):
            col = next((c for c in ("risk", "theory", "sim_mean") if c in res.columns), None)
            status = res["status"].astype(str).tolist() if "status" in res.columns else None
            if col is None:
                return [], status
            return floats(res[col].to_numpy()), status
    except ImportError:
        pass
    if hasattr(res, "risk") and hasattr(res, "status"):
        return [float(res.risk)], [str(res.status)]
    if hasattr(res, "mean") and hasattr(res, "values") and hasattr(res, "setting"):
        return [float(res.mean)], None
    if hasattr(res, "kind") and hasattr(res, "rho"):  # a SpectralMeasure
        return [float(res.c)], None
    return floats(res), None


with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("default")
    for cat in (DeprecationWarning, PendingDeprecationWarning, ImportWarning, ResourceWarning):
        warnings.filterwarnings("ignore", category=cat)
    try:
        exec(compile(snippet, "<entry>", "exec"), ns)
        out["values"], out["status"] = summarise(ns.get("result"))
        if "compare" in ns:
            out["compare"] = [floats(ns["compare"][0]), floats(ns["compare"][1])]
    except BaseException as exc:
        out["exception"] = {"type": type(exc).__name__,
                            "bases": [c.__name__ for c in type(exc).__mro__],
                            "message": str(exc)}
for w in caught:
    out["warnings"].append({"category": w.category.__name__, "message": str(w.message),
                            "filename": str(w.filename), "lineno": w.lineno})
sys.stdout.flush()
print(MARK + json.dumps(out), flush=True)
"""

CLEAR_TYPES = ("ValueError", "TypeError", "ConvergenceError")
FP_WARNING = re.compile(r"encountered in|divide by zero|overflow|underflow|invalid value")
RAW_WARNING_LINE = re.compile(r"\.py:\d+: \w*Warning")
TRACEBACK_LINE = "Traceback (most recent call last)"
# warnings of numpy / numba / pandas themselves, whatever line they are attributed to
RAW_CATEGORIES = ("ComplexWarning", "NumbaWarning", "NumbaPerformanceWarning",
                  "NumbaDeprecationWarning", "SettingWithCopyWarning", "IntegrationWarning",
                  "LinAlgWarning", "OptimizeWarning")


def _first_line(text: str, limit: int = 160) -> str:
    lines = [ln.strip() for ln in str(text).strip().splitlines() if ln.strip()]
    s = lines[0] if lines else ""
    return s if len(s) <= limit else s[: limit - 3] + "..."


def _last_line(text: str, limit: int = 160) -> str:
    lines = [ln.strip() for ln in str(text).strip().splitlines() if ln.strip()]
    s = lines[-1] if lines else ""
    return s if len(s) <= limit else s[: limit - 3] + "..."


def _names_ok(message: str, names: tuple[str, ...]) -> bool:
    low = message.lower()
    return not names or any(n.lower() in low for n in names)


def _project_roots() -> list[str]:
    """The directories of the importable asymptotics / validation / figures packages."""
    code = ("import importlib.util as u\n"
            "for m in ('asymptotics', 'validation', 'figures'):\n"
            "    s = u.find_spec(m)\n"
            "    print(s.submodule_search_locations[0] if s else '')")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=_env(), timeout=120)
    return [ln for ln in res.stdout.splitlines() if ln.strip()]


def _raw_warning(w: dict, roots: list[str]) -> bool:
    """A warning the user should not see as such: numpy floating-point noise, or one issued
    inside a third-party library (numpy, scipy, numba, pandas, ...)."""
    if (FP_WARNING.search(w["message"]) or re.search(r"/\S+\.py", w["message"])
            or w["category"] in RAW_CATEGORIES):
        return True
    fn = w["filename"]
    return not (fn.startswith("<") or any(fn.startswith(r) for r in roots))


def _classify_values(values: list[float] | None, status: list[str] | None) -> str:
    if not values:
        return OK
    if any(math.isnan(v) for v in values):
        return NAN
    if any(math.isinf(v) for v in values):
        bad = status and any(s != "converged" for s in status)
        return NAN if bad else OK
    return OK


def _compare(pair) -> tuple[bool, str]:
    a, b = (np.asarray(x if x is not None else [np.nan], dtype=np.float64) for x in pair)
    if a.shape != b.shape:
        return False, f"shapes differ: {a.shape} vs {b.shape}"
    rel = np.abs(a - b) / np.maximum(np.abs(b), 1e-300)
    worst = float(np.max(rel)) if rel.size else 0.0
    ok = bool(np.all(np.isfinite(a)) and np.all(np.isfinite(b)) and worst <= 1e-6)
    return ok, f"{a.tolist()} vs {b.tolist()} (relative difference {worst:.3g})"


def _env(scratch: Path | None = None) -> dict:
    env = dict(os.environ)
    for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
        env[k] = "1"
    env.setdefault("MPLBACKEND", "Agg")
    env["PYTHONWARNINGS"] = ""
    env.pop("PYTHONSTARTUP", None)
    if scratch is not None:
        env["GIANTSTEP_CACHE"] = str(scratch / "cache")
    return env


def run_entry(entry: Entry, workdir: Path, timeout: float, roots: list[str]) -> dict:
    scratch = workdir / re.sub(r"[^\w.-]", "_", entry.id)
    scratch.mkdir(parents=True, exist_ok=True)
    limit = entry.timeout or timeout
    if entry.kind == "api":
        cmd = [sys.executable, "-c", WRAPPER]
        stdin = PRELUDE + entry.code + "\n"
    else:
        cmd = [sys.executable, *entry.argv]
        stdin = ""
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(cmd, input=stdin, capture_output=True, text=True, cwd=scratch,
                              env=_env(scratch), timeout=limit)
    except subprocess.TimeoutExpired as exc:
        return dict(observed=HANG, seconds=round(time.perf_counter() - t0, 2),
                    excerpt=f"no answer within {limit:g} s",
                    stderr_tail=_last_line((exc.stderr or b"").decode(errors="replace")
                                           if isinstance(exc.stderr, bytes)
                                           else exc.stderr or ""))
    seconds = round(time.perf_counter() - t0, 2)
    if entry.kind == "api":
        res = _classify_api(entry, proc, roots)
    else:
        res = _classify_cli(entry, proc)
    res["seconds"] = seconds
    return res


def _classify_api(entry: Entry, proc: subprocess.CompletedProcess, roots: list[str]) -> dict:
    stdout, stderr = proc.stdout, proc.stderr
    report = None
    for line in stdout.splitlines():
        if line.startswith(MARK):
            report = json.loads(line[len(MARK):])
    info: dict = dict(returncode=proc.returncode)
    if report is None or TRACEBACK_LINE in stderr:
        return dict(info, observed=TRACEBACK,
                    excerpt=_last_line(stderr) or f"no report (exit {proc.returncode})")
    exc = report["exception"]
    warns = report["warnings"]
    raw = [w for w in warns if _raw_warning(w, roots)]
    clear = [w for w in warns if not _raw_warning(w, roots)]
    info.update(warnings=[f"{w['category']}: {_first_line(w['message'])} "
                          f"({os.path.basename(w['filename'])}:{w['lineno']})" for w in warns])
    if RAW_WARNING_LINE.search(stderr):
        raw.append({"category": "stderr", "message": _first_line(
            next(ln for ln in stderr.splitlines() if RAW_WARNING_LINE.search(ln))),
            "filename": "", "lineno": 0})
    if exc is not None:
        msg = exc["message"]
        info["exception"] = f"{exc['type']}: {_first_line(msg, 300)}"
        if not any(t in exc["bases"] for t in CLEAR_TYPES):
            return dict(info, observed=TRACEBACK, excerpt=info["exception"])
        one_line = bool(msg.strip()) and "\n" not in msg.strip()
        if not one_line or not _names_ok(msg, entry.names):
            why = "several lines" if msg.strip() and not one_line else \
                "empty message" if not msg.strip() else "does not name the parameter"
            return dict(info, observed=UNCLEAR, excerpt=f"{info['exception']} [{why}]")
        if raw:
            return dict(info, observed=TRACEBACK,
                        excerpt=f"raw {raw[0]['category']}: {_first_line(raw[0]['message'])}"
                        f" then {info['exception']}")
        return dict(info, observed=ERROR, excerpt=info["exception"])
    if raw:
        return dict(info, observed=TRACEBACK,
                    excerpt=f"raw {raw[0]['category']}: {_first_line(raw[0]['message'])} "
                    f"({os.path.basename(raw[0]['filename'])})")
    if report["compare"] is not None:
        same, text = _compare(report["compare"])
        info["values"] = report["compare"]
        return dict(info, observed=OK if same else SILENT, excerpt=text)
    values, status = report["values"], report["status"]
    info.update(values=values[:20] if values else values,
                status=sorted(set(status))[:5] if status else None)
    cls = _classify_values(values, status)
    shown = _show_values(values, status)
    if cls == OK and clear:
        return dict(info, observed=WARNING,
                    excerpt=f"{shown}; warning: {_first_line(clear[0]['message'])}")
    return _finish(entry, dict(info, observed=cls, excerpt=shown), values, warned=bool(clear))


def _show_values(values, status) -> str:
    if values is None:
        return "no numeric result"
    if not values:
        return "finished"
    v = ", ".join(f"{x:.6g}" for x in values[:4]) + (", ..." if len(values) > 4 else "")
    s = f" status={','.join(sorted(set(status)))}" if status else ""
    return f"risk={v}{s}"


def _finish(entry: Entry, res: dict, values, warned: bool) -> dict:
    """The silent rules: a finite number where ok is not acceptable; a risk below E g^2."""
    if res["observed"] == OK and OK not in entry.accept:
        res["observed"] = SILENT
    elif (res["observed"] == OK and entry.rule == "below_eg2" and not warned and values
          and min(values) < EG2_TANH * (1 - 1e-9)):
        res["observed"] = SILENT
        res["excerpt"] += f" < E g^2 = {EG2_TANH:.6g} without a warning"
    return res


def _risk_values(stdout: str) -> list[float] | None:
    """The risk / theory column of a CSV on stdout, if there is one."""
    lines = [ln for ln in stdout.splitlines() if ln.strip()]
    header = re.compile(r"^[\w.]+(,[\w.]+)+$")  # a CSV header: names and commas only
    start = next((i for i, ln in enumerate(lines) if header.match(ln.strip())
                  and re.search(r"(^|,)(risk|theory)(,|$)", ln.strip())), None)
    if start is None:
        return None
    rows = list(csv.DictReader(io.StringIO("\n".join(lines[start:]))))
    col = next((c for c in ("risk", "theory") if rows and c in rows[0]), None)
    if col is None:
        return None
    out = []
    for r in rows:
        cell = (r.get(col) or "").strip()
        try:
            out.append(float(cell) if cell else math.nan)  # pandas writes NaN as ""
        except ValueError:
            continue
    return out


def _classify_cli(entry: Entry, proc: subprocess.CompletedProcess) -> dict:
    stdout, stderr = proc.stdout, proc.stderr
    info: dict = dict(returncode=proc.returncode, stderr_tail=_last_line(stderr, 300))
    lines = [ln for ln in stderr.splitlines() if ln.strip()]
    if TRACEBACK_LINE in stderr:
        return dict(info, observed=TRACEBACK, excerpt=_last_line(stderr))
    raw = [ln for ln in lines if RAW_WARNING_LINE.search(ln)]
    if raw:
        return dict(info, observed=TRACEBACK, excerpt=f"raw warning: {_first_line(raw[0])}")
    if proc.returncode != 0:
        if proc.returncode == 2 and len(lines) == 1 and lines[0].startswith("error: "):
            if _names_ok(lines[0], entry.names):
                return dict(info, observed=ERROR, excerpt=_first_line(lines[0]))
            return dict(info, observed=UNCLEAR,
                        excerpt=f"{_first_line(lines[0])} [does not name the option]")
        shown = " | ".join(_first_line(ln, 100) for ln in lines[-2:]) or "(no stderr)"
        return dict(info, observed=UNCLEAR, excerpt=f"exit {proc.returncode}: {shown}")
    warns = [ln for ln in lines if ln.startswith("warning:")]
    values = _risk_values(stdout)
    info["values"] = values[:20] if values else values
    if values is not None and any(math.isnan(v) for v in values):
        return dict(info, observed=NAN, excerpt=f"exit 0, NaN in {values[:4]}")
    if warns:
        return dict(info, observed=WARNING, excerpt=_first_line(warns[0]))
    shown = (f"exit 0, risk={', '.join(f'{v:.6g}' for v in values[:4])}" if values
             else f"exit 0: {_first_line(stdout) or _first_line(stderr) or '(no output)'}")
    return _finish(entry, dict(info, observed=OK, excerpt=shown), values, warned=False)


# ------------------------------------------------------------------------------------------------
# the report


def _git_status(root: Path) -> str | None:
    try:
        res = subprocess.run(["git", "-C", str(root), "status", "--porcelain"],
                             capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return res.stdout if res.returncode == 0 else None


def summarise(results: list[dict]) -> str:
    counts = {c: 0 for c in CLASSES}
    for r in results:
        counts[r["observed"]] += 1
    unexpected = [r for r in results if not r["acceptable"]]
    lines = [f"{len(results)} entries ({sum(r['kind'] == 'api' for r in results)} API, "
             f"{sum(r['kind'] == 'cli' for r in results)} command line)", "",
             f"{'class':18s} {'entries':>7s}"]
    lines += [f"{LABELS[c]:18s} {counts[c]:7d}" for c in CLASSES]
    lines += [f"{'unexpected':18s} {len(unexpected):7d}   (observed not in the acceptable set)",
              ""]
    bad = [r for r in results if r["observed"] in NEVER_ACCEPTABLE or not r["acceptable"]]
    if bad:
        lines.append("failing entries (traceback / unclear / hang / silent / unexpected):")
        for r in bad:
            lines.append(f"  [{r['observed']}] {r['id']} (acceptable: "
                         f"{','.join(sorted(r['accept']))}): {r['excerpt']}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python benchmarks/new_user_audit.py", allow_abbrev=False,
        description="Bad and edge inputs of the API and command lines, each in a fresh "
                    "subprocess, classified against what a demanding user expects.")
    parser.add_argument("--json", metavar="FILE", help="save every entry's result here")
    parser.add_argument("--only", metavar="PATTERN",
                        help="regular expression: run the entries whose id it matches")
    parser.add_argument("--jobs", type=int, default=2, help="parallel subprocesses (default 2)")
    parser.add_argument("--timeout", type=float, default=120.0,
                        help="seconds per entry before it counts as a hang (default 120)")
    parser.add_argument("--list", action="store_true", help="list the entries and exit")
    args = parser.parse_args(argv)
    if args.jobs < 1 or not args.timeout > 0:
        parser.error("--jobs must be >= 1 and --timeout > 0")
    entries = catalogue()
    if args.only:
        try:
            pat = re.compile(args.only)
        except re.error as exc:
            parser.error(f"--only is not a regular expression: {exc}")
        entries = [e for e in entries if pat.search(e.id)]
    if args.list:
        for e in entries:
            print(f"{e.id:50s} {','.join(sorted(e.accept)):22s} {e.call().splitlines()[-1]}")
        return 0
    if not entries:
        parser.error(f"no entry matches {args.only!r}")
    roots = _project_roots()
    checkout = Path(roots[0]).parent if roots else None
    before = _git_status(checkout) if checkout else None
    version = subprocess.run([sys.executable, "-c", "import asymptotics; "
                              "print(asymptotics.__version__, asymptotics.__file__)"],
                             capture_output=True, text=True, env=_env()).stdout.strip()
    print(f"auditing asymptotics {version or '(not importable)'}: {len(entries)} entries, "
          f"{args.jobs} at a time", file=sys.stderr)
    t0 = time.perf_counter()
    results: list[dict] = [None] * len(entries)  # type: ignore[list-item]
    with tempfile.TemporaryDirectory(prefix="new-user-audit-") as tmp:
        def one(i: int) -> tuple[int, dict]:
            return i, run_entry(entries[i], Path(tmp), args.timeout, roots)

        with ThreadPoolExecutor(max_workers=args.jobs) as pool:
            for done, (i, res) in enumerate(pool.map(one, range(len(entries))), start=1):
                e = entries[i]
                results[i] = dict(id=e.id, kind=e.kind, call=e.call(), accept=sorted(e.accept),
                                  why=e.why, **res)
                results[i]["acceptable"] = res["observed"] in e.accept
                flag = "" if results[i]["acceptable"] else "  <-- unexpected"
                print(f"[{done:3d}/{len(entries)}] {e.id:48s} {res['observed']:9s} "
                      f"{res['seconds']:6.1f}s{flag}", file=sys.stderr, flush=True)
    elapsed = time.perf_counter() - t0
    text = summarise(results)
    print(text)
    print(f"\n{elapsed:.0f} s wall, {args.jobs} jobs")
    after = _git_status(checkout) if checkout else None
    if before is not None and after is not None and after != before:
        print(f"warning: the checkout {checkout} changed during the audit:\n{after}",
              file=sys.stderr)
    if args.json:
        payload = dict(
            asymptotics=version, python=sys.version.split()[0],
            date=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            seconds=round(elapsed, 1), jobs=args.jobs, timeout=args.timeout,
            eg2_tanh=EG2_TANH,
            counts={c: sum(r["observed"] == c for r in results) for c in CLASSES},
            unexpected=sum(not r["acceptable"] for r in results),
            results=_jsonable(results))
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(payload, indent=1) + "\n")
        print(f"wrote {args.json}", file=sys.stderr)
    return 0


def _jsonable(x):
    """NaN and infinities as strings (strict JSON)."""
    if isinstance(x, float):
        return x if math.isfinite(x) else repr(x)
    if isinstance(x, dict):
        return {k: _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    return x


if __name__ == "__main__":
    sys.exit(main())
