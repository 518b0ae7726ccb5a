"""Bad input across the command lines and the Python API: every case ends with exit status 2 and
one line ``error: ...`` naming what was wrong (or a one-line Python exception), never a
traceback, a hang or a silent number. Command lines run in-process through their ``main(argv)``;
a few run as real subprocesses."""

from __future__ import annotations

import io
import math
import subprocess
import sys
import time

import numpy as np
import pytest

from asymptotics import get_function, risk, risk_curve
from asymptotics.cli.common import parse_grid
from asymptotics.cli.curve import main as asym_main
from asymptotics.coefficients.functions import Function, to_sympy
from asymptotics.coefficients.hermite import hermite_expansion, monomial_to_hermite
from asymptotics.core.progress import Progress
from asymptotics.equations.solver import SolverConfig
from figures.__main__ import main as fig_main
from validation.cli import main as val_main
from validation.matrix.cli import main as matrix_main

MISSING = "/nonexistent-giantstep-dir/out"


def run(main, argv, capsys) -> tuple[int, str, str]:
    try:
        rc = main(argv)
    except SystemExit as exc:  # argparse errors exit
        rc = exc.code
    out, err = capsys.readouterr()
    return rc, out, err


ASYMPTOTICS = [
    (["curve", "--alpha", "1,,2"], "empty item"),
    (["curve", "--alpha", "1,2,"], "empty item"),
    (["curve", "--alpha", "-1,2"], "> 0"),
    (["curve", "--alpha", "0"], "> 0"),
    (["curve", "--alpha", "nan"], "finite"),
    (["curve", "--alpha", "1:2"], "START:STOP:NUM"),
    (["curve", "--alpha", "1:2:0"], "NUM"),
    (["curve", "--alpha", "abc"], "comma list"),
    (["curve", "--alpha", "1:2:10000000"], "NUM"),
    (["curve", "--plo", "1000"], "unrecognized"),  # no abbreviation of --plot
    (["curve", "--alph", "1"], "unrecognized"),
    (["curve", "--alpha0", "0"], "alpha0"),
    (["curve", "--alpha0", "-2"], "alpha0"),
    (["curve", "--eta", "-1"], "eta"),
    (["curve", "--lam", "-0.1"], "lam"),
    (["curve", "--lam", "inf"], "lam"),
    (["curve", "--beta", "0"], "beta"),
    (["curve", "--delta", "-1"], "delta"),
    (["curve", "--alpha", "1", "--sigma", "9**9**9"], "exponent"),
    (["curve", "--alpha", "1", "--sigma", "z**100"], "exponent"),
    (["curve", "--alpha", "1", "--sigma", "exp(z**2)"], "grows too fast"),
    (["curve", "--alpha", "1", "--target", "exp(z**2)"], "grows too fast"),
    (["curve", "--alpha", "1", "--sigma", "import os"], "parse"),
    (["curve", "--alpha", "1", "--sigma", "__import__('os').getcwd()"], "unsupported"),
    (["curve", "--alpha", "1", "--sigma", "foo"], "unknown function"),
    (["curve", "--alpha", "1", "--sigma", "sqrt(z)"], "non-finite"),
    (["curve", "--alpha", "1", "--sigma", "1e400*z"], "too large"),
    (["curve", "--alpha", "1", "--target", "log(z)"], "non-finite"),
    (["curve", "--alpha", "1", "--sigma", "z +"], "parse"),
    (["curve", "--alpha", "1", "--sigma", "z.real"], "unsupported"),
    (["curve", "--alpha", "1", "--out", MISSING + "/x.csv"], "--out"),
    (["curve", "--alpha", "1", "--plot", MISSING + "/x.png"], "--plot"),
    (["curve", "--alpha", "1", "--plot", "figure.txt"], "--plot"),
    (["curve", "--alpha", "1", "--eta", "1e308"], "overflows"),
    (["curve", "--alpha", "1", "--sigma", "1e200*tanh(z)"], "overflow"),
    (["hermite", "He30(z1)*He30(z2)*He30(z3)"], "degree"),
    (["hermite", "z1**41"], "degree"),
    (["hermite", "(z1+z2+z3+z4+z5+z6+z7+z8)**30"], "monomials"),
    (["hermite", "9**9**9"], "exponent"),
    (["hermite", "z1*z9"], "at most"),
    (["hermite", " "], "non-empty"),
    (["hermite", "z1 +"], "parse"),
    (["hermite", "--max-degree", "0", "tanh(z1)"], "max-degree"),
    (["hermite", "--nodes", "1", "tanh(z1)"], "nodes"),
    (["hermite", "--max-deg", "3", "z1"], "unrecognized"),
    (["sweep"], "invalid choice"),  # theory grids: python -m validation sweep --kind theory
    ([], "required"),
    (["nosuch"], "invalid choice"),
    # a later audit's fresh inputs: "-inf" is a value, not an unknown option; undecodable bytes
    # (a surrogate escape of argv) and a path the OS refuses are one line naming the option; the
    # steps command names sigma / target in the parsers' errors
    (["curve", "--eta", "-inf"], "eta must be finite"),
    (["curve", "--p", "-INF"], "p must be >= 1"),
    (["curve", "--sigma", "tanh\udcff", "--alpha", "1"], "sigma: cannot parse"),
    (["curve", "--out", "/tmp/" + "a" * 300 + ".csv", "--alpha", "1"], "--out: cannot write"),
    (["steps", "--plot", "/tmp/" + "b" * 300 + ".png"], "--plot: cannot write"),
    (["steps", "--target", "z0"], "target: unknown name 'z0'"),
    (["steps", "--sigma", "z1"], "sigma: unknown function"),
]


