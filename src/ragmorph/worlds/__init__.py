"""Built-in retrieval worlds: seeded policy handbooks and product guides with labels true by construction.

`generate(seed, chunks=..., cases=..., tenants=...)` draws a world of any size (a dozen chunks to 100,000);
`demo_world()` is the small fixed world the demo and the examples use.
"""

from __future__ import annotations

from ._generate import DEFAULT_TENANTS, BuiltinWorld, demo_world, generate

__all__ = ["DEFAULT_TENANTS", "BuiltinWorld", "demo_world", "generate"]
