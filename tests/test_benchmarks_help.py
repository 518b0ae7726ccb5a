"""Every script in ``benchmarks/`` answers ``--help`` with its usage instead of starting its
(minutes-long) run: it builds an ``argparse`` parser or checks for ``--help`` itself (checked
in the source, cheaply); the main benchmark's ``--help`` is run once."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = sorted(p for p in (ROOT / "benchmarks").glob("*.py") if p.name != "__init__.py")


def _answers_help(tree: ast.Module) -> bool:
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr == "ArgumentParser":
            return True
        if isinstance(node, ast.Constant) and node.value == "--help":
            return True
    return False


def _has_main_block(tree: ast.Module) -> bool:
    return any(isinstance(n, ast.If) and "__main__" in ast.unparse(n.test) for n in tree.body)


@pytest.mark.parametrize("path", SCRIPTS, ids=lambda p: p.name)
def test_script_answers_help(path: Path) -> None:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    if not _has_main_block(tree):
        pytest.skip("a module of helpers, not a script")
    assert _answers_help(tree), f"{path.name} has no argparse parser and no --help check"


def test_bench_engine_help_prints_usage_and_exits_0() -> None:
    out = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_engine.py"), "--help"],
                         capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("usage: bench_engine.py") and "--mapping-seed" in out.stdout
    assert "sRF point" not in out.stdout.split("\n\n", 1)[0]  # nothing measured
