"""The frozen candidate table: RRF (k=60) of BM25 top-100 and dense top-100, top 50 per query.

The table is an INPUT of the experiment, like the data: generated once, committed under
``lockfiles/candidates/``, pinned by sha256 in ``lockfiles/derived_pins.json``, and read
(verified) by every run. The main job never regenerates it. Regeneration is a separate drift
check (``snakemake check_candidates``) that compares ranked lists, never bytes; re-freezing is
the explicit ``--config repin=candidates`` (``snakemake freeze_candidates``).

Frozen table ``candidates.tsv`` (one row per query and candidate, queries in canonical order,
ranks 1..depth): ``qid split rank doc_id rrf_score bm25_rank dense_rank``. It holds nothing
whose last bits depend on the CPU: ``rrf_score`` is computed from the two RANKS
(``1/(k + bm25_rank) + 1/(k + dense_rank)``, float64, a term only for a list that holds the
document), so it is the same IEEE value on every machine; a retriever column is empty when the
document is not in that retriever's top list.

Retriever tables: the regenerated ones under ``resources/`` carry the retriever scores
(``qid rank doc_id score``; provenance only, never pinned bytes); the committed copies next to
the frozen table keep only the ranked lists (``qid rank doc_id``, gzip).
"""

from __future__ import annotations

import gzip
import io
import math
import re
from collections.abc import Mapping, Sequence

from ..core.errors import MalformedInputError
from ..core.fileio import VerifiedFile, atomic_open, input_bytes, input_lines, read_tsv, write_tsv
from .ranking import ranks_from_order, rrf_scores, top_k
from .trec import run_lines

CANDIDATE_HEADER = ("qid", "split", "rank", "doc_id", "rrf_score", "bm25_rank", "dense_rank")
RETRIEVER_HEADER = ("qid", "rank", "doc_id", "score")
FROZEN_RETRIEVER_HEADER = ("qid", "rank", "doc_id")


# ------------------------------------------------------------------ retriever top lists --
def retriever_top(score_rows, doc_ids: Sequence[str], qids: Sequence[str],
                  depth: int) -> dict[str, list[tuple[str, int, float]]]:
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


def write_ranked_lists_gz(path, ranked: Mapping[str, Sequence[str]]) -> None:
    """Committed provenance: ``qid rank doc_id`` rows, gzip with no name and mtime 0."""
    buf = io.StringIO(newline="\n")
    buf.write("\t".join(FROZEN_RETRIEVER_HEADER) + "\n")
    for q, docs in ranked.items():
        for r, d in enumerate(docs, start=1):
            buf.write(f"{q}\t{r}\t{d}\n")
    with atomic_open(path, "wb") as fh:
        with gzip.GzipFile(filename="", mode="wb", fileobj=fh, mtime=0, compresslevel=9) as gz:
            gz.write(buf.getvalue().encode("utf-8"))


def read_ranked_lists_gz(path) -> dict[str, list[str]]:
    with gzip.open(path, "rt", encoding="utf-8", newline="") as fh:
        lines = fh.read().split("\n")
    if not lines or lines[-1] != "":
        raise MalformedInputError(path, len(lines), "last line is not terminated (truncated file?)")
    if lines[0].split("\t") != list(FROZEN_RETRIEVER_HEADER):
        raise MalformedInputError(path, 1, f"header {lines[0]!r} != {list(FROZEN_RETRIEVER_HEADER)}")
    out: dict[str, list[str]] = {}
    for i, line in enumerate(lines[1:-1], start=2):
        cells = line.split("\t")
        if len(cells) != 3:
            raise MalformedInputError(path, i, f"{len(cells)} cells, 3 expected")
        lst = out.setdefault(cells[0], [])
        if cells[1] != str(len(lst) + 1):
            raise MalformedInputError(path, i, f"rank {cells[1]} out of order for query {cells[0]}")
        lst.append(cells[2])
    return out


# ----------------------------------------------------------------------------- fusion --
def fuse(bm25: Mapping[str, Sequence[str]], dense: Mapping[str, Sequence[str]], qids: Sequence[str],
         split_of: Mapping[str, str], k: int, depth: int) -> list[tuple]:
    """Rows of the frozen candidate table from the two retrievers' ranked lists (best first)."""
    rows = []
    for qid in qids:
        b, e = ranks_from_order(bm25[qid]), ranks_from_order(dense[qid])
        fused = rrf_scores([b, e], k)
        for d, rank, score in top_k(fused, depth):
            rows.append((qid, split_of[qid], rank, d, score, b.get(d), e.get(d)))
    return rows


def write_candidates(path, rows, header: Sequence[str] = CANDIDATE_HEADER) -> None:
    write_tsv(path, header, rows)


def candidate_header(path) -> tuple[str, ...]:
    """The header of a candidate table: the RRF table's or a TREC-run table's (anything else is an error)."""
    with input_lines(path) as fh:
        header = tuple(fh.readline().rstrip("\r\n").split("\t"))
    if header not in CANDIDATE_HEADERS:
        raise MalformedInputError(path, 1, f"header {list(header)} is neither {list(CANDIDATE_HEADER)} (RRF) "
                                           f"nor {list(TREC_CANDIDATE_HEADER)} (a TREC run)")
    return header


def read_candidate_rows(path) -> list[dict[str, str]]:
    """The rows of a candidate table, its header and rows from one read of the file."""
    table = path if isinstance(path, VerifiedFile) else VerifiedFile(path, input_bytes(path))
    return read_tsv(table, candidate_header(table))