@pytest.mark.parametrize("argv,word", ASYMPTOTICS, ids=lambda v: " ".join(v) if
                         isinstance(v, list) else None)
def test_asymptotics_cli(argv, word, capsys):
    rc, out, err = run(asym_main, argv, capsys)
    assert rc == 2, (out, err)
    assert err.startswith("error:") and err.strip().count("\n") == 0, err
    assert "Traceback" not in err
    assert word.lower() in err.lower(), err
    assert out == ""


VALIDATION = [
    (["sweep", "--kind", "theory", "--grid", "alpha=0.2:5:100000", "--grid", "eta=0:3:100000",
      "--grid", "lam=0.01:1:100000"], "at most 1e+06"),  # a later audit: 1e15 points hung
    (["compare", "--d", "1"], "d must be"),
    (["compare", "--seeds", "0"], "seeds"),
    (["compare", "--alpha", "1,,2"], "empty item"),
    (["compare", "--alpha", "1", "--out", MISSING + "/x.csv"], "--out"),
    (["compare", "--alpha", "1", "--plot", MISSING + "/x.svg"], "--plot"),
    (["compare", "--model", "foo"], "invalid choice"),
    (["compare", "--n-jobs", "0"], "n-jobs"),
    (["compare", "--mod", "srf"], "unrecognized"),
    (["compare", "--alpha", "1", "--sigma", "z**100"], "exponent"),
    (["spectrum", "--a1", "0.5"], "a1"),
    (["spectrum", "--a1", "-0.1"], "a1"),
    (["spectrum", "--a2", "0.5"], "a2"),
    (["spectrum", "--plot", MISSING + "/a.png"], "--plot"),
    (["spectrum", "--d", "4"], "d must be"),
    (["multistep", "--eta", "1,,2"], "empty item"),
    (["multistep", "--out", MISSING + "/x.csv"], "--out"),
    (["multistep", "--alpha0", "nan"], "finite"),
    (["multistep", "--d", "x"], "integer"),
    (["sweep", "--kind", "theory", "--grid", "alpha=1,,2"], "empty item"),
    (["sweep", "--kind", "theory", "--grid", "alpha=1,2,"], "empty item"),
    (["sweep", "--kind", "theory", "--grid", "foo=1"], "grid parameter"),
    (["sweep", "--kind", "theory", "--grid", "alpha"], "NAME="),
    (["sweep", "--kind", "theory", "--grid", "alpha=1", "--store", MISSING + "/s.sqlite"],
     "--store"),
    (["sweep", "--kind", "theory", "--grid", "alpha=1", "--out", MISSING + "/s.csv"], "--out"),
    (["sweep", "--kind", "theory", "--n-jobs", "0"], "n-jobs"),
    (["sweep", "--kind", "srf", "--seeds", "0"], "seeds"),
    (["sweep", "--kind", "srf", "--d", "1"], "d must be"),
    (["sweep", "--kind", "srf", "--grid", "alpha=-1,2"], "alpha"),
]


@pytest.mark.parametrize("argv,word", VALIDATION, ids=lambda v: " ".join(v) if
                         isinstance(v, list) else None)
