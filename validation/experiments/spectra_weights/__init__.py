"""The predicted spectra of the first-layer weights beyond one step (docs/THEORY.md §16.6-16.7):
``steps`` (several steps, constant and +-1 readouts, against a Monte Carlo of the trained network;
a section of validation/reports/SPECTRA_THEORY.md) and ``twostep`` (the two-step
eta ~ p^(1/2 + a) outlier count at the simulated d, a column of validation/reports/SPECTRA.md)."""
