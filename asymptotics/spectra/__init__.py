"""Limiting spectra of the learned features and weights, bulk and outliers (docs/THEORY.md §16)."""

from asymptotics.spectra.api import clear_cache, spectrum
from asymptotics.spectra.law import Outlier, SpectralLaw
from asymptotics.spectra.twostep import TwoStepWeights, two_step_weights

__all__ = ["Outlier", "SpectralLaw", "TwoStepWeights", "clear_cache", "spectrum",
           "two_step_weights"]
