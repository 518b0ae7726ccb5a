"""The K-group completion's node sums over pairs of mirrored nodes (docs/THEORY.md §10.2,
§10.5): an odd sigma's tables on a centrally symmetric kappa rule are even (w, mub1, mus2) or
odd (kappa, mu0) in the pairing of node j with node n - 1 - j, so the completion's and the
literal map's sums run over the first half of the nodes (``half_sums``)."""
