"""Limiting spectra of the learned features and weights, bulk and outliers (docs/THEORY.md §16)."""

from asymptotics.spectra.api import spectrum
from asymptotics.spectra.law import Outlier, SpectralLaw

__all__ = ["Outlier", "SpectralLaw", "spectrum"]
