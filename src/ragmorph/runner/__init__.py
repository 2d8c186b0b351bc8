"""ragmorph.runner."""
