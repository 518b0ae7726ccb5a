"""Monte Carlo of the K-group, r-spike spiked random-features model (neuron groups sharing r
learned directions): simulator, campaign, report against the theory, a reference solver."""
