"""ragmorph through pytest: one test item per retriever x strategy x relation.

Run from the repository root:

    pytest examples/pytest                      # every relation of the default suite
    pytest examples/pytest -n 2 --dist loadgroup  # in parallel (pytest-xdist)
    pytest examples/pytest --hypothesis-seed 7 --ragmorph-max-examples 50

Item ids read like `examples/pytest/test_retriever.py::bm25[tenancy-<relation>]`; a failure shows the shrunk
minimal case and the `ragmorph replay` command. Paths below are relative to this file.
"""

from ragmorph.pytest_plugin import suite

ragmorph_suite = suite(
    retrievers={
        # The built-in BM25 (a factory: the class takes the corpus).
        "bm25": "ragmorph.adapters:BM25Retriever",
        # A plain Python function wrapped as a retriever (examples/adapters/plain_function.py).
        "plain": "../adapters/plain_function.py:factory",
    },
    corpus="../data/corpus.jsonl",
    cases="../data/cases.jsonl",
    ks=(1, 3, 5),
)
