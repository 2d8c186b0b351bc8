"""BEIR dataset folders: ``corpus.jsonl``, ``queries.jsonl`` and ``qrels/<split>.tsv``.

How BEIR maps onto the world model:

- each corpus line ``{"_id", "title", "text", "metadata"}`` becomes a Chunk with ``id=_id`` and ``text=text``;
  a non-empty title is kept in ``metadata["title"]`` (``title="prepend"`` also puts it on the text's first line,
  as many BEIR baselines index it); other fields of the line are kept in metadata under their own names;
- integer ``_id`` values are turned into strings (some BEIR exports write them as numbers);
- only queries that appear in the qrels of the split become cases, in ``queries.jsonl`` order;
- each relevant document (score > 0) becomes its own evidence group, because BEIR's recall counts every
  relevant document; graded scores collapse to relevant or not. A query whose judgments are all <= 0 becomes
  a case with no evidence (and so counts as unanswerable).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal

from ..errors import InputError, describe
from ..model import Case, Chunk, Corpus
from ._lines import FirstSeen, iter_json_objects, iter_text_lines

__all__ = ["read_beir"]

PathLike = str | os.PathLike


def _string_id(record: dict[str, Any], *, file: str, line: int) -> str:
    value = record.get("_id")
    if isinstance(value, bool) or not isinstance(value, (str, int)) or value == "":
        raise InputError(f"expected a string '_id', got _id={describe(value)}", file=file, line=line, field="_id")
    return str(value)


def _text(record: dict[str, Any], name: str, *, file: str, line: int) -> str:
    value = record.get(name, "")
    if value is None:
        return ""
    if not isinstance(value, str):
        raise InputError(f"expected a string, got {name}={describe(value)}", file=file, line=line, field=name)
    return value


def _read_beir_corpus(path: Path, title: Literal["metadata", "prepend"]) -> Corpus:
    file = str(path)
    chunks: list[Chunk] = []
    ids = FirstSeen("unique _id values", file=file, field="_id")
    for line, record in iter_json_objects(path):
        chunk_id = _string_id(record, file=file, line=line)
        ids.add(chunk_id, line=line, shown=repr(chunk_id))
        body = _text(record, "text", file=file, line=line)
        heading = _text(record, "title", file=file, line=line)
        metadata = record.get("metadata") or {}
        if not isinstance(metadata, dict):
            raise InputError(
                f"expected a JSON object, got metadata={describe(metadata)}", file=file, line=line, field="metadata"
            )
        metadata = dict(metadata)
        for name, value in record.items():
            if name not in ("_id", "title", "text", "metadata"):
                metadata.setdefault(name, value)
        if heading:
            metadata["title"] = heading
        text = f"{heading}\n{body}" if heading and title == "prepend" else body
        chunks.append(Chunk(id=chunk_id, text=text, metadata=metadata))
    return Corpus(chunks)


def _read_split(folder: Path, split: str, corpus: Corpus) -> dict[str, list[tuple[str, int]]]:
    path = folder / "qrels" / f"{split}.tsv"
    if not path.is_file():
        available = sorted(p.stem for p in (folder / "qrels").glob("*.tsv")) if (folder / "qrels").is_dir() else []
        raise InputError(
            f"expected qrels for split {split!r}, got no such file; available splits: {available or 'none'}",
            file=str(path), field="split", value=split,
        )
    file = str(path)
    judged: dict[str, list[tuple[str, int]]] = {}
    pairs = FirstSeen("each corpus-id once per query", file=file, field="corpus-id")
    for line, text in iter_text_lines(path):
        columns = text.split("\t")
        if [c.strip() for c in columns] == ["query-id", "corpus-id", "score"]:
            continue
        if len(columns) != 3:
            raise InputError(
                f"expected 3 tab-separated columns (query-id, corpus-id, score), got {len(columns)}",
                file=file, line=line,
            )
        qid, docid, score_text = (c.strip() for c in columns)
        try:
            score = int(score_text)
        except ValueError:
            raise InputError(
                f"expected an integer score, got {score_text!r}", file=file, line=line, field="score"
            ) from None
        if docid not in corpus:
            raise InputError(
                f"expected a corpus-id present in corpus.jsonl, got {docid!r}", file=file, line=line,
                field="corpus-id", value=docid,
            )
        pairs.add((qid, docid), line=line, shown=f"{docid!r} for {qid!r}")
        judged.setdefault(qid, []).append((docid, score))
    return judged


def read_beir(
    folder: PathLike, split: str = "test", *, title: Literal["metadata", "prepend"] = "metadata"
) -> tuple[Corpus, tuple[Case, ...]]:
    """Read a BEIR folder into a corpus and the cases of `split` (see the module docstring for the mapping)."""
    root = Path(folder)
    if not root.is_dir():
        raise InputError("expected a BEIR folder, got a path that is not a folder", file=str(root))
    if title not in ("metadata", "prepend"):
        raise InputError(f"expected title='metadata' or 'prepend', got title={describe(title)}", field="title")
    corpus = _read_beir_corpus(root / "corpus.jsonl", title)
    judged = _read_split(root, split, corpus)
    queries_file = str(root / "queries.jsonl")
    queries: dict[str, str] = {}
    query_ids = FirstSeen("unique _id values", file=queries_file, field="_id")
    for line, record in iter_json_objects(root / "queries.jsonl"):
        qid = _string_id(record, file=queries_file, line=line)
        query_ids.add(qid, line=line, shown=repr(qid))
        query = _text(record, "text", file=queries_file, line=line)
        if qid in judged and not query.strip():
            # As the native reader: an empty query cannot be judged (an unjudged one is never a case, so it may be).
            raise InputError(
                f"expected a query to ask, got text={describe(query)} for the judged query {qid!r}; an empty query "
                "cannot be judged", file=queries_file, line=line, field="text", value=query,
            )
        queries[qid] = query
    missing = [qid for qid in judged if qid not in queries]
    if missing:
        raise InputError(
            f"expected every judged query in queries.jsonl, got {len(missing)} missing, e.g. {missing[:3]}",
            file=queries_file, field="_id", value=missing[0],
        )
    cases = tuple(
        Case(id=qid, query=text, evidence=[[docid] for docid, score in judged[qid] if score > 0])
        for qid, text in queries.items()
        if qid in judged
    )
    return corpus, cases
