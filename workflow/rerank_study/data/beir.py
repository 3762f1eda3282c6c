"""Readers for the BEIR layout (corpus.jsonl, queries.jsonl, qrels/*.tsv).

Every reader fails with the file and line number on a malformed or truncated line. Callers
must verify the file's pin first (see ``acquire.verified_path``); these functions only parse.

Note on ``queries.jsonl``: SciFact's query metadata carries evidence document ids and labels
for every claim, including the sealed confirmation claims. ``read_queries`` keeps only the
query text and discards metadata, so no stage can use it as a backdoor to relevance.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from ..core.errors import MalformedInputError
from ..core.fileio import input_lines

QRELS_HEADER = ("query-id", "corpus-id", "score")


@dataclass(frozen=True)
class Doc:
    doc_id: str
    title: str
    text: str

    @property
    def full_text(self) -> str:
        return doc_text(self.title, self.text)


def doc_text(title: str, text: str) -> str:
    """BEIR's document text convention, used for every model: ``(title + " " + text).strip()``."""
    return (title + " " + text).strip()


def _jsonl_records(path):
    with input_lines(path) as fh:
        for line_no, line in enumerate(fh, start=1):
            if not line.endswith("\n"):
                raise MalformedInputError(path, line_no, "last line is not terminated by a newline "
                                          "(truncated file?)")
            if not line.strip():
                raise MalformedInputError(path, line_no, "empty line")
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as exc:
                raise MalformedInputError(path, line_no, f"invalid JSON: {exc.msg} at "
                                          f"column {exc.colno}") from None
            if not isinstance(rec, dict):
                raise MalformedInputError(path, line_no, "a JSON object was expected")
            yield line_no, rec


def _str_field(path, line_no, rec, key, allow_empty=True):
    if key not in rec:
        raise MalformedInputError(path, line_no, f"missing key {key!r}")
    val = rec[key]
    if not isinstance(val, str):
        raise MalformedInputError(path, line_no, f"key {key!r} must be a string, got {type(val).__name__}")
    if not allow_empty and not val:
        raise MalformedInputError(path, line_no, f"key {key!r} is empty")
    return val


def read_corpus(path) -> dict[str, Doc]:
    """corpus.jsonl -> {doc_id: Doc}, in file order."""
    docs: dict[str, Doc] = {}
    for line_no, rec in _jsonl_records(path):
        doc_id = _str_field(path, line_no, rec, "_id", allow_empty=False)
        if doc_id in docs:
            raise MalformedInputError(path, line_no, f"duplicate document id {doc_id!r}")
        docs[doc_id] = Doc(doc_id, _str_field(path, line_no, rec, "title"),
                           _str_field(path, line_no, rec, "text"))
    if not docs:
        raise MalformedInputError(path, 0, "the corpus is empty")
    return docs


def read_queries(path) -> dict[str, str]:
    """queries.jsonl -> {query_id: text}, in file order. Metadata is discarded (see module doc)."""
    queries: dict[str, str] = {}
    for line_no, rec in _jsonl_records(path):
        qid = _str_field(path, line_no, rec, "_id", allow_empty=False)
        if qid in queries:
            raise MalformedInputError(path, line_no, f"duplicate query id {qid!r}")
        queries[qid] = _str_field(path, line_no, rec, "text", allow_empty=False)
    return queries


def read_qrels(path) -> dict[str, dict[str, int]]:
    """qrels/*.tsv (BEIR header, CRLF or LF) -> {query_id: {doc_id: relevance}}."""
    qrels: dict[str, dict[str, int]] = {}
    with input_lines(path) as fh:
        for line_no, line in enumerate(fh, start=1):
            if not line.endswith("\n"):
                raise MalformedInputError(path, line_no, "last line is not terminated by a newline "
                                          "(truncated file?)")
            cells = line.rstrip("\r\n").split("\t")
            if line_no == 1:
                if tuple(cells) != QRELS_HEADER:
                    raise MalformedInputError(path, 1, f"header {cells} != {list(QRELS_HEADER)}")
                continue
            if len(cells) != 3:
                raise MalformedInputError(path, line_no, f"{len(cells)} tab-separated cells, 3 expected")
            qid, did, score = cells
            if not qid or not did:
                raise MalformedInputError(path, line_no, "empty query or document id")
            try:
                rel = int(score)
            except ValueError:
                raise MalformedInputError(path, line_no, f"score {score!r} is not an integer") from None
            if did in qrels.get(qid, {}):
                raise MalformedInputError(path, line_no, f"duplicate judgement for ({qid}, {did})")
            qrels.setdefault(qid, {})[did] = rel
    if not qrels:
        raise MalformedInputError(path, 1, "no judgements after the header")
    return qrels


def qrels_content_sha256(qrels: dict[str, dict[str, int]]) -> str:
    """Order-independent hash of a qrels table: sha256 of the sorted ``qid\\tdocid\\tscore\\n`` rows."""
    import hashlib

    rows = sorted(f"{q}\t{d}\t{r}\n" for q, docs in qrels.items() for d, r in docs.items())
    return hashlib.sha256("".join(rows).encode("utf-8")).hexdigest()


def generic_loader_disagreements(folder, qrels_name: str, corpus: dict[str, Doc], queries: dict[str, str],
                                 qrels: dict[str, dict[str, int]]) -> list[str]:
    """Load the verified folder with BEIR's own ``GenericDataLoader`` (the format's reference reader:
    beir-cellar/beir, beir/datasets/data_loader.py, ``load_custom``) and list every way it disagrees with this
    module's strict readers (which run first and give the file-and-line messages). It keeps only the judged
    queries; a missing title reads as None there and as "" here."""
    from beir.datasets.data_loader import GenericDataLoader

    folder = Path(folder)
    loader = GenericDataLoader(data_folder=str(folder), qrels_file=str(folder / qrels_name))
    b_corpus, b_queries, b_qrels = loader.load_custom()
    problems = []
    if set(b_corpus) != set(corpus):
        problems.append(f"corpus ids differ ({len(b_corpus)} vs {len(corpus)})")
    bad_docs = [d for d, doc in corpus.items() if d in b_corpus and
                ((b_corpus[d]["title"] or ""), b_corpus[d]["text"]) != (doc.title, doc.text)]
    if bad_docs:
        problems.append(f"documents read differently: {bad_docs[:5]}")
    if b_queries != {q: queries[q] for q in qrels}:
        problems.append("judged queries read differently")
    if b_qrels != qrels:
        problems.append(f"judgements in {qrels_name} read differently")
    return problems


# ------------------------------------------------------- a dataset with one qrels file: its two parts --
DEV_PART, SEALED_PART = "dev-part", "sealed-part"


def part_name(source: str, part: str) -> str:
    """'qrels/all.tsv' -> 'qrels/all.dev-part.tsv' / 'qrels/all.sealed-part.tsv' (pinned derived files)."""
    stem = source[: -len(".tsv")] if source.endswith(".tsv") else source
    return f"{stem}.{part}.tsv"


def partition_rows(raw: bytes, keep: set[str]) -> bytes:
    """A qrels file's header and the rows of the query ids in ``keep``, in the source's order and bytes."""
    lines = raw.splitlines(keepends=True)
    if not lines:
        raise ValueError("empty qrels file")
    return lines[0] + b"".join(line for line in lines[1:] if line.split(b"\t", 1)[0].decode("utf-8") in keep)
