"""The frozen candidate table: RRF (k=60) of BM25 top-100 and dense top-100, top 50 per query.

Table ``candidates.tsv`` (one row per query and candidate, queries in canonical order, ranks
1..depth): ``qid split rank doc_id rrf_score bm25_rank bm25_score dense_rank dense_score``;
a retriever column is empty when the document is not in that retriever's top list.
"""

from __future__ import annotations

from typing import Mapping, Sequence

from .errors import MalformedInputError
from .fileio import read_tsv, write_tsv
from .ranking import ranks_from_order, rrf_scores, top_k

CANDIDATE_HEADER = ("qid", "split", "rank", "doc_id", "rrf_score", "bm25_rank", "bm25_score", "dense_rank", "dense_score")
RETRIEVER_HEADER = ("qid", "rank", "doc_id", "score")


def retriever_top(score_rows, doc_ids: Sequence[str], qids: Sequence[str], depth: int) -> dict[str, list[tuple[str, int, float]]]:
    """Top ``depth`` per query from a (n_queries, n_docs) score matrix, under the tie rule."""
    out = {}
    for qid, row in zip(qids, score_rows):
        scores = {d: float(s) for d, s in zip(doc_ids, row.tolist())}
        out[qid] = top_k(scores, depth)
    return out


def write_retriever_table(path, top: Mapping[str, list[tuple[str, int, float]]]) -> None:
    write_tsv(path, RETRIEVER_HEADER, ((q, r, d, s) for q, lst in top.items() for d, r, s in lst))


def read_retriever_table(path) -> dict[str, list[tuple[str, int, float]]]:
    out: dict[str, list] = {}
    for i, row in enumerate(read_tsv(path, RETRIEVER_HEADER), start=2):
        lst = out.setdefault(row["qid"], [])
        if int(row["rank"]) != len(lst) + 1:
            raise MalformedInputError(path, i, f"rank {row['rank']} out of order for query {row['qid']}")
        lst.append((row["doc_id"], int(row["rank"]), float(row["score"])))
    return out


def fuse(bm25: Mapping[str, list], dense: Mapping[str, list], qids: Sequence[str], split_of: Mapping[str, str],
         k: int, depth: int) -> list[tuple]:
    """Rows of the candidate table."""
    rows = []
    for qid in qids:
        b = {d: (r, s) for d, r, s in bm25[qid]}
        e = {d: (r, s) for d, r, s in dense[qid]}
        fused = rrf_scores([{d: r for d, (r, _) in b.items()}, {d: r for d, (r, _) in e.items()}], k)
        for d, rank, score in top_k(fused, depth):
            br, bs = b.get(d, (None, None))
            dr, ds = e.get(d, (None, None))
            rows.append((qid, split_of[qid], rank, d, score, br, bs, dr, ds))
    return rows


def write_candidates(path, rows) -> None:
    write_tsv(path, CANDIDATE_HEADER, rows)


def read_candidates(path, depth: int | None = None) -> dict[str, list[str]]:
    """{qid: [doc ids in rank order]} (optionally cut at ``depth``); checks ranks are 1..n, no duplicates."""
    out: dict[str, list[str]] = {}
    for i, row in enumerate(read_tsv(path, CANDIDATE_HEADER), start=2):
        lst = out.setdefault(row["qid"], [])
        if int(row["rank"]) != len(lst) + 1:
            raise MalformedInputError(path, i, f"rank {row['rank']} out of order for query {row['qid']}")
        lst.append(row["doc_id"])
    for q, lst in out.items():
        ranks_from_order(lst)  # duplicates -> error
    if depth is not None:
        out = {q: lst[:depth] for q, lst in out.items()}
    return out


def read_candidate_rows(path) -> list[dict[str, str]]:
    return read_tsv(path, CANDIDATE_HEADER)
