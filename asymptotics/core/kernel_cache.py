"""Keep numba's on-disk cache of compiled kernels consistent with the sources they inline.

numba (``cache=True``) re-compiles a cached kernel when the source file that defines it changes,
but not when a kernel it calls, defined in another file, changes: after an edit of
``spectral.measure_moments`` the cached ``fixed_point`` kernels would silently keep
the old code. :func:`guard` hashes the source of every given kernel module; when the hash differs
from the one stamped beside the cache, it flushes the cache index of every kernel of those modules
(they recompile on first use) and writes the new stamp. A cache that cannot be written (a
read-only cache) is not used for those kernels when its stamp differs (they compile in memory);
any other failure leaves numba's behaviour.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
from pathlib import Path

STAMP = "giantstep-kernels.stamp"
#: every module of the theory that defines numba kernels (tests/test_kernel_cache.py checks the
#: list is complete)
KERNEL_MODULES = [
    "asymptotics.coefficients.quadrature",
    "asymptotics.coefficients.line_moments",
    "asymptotics.coefficients.step_quadrature",
    "asymptotics.coefficients.step_kernels",
    "asymptotics.measures.marchenko_pastur",
    "asymptotics.measures.channels",
    "asymptotics.measures.spectral",
    "asymptotics.equations.fixed_point",
    "asymptotics.equations.mixing",
    "asymptotics.equations.solver_kernels",
    "asymptotics.equations.small_dense",
    "asymptotics.equations.node_sums",
    "asymptotics.equations.node_sums_k",
    "asymptotics.equations.two_groups",
    "asymptotics.equations.mean_lsq",
    "asymptotics.equations.paired.half_sums",
    "asymptotics.measures.resolvent_kernels",
    "asymptotics.multiindex.compiled.lattice",
    "asymptotics.multiindex.compiled.clenshaw",
    "asymptotics.multiindex.compiled.softplus",
    "asymptotics.multiindex.compiled.poly_rows",
    "asymptotics.spectra.traces.outside_kernels",
    "asymptotics.spectra.traces.outside_scalar",
    "asymptotics.spectra.traces.srf_kernels",
    "asymptotics.spectra.traces.srf_rowvar",
    "asymptotics.spectra.traces.net_jacobian",
    "asymptotics.network.compiled.diagonal",
    "asymptotics.network.compiled.coupled",
    "asymptotics.network.compiled.complete",
    "asymptotics.network.compiled.lowrank",
    "asymptotics.network.compiled.cholesky",
    "asymptotics.network.compiled.kinked",
    "asymptotics.network.compiled.isotropic",
]


def _dispatchers(module) -> list:
    out = []
    for value in vars(module).values():
        cache = getattr(value, "_cache", None)
        if cache is not None and hasattr(cache, "flush") and hasattr(cache, "cache_path"):
            if getattr(value, "__module__", None) == module.__name__:
                out.append(value)
    return out


def guard(module_names: list[str] = KERNEL_MODULES) -> bool:
    """Flush the cached kernels of ``module_names`` if any of their sources changed since the
    cache was stamped. Returns True when a flush happened. The sources are hashed without
    importing them: where the stamp matches (every start but the first after an edit) only the
    first module is imported, so that ``import asymptotics`` does not pull in the several-steps
    and spectra modules (the cold start)."""
    try:
        return _guard(module_names)
    except Exception:  # noqa: BLE001 (a numba change: numba's own cache rules)
        return False


def _source(name: str) -> Path:
    """The file of module ``name`` of this package, found without importing it (a package's
    ``__init__`` would import its submodules)."""
    root = Path(__file__).resolve().parents[1]  # the asymptotics package
    parts = name.split(".")
    if parts[0] != root.name:
        spec = importlib.util.find_spec(name)
        return Path(spec.origin)
    base = root.joinpath(*parts[1:])
    return base / "__init__.py" if base.is_dir() else base.with_suffix(".py")


def _stamped(dispatcher, stamp: str) -> bool:
    """Whether the cache beside ``dispatcher`` carries ``stamp`` (raises OSError)."""
    path = Path(dispatcher._cache.cache_path) / STAMP
    return path.exists() and path.read_text().strip() == stamp


def _guard(module_names: list[str]) -> bool:
    digest = hashlib.sha256()
    for name in module_names:
        digest.update(_source(name).read_bytes())
    stamp = digest.hexdigest()
    if module_names:  # (the first module's kernels: the stamp, without importing the rest)
        head = next(iter(_dispatchers(importlib.import_module(module_names[0]))), None)
        try:
            if head is not None and _stamped(head, stamp):
                return False
        except OSError:
            pass
    modules = [importlib.import_module(name) for name in module_names]
    dispatchers = [d for m in modules for d in _dispatchers(m)]
    if not dispatchers:
        return False
    try:
        if _stamped(dispatchers[0], stamp):
            return False
        path = Path(dispatchers[0]._cache.cache_path) / STAMP
        for d in dispatchers:
            d._cache.flush()
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(stamp + "\n")
    except OSError:
        from numba.core.caching import NullCache

        for d in dispatchers:  # a stale read-only cache: compile these in memory
            d._cache = NullCache()
        return False
    return True
