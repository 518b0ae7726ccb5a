"""The spectra's evaluations split by points over a few threads of this process (docs/THEORY.md
§16.8): each point's numbers are computed as on one thread, its part on another core."""
