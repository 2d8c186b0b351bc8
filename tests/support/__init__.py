"""Shared test helpers (importable as `support` because pyproject puts tests/ on pythonpath)."""
