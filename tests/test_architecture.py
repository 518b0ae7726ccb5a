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
        graph = grimp.build_graph(*PACKAGES, cache_dir=None, exclude_type_checking_imports=True)
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


def _python_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.glob("*.py"))


def test_theory_folders_are_small_and_say_their_role() -> None:
    """asymptotics/: every folder has an __init__ whose docstring says its role, at most ~10
    modules a folder, at most ~400 lines a module."""
    import ast

    folders = [d for d in (ROOT / "asymptotics").iterdir()
               if d.is_dir() and not d.name.startswith(("_", "."))]
    assert len(folders) >= 8
    problems = []
    for d in folders:
        init = d / "__init__.py"
        if not init.exists() or not ast.get_docstring(ast.parse(init.read_text())):
            problems.append(f"{d.name}: no __init__ docstring")
        mods = [p for p in _python_files(d) if p.name != "__init__.py"]
        if len(mods) > 10:
            problems.append(f"{d.name}: {len(mods)} modules")
        for p in mods:
            n = len(p.read_text().splitlines())
            if n > 420:
                problems.append(f"{p.relative_to(ROOT)}: {n} lines")
    flat = [p.name for p in _python_files(ROOT / "asymptotics")]
    assert sorted(flat) == ["__init__.py", "__main__.py"], flat
    assert not problems, problems


def test_validation_is_one_house_by_concept() -> None:
    """validation/: at most 8 top-level modules (the package, its command line, the compare
    subcommand, the data paths), every folder a concept with an __init__ docstring saying its
    role and at most 10 modules (as for asymptotics/, the __init__ aside), no module over 450
    lines."""
    import ast

    top = _python_files(ROOT / "validation")
    assert len(top) <= 8, [p.name for p in top]
    folders = [d for d in (ROOT / "validation").rglob("*")
               if d.is_dir() and (d / "__init__.py").exists()]
    assert {"protocol", "matrix", "multistep", "campaign", "experiments"} <= {
        d.name for d in folders}
    problems = []
    for d in folders:
        if not ast.get_docstring(ast.parse((d / "__init__.py").read_text())):
            problems.append(f"{d.relative_to(ROOT)}: no __init__ docstring")
        mods = [p for p in _python_files(d) if p.name != "__init__.py"]
        if len(mods) > 10:
            problems.append(f"{d.relative_to(ROOT)}: {len(mods)} modules")
    for p in sorted((ROOT / "validation").rglob("*.py")):
        n = len(p.read_text().splitlines())
        if n > 450:
            problems.append(f"{p.relative_to(ROOT)}: {n} lines")
    assert not problems, problems


def test_ridge_and_test_error_are_written_once() -> None:
    """The protocol's ridge solve and its Monte Carlo test error live in
    validation/protocol/montecarlo.py (``ridge_readout``, ``ridge_test_errors``); the drivers
    call them instead of accumulating their own Gram matrix and test sums."""
    own = []
    for p in sorted((ROOT / "validation" / "multistep").glob("*.py")):
        text = p.read_text()
        if "gram += F.T @ F" in text or "cho_solve" in text:
            own.append(p.name)
    assert not own, own


def test_no_module_imports_another_modules_private_names() -> None:
    """`from X import _name` across modules of the three packages: none (a name another
    module needs is public)."""
    import ast

    bad = []
    for pkg in PACKAGES:
        for f in sorted((ROOT / pkg).rglob("*.py")):
            for node in ast.walk(ast.parse(f.read_text())):
                if isinstance(node, ast.ImportFrom) and (
                        node.level or (node.module or "").split(".")[0] in PACKAGES):
                    bad += [f"{f.relative_to(ROOT)}: {node.module}.{a.name}" for a in node.names
                            if a.name.startswith("_") and not a.name.startswith("__")]
    assert not bad, bad
