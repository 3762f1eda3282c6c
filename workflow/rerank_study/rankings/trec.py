"""TREC run files: ``qid Q0 docid rank score tag``, one line per (query, document).

Scores written by this project are rank-derived (n, n-1, ..., 1 for n documents), so the file
order, the rank column and the score column all say the same thing and no tool can re-break a
tie. Raw model scores live in their own tables.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..core.errors import MalformedInputError
from ..core.fileio import atomic_open, input_lines
from .ranking import rank_derived_scores


def write_run(path, ranked: Mapping[str, Sequence[str]], tag: str,
              query_order: Sequence[str] | None = None) -> None:
    """``ranked[qid]`` = doc ids best first. Queries in ``query_order`` (default: insertion order)."""
    if any(c.isspace() for c in tag) or not tag:
        raise ValueError(f"run tag must be a non-empty token without spaces, got {tag!r}")
    qids = list(query_order) if query_order is not None else list(ranked)
    with atomic_open(path, "w") as fh:
        for qid in qids:
            docs = ranked[qid]
            if len(set(docs)) != len(docs):
                raise ValueError(f"query {qid}: duplicate documents in the ranking")
            for rank, (doc, score) in enumerate(zip(docs, rank_derived_scores(len(docs))), start=1):
                fh.write(f"{qid} Q0 {doc} {rank} {score} {tag}\n")


def run_lines(path):
    """(line number, the 6 fields) of every line of a TREC run file; a missing file, an unterminated last line
    or a line without exactly 6 fields is an error naming the file and line."""
    with input_lines(path) as fh:
        for line_no, line in enumerate(fh, start=1):
            if not line.endswith("\n"):
                raise MalformedInputError(path, line_no, "last line is not terminated (truncated file?)")
            parts = line.split()
            if len(parts) != 6:
                raise MalformedInputError(path, line_no, f"{len(parts)} fields, 6 expected (qid Q0 docid "
                                          "rank score tag)")
            yield line_no, parts


def read_run(path) -> dict[str, list[tuple[str, int, float]]]:
    """-> {qid: [(docid, rank, score), ...] in file order}. Checks ranks are 1..n in order."""
    out: dict[str, list[tuple[str, int, float]]] = {}
    for line_no, (qid, _q0, doc, rank, score, _tag) in run_lines(path):
        try:
            rank_i, score_f = int(rank), float(score)
        except ValueError:
            raise MalformedInputError(path, line_no, f"bad rank {rank!r} or score {score!r}") from None
        lst = out.setdefault(qid, [])
        if rank_i != len(lst) + 1:
            raise MalformedInputError(path, line_no, f"query {qid}: rank {rank_i}, expected {len(lst) + 1}")
        lst.append((doc, rank_i, score_f))
    return out
