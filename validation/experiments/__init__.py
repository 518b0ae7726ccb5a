"""Experiment scripts behind the committed reports (one module per experiment)."""
