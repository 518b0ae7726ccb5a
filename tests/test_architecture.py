"""The layers of docs/ARCHITECTURE.md hold: the import-linter contracts of pyproject.toml are kept
(figures -> validation -> asymptotics, command lines above domain code, no cycles among the
modules of a package), and the whole import graph of the three packages has no cycle at all."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("asymptotics", "validation", "figures")


def test_import_linter_contracts_are_kept() -> None:
    pytest.importorskip("importlinter", reason="install the test extra: pip install -e .[test]")
    exe = shutil.which("lint-imports")
    cmd = [exe] if exe else [sys.executable, "-c",
                             "import sys; from importlinter.cli import lint_imports_command; "
                             "sys.exit(lint_imports_command())"]
    p = subprocess.run([*cmd, "--no-cache"], cwd=ROOT, capture_output=True, text=True,
                       timeout=300, env={**__import__("os").environ, "PYTHONPATH": str(ROOT)})
    assert p.returncode == 0, p.stdout[-4000:] + p.stderr[-2000:]
    assert "0 broken" in p.stdout, p.stdout[-2000:]


def test_no_import_cycle_between_any_two_modules() -> None:
    grimp = pytest.importorskip("grimp")
    sys.path.insert(0, str(ROOT))
    try:
        graph = grimp.build_graph(*PACKAGES, cache_dir=None)
    finally:
        sys.path.remove(str(ROOT))
    modules = sorted(graph.modules)
    # Tarjan's strongly connected components over module -> imported module (packages'
    # __init__ included): any component with more than one module is a cycle
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []
    counter = [0]

    def strongconnect(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.find_modules_directly_imported_by(v)):
            if w not in index:
                strongconnect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                cycles.append(sorted(comp))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    for m in modules:
        if m not in index:
            strongconnect(m)
    # a package importing its own submodules in __init__ (re-exports) is not a cycle of concern
    # unless a submodule imports the package back; those show up as components here too
    assert not cycles, f"import cycles: {cycles}"
