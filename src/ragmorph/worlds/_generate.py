"""Seeded generator of realistic retrieval worlds whose gold evidence is true by construction.

Every fact is one value stated by one chunk (plus, for some facts, an FAQ chunk restating it: an acceptable
alternative). Values are unique numbers across the whole world, so a case built from a fact has exactly its
gold chunks holding the answer and no other chunk: no BM25 or judge is needed to trust the labels.
"""

from __future__ import annotations

import datetime as _dt
import functools
import random
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from ..errors import UsageError, describe
from ..model import Case, Chunk, Corpus, Filters, FrozenMap, Params, World
from ._vocab import (
    FILLER_SLOTS,
    FILLER_TEMPLATES,
    GENERAL_SECTIONS,
    MONTHS,
    PRODUCT_ADJECTIVES,
    PRODUCT_EDITIONS,
    PRODUCT_ATTRIBUTES,
    PRODUCT_NOUNS,
    SHARED_TOPICS,
    TENANT_TOPICS,
    FactTopic,
)

__all__ = ["DEFAULT_TENANTS", "BuiltinWorld", "demo_world", "generate"]

DEFAULT_TENANTS: tuple[str, ...] = ("acme", "globex", "initech")
_SHARED = "shared"
# Values drawn past every topic range when a range is used up (only in very large worlds).
_OVERFLOW_START = 100_000
_FILLER_BANK = 384
_REVISION_RATE = 0.2
_FAQ_RATE = 0.15
_SHARED_WEIGHT = 0.6
_DEMO_SEED = 7
_DEMO_CHUNKS = 56
_DEMO_CASES = 12


def excluded_value(value: int) -> bool:
    """True for numbers a fact may not use: section numbers and days (< 32) and years (1900-2100) occur in text."""
    return value < 32 or 1900 <= value <= 2100


@attrs.frozen
class BuiltinWorld:
    """A generated corpus with its cases; `facts` maps each case id to the fact keys it asks about.

    Claims are aligned with evidence: `case.claims[i]` is the answer text that every chunk of
    `case.evidence[i]` contains verbatim and no other chunk visible to `case.tenant` contains.
    Unanswerable cases have no evidence and no claims; their `facts` entry names the fact that is missing.
    """

    corpus: Corpus
    cases: tuple[Case, ...]
    description: str
    facts: Mapping[str, tuple[str, ...]] = attrs.field(factory=FrozenMap, converter=FrozenMap)
    seed: int = 0

    def case(self, case_id: str) -> Case:
        """The case with `case_id` (UsageError naming the known ids otherwise)."""
        for case in self.cases:
            if case.id == case_id:
                return case
        known = ", ".join(c.id for c in self.cases[:10])
        raise UsageError(f"expected a case id of this world ({known}...), got case_id={describe(case_id)}")

    def world(self, case_id: str, *, k: int = 10, filters: Filters | None = None) -> World:
        """The World of one case at cutoff `k` (no filters unless given)."""
        return World(self.corpus, self.case(case_id), Params(k, filters if filters is not None else Filters()))


@attrs.define(eq=False)
class _Fact:
    key: str
    owner: str | None
    topic: FactTopic
    product: str | None
    phrase: str
    chunk_ids: list[str]
    old_id: str | None = None
    effective: _dt.date | None = None

    @property
    def area(self) -> str:
        return self.topic.area


@functools.lru_cache(maxsize=256)
def _display(tenant: str) -> str:
    return " ".join(part.capitalize() for part in tenant.replace("_", "-").split("-"))


def _check_arguments(seed: Any, chunks: Any, cases: Any, tenants: Any) -> tuple[str, ...]:
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise UsageError(f"expected an integer seed, got seed={describe(seed)}")
    if isinstance(chunks, bool) or not isinstance(chunks, int) or chunks < 1:
        raise UsageError(f"expected a positive integer number of chunks, got chunks={describe(chunks)}")
    if cases is not None and (isinstance(cases, bool) or not isinstance(cases, int) or cases < 0):
        raise UsageError(f"expected a non-negative integer or None, got cases={describe(cases)}")
    if isinstance(tenants, str) or not isinstance(tenants, Sequence) or not tenants:
        raise UsageError(f"expected a non-empty sequence of tenant names like ('acme', 'globex'), got tenants={describe(tenants)}")
    names = tuple(tenants)
    for name in names:
        if not isinstance(name, str) or not name or not name.replace("-", "").replace("_", "").isalnum():
            raise UsageError(
                f"expected tenant names of letters, digits, '-' or '_', got {describe(name)}; e.g. tenants=('acme',)"
            )
        if name == _SHARED:
            raise UsageError(f"expected tenant names other than {_SHARED!r} (reserved for shared documents), got {name!r}")
    if len(set(names)) != len(names):
        raise UsageError(f"expected distinct tenant names, got tenants={names!r}")
    return names