def test_validation_cli(argv, word, capsys):
    rc, out, err = run(val_main, argv, capsys)
    assert rc == 2, (out, err)
    assert err.startswith("error:") and err.strip().count("\n") == 0, err
    assert word.lower() in err.lower(), err


@pytest.mark.parametrize("argv,word", [
    (["run", "--store", MISSING + "/x.csv"], "--store"),
    (["run", "--models", "srf,,rf", "--store", "IGNORED"], "empty item"),
    (["report", "--d", "x"], "integer"),
    (["run", "--time-budget", "0"], "time-budget"),
    (["run", "--n-job", "2"], "unrecognized"),
])
def test_matrix_cli(argv, word, capsys, tmp_path):
    argv = [str(tmp_path / "s.csv") if a == "IGNORED" else a for a in argv]
    rc, out, err = run(matrix_main, argv, capsys)
    assert rc == 2 and err.startswith("error:") and err.strip().count("\n") == 0, err
    assert word.lower() in err.lower(), err


@pytest.mark.parametrize("argv,word", [
    (["--outdir", "/proc/giantstep-no", "bounds"], "--outdir"),
    (["nosuch"], "unknown figure"),
    (["--out", "x", "bounds"], "unrecognized"),
])
def test_figures_cli(argv, word, capsys):
    rc, out, err = run(fig_main, argv, capsys)
    assert rc == 2 and err.startswith("error:") and err.strip().count("\n") == 0, err
    assert word.lower() in err.lower(), err


def test_output_into_a_regular_file_as_directory(tmp_path, capsys):
    f = tmp_path / "file.txt"
    f.write_text("x")
    rc, out, err = run(asym_main, ["curve", "--alpha", "1", "--out", str(f / "x.csv")], capsys)
    assert rc == 2 and "--out" in err and out == ""
    rc, out, err = run(asym_main, ["curve", "--alpha", "1", "--out", str(tmp_path)], capsys)
    assert rc == 2 and "directory" in err


def complex_fn(z):
    return np.asarray(z) * (1 + 1j)


API = [
    (lambda: risk(1.0, sigma=complex_fn), ValueError, "complex"),
    (lambda: risk(-1.0), ValueError, "alpha"),
    (lambda: risk(1.0, alpha0=0), ValueError, "alpha0"),
    (lambda: risk(1.0, lam=-1), ValueError, "lam"),
    (lambda: risk(1.0, beta=float("nan")), ValueError, "beta"),
    (lambda: risk(1.0, sigma="z**100"), ValueError, "exponent"),
    (lambda: risk(1.0, sigma=lambda z: np.exp(np.asarray(z) ** 2)), ValueError, "grows"),
    (lambda: risk_curve([]), ValueError, "at least one"),
    (lambda: risk(True), TypeError, "alpha"),
    (lambda: get_function(42), TypeError, "function"),
    (lambda: Function.from_callable(lambda z: np.full(np.shape(z), "a")), ValueError, "real"),
    (lambda: to_sympy("9**9**9"), ValueError, "exponent"),
    (lambda: to_sympy("2.0**1000.5"), ValueError, "exponent"),
    (lambda: to_sympy("10.0**400"), ValueError, "exponent"),
    (lambda: SolverConfig(rtol=0), ValueError, "rtol"),
    (lambda: hermite_expansion("z1**50"), ValueError, "degree"),
    (lambda: parse_grid("1,,2"), Exception, "empty item"),
]


@pytest.mark.parametrize("call,exc,word", API)
def test_api(call, exc, word):
    with pytest.raises(exc) as info:
        call()
    msg = str(info.value)
    assert word.lower() in msg.lower() and "\n" not in msg.strip(), msg


def test_complex_with_zero_imaginary_part_is_accepted():
    r = risk(1.0, sigma=lambda z: np.tanh(np.asarray(z)) + 0j)
    assert r.converged and r.risk == pytest.approx(risk(1.0).risk, rel=1e-9)


def test_api_defaults_are_the_cli_defaults(capsys):
    assert asym_main(["curve", "--csv", "--alpha", "2", "--quiet"]) == 0
    out = capsys.readouterr().out.splitlines()
    cli_risk = float(out[1].split(",")[out[0].split(",").index("risk")])
    assert risk(2.0).risk == pytest.approx(cli_risk, rel=1e-10)


