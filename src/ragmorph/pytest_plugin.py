"""pytest plugin entry point for ragmorph (registered through `pytest11`); hooks arrive with the plugin work."""

from __future__ import annotations
