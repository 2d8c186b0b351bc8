"""Claim support: does a text support a required claim? The deterministic default judge behind `ClaimR@k`.

A support judge answers `supports(claim, text) -> bool` and names its `method`, which becomes part of the
metric name (`ClaimR(judge=tokens)@5`), so a report always says how a claim score was obtained. The embedding
and Ragas-backed judges live in `ragmorph.judges` (they need adapters); this module holds the protocol and the
token judge every installation has.

It sits in the lowest layer, beside the model, because two layers judge support with the one token judge: the
metrics (`ClaimR@k`, re-exported as `ragmorph.metrics.TokenSupport` and friends) and the claims family, which
finds a claim's supporting chunks in a corpus (`TokenSupport.supporting`).
"""

from __future__ import annotations

import datetime as _dt
import functools
import re
import unicodedata
from collections.abc import Iterable, Sequence
from typing import Protocol, runtime_checkable

import attrs

from .errors import UsageError, describe

__all__ = ["DEFAULT_SUPPORT", "SupportJudge", "TokenSupport", "claim_facts"]


@runtime_checkable
class SupportJudge(Protocol):
    """Anything that decides whether `text` supports `claim`; `method` names it in metric names."""

    method: str

    def supports(self, claim: str, text: str) -> bool:
        """True when `text` supports `claim`."""
        ...


_MONTHS = {
    name: number
    for number, names in enumerate(
        (("january", "jan"), ("february", "feb"), ("march", "mar"), ("april", "apr"), ("may",), ("june", "jun"),
         ("july", "jul"), ("august", "aug"), ("september", "sep", "sept"), ("october", "oct"),
         ("november", "nov"), ("december", "dec")),
        start=1,
    )
    for name in names
}
_MONTH = "(" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
# Dates in the spellings policies and FAQs use: 2026-09-01, 1 September 2026, September 1, 2026 (1st, 2nd...).
_ISO_DATE = re.compile(r"\b(\d{4})-(\d{1,2})-(\d{1,2})\b")
_DAY_MONTH_YEAR = re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+{_MONTH}\s*,?\s+(\d{{4}})\b")
_MONTH_DAY_YEAR = re.compile(rf"\b{_MONTH}\s+(\d{{1,2}})(?:st|nd|rd|th)?\s*,?\s+(\d{{4}})\b")
# A number keeps its decimal point and thousands separators ("3.5", "1,000"), which a plain \w+ tokenizer would
# split into two unrelated tokens. A separator before exactly three digits groups thousands ("1,000" = "1000");
# any other separator is a decimal point ("3,5" = "3.5", never "35").
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
_THOUSANDS = re.compile(r"[.,](?=\d{3}(?!\d))")
_WORD = re.compile(r"[^\W\d_]+")
# Function words carry no claim content; counting them would let any English text half-support any claim.
_STOPWORDS = frozenset(
    "a an and are as at be been by for from has have in is it its of on or that the their this to was were "
    "will with".split()
)


def _normalise(text: str) -> str:
    return unicodedata.normalize("NFKC", text).casefold()


def _dates(text: str) -> tuple[set[_dt.date], str]:
    """The valid dates written in `text`, and `text` with them blanked out (so their numbers are not re-read)."""
    found: set[_dt.date] = set()

    def take(year: str, month: int, day: str) -> None:
        try:
            found.add(_dt.date(int(year), month, int(day)))
        except ValueError:
            pass  # "2026-13-40" is not a date; its digits still count as numbers

    def iso(match: re.Match[str]) -> str:
        take(match.group(1), int(match.group(2)), match.group(3))
        return " "

    def day_first(match: re.Match[str]) -> str:
        take(match.group(3), _MONTHS[match.group(2)], match.group(1))
        return " "

    def month_first(match: re.Match[str]) -> str:
        take(match.group(3), _MONTHS[match.group(1)], match.group(2))
        return " "

    text = _ISO_DATE.sub(iso, text)
    text = _DAY_MONTH_YEAR.sub(day_first, text)
    text = _MONTH_DAY_YEAR.sub(month_first, text)
    return found, text


@attrs.frozen
class _Facts:
    words: frozenset[str]
    numbers: frozenset[str]  # outside dates: what a claim demands
    dates: frozenset[_dt.date]
    all_numbers: frozenset[str]  # including the parts of dates: what a text offers ("in 2026" is in "1 May 2026")


