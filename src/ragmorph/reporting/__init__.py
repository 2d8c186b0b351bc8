"""ragmorph.reporting."""
