"""Retriever specs (how a unit obtains its retriever), seeds derived from names, and the world a unit starts from."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from ..adapters import Configured, display_name, load_retriever
from ..errors import UsageError
from ..model import Corpus, Params, World
from ..secrets import register_option_secrets
from ..strategies import default_filters

__all__ = ["RetrieverSpec", "derive_seed", "spec_mapping", "start_world"]


def derive_seed(*parts: object) -> int:
    """A 32-bit seed derived from `parts` that is the same on every machine and process."""
    text = "\x1f".join(str(p) for p in parts)
    return int.from_bytes(hashlib.blake2b(text.encode("utf-8"), digest_size=4).digest(), "little")


@attrs.frozen
class RetrieverSpec:
    """How a unit obtains its retriever: an import string (picklable anywhere) or the object/factory itself."""

    name: str
    target: Any = attrs.field(eq=False, repr=False)
    traits: tuple[str, ...] = ()

    def __attrs_post_init__(self) -> None:
        if isinstance(self.target, Configured):
            # Options reach the manifest (a Configured's repr) and replay files: their credentials are hidden from
            # the start, before any output is rendered or cut.
            register_option_secrets(self.target.options)

    @property
    def import_string(self) -> str | None:
        """The `package.module:attr` string when the spec was given as one."""
        return self.target if isinstance(self.target, str) else None

    def resolve(self) -> Any:
        """The retriever object or factory this spec names."""
        return load_retriever(self.target) if isinstance(self.target, str) else self.target

    def all_traits(self, resolved: Any) -> frozenset[str]:
        """Declared traits: the spec's plus a `ragmorph_traits` attribute on the retriever or factory."""
        declared = getattr(resolved, "ragmorph_traits", ()) or ()
        if isinstance(declared, str):
            declared = (declared,)
        return frozenset(self.traits) | frozenset(declared)

    @classmethod
    def of(cls, target: Any, name: str | None = None, traits: Sequence[str] = ()) -> RetrieverSpec:
        """A spec for `target` (import string, factory or retriever), named `name` or by its display name."""
        if isinstance(target, RetrieverSpec):
            return target
        return cls(name=name or (target if isinstance(target, str) else display_name(target)), target=target, traits=tuple(traits))


def start_world(corpus: Corpus, case: Any, ks: Sequence[int]) -> World:
    """The world a unit draws perturbations for: the case at the largest k with its default filters."""
    return World(corpus, case, Params(max(ks), default_filters(case)))


def spec_mapping(retrievers: Any, traits: Mapping[str, Sequence[str]] | None = None) -> tuple[RetrieverSpec, ...]:
    """Normalise check()'s `retrievers` argument into named specs."""
    traits = traits or {}
    if isinstance(retrievers, Mapping):
        items = list(retrievers.items())
    elif isinstance(retrievers, (list, tuple)):
        items = [(None, r) for r in retrievers]
    else:
        items = [(None, retrievers)]
    specs = []
    for name, target in items:
        spec = RetrieverSpec.of(target, name)
        spec = attrs.evolve(spec, traits=tuple(sorted(set(spec.traits) | set(traits.get(spec.name, ())))))
        specs.append(spec)
    names = [s.name for s in specs]
    if len(set(names)) != len(names):
        raise UsageError(f"expected distinct retriever names, got {names}; pass a mapping name -> retriever")
    if not specs:
        raise UsageError("expected at least one retriever, got none")
    return tuple(specs)
