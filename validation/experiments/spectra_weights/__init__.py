"""The predicted spectra beyond one step (docs/THEORY.md §16.6-16.8): ``steps`` (the weights
after several steps, constant and +-1 readouts, against a Monte Carlo of the trained network; a
section of validation/reports/SPECTRA_THEORY.md), ``features`` (the learned features after
several steps against the network's and the sRF theory; another section) and ``twostep`` (the
two-step eta ~ p^(1/2 + a) outlier count at the simulated d, a column of
validation/reports/SPECTRA.md); ``summary`` (the summary of validation/reports/SPECTRA_THEORY.md,
over the theory each setting checks)."""
