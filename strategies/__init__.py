"""Hypothesis strategies that perturb retrieval worlds, one module per family."""
