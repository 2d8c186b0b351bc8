"""What a retriever object can do (factory, deltas, batch, async, filters), and which perturbations that allows."""

from __future__ import annotations

import inspect
import re
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import attrs

from ..errors import UsageError, describe
from ..secrets import clip
from .function import positional_arity

__all__ = [
    "FILTERED_BY",
    "FILTER_KINDS",
    "PERTURBATION_KINDS",
    "Capabilities",
    "PerturbationKind",
    "describe_capabilities",
    "display_name",
    "is_factory",
    "is_retriever",
]

PerturbationKind = Literal["corpus", "filters", "params", "query", "repeat"]
FilteredBy = Literal["retriever", "ragmorph", "selector"]

# Who applies the call's filters: the library itself (its metadata filters, WHERE clause...), ragmorph
# post-filtering because the user asked for it or because the library cannot filter, or both halves split: a
# library that stores no metadata (FAISS) searches only among ids that ragmorph computed from the chunk fields
# (an id selector). Declared by an adapter with a `ragmorph_filtered_by` attribute; relations that judge
# filtering do not apply to ragmorph's own filter, and relations that judge which chunks a filter admits do not
# apply to ragmorph's own admitted set.
FILTERED_BY: dict[str, str] = {
    "retriever": "the retriever applies the filters itself (the library's own filter mechanism)",
    "ragmorph": "ragmorph post-filters the retriever's hits (requested by the user, or the library cannot filter)",
    "selector": (
        "ragmorph computes the admitted ids from the chunk fields (the library stores no metadata) and the library "
        "searches only among them (an id selector)"
    ),
}

# The kinds of filter a call carries (the fields of `Filters`). `ragmorph_filtered_by` may name who applies
# each kind: `{"current_only": "ragmorph"}` for a stage that drops stale chunks itself while the library applies
# the tenant and metadata filters; the kinds it leaves out are the retriever's.
FILTER_KINDS: tuple[str, ...] = ("tenant", "current_only", "metadata")

# What each kind of perturbation changes; strategies name the kind they need.
PERTURBATION_KINDS: dict[str, str] = {
    "corpus": "adds, removes, replaces or reorders chunks (needs a factory, or add/remove deltas)",
    "filters": "changes the tenant, current-only or metadata filters of the call",
    "params": "changes k",
    "query": "edits the query text",
    "repeat": "repeats calls, in another order",
}


def is_retriever(obj: object) -> bool:
    """True for a retriever object: it has a callable `retrieve` or `aretrieve` and is not a class."""
    return not inspect.isclass(obj) and (
        callable(getattr(obj, "retrieve", None)) or callable(getattr(obj, "aretrieve", None))
    )


def is_factory(obj: object) -> bool:
    """True for a factory: a class taking the corpus as its one required argument, or a one-argument callable."""
    if is_retriever(obj) or not callable(obj):
        return False
    arity = positional_arity(obj)
    if arity is None:
        return False
    required, maximum, star = arity
    if inspect.isclass(obj):
        has_methods = callable(getattr(obj, "retrieve", None)) or callable(getattr(obj, "aretrieve", None))
        return has_methods and required == 1
    return required == 1 or (required == 0 and (maximum >= 1 or star))


def _accepts_filters(obj: object) -> bool:
    declared = getattr(obj, "supports_filters", None)
    if isinstance(declared, bool):
        return declared
    method = getattr(obj, "retrieve", None) or getattr(obj, "aretrieve", None)
    try:
        parameters = inspect.signature(method).parameters.values()  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return True  # cannot tell: assume the protocol signature
    return any(p.name == "filters" or p.kind is p.VAR_KEYWORD for p in parameters)


def _declared(name: str, product: object, factory: object) -> Any:
    """The declaration `name` of the product, else of the factory; None when neither declares it."""
    declared = getattr(product, name, None)
    declared = getattr(factory, name, None) if declared is None else declared
    # Read off a class, a declaration computed per instance (a stage's, from what it wraps) is not known yet.
    return None if isinstance(declared, property) else declared


def _kinds_declared(declared: Any) -> dict[str, Any]:
    """The kinds a declaration names: a string names every kind, a mapping its keys, None none."""
    if declared is None:
        return {}
    return dict(declared) if isinstance(declared, Mapping) else dict.fromkeys(FILTER_KINDS, declared)