# ------------------------------------------------------------ a user's TREC run as candidates --
# A study may take its candidates from the user's own first-stage run (study.candidates: trec). Frozen
# once (--config repin=candidates trec_run=FILE): the run file is copied into <lockdir>/candidates/run.trec
# and its top ``depth`` per query become <lockdir>/candidates/candidates.tsv with this header; both pinned.
# r0 = the run's order as trec_eval reads it: score descending, ties by document id descending (the
# rank column is not used - trec_eval ignores it too); the score is kept as the run's own text.
TREC_CANDIDATE_HEADER = ("qid", "split", "rank", "doc_id", "run_score")
CANDIDATE_HEADERS = (CANDIDATE_HEADER, TREC_CANDIDATE_HEADER)


# A score is a plain decimal number in ASCII: what C's atof (trec_eval) and Python's float read as the same
# value. float alone also takes "1_000", "１２" (full-width digits), " 1", "inf"; atof reads "1_000" as 1.
PLAIN_NUMBER = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?", re.ASCII)


def read_user_run(path) -> dict[str, list[tuple[str, str]]]:
    """A TREC run ``qid Q0 docid rank score tag`` -> {qid: [(docid, score text), ...] in file order}.
    Strict: 6 fields, a finite plain decimal score (PLAIN_NUMBER), no document twice for a query, a terminated
    last line."""
    out: dict[str, list[tuple[str, str]]] = {}
    seen: set[tuple[str, str]] = set()
    for i, (qid, _q0, doc, _rank, score, _tag) in run_lines(path):
        if not (PLAIN_NUMBER.fullmatch(score) and math.isfinite(float(score))):
            raise MalformedInputError(path, i, f"query {qid}, document {doc}: score {score!r} is not a "
                                      "finite plain decimal number (ASCII digits, optional sign, point and "
                                      "exponent: what trec_eval's atof reads as the same value)")
        if (qid, doc) in seen:
            raise MalformedInputError(path, i, f"document {doc} appears twice for query {qid}")
        seen.add((qid, doc))
        out.setdefault(qid, []).append((doc, score))
    return out


def run_order(docs: Sequence[tuple[str, str]]) -> list[tuple[str, str]]:
    """trec_eval's order of one query's run lines: score descending, then document id descending."""
    return sorted(docs, key=lambda d: (float(d[1]), d[0]), reverse=True)


def short_queries(run: Mapping[str, Sequence], qids: Sequence[str], depth: int) -> list[tuple[str, int]]:
    """(qid, candidates) of every query with fewer than ``depth`` candidates in the run (absent: 0)."""
    return [(q, len(run.get(q, ()))) for q in qids if len(run.get(q, ())) < depth]


def trec_candidate_rows(run: Mapping[str, Sequence[tuple[str, str]]], qids: Sequence[str],
                        split_of: Mapping[str, str], depth: int) -> list[tuple]:
    """Rows of a TREC-run candidate table: the top ``depth`` of each query in trec_eval's order."""
    short = short_queries(run, qids, depth)
    if short:
        raise ValueError(f"{len(short)} queries have fewer than {depth} candidates: "
                         + ", ".join(f"{q} ({n})" for q, n in short[:10]))
    return [(q, split_of[q], r, d, score) for q in qids
            for r, (d, score) in enumerate(run_order(run[q])[:depth], start=1)]


def read_candidates(path, depth: int | None = None) -> dict[str, list[str]]:
    """{qid: [doc ids in rank order]} (optionally cut at ``depth``); checks ranks are 1..n, no duplicates."""
    out: dict[str, list[str]] = {}
    for i, row in enumerate(read_candidate_rows(path), start=2):
        lst = out.setdefault(row["qid"], [])
        if int(row["rank"]) != len(lst) + 1:
            raise MalformedInputError(path, i, f"rank {row['rank']} out of order for query {row['qid']}")
        lst.append(row["doc_id"])
    for lst in out.values():
        ranks_from_order(lst)  # duplicates -> error
    if depth is not None:
        out = {q: lst[:depth] for q, lst in out.items()}
    return out


# ------------------------------------------------------------------------------ drift --
DRIFT_COLUMNS = ("split", "queries", "identical_ranked_lists", "same_set", "largest_rank_shift",
                 "mean_overlap", "queries_changed")


def query_drift(frozen: Sequence[str], regenerated: Sequence[str]) -> dict:
    """Compare one query's frozen and regenerated candidate lists (ranked, best first)."""
    a, b = ranks_from_order(frozen), ranks_from_order(regenerated)
    common = set(a) & set(b)
    return {"identical": list(frozen) == list(regenerated), "same_set": set(a) == set(b),
            "largest_rank_shift": max((abs(a[d] - b[d]) for d in common), default=0),
            "overlap": len(common) / len(a) if a else 1.0}


def drift_table(frozen: Mapping[str, Sequence[str]], regenerated: Mapping[str, Sequence[str]],
                split_of: Mapping[str, str]) -> list[dict]:
    """One row per split (in first-seen order of ``frozen``), then 'all': how far regeneration moved."""
    missing = sorted(set(frozen) ^ set(regenerated))
    if missing:
        raise ValueError(f"frozen and regenerated candidates cover different queries: {missing[:10]}")
    per_q = {q: query_drift(frozen[q], regenerated[q]) for q in frozen}
    splits = list(dict.fromkeys(split_of[q] for q in frozen))
    rows = []
    for split in splits + ["all"]:
        qs = [q for q in frozen if split == "all" or split_of[q] == split]
        rows.append({
            "split": split, "queries": len(qs),
            "identical_ranked_lists": sum(per_q[q]["identical"] for q in qs),
            "same_set": sum(per_q[q]["same_set"] for q in qs),
            "largest_rank_shift": max(per_q[q]["largest_rank_shift"] for q in qs),
            "mean_overlap": sum(per_q[q]["overlap"] for q in qs) / len(qs),
            "queries_changed": [q for q in qs if not per_q[q]["identical"]],
        })
    return rows