class _Builder:
    """Draws one world; every random choice comes from `rng` so a seed pins the world on every machine."""

    def __init__(self, rng: random.Random, tenants: tuple[str, ...]) -> None:
        self.rng = rng
        self.tenants = tenants
        self.chunks: list[Chunk] = []
        self.facts: list[_Fact] = []
        self.used_values: set[int] = set()
        self.overflow = _OVERFLOW_START
        self.doc_numbers: Counter[str] = Counter()
        self.topics_left: dict[str | None, list[FactTopic]] = {}
        for owner in (*tenants, None):
            pool = list(SHARED_TOPICS if owner is None else TENANT_TOPICS)
            rng.shuffle(pool)
            self.topics_left[owner] = pool
        # Two-word names come first (popped from the end); editions only extend the pool for very large worlds.
        short_names = [f"{a} {n}" for a in PRODUCT_ADJECTIVES for n in PRODUCT_NOUNS]
        long_names = [f"{name} {edition}" for name in short_names for edition in PRODUCT_EDITIONS]
        rng.shuffle(short_names)
        rng.shuffle(long_names)
        self.products_left = long_names + short_names
        self.product_attributes: dict[str, list[FactTopic]] = {}
        self.product_owner: dict[str, str | None] = {}
        self.owners: tuple[str | None, ...] = (*tenants, None)
        self.owner_weights = (*([1.0] * len(tenants)), _SHARED_WEIGHT)
        self.filler = [self._filler_sentence() for _ in range(_FILLER_BANK)]
        self.revisions = 0
        self.faqs = 0

    # -- text ---------------------------------------------------------------------------------------------

    def _filler_sentence(self) -> str:
        template = self.rng.choice(FILLER_TEMPLATES)
        values = {slot: self.rng.choice(words) for slot, words in FILLER_SLOTS.items() if "{" + slot + "}" in template}
        sentence = template.format(**values)
        return sentence[0].upper() + sentence[1:]

    def _below(self, n: int) -> int:
        # random() scaled is several times cheaper than randrange(); 100,000-chunk worlds make a million draws.
        return int(self.rng.random() * n)

    def _body(self, *sentences: str) -> str:
        extra = [self.filler[self._below(_FILLER_BANK)] for _ in range(2 + self._below(3))]
        return " ".join((*sentences, *extra))

    def _value(self, topic: FactTopic) -> int:
        for _ in range(12):
            value = topic.low + self._below(topic.high - topic.low + 1)
            if value not in self.used_values and not excluded_value(value):
                break
        else:
            while self.overflow in self.used_values or excluded_value(self.overflow):
                self.overflow += 1
            value = self.overflow
        self.used_values.add(value)
        return value

    def _date(self, first_year: int, last_year: int) -> _dt.date:
        return _dt.date(first_year + self._below(last_year - first_year + 1), 1 + self._below(12), 1)

    # -- corpus -------------------------------------------------------------------------------------------

    def _new_doc(self, owner: str | None, kind: str) -> str:
        prefix = owner if owner is not None else _SHARED
        self.doc_numbers[(prefix, kind)] += 1
        return f"{prefix}-{kind}-{self.doc_numbers[(prefix, kind)]}"

    def _heading(self, owner: str | None, kind: str, product: str | None, section: str) -> str:
        if kind == "guide":
            where = f"{_display(owner)} product guide" if owner is not None else "Shared platform guide"
            return f"{where}: {product}, {section}."
        if owner is None:
            return f"Group-wide policy, {section}."
        return f"{_display(owner)} employee handbook, {section}."

    def _add(self, chunk_id: str, text: str, *, source: str, owner: str | None, kind: str, topic: FactTopic | None,
             fact_key: str | None, version: int = 1, effective: _dt.date | None = None,
             superseded_by: str | None = None) -> None:
        metadata = {"kind": kind, "area": topic.area if topic is not None else "general"}
        if fact_key is not None:
            metadata["fact"] = fact_key
        self.chunks.append(
            Chunk(
                chunk_id,
                text,
                source=source,
                tenant=owner,
                version=version,
                effective_from=effective if effective is not None else self._date(2023, 2025),
                superseded_by=superseded_by,
                metadata=metadata,
            )
        )

    def build(self, target: int) -> None:
        """Append documents until the corpus holds exactly `target` chunks."""
        while len(self.chunks) < target:
            owner = self.rng.choices(self.owners, weights=self.owner_weights)[0]
            policy_kind = "policy" if owner is None else "handbook"
            kind = policy_kind if self.topics_left[owner] and self.rng.random() < 0.5 else "guide"
            product = self._new_product(owner) if kind == "guide" else None
            doc = self._new_doc(owner, kind)
            for section in range(1, self.rng.randint(1, 4) + 1):
                if len(self.chunks) >= target:
                    break
                chunk_id = f"{doc}#{section}"
                topic = self._next_topic(owner, kind, product)
                if topic is None:
                    heading = self._heading(owner, kind, product, self.rng.choice(GENERAL_SECTIONS).lower())
                    self._add(chunk_id, self._body(heading), source=doc, owner=owner, kind=kind, topic=None,
                              fact_key=None)
                else:
                    self._add_fact(target, chunk_id, doc, owner, kind, product, topic)

    def _new_product(self, owner: str | None) -> str | None:
        if not self.products_left:
            return None
        product = self.products_left.pop()
        attributes = list(PRODUCT_ATTRIBUTES)
        self.rng.shuffle(attributes)
        self.product_attributes[product] = attributes
        self.product_owner[product] = owner
        return product

    def _next_topic(self, owner: str | None, kind: str, product: str | None) -> FactTopic | None:
        if kind == "guide":
            if product is None or not self.product_attributes[product]:
                return None
            return self.product_attributes[product].pop()
        pool = self.topics_left[owner]
        return pool.pop() if pool else None

    def _add_fact(self, target: int, chunk_id: str, doc: str, owner: str | None, kind: str, product: str | None,
                  topic: FactTopic) -> None:
        org = _display(owner) if owner is not None else "the group"
        key = f"{product.lower().replace(' ', '-')}/{topic.key}" if product else f"{owner or 'group'}/{topic.key}"
        value = self._value(topic)
        fact = _Fact(key, owner, topic, product, topic.phrase.format(v=value), [chunk_id])
        statement = topic.statement.format(org=org, product=product, v=value)
        statement = statement[0].upper() + statement[1:]
        room = target - len(self.chunks)
        # The first fact of a world is always revised and the second restated, so even tiny worlds hold both.
        revise = room >= 2 and (self.revisions == 0 or self.rng.random() < _REVISION_RATE)
        restate = not revise and room >= 2 and (self.faqs == 0 or self.rng.random() < _FAQ_RATE)
        section = self._heading(owner, kind, product, topic.heading.lower()).rstrip(".")
        if revise:
            self.revisions += 1
            old_date, new_date = self._date(2021, 2024), self._date(2025, 2026)
            old_value = self._value(topic)
            old_statement = topic.statement.format(org=org, product=product, v=old_value)
            old_text = self._body(f"{section} (revision 1, effective 1 {MONTHS[old_date.month - 1]} {old_date.year}).",
                                  old_statement[0].upper() + old_statement[1:])
            fact.old_id = f"{chunk_id}.v1"
            fact.effective = new_date
            self._add(fact.old_id, old_text, source=doc, owner=owner, kind=kind, topic=topic, fact_key=key,
                      version=1, effective=old_date, superseded_by=chunk_id)
            text = self._body(f"{section} (revision 2, effective 1 {MONTHS[new_date.month - 1]} {new_date.year}).",
                              statement)
            self._add(chunk_id, text, source=doc, owner=owner, kind=kind, topic=topic, fact_key=key, version=2,
                      effective=new_date)
        else:
            self._add(chunk_id, self._body(f"{section}.", statement), source=doc, owner=owner, kind=kind,
                      topic=topic, fact_key=key)
        if restate:
            self.faqs += 1
            faq_doc = self._new_doc(owner, "faq")
            faq_id = f"{faq_doc}#1"
            asker = _display(owner) if owner is not None else "Group"
            question = topic.question.format(org=org, product=product)
            text = self._body(f"{asker} questions and answers. Q: {question} A: {fact.phrase}.")
            self._add(faq_id, text, source=faq_doc, owner=owner, kind="faq", topic=topic, fact_key=key)
            fact.chunk_ids.append(faq_id)
        self.facts.append(fact)

    # -- cases --------------------------------------------------------------------------------------------

    def _asker(self, fact: _Fact) -> str | None:
        if fact.owner is not None:
            return fact.owner
        # Shared facts are asked by a tenant, or now and then with no tenant context at all.
        return None if self.rng.random() < 1 / 3 else self.rng.choice(self.tenants)

    def _question(self, fact: _Fact) -> str:
        org = _display(fact.owner) if fact.owner is not None else "the group"
        question = fact.topic.question.format(org=org, product=fact.product)
        if fact.effective is not None and self.rng.random() < 0.5:
            since = f"Since {MONTHS[fact.effective.month - 1]} {fact.effective.year}"
            question = f"{since}, {question[0].lower()}{question[1:]}"
        return question

    @staticmethod
    def _tags(kind: str, facts: Sequence[_Fact], tenant: str | None) -> tuple[str, ...]:
        tags = [kind]
        for fact in facts:
            if fact.area not in tags:
                tags.append(fact.area)
        tags.append(f"tenant:{tenant}" if tenant is not None else "no-tenant")
        if any(f.owner is None for f in facts):
            tags.append("shared")
        if any(len(f.chunk_ids) > 1 for f in facts):
            tags.append("alternatives")
        if any(f.old_id is not None for f in facts):
            tags.append("date-sensitive")
        return tuple(tags)

    def _single(self, fact: _Fact) -> tuple[dict[str, Any], tuple[str, ...]]:
        tenant = self._asker(fact)
        spec = {
            "query": self._question(fact),
            "tenant": tenant,
            "evidence": [fact.chunk_ids],
            "claims": [fact.phrase],
            "answerable": True,
            "tags": self._tags("single-hop", [fact], tenant),
        }
        return spec, (fact.key,)

    def _multi(self, first: _Fact, second: _Fact) -> tuple[dict[str, Any], tuple[str, ...]]:
        def noun(fact: _Fact) -> str:
            org = _display(fact.owner) if fact.owner is not None else "the group"
            return fact.topic.noun.format(org=org, product=fact.product)

        spec = {
            "query": f"What are {noun(first)} and {noun(second)}?",
            "tenant": first.owner,
            "evidence": [first.chunk_ids, second.chunk_ids],
            "claims": [first.phrase, second.phrase],
            "answerable": True,
            "tags": self._tags("multi-hop", [first, second], first.owner),
        }
        return spec, (first.key, second.key)

    def _unanswerable(self, tenant: str, topic: FactTopic, product: str | None) -> tuple[dict[str, Any], tuple[str, ...]]:
        question = topic.question.format(org=_display(tenant), product=product)
        key = f"{product.lower().replace(' ', '-')}/{topic.key}" if product else f"{tenant}/{topic.key}"
        spec = {
            "query": question,
            "tenant": tenant,
            "evidence": [],
            "claims": [],
            "answerable": False,
            "tags": ("unanswerable", topic.area, f"tenant:{tenant}"),
        }
        return spec, (key,)

    def _single_pool(self) -> list[_Fact]:
        facts = list(self.facts)
        self.rng.shuffle(facts)
        # Lead with one revised and one restated fact so small case sets cover both kinds.
        revised = [f for f in facts if f.old_id is not None][:1]
        restated = [f for f in facts if len(f.chunk_ids) > 1][:1]
        first = revised + restated
        leading = {id(f) for f in first}
        return first + [f for f in facts if id(f) not in leading]

    def _multi_pool(self, wanted: int) -> list[tuple[_Fact, _Fact]]:
        by_owner: dict[str | None, list[_Fact]] = {}
        for fact in self.facts:
            by_owner.setdefault(fact.owner, []).append(fact)
        shared = by_owner.get(None, [])
        tenant_facts = [f for f in self.facts if f.owner is not None]
        pairs: list[tuple[_Fact, _Fact]] = []
        seen: set[frozenset[str]] = set()
        for _ in range(wanted * 20):
            if len(pairs) >= wanted or not tenant_facts:
                break
            first = tenant_facts[self._below(len(tenant_facts))]
            own = by_owner[first.owner]
            pick = self._below(len(own) + len(shared))
            second = own[pick] if pick < len(own) else shared[pick - len(own)]
            pair = frozenset((first.key, second.key))
            if second is first or pair in seen:
                continue
            seen.add(pair)
            pairs.append((first, second))
        return pairs

    def _unanswerable_pool(self, wanted: int) -> list[tuple[str, FactTopic, str | None]]:
        known = {f.key for f in self.facts}
        asked_elsewhere = {f.topic.key for f in self.facts if f.owner is not None}
        missing = [
            (tenant, topic, None)
            for tenant in self.tenants
            for topic in TENANT_TOPICS
            if f"{tenant}/{topic.key}" not in known
        ]
        # Prefer gaps another tenant fills: their chunks are lexical look-alikes the case's tenant may not see.
        head = [m for m in missing if m[1].key in asked_elsewhere]
        tail = [m for m in missing if m[1].key not in asked_elsewhere]
        self.rng.shuffle(head)
        self.rng.shuffle(tail)
        pool = head + tail
        for product, owner in self.product_owner.items():
            if len(pool) >= wanted:
                break
            if owner is not None and self.product_attributes[product]:
                pool.append((owner, self.product_attributes[product][0], product))
        return pool[:wanted]

    def cases(self, wanted: int) -> tuple[list[Case], dict[str, tuple[str, ...]]]:
        """Draw `wanted` cases: about 65% single-hop, 20% multi-hop, 15% unanswerable."""
        unanswerable = round(wanted * 0.15) if wanted < 3 else max(1, round(wanted * 0.15))
        multi = round(wanted * 0.2) if wanted < 4 else max(1, round(wanted * 0.2))
        single = wanted - unanswerable - multi
        singles = self._single_pool()
        multis = self._multi_pool(wanted)
        gaps = self._unanswerable_pool(wanted)
        take_single = min(single, len(singles))
        take_multi = min(multi + single - take_single, len(multis))
        take_gap = min(wanted - take_single - take_multi, len(gaps))
        if take_single + take_multi + take_gap < wanted:
            take_single = min(wanted - take_multi - take_gap, len(singles))
        total = take_single + take_multi + take_gap
        if total < wanted:
            raise UsageError(
                f"expected cases <= {total} for this world size, got cases={wanted}; ask for more chunks or fewer cases"
            )
        drawn = [self._single(f) for f in singles[:take_single]]
        drawn += [self._multi(a, b) for a, b in multis[:take_multi]]
        drawn += [self._unanswerable(t, topic, p) for t, topic, p in gaps[:take_gap]]
        self.rng.shuffle(drawn)
        width = len(str(len(drawn)))
        cases: list[Case] = []
        facts: dict[str, tuple[str, ...]] = {}
        for number, (spec, keys) in enumerate(drawn, start=1):
            case_id = f"q{number:0{width}d}"
            cases.append(Case(case_id, **spec))
            facts[case_id] = keys
        return cases, facts