def filtered_by_kind(declared: Any, owner: object = None) -> dict[str, FilteredBy]:
    """Who applies each filter kind under a `ragmorph_filtered_by` declaration: one value for every kind, or a
    mapping of some kinds (the others: the retriever). A bad declaration is a UsageError naming `owner`."""
    by_kind = _kinds_declared(declared)
    for kind, value in by_kind.items():
        if kind not in FILTER_KINDS or value not in FILTERED_BY:
            raise UsageError(
                f"expected ragmorph_filtered_by to be one of {sorted(FILTERED_BY)} or a mapping of filter kinds "
                f"{list(FILTER_KINDS)} to them, got ragmorph_filtered_by={describe(declared)} on {display_name(owner)}"
            )
    return {kind: by_kind.get(kind, "retriever") for kind in FILTER_KINDS}


def merged_filtered_by(declarations: Sequence[Any]) -> Any:
    """The declaration of retrievers stacked innermost first: each kind is applied by the outermost stage that
    declares it (a string declares every kind); a string when every kind agrees, None when none declares."""
    merged: dict[str, Any] = {}
    for declared in declarations:
        merged.update(_kinds_declared(declared))
    if not merged:
        return None
    if set(merged) == set(FILTER_KINDS) and len(set(merged.values())) == 1:
        return merged[FILTER_KINDS[0]]
    return merged


def _by_kind(declared: Any, owner: object = None) -> tuple[tuple[str, FilteredBy], ...]:
    if isinstance(declared, tuple) and all(isinstance(pair, tuple) for pair in declared):
        return declared  # already converted (by `_filtered_by`, or passed back by attrs.evolve)
    return tuple(filtered_by_kind(declared, owner).items())


def _filtered_by(product: object, factory: object) -> tuple[tuple[str, FilteredBy], ...]:
    """Who applies each filter kind, from the `ragmorph_filtered_by` declaration of the product (else the factory)."""
    return _by_kind(_declared("ragmorph_filtered_by", product, factory), product)


def _cuts_short(product: object, factory: object) -> str | None:
    """The `ragmorph_cuts_short` reason of the product (else the factory), None when undeclared."""
    declared = _declared("ragmorph_cuts_short", product, factory)
    if declared is None:
        return None
    if not isinstance(declared, str) or not declared.strip():
        raise UsageError(
            "expected ragmorph_cuts_short to be a sentence saying why a list may end before k, got "
            f"ragmorph_cuts_short={describe(declared)} on {display_name(product)}"
        )
    return declared


def _product_class(factory: object) -> type | None:
    """The class a factory builds: the factory itself when a class, else its return annotation if it is a class."""
    if inspect.isclass(factory):
        return factory
    try:
        annotation = inspect.signature(factory).return_annotation  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return annotation if inspect.isclass(annotation) else None


