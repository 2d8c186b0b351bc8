"""The batch helper for a user's dense adapter (issue 32 item 1): one embedding call per batch of queries, and a
text-keyed cache shared by every index a factory builds, so a perturbed corpus embeds only its new chunks."""

from __future__ import annotations

import numpy as np
import pytest

from ragmorph import Filters
from ragmorph.adapters import DenseRetriever, HashingEmbedder
from ragmorph.adapters.embedders import FunctionEmbedder, VectorSearch, cached_embeddings
from ragmorph.errors import UsageError
from ragmorph.runner import check
from ragmorph.worlds import generate

WORLD = generate(5, chunks=30, cases=3)


class CountingModel:
    """A user's embedding function (here feature hashing) that counts what it is asked to encode."""

    def __init__(self) -> None:
        self.hashing = HashingEmbedder(64)
        self.calls = 0
        self.texts: list[str] = []

    def __call__(self, texts: list[str]) -> np.ndarray:
        self.calls += 1
        self.texts.extend(texts)
        return self.hashing.embed(texts) * 3.0  # not unit length: the helper normalises


def make_adapter(model: CountingModel) -> type[VectorSearch]:
    class Mine(VectorSearch):
        """Exact cosine over the corpus, filters applied before the cut (a correct single list)."""

        traits = ("single_list",)

        def __init__(self, corpus):
            super().__init__(model)
            self.chunks = list(corpus)
            self.rows = self.embed([chunk.text for chunk in self.chunks])

        def search(self, vector, *, k, filters=None):
            scores = self.rows @ vector
            order = sorted(range(len(self.chunks)), key=lambda i: (-float(scores[i]), i))
            allowed = [i for i in order if filters is None or filters.allows(self.chunks[i])]
            return [(self.chunks[i].id, float(scores[i])) for i in allowed[:k]]

    return Mine


def test_retrieve_batch_embeds_the_new_queries_in_one_call_and_answers_as_retrieve_does() -> None:
    model = CountingModel()
    adapter = make_adapter(model)(WORLD.corpus)
    queries = [case.query for case in WORLD.cases]
    before = model.calls
    batch = adapter.retrieve_batch(queries, k=5, filters=Filters(tenant="acme"))
    assert model.calls == before + 1 and model.texts[-len(queries):] == queries
    assert batch == [adapter.retrieve(query, k=5, filters=Filters(tenant="acme")) for query in queries]
    assert model.calls == before + 1, "the queries asked again (another k, other filters) come from the cache"


def test_one_cache_per_function_so_every_index_a_factory_builds_embeds_only_new_text() -> None:
    model = CountingModel()
    Mine = make_adapter(model)
    Mine(WORLD.corpus)
    assert len(model.texts) == len({chunk.text for chunk in WORLD.corpus})
    fewer = WORLD.corpus.without([WORLD.corpus.chunks[0].id])
    Mine(fewer)
    assert len(model.texts) == len({chunk.text for chunk in WORLD.corpus}), "a smaller corpus embeds nothing"
    assert cached_embeddings(model) is Mine(fewer).embeddings


def test_a_run_over_the_helper_passes_like_the_built_in_dense_retriever_and_embeds_each_text_once() -> None:
    model = CountingModel()
    report = check({"mine": make_adapter(model)}, WORLD.corpus, WORLD.cases, max_examples=5, seed=1)
    assert report.exit_code == 0, report.to_dict()["summary"]
    assert len(model.texts) == len(set(model.texts)), "no text was embedded twice in the whole run"
    reference = check({"dense": lambda corpus: DenseRetriever(corpus, embedder=HashingEmbedder(64))}, WORLD.corpus,
                      WORLD.cases, max_examples=5, seed=1)
    assert reference.exit_code == 0


def test_a_function_returning_the_wrong_shape_is_a_clear_error() -> None:
    embedder = FunctionEmbedder(lambda texts: np.ones((1, 4)))
    with pytest.raises(UsageError, match=r"one vector per text, a \(2, dim\) array, got shape \(1, 4\)"):
        embedder.embed(["a", "b"])
    with pytest.raises(UsageError, match="expected a function texts -> vectors"):
        FunctionEmbedder("model")  # type: ignore[arg-type]
    assert FunctionEmbedder(lambda texts: np.ones((len(texts), 7))).dim == 7
