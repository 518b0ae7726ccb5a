"""The kernel-cache guard: an edit of a kernel that another cached kernel inlines must not leave
the stale compiled code in use (numba alone only checks the caller's own file)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _run(tmp: Path, guarded: bool) -> str:
    code = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(tmp)!r})
        sys.path.insert(0, {str(ROOT)!r})
        if {guarded}:
            from asymptotics.core.kernel_cache import guard
            guard(["callee", "caller"])
        import caller
        print(caller.g(1.0))
    """)
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp / "cache"))
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, env=env).stdout.strip()


def _write(tmp: Path, value: float) -> None:
    (tmp / "callee.py").write_text(
        "import numba\n\n\n@numba.njit(cache=True)\ndef f(x):\n"
        f"    return x + {value}\n")


def test_edited_callee_recompiles_cached_caller(tmp_path):
    (tmp_path / "caller.py").write_text(
        "import numba\n\nfrom callee import f\n\n\n@numba.njit(cache=True)\ndef g(x):\n"
        "    return 2.0 * f(x)\n")
    _write(tmp_path, 1.0)
    assert _run(tmp_path, guarded=True) == "4.0"
    _write(tmp_path, 2.0)
    # numba alone keeps the stale inlined callee (the reason for the guard) ...
    assert _run(tmp_path, guarded=False) == "4.0"
    # ... the guard sees the changed source and flushes the cached kernels
    assert _run(tmp_path, guarded=True) == "6.0"
    assert _run(tmp_path, guarded=True) == "6.0"


def test_every_kernel_module_is_guarded():
    from asymptotics.core.kernel_cache import KERNEL_MODULES

    with_kernels = sorted(
        ".".join(p.relative_to(ROOT).with_suffix("").parts)
        for p in (ROOT / "asymptotics").rglob("*.py")
        if "\n@kernel(" in p.read_text() and "spiked" not in p.parts)
    assert sorted(KERNEL_MODULES) == with_kernels