@attrs.frozen
class Capabilities:
    """What the runner may do with a retriever; `why_not(kind)` explains an inapplicable perturbation kind.

    `filtered_by_kind` says who applies each kind of filter (see `FILTERED_BY`, `FILTER_KINDS`); where it is
    ``"ragmorph"``, `filtering_not_judged(kinds)` is the reason relations that judge those kinds report instead of
    a verdict; where it is ``"selector"``, `admission_not_judged(kinds)` is the reason the relations judging which
    chunks a filter admits report (the relations judging the restricted search, its under-return and ranking,
    still judge the library).
    """

    has_factory: bool
    supports_delta: bool
    supports_batch: bool
    supports_async: bool
    supports_filters: bool = True
    supports_rollback: bool = False
    # A declaration (one value, or a mapping of some kinds) is converted to (kind, who) for every kind.
    filtered_by_kind: tuple[tuple[str, FilteredBy], ...] = attrs.field(default=None, converter=_by_kind)
    # Optional protocol methods the runner uses when present: update(chunks) (same ids, new content),
    # index(corpus) on an existing instance, close() on instances the runner built.
    supports_update: bool = False
    supports_index: bool = False
    supports_close: bool = False
    # Why a list shorter than k does not mean that no other chunk matches (a token budget, a score threshold),
    # from a `ragmorph_cuts_short` declaration; None: a short list is exhausted (see `Observation.exhausted`).
    cuts_short: str | None = None

    @property
    def kind(self) -> Literal["factory", "black_box"]:
        """`factory` when corpus edits can build a fresh index, else `black_box` (report manifest spelling)."""
        return "factory" if self.has_factory else "black_box"

    def why_not(self, kind: str) -> str | None:
        """None when perturbations of `kind` apply to this retriever, else the reason in one sentence."""
        if kind not in PERTURBATION_KINDS:
            raise UsageError(f"expected a perturbation kind in {sorted(PERTURBATION_KINDS)}, got kind={kind!r}")
        if kind == "corpus" and not (self.has_factory or self.supports_delta):
            return (
                "black-box retriever over a fixed corpus: corpus edits need a factory (a class or function taking "
                "the corpus) or add/remove methods"
            )
        if kind == "filters" and not self.supports_filters:
            return (
                "retriever takes no `filters` argument: filter relations need one, or wrap it in "
                "ragmorph.adapters.TenantFilter (which post-filters)"
            )
        return None

    @property
    def filtered_by(self) -> FilteredBy | str:
        """Who applies the filters: one of `FILTERED_BY` when every kind agrees, else ``"mixed"``."""
        values = set(dict(self.filtered_by_kind).values())
        return values.pop() if len(values) == 1 else "mixed"

    def _kinds_by(self, who: str, kinds: Sequence[str]) -> list[str]:
        return [kind for kind, by in self.filtered_by_kind if by == who and kind in kinds]

    def filtering_not_judged(self, kinds: Sequence[str] = FILTER_KINDS) -> str | None:
        """None when the retriever applies the filter `kinds` itself, else why relations judging them do not apply."""
        ours = self._kinds_by("ragmorph", kinds)
        if not ours:
            return None
        if self.filtered_by == "ragmorph":
            return "filtering is done by ragmorph, not by the retriever"
        return f"the {' and '.join(ours)} filter is applied by ragmorph, not by the retriever"

    def admission_not_judged(self, kinds: Sequence[str] = FILTER_KINDS) -> str | None:
        """None when the retriever decides which chunks the filter `kinds` admit, else why relations judging that
        do not apply."""
        if self._kinds_by("selector", kinds):
            return (
                "the admitted set is computed by ragmorph: the library stores no metadata, so ragmorph passes it the "
                "admitted ids (an id selector) and only the search among them is the library's"
            )
        return self.filtering_not_judged(kinds)

    def to_dict(self) -> dict[str, Any]:
        """JSON form, with the manifest `kind`."""
        fields = attrs.asdict(self)
        fields["filtered_by_kind"] = dict(self.filtered_by_kind)
        return {"kind": self.kind, "filtered_by": self.filtered_by, **fields}


def describe_capabilities(obj: object, *, built: object | None = None) -> Capabilities:
    """Inspect a retriever or factory; `built` (a retriever the factory produced) refines what the product can do.

    Without `built`, a factory's product is judged by its class (or its return annotation when that is a class);
    an unannotated factory function is assumed to build a plain retriever with filters.
    """
    product: object | None
    if is_retriever(obj):
        has_factory, product = False, obj
    elif is_factory(obj):
        has_factory, product = True, built if built is not None else _product_class(obj)
    else:
        raise UsageError(
            f"expected a retriever (an object with retrieve(query, *, k, filters)) or a factory (a callable taking "
            f"the corpus), got {display_name(obj)} ({type(obj).__name__})"
        )
    if product is None:
        return Capabilities(
            has_factory=has_factory, supports_delta=False, supports_batch=False, supports_async=False,
            filtered_by_kind=_filtered_by(obj, obj), cuts_short=_cuts_short(obj, obj),
        )
    return Capabilities(
        has_factory=has_factory,
        supports_delta=callable(getattr(product, "add", None)) and callable(getattr(product, "remove", None)),
        supports_batch=callable(getattr(product, "retrieve_batch", None)),
        supports_async=inspect.iscoroutinefunction(getattr(product, "aretrieve", None)),
        supports_filters=_accepts_filters(product),
        supports_rollback=callable(getattr(product, "checkpoint", None))
        and callable(getattr(product, "rollback", None)),
        filtered_by_kind=_filtered_by(product, obj),
        supports_update=callable(getattr(product, "update", None)),
        supports_index=callable(getattr(product, "index", None)),
        supports_close=callable(getattr(product, "close", None)),
        cuts_short=_cuts_short(product, obj),
    )


_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


def display_name(obj: object) -> str:
    """A short readable name for reports: `module:qualname` for classes and functions, else a cut repr."""
    target = obj if inspect.isclass(obj) or inspect.isroutine(obj) else None
    if target is not None:
        module = getattr(target, "__module__", None)
        qualname = getattr(target, "__qualname__", getattr(target, "__name__", repr(target)))
        return f"{module}:{qualname}" if module else str(qualname)
    # Memory addresses differ on every run: reports of the same run must not.
    # Masked before the cut (a Configured repr holds its options): a cut secret's prefix would show.
    return clip(_ADDRESS.sub("", repr(obj)), 80)
