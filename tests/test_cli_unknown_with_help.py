"""An unknown option beside ``--help`` is named (exit 2), not hidden by the help text; the
parameter a bad expression belongs to is named; a report names the missing ``--out`` first."""

from __future__ import annotations

import pytest

from asymptotics.cli.common import Parser


def _parser() -> Parser:
    p = Parser(prog="x")
    p.add_argument("--quick", action="store_true")
    p.add_argument("--alpha", type=float)
    return p


@pytest.mark.parametrize("argv", [["--qui", "--help"], ["--thr", "1", "-h"],
                                  ["--alpha", "1", "--bogus=2", "--help"]])
def test_unknown_option_before_help_is_an_error(argv, capsys):
    with pytest.raises(SystemExit) as exc:
        _parser().parse_args(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("error: unrecognized arguments:") and err.count("\n") == 1


@pytest.mark.parametrize("argv", [["--help"], ["--quick", "--help"], ["--alpha", "-1", "-h"],
                                  ["--alpha=2", "--help"], ["--help", "--", "--x"]])
def test_help_alone_or_with_known_options_prints_help(argv, capsys):
    with pytest.raises(SystemExit) as exc:
        _parser().parse_args(argv)
    assert exc.value.code == 0
    assert capsys.readouterr().out.startswith("usage: x")


def test_subcommand_options_reach_the_subparser(capsys):
    p = Parser(prog="x")
    sub = p.add_subparsers(dest="cmd")
    s = sub.add_parser("run")
    s.add_argument("--d", type=int)
    with pytest.raises(SystemExit) as exc:
        p.parse_args(["run", "--d", "3", "--help"])
    assert exc.value.code == 0
    with pytest.raises(SystemExit) as exc:
        p.parse_args(["run", "--dd", "3", "--help"])
    assert exc.value.code == 2


@pytest.mark.parametrize("name,value,says", [("target", "z1**100", "exponent 100"),
                                             ("sigma", "foo", "unknown function")])
def test_spectrum_config_names_the_parameter(name, value, says):
    from validation.spectrum.model import StepConfig

    with pytest.raises(ValueError, match=rf"^{name} = '.*': .*{says}"):
        StepConfig(d=64, a1=0.1, **{name: value})


def test_matrix_report_names_missing_out_first(tmp_path, capsys):
    from validation.matrix.cli import main

    code = main(["report", "--store", str(tmp_path / "none" / "m.csv"),
                 "--out", str(tmp_path / "missing" / "R.md")])
    assert code == 2
    assert capsys.readouterr().err.startswith("error: --out:")