@functools.lru_cache(maxsize=4096)
def _facts(text: str) -> _Facts:
    normal = _normalise(text)
    dates, rest = _dates(normal)
    words = frozenset(word for word in _WORD.findall(rest) if word not in _STOPWORDS)
    return _Facts(words, _numbers(rest), frozenset(dates), _numbers(normal))


def _numbers(text: str) -> frozenset[str]:
    return frozenset(_THOUSANDS.sub("", number).replace(",", ".").lstrip("0") or "0" for number in _NUMBER.findall(text))


def claim_facts(text: str) -> tuple[frozenset[str], frozenset[str], frozenset[_dt.date]]:
    """(content words, numbers, dates) of `text` as the token judge sees them: NFKC, casefolded, stopwords out."""
    facts = _facts(text)
    return facts.words, facts.numbers, facts.dates


def _check_threshold(instance: object, attribute: attrs.Attribute, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 < float(value) <= 1.0:
        raise UsageError(f"expected a threshold in (0, 1], got threshold={describe(value)}")


@attrs.frozen
class TokenSupport:
    """Normalised token containment: `text` supports `claim` when it contains at least `threshold` of the claim's
    distinct content words and every number and date of the claim exactly.

    Normalisation: Unicode NFKC, casefolding, words are runs of letters, function words (the, of, ...) dropped.
    Numbers match exactly: `1,000` = `1000` (a separator before exactly three digits groups thousands), `3,5` =
    `3.5`, but `35` never matches `3.5` and `12` never matches `120`. Dates are read in ISO, `1 September 2026` and
    `September 1, 2026` forms and compared as dates. A claim with no content words is judged by its numbers
    and dates alone; a claim with nothing at all is never supported. Deterministic and cached by text.
    """

    threshold: float = attrs.field(default=0.8, validator=_check_threshold)
    method: str = attrs.field(default="tokens", init=False)

    def supports(self, claim: str, text: str) -> bool:
        """Whether `text` supports `claim` (see the class docstring for the rule)."""
        wanted, have = _facts(claim), _facts(text)
        if not (wanted.words or wanted.numbers or wanted.dates):
            return False
        if not wanted.numbers <= have.all_numbers or not wanted.dates <= have.dates:
            return False
        if not wanted.words:
            return True
        return len(wanted.words & have.words) / len(wanted.words) >= self.threshold

    def supporting(self, claims: Sequence[str], texts: Iterable[str]) -> dict[str, list[int]]:
        """Positions in `texts` of the texts that support each of `claims`: exactly what `supports` answers text by
        text, in one pass that reads most texts with a few substring tests instead of the full judge.

        The test is a necessary condition on the normalised text, so it never skips a supporting text: a content
        word of the text is a substring of it, a number it offers is a substring once separators are dropped
        ("1,000" offers "1000"), and a date it writes contains its year. Only the texts that pass are judged in
        full; on a 100k-chunk corpus that is a few hundred texts instead of every one.
        """
        wanted = {claim: _facts(claim) for claim in dict.fromkeys(claims)}
        found: dict[str, list[int]] = {claim: [] for claim in wanted}
        tests = []
        for claim, facts in wanted.items():
            if not (facts.words or facts.numbers or facts.dates):
                continue  # never supported
            digits = tuple(sorted(number.replace(".", "") for number in facts.numbers))
            years = tuple(sorted({str(date.year) for date in facts.dates}))
            tests.append((claim, tuple(sorted(facts.words)), digits, years))
        if not tests:
            return found
        for position, text in enumerate(texts):
            normal = _normalise(text)
            bare: str | None = None
            for claim, words, digits, years in tests:
                # The judge's own ratio, on a superset of the words it would find: never below the judge's.
                if words and sum(map(normal.__contains__, words)) / len(words) < self.threshold:
                    continue
                if digits:
                    if bare is None:
                        bare = normal.replace(",", "").replace(".", "")
                    if not all(map(bare.__contains__, digits)):
                        continue
                if years and not all(map(normal.__contains__, years)):
                    continue
                if self.supports(claim, text):
                    found[claim].append(position)
        return found


DEFAULT_SUPPORT = TokenSupport()
"""The support judge `ClaimR@k` uses unless told otherwise (method `tokens`, threshold 0.8)."""
