"""giantstep.asymptotics: sharp asymptotics of two-layer networks after one giant step."""

from typing import TYPE_CHECKING

# isort: off
from asymptotics.core import numba_cache  # noqa: F401  (first: kernels are cached outside the package)
# isort: on
from asymptotics.api.grid import risk_grid
from asymptotics.api.risk import (
    ConvergenceError,
    RiskResult,
    build_problem,
    risk,
    risk_curve,
    solve_point,
)
from asymptotics.coefficients.callables import QuadratureWarning
from asymptotics.coefficients.cget import conditional_coefficients, ge_coefficients
from asymptotics.coefficients.functions import Function, available, get_function
from asymptotics.core.kernel_cache import guard as _guard_kernel_cache
from asymptotics.equations.solver import SolverConfig
from asymptotics.measures.spectral import (
    SpectralMeasure,
    empirical_measure,
    from_weights,
    marchenko_pastur,
)
from asymptotics.step.srf import SpikeMapping, common_row_ratio, srf_mapping

if TYPE_CHECKING:  # (the lazy entry points below, for type checkers and the API docs)
    from asymptotics.api.by_step import risk_by_step
    from asymptotics.multiindex.polynomial_spikes import (
        PolynomialSpikeResult,
        polynomial_spike_risk,
    )
    from asymptotics.multiindex.steps import steps_mapping
    from asymptotics.multiindex.steps_risk import risk_steps, state_from_weights
    from asymptotics.spectra import SpectralLaw, spectrum
    from asymptotics.spiked import (
        SpikedResult,
        readout_mapping,
        risk_readout,
        risk_readout_curve,
        risk_spiked,
        risk_spiked_curve,
        risk_spiked_grid,
        risk_spiked_semi_empirical,
        spike_contributions,
    )

#: the entry points imported on first use (PEP 562): the several-steps, K-group and spectra
#: modules pull in most of SciPy, which a first one-step point does not need (the cold start)
_LAZY = {
    "risk_by_step": "asymptotics.api.by_step",
    "PolynomialSpikeResult": "asymptotics.multiindex.polynomial_spikes",
    "polynomial_spike_risk": "asymptotics.multiindex.polynomial_spikes",
    "steps_mapping": "asymptotics.multiindex.steps",
    "risk_steps": "asymptotics.multiindex.steps_risk",
    "state_from_weights": "asymptotics.multiindex.steps_risk",
    "SpectralLaw": "asymptotics.spectra",
    "spectrum": "asymptotics.spectra",
    **dict.fromkeys(("SpikedResult", "readout_mapping", "risk_readout", "risk_readout_curve",
                     "risk_spiked", "risk_spiked_curve", "risk_spiked_grid",
                     "risk_spiked_semi_empirical", "spike_contributions"),
                    "asymptotics.spiked"),
}


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'asymptotics' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # (once: later lookups are plain)
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


_guard_kernel_cache()  # cached kernels never outlive an edit of a kernel they inline

__all__ = [
    "ConvergenceError", "Function", "QuadratureWarning", "RiskResult", "SolverConfig",
    "SpectralMeasure", "SpikeMapping",
    "available", "build_problem", "common_row_ratio", "conditional_coefficients",
    "empirical_measure", "from_weights", "ge_coefficients", "get_function", "marchenko_pastur",
    "risk", "risk_curve", "risk_grid", "solve_point", "srf_mapping", "__version__",
    "SpikedResult", "risk_spiked", "risk_spiked_curve", "risk_spiked_grid",
    "risk_spiked_semi_empirical", "spike_contributions", "readout_mapping", "risk_readout",
    "risk_readout_curve", "risk_by_step", "risk_steps", "state_from_weights", "steps_mapping",
    "PolynomialSpikeResult", "polynomial_spike_risk", "SpectralLaw", "spectrum",
]

def _version() -> str:
    from asymptotics.core.meta import version

    return version()


__version__ = _version()