def _describe(seed: int, corpus: Corpus, cases: Sequence[Case]) -> str:
    owners = Counter(c.tenant or _SHARED for c in corpus)
    superseded = sum(1 for c in corpus if c.superseded_by is not None)
    faq = sum(1 for c in corpus if c.metadata.get("kind") == "faq")
    kinds = Counter(tag for case in cases for tag in case.tags if tag in
                    ("single-hop", "multi-hop", "unanswerable", "alternatives", "date-sensitive"))
    owner_text = ", ".join(f"{name} {count}" for name, count in sorted(owners.items()))
    kind_text = ", ".join(f"{kinds[k]} {k}" for k in
                          ("single-hop", "multi-hop", "unanswerable", "alternatives", "date-sensitive"))
    return (
        f"Built-in world (seed {seed}): {len(corpus)} chunks of policy handbooks and product guides "
        f"({owner_text}), {superseded} superseded, {faq} FAQ restatements; {len(cases)} cases ({kind_text})."
    )


def generate(
    seed: int = 0,
    *,
    chunks: int = 60,
    cases: int | None = None,
    tenants: Sequence[str] = DEFAULT_TENANTS,
) -> BuiltinWorld:
    """Generate a world of exactly `chunks` chunks and `cases` cases (default: one case per five chunks).

    The same arguments give the same world on every machine: all randomness comes from `random.Random(seed)`.
    """
    names = _check_arguments(seed, chunks, cases, tenants)
    builder = _Builder(random.Random(seed), names)
    builder.build(chunks)
    corpus = Corpus(builder.chunks)
    drawn, facts = builder.cases(max(1, chunks // 5) if cases is None else cases)
    return BuiltinWorld(corpus, tuple(drawn), _describe(seed, corpus, drawn), facts, seed)


def demo_world() -> BuiltinWorld:
    """A small fixed world (56 chunks, 12 cases) that the built-in BM25 answers mostly right."""
    return generate(_DEMO_SEED, chunks=_DEMO_CHUNKS, cases=_DEMO_CASES)
