"""Every command: --version, complete --help (each option with help text and its default), one
parser class (no abbreviations, one-line errors), console scripts beside ``python -m``, and the
compact table of ``curve``."""

from __future__ import annotations

import argparse
import importlib
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

#: module of each command -> how it is run
COMMANDS = {
    "asymptotics.cli.curve": "python -m asymptotics",
    "validation.cli": "python -m validation",
    "validation.matrix.cli": "python -m validation.matrix",
    "validation.spectrum.cli": "python -m validation.spectrum",
    "validation.spiked.cli": "python -m validation.spiked",
    "validation.matrix.finite_width": "python -m validation.matrix.finite_width",
    "figures.__main__": "python -m figures",
    "figures.multistep_report": "python -m figures.multistep_report",
    "figures.spectra_report": "python -m figures.spectra_report",
}


def _walk(parser: argparse.ArgumentParser, path: str) -> list[str]:
    bad = []
    desc = (parser.description or "").strip()
    if desc and desc[-1] not in ".)":
        bad.append(f"{path}: description cut off: ...{desc[-40:]!r}")
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                bad += _walk(sub, f"{path} {name}")
            continue
        if isinstance(action, (argparse._HelpAction, argparse._VersionAction)):
            continue
        name = f"{path} {action.option_strings[0] if action.option_strings else action.dest}"
        text = action.help or ""
        if not text.strip() or text == argparse.SUPPRESS:
            bad.append(f"{name}: no help text")
            continue
        flag = isinstance(action, (argparse._StoreTrueAction, argparse._StoreFalseAction))
        if (action.option_strings and not flag
                and action.default not in (None, False, True, argparse.SUPPRESS, [])
                and "default" not in text):
            bad.append(f"{name}: default {action.default!r} not stated in its help")
    return bad


@pytest.mark.parametrize("module", sorted(COMMANDS))
def test_every_option_has_help_and_its_default(module):
    parser = importlib.import_module(module).build_parser()
    assert parser.allow_abbrev is False
    assert _walk(parser, COMMANDS[module]) == []


@pytest.mark.parametrize("module", sorted(COMMANDS))
def test_every_command_has_version(module, capsys):
    parser = importlib.import_module(module).build_parser()
    with pytest.raises(SystemExit) as exc:
        parser.parse_args(["--version"])
    assert exc.value.code == 0
    assert capsys.readouterr().out.startswith("giantstep ")


def test_console_scripts_point_at_the_commands():
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    targets = {v.split(":")[0] for v in scripts.values()}
    for module in COMMANDS:
        assert module in targets or module.replace(".cli", ".__main__") in targets \
            or module in {t.replace(".__main__", ".cli") for t in targets}, module
    for name, target in scripts.items():
        mod, func = target.split(":")
        assert callable(getattr(importlib.import_module(mod), func)), name


def test_curve_prints_a_compact_table_and_the_csv_on_request(tmp_path):
    out = tmp_path / "c.csv"
    run = subprocess.run([sys.executable, "-m", "asymptotics", "curve", "--alpha", "1,2",
                          "--model", "srf", "--out", str(out), "--quiet"],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert lines[0].split() == ["alpha", "risk", "risk_rf", "status"]
    assert len(lines) == 3 and "," not in run.stdout
    import pandas as pd

    df = pd.read_csv(out)
    assert {"alpha", "risk", "risk_rf", "converged", "status", "V1", "model"} <= set(df.columns)
    for line, (_, row) in zip(lines[1:], df.iterrows(), strict=True):
        alpha, risk, risk_rf = (float(v) for v in line.split())
        assert alpha == row["alpha"]
        assert risk == pytest.approx(row["risk"], rel=1e-5)
        assert risk_rf == pytest.approx(row["risk_rf"], rel=1e-5)


def test_cli_warnings_are_one_line_without_paths():
    run = subprocess.run([sys.executable, "-m", "asymptotics", "curve", "--alpha", "1",
                          "--target", "0", "--quiet"], capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0, run.stderr
    assert ".py:" not in run.stderr and "Warning:" not in run.stderr
    assert all(line.startswith("warning:") for line in run.stderr.splitlines())
