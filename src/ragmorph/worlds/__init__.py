"""ragmorph.worlds."""
