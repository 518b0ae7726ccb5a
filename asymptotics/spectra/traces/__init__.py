"""Compiled traces of the features bulk outside E beyond one step (docs/THEORY.md §16.8)."""
