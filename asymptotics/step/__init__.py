"""The giant step mapped to a spiked model: the sRF spike (r, c, gamma) of one step, the step on
the plane (theta*, n), and the network rows' bulk-variance channel (THEORY.md §3, DERIVATIONS.md
§7)."""
