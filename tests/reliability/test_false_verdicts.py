"""No case to judge is an input error in Python too, never an empty pass (issue 12, item 3)."""

from __future__ import annotations

import pytest

import ragmorph
from ragmorph.adapters import BM25Retriever
from ragmorph.errors import UsageError
from ragmorph.model import Chunk, Corpus


def test_check_refuses_an_empty_list_of_cases() -> None:
    corpus = Corpus([Chunk("a", "parental leave policy")])
    with pytest.raises(UsageError, match="at least one case"):
        ragmorph.check(BM25Retriever, corpus, [])
