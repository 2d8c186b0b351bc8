"""ragmorph.io."""