@pytest.mark.parametrize("n", [12, 20, 31])
def test_degree_twenty_monomials_are_fast_and_exact(n):
    t0 = time.perf_counter()
    ex = hermite_expansion(f"z1**{n}")
    from asymptotics.multiindex.staircase import report

    text = report(f"z1**{n}")
    elapsed = time.perf_counter() - t0
    assert elapsed < 1.0, elapsed
    coeffs = {t.alpha[0]: t.coefficient for t in ex.terms}
    for deg, c in monomial_to_hermite(n):  # n!/(k!(n-2k)! 2^k) He_{n-2k}
        k = (n - deg) // 2
        assert coeffs[deg] == pytest.approx(
            math.factorial(n) / (math.factorial(k) * math.factorial(n - 2 * k) * 2**k))
        assert c == math.factorial(n) // (math.factorial(k) * math.factorial(n - 2 * k) * 2**k)
    # the norm of C_l from the closed form equals that of the explicit tensor
    assert f"leap_index={2 if n % 2 == 0 else 1}" in text


def test_unfolding_matches_the_explicit_tensor():
    ex = hermite_expansion("(z1 + 2*z2)**3*z3 + z1*z2**2 - z3**4")
    for l in ex.degrees:
        if l == 0:
            continue
        C = ex.coefficient_tensor(l).reshape(ex.k, -1)
        A = ex.unfolding(l)
        np.testing.assert_allclose(A @ A.T, C @ C.T, rtol=1e-12, atol=1e-9)
        assert ex.tensor_norm(l) == pytest.approx(np.linalg.norm(C), rel=1e-12)


def test_compare_warns_when_d_or_seeds_are_too_small(capsys):
    rc, out, err = run(val_main, ["compare", "--d", "8", "--seeds", "2", "--alpha", "1",
                                  "--quiet"], capsys)
    assert rc == 0
    assert "not meaningful" in err and "d=8" in err and "seeds=2" in err
    header, row = out.splitlines()[:2]
    assert "caveat" in header.split(",")


@pytest.mark.parametrize("suffix", [".svg", ".pdf", ".png"])
def test_curve_plot_every_format(tmp_path, capsys, suffix):
    path = tmp_path / f"x{suffix}"
    assert asym_main(["curve", "--csv", "--alpha", "0.5,1,2", "--quiet", "--plot",
                      str(path)]) == 0
    out = capsys.readouterr().out
    assert path.stat().st_size > 1000
    assert not list(tmp_path.glob(".*tmp*"))  # no leftover temporary file
    header = out.splitlines()[0].split(",")
    assert "risk_rf" in header  # the plotted random-features baseline is in the CSV
    rows = [ln.split(",") for ln in out.splitlines()[1:]]
    from asymptotics import risk as R

    for row in rows:
        a = float(row[header.index("alpha")])
        assert float(row[header.index("risk_rf")]) == pytest.approx(R(a, eta=0.0).risk,
                                                                    rel=1e-8)


def test_progress_lines_when_not_a_tty():
    stream = io.StringIO()
    with Progress(10, "work", unit="task", interval=0.0, stream=stream) as bar:
        for _ in range(10):
            bar.update(1)
    lines = stream.getvalue().splitlines()
    assert lines and lines[0].startswith("work: 1/10 task")
    assert "10/10" in lines[-1]
    quiet = io.StringIO()
    with Progress(5, "work", enabled=False, interval=0.0, stream=quiet) as bar:
        bar.update(5)
    assert quiet.getvalue() == ""


SUBPROCESS = [
    (["-m", "asymptotics", "curve", "--plo", "1000"], 2, "unrecognized"),
    (["-m", "asymptotics", "hermite", "z1**12"], 0, "leap_index=2"),
    (["-m", "asymptotics", "hermite", "He30(z1)*He10(z2)"], 0, "leap_index=40"),
    (["-m", "asymptotics", "curve", "--alpha", "1", "--sigma", "9**9**9"], 2, "exponent"),
    (["-m", "validation", "compare", "--d", "0"], 2, "d must be"),
    (["-m", "figures", "--version"], 0, "giantstep"),
    (["-m", "asymptotics", "--version"], 0, "giantstep"),
    (["-m", "validation", "sweep", "--version"], 0, "giantstep"),
]


@pytest.mark.parametrize("argv,code,word", SUBPROCESS)
def test_subprocess(argv, code, word):
    t0 = time.monotonic()
    proc = subprocess.run([sys.executable, *argv], capture_output=True, text=True, timeout=60)
    assert proc.returncode == code, proc.stderr
    assert "Traceback" not in proc.stderr
    assert word in proc.stdout + proc.stderr
    assert time.monotonic() - t0 < 30
