"""The asymptotics command line."""

import io
import subprocess
import sys

import pandas as pd


def run(*args):
    return subprocess.run([sys.executable, "-m", "asymptotics", *args], capture_output=True,
                          text=True, timeout=300)


def test_curve_command_from_the_issue(tmp_path):
    out = tmp_path / "c.csv"
    png = tmp_path / "c.png"
    p = run("curve", "--csv", "--sigma", "tanh", "--target", "tanh", "--alpha0", "0.5",
            "--eta", "1",
            "--lam", "0.01", "--beta", "1", "--alpha", "0.2,1.1333,3", "--out", str(out),
            "--plot", str(png))
    assert p.returncode == 0, p.stderr
    df = pd.read_csv(io.StringIO(p.stdout))
    assert list(df.columns[:3]) == ["alpha", "risk", "converged"]
    assert list(df["alpha"]) == [0.2, 1.1333, 3.0]
    assert df["converged"].all()
    assert out.exists() and png.stat().st_size > 10_000


def test_linspace_grid():
    p = run("curve", "--csv", "--alpha", "0.5:2:4", "--quiet")
    df = pd.read_csv(io.StringIO(p.stdout))
    assert list(df["alpha"]) == [0.5, 1.0, 1.5, 2.0]


def test_bad_input_exits_2_with_one_line():
    for args, word in [(("--beta", "-1"), "beta"), (("--alpha", "0:1:3"), "alpha"),
                       (("--sigma", "nope"), "nope"), (("--lam", "nan"), "lam")]:
        p = run("curve", *args)
        assert p.returncode == 2
        lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
        assert len(lines) == 1 and word in lines[0] and lines[0].startswith("error:")


def test_help_documents_conventions():
    p = run("curve", "--help")
    assert p.returncode == 0 and "sum_i (y_i - f(x_i))^2 + lam |a|^2" in p.stdout


def test_model_option():
    base = ("curve", "--csv", "--sigma", "relu", "--target", "relu", "--alpha0", "20", "--eta", "3",
            "--alpha", "5", "--quiet")
    out = {}
    for model in ("srf", "network", "rf"):
        args = base if model != "rf" else tuple(a for a in base if a not in ("--eta", "3"))
        p = run(*args, "--model", model)
        assert p.returncode == 0, p.stderr
        df = pd.read_csv(io.StringIO(p.stdout))
        assert df["model"].iloc[0] == model
        out[model] = df
    assert out["rf"]["eta"].iloc[0] == 0.0
    assert out["network"]["risk"].iloc[0] != out["srf"]["risk"].iloc[0]
    p = run(*base, "--model", "nn")
    assert p.returncode == 2 and "model" in p.stderr
    p = run(*base, "--model", "rf")  # an eta for random features is a contradiction
    assert p.returncode == 2 and "--model rf" in p.stderr
