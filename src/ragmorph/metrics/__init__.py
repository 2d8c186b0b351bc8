"""ragmorph.metrics."""
