"""The one parameter table (asymptotics/core/parameters.py): every entry point takes its defaults
from it and refuses a bad value with the table's message, whichever door the value comes in by.
"""

from __future__ import annotations

import inspect
import math
import subprocess
import sys

import pytest

import asymptotics as A
from asymptotics.api.grid import risk_grid
from asymptotics.core.parameters import PARAMETERS, check, default
from validation.protocol.simulator import Setting

THEORY_ENTRIES = {"risk": A.risk, "risk_curve": A.risk_curve, "risk_grid": risk_grid,
                  "build_problem": A.build_problem}
#: the theory's parameters every theory entry point takes
THEORY_NAMES = ("sigma", "target", "alpha0", "eta", "lam", "beta", "delta", "model", "p",
                "common_row")
#: one value outside the allowed range per real parameter (and the table's own message)
BAD = {"alpha0": -1.0, "eta": -0.5, "lam": -1.0, "beta": 0.0, "delta": -0.1, "p": 0.5}


def test_every_entry_point_defaults_to_the_table():
    for entry, fn in THEORY_ENTRIES.items():
        params = inspect.signature(fn).parameters
        for name in THEORY_NAMES:
            assert name in params, f"{entry} lacks {name}"
            assert params[name].default == default(name), (entry, name)
    for name in ("engine",):
        for entry in ("risk", "risk_curve", "risk_grid"):
            assert inspect.signature(THEORY_ENTRIES[entry]).parameters[name].default == \
                default(name)
    fields = {f.name: f.default for f in Setting.__dataclass_fields__.values()}
    for name in ("beta", "delta", "d", "estimator"):
        assert fields[name] == default(name), name


def test_every_entry_has_help_a_section_and_a_rule():
    for name, p in PARAMETERS.items():
        assert p.name == name and p.help and p.section.startswith("§"), name
        assert p.kind in ("real", "width", "integer", "choice", "function", "readout",
                          "matrix"), name
        if p.default is not None and p.kind == "real":
            assert check(name, p.default) == p.default, name


def _message(call) -> str:
    with pytest.raises((ValueError, TypeError)) as info:
        call()
    return str(info.value)


@pytest.mark.parametrize("name", sorted(BAD))
def test_a_bad_value_is_refused_with_one_message_everywhere(name):
    expected = _message(lambda: check(name, BAD[name]))
    assert name in expected
    calls = {
        "risk": lambda: A.risk(1.0, model="srf", **{name: BAD[name]}),
        "risk_curve": lambda: A.risk_curve([1.0], model="srf", progress=False,
                                           **{name: BAD[name]}),
        "risk_grid": lambda: risk_grid(alpha=[1.0], model="srf", **{name: BAD[name]}),
        "build_problem": lambda: A.build_problem(model="srf", **{name: BAD[name]}),
    }
    for entry, call in calls.items():
        assert _message(call) == expected, entry
    if name in ("alpha0", "eta", "lam", "beta", "delta"):
        kw = dict(model="srf", sigma="tanh", target="tanh", alpha=1.0, alpha0=2.0, eta=1.0,
                  lam=0.01)
        kw[name] = BAD[name]
        assert _message(lambda: Setting(**kw)) == expected, "Setting"


@pytest.mark.parametrize("name", ["alpha0", "lam", "beta", "delta"])
def test_the_command_line_refuses_the_same_values(name):
    value = BAD[name]
    p = subprocess.run([sys.executable, "-m", "asymptotics", "curve", f"--{name.replace('_', '-')}",
                        f"{value:g}", "--alpha", "1"], capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 2, p.stderr
    assert len(p.stderr.strip().splitlines()) == 1, p.stderr
    expected = _message(lambda: check(name, value))
    assert expected.split(",")[0] in p.stderr, (expected, p.stderr)


def test_model_and_engine_choices_are_the_tables():
    for name in ("model", "engine"):
        msg = _message(lambda n=name: check(n, "nosuch"))
        assert all(c in msg for c in PARAMETERS[name].choices)
    assert _message(lambda: A.risk(1.0, model="nosuch")).startswith("model must be one of")
    assert math.isinf(A.risk(2.0, model="srf").p)


def test_a_result_is_data_with_the_curves_schema():
    """RiskResult groups its fields, and its one-row frame is the row of risk_curve at the same
    point (same columns in the same order, same numbers)."""
    from asymptotics.api.paths import RESULT_COLUMNS

    res = A.risk(1.5, model="srf", sigma="relu", target="tanh")
    groups = (*res.PARAMETERS, *res.SOLUTION, *res.DIAGNOSTICS)
    assert sorted(groups) == sorted(RESULT_COLUMNS) and len(set(groups)) == len(groups)
    assert res.parameters["alpha"] == 1.5 and res.parameters["model"] == "srf"
    assert res.solution["risk"] == res.risk and res.diagnostics["converged"]
    row = res.to_frame()
    curve = A.risk_curve([1.5], model="srf", sigma="relu", target="tanh", progress=False)
    assert list(row.columns) == list(curve.columns) == RESULT_COLUMNS
    for col in RESULT_COLUMNS:
        a, b = row[col].iloc[0], curve[col].iloc[0]
        if isinstance(a, float) and math.isnan(a):  # a field that does not apply (K-group)
            assert math.isnan(b), col
        elif isinstance(a, float):
            assert math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12), col
        else:
            assert a == b, col
    grid = risk_grid(alpha=[1.5], model="srf", sigma="relu", target="tanh")
    assert list(grid.columns) == RESULT_COLUMNS


def test_the_sweep_takes_the_tables_defaults_and_one_kind():
    from validation.sweep.params import DEFAULT_KIND, DEFAULT_SEEDS, DEFAULTS
    from validation.sweep.runner import sweep

    for name in ("sigma", "target", "alpha0", "eta", "lam", "beta", "delta", "d"):
        assert DEFAULTS[name] == default(name), name
    params = inspect.signature(sweep).parameters
    assert params["kind"].default == DEFAULT_KIND and params["seeds"].default == DEFAULT_SEEDS
    assert DEFAULT_SEEDS == default("seeds")
    out = subprocess.run([sys.executable, "-m", "validation", "sweep", "--help"],
                         capture_output=True, text=True, timeout=120).stdout
    assert f"default: {DEFAULT_KIND})" in " ".join(out.split())
    assert f"(default: {DEFAULT_SEEDS})" in " ".join(out.split())
    assert f"(default: {default('d')})" in " ".join(out.split())


def test_the_k_group_entry_points_default_to_the_table():
    """risk_spiked (the target depends on its overlaps: no default) and the readout entries
    (model="srf": the one model they solve) take the table's other defaults."""
    for fn, names in ((A.risk_spiked, ("sigma", "lam", "beta", "delta", "p")),
                      (A.risk_readout, ("sigma", "target", "alpha0", "eta", "lam", "beta",
                                        "delta", "p")),
                      (A.risk_readout_curve, ("sigma", "target", "alpha0", "eta", "lam", "beta",
                                              "delta", "p"))):
        params = inspect.signature(fn).parameters
        for name in names:
            assert params[name].default == default(name), (fn.__name__, name)
