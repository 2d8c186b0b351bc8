"""Built-in retrieval worlds: seeded policy handbooks and product guides with labels true by construction.

`generate(seed, chunks=..., cases=..., tenants=...)` draws a world of any size (a dozen chunks to 100,000);
`demo_world()` is the small fixed world the demo and the examples use; `pydoc_world()` is real text, the Python
reference topics that ship with CPython, with cases whose labels also hold by construction.
"""

from __future__ import annotations

from ._generate import DEFAULT_TENANTS, BuiltinWorld, demo_world, generate
from ._pydoc import pydoc_world

__all__ = ["DEFAULT_TENANTS", "BuiltinWorld", "demo_world", "generate", "pydoc_world"]
