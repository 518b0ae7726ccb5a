"""Spectral measures of the first layer (THEORY.md §6): Marchenko-Pastur closed forms, the
SpectralMeasure record and its averages, the network's population measure and its resolvent
kernels."""
