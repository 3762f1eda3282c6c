"""Checks of the run's inputs: the analysed queries are the pinned split's, the candidate lists are the
frozen table's top ``depth``, the frozen table is its RRF (or TREC-run) order, and the run's qrels are
the pinned qrels file's judgements of exactly the analysed queries. Signature: see checks.provenance."""

from __future__ import annotations

import math

from core.compare import first_difference
from expected.definitions import tie_rule_order
from read.columns import cell_is
from read.readers import plain_number, read_run_scores, read_table, rows_by_query, sha256_of, text_of


def check_analysed_queries(run, want, au) -> None:
    pool = run.split_confirm if run.kind == "confirmation" else run.split_dev
    n = want.settings["n_queries"] or len(pool)
    au.check("analysed_queries", run.analysed == pool[:n], str(run.path("run_queries")), "query list",
             f"first {n} of the pinned {run.kind} split",
             "same" if run.analysed == pool[:n] else f"{len(run.analysed)} other ids")
    text = text_of(run.path("run_queries"))
    au.check("analysed_queries", text == "".join(f"{q}\n" for q in pool[:n]), str(run.path("run_queries")),
             "the file's text", "one id per line, nothing else", f"{len(text.splitlines())} lines")


def check_candidates(run, want, au) -> None:
    f, depth = str(run.path("run_candidates")), want.settings["depth"]
    seen: dict[str, int] = {}
    for row in run.cand_rows:
        seen[row["qid"]] = seen.get(row["qid"], 0) + 1
        au.check("candidates", int(row["rank"]) == seen[row["qid"]], f, f"qid {row['qid']} doc "
                 f"{row['doc_id']}",
                 seen[row["qid"]], int(row["rank"]))
    au.check("candidates", list(run.cands) == run.analysed, f, "query set", len(run.analysed), len(run.cands))
    for q in run.analysed:
        lst = run.cands.get(q, [])
        au.check("candidates", len(lst) == depth, f, f"qid {q} list length", depth, len(lst))
        dups = sorted({d for d in lst if lst.count(d) > 1})
        au.check("candidates", not dups, f, f"qid {q} duplicate doc ids", [], dups)
        au.check("candidates", q in run.frozen and lst == run.frozen[q][:depth], f,
                 f"qid {q} vs frozen top-{depth}", run.frozen.get(q, [])[:depth], lst)
    # every column of every row: the pinned frozen table's row (split label, rank, fused score, retriever
    # ranks)
    frozen = rows_by_query(run.frozen_rows)
    expect = [r for q in run.analysed for r in frozen.get(q, [])[:depth]]
    au.check("candidates", expect == run.cand_rows, f,
             "every row and column (the pinned frozen table's rows, in the analysed order)",
             *first_row_difference(expect, run.cand_rows))


def first_row_difference(expect: list, got: list) -> tuple:
    """What a failure shows of each side: the first row that differs, or each side's number of rows when one
    ends first."""
    i = first_difference(expect, got)
    if i is None or i == min(len(expect), len(got)):
        return f"{len(expect)} rows", f"{len(got)} rows"
    return expect[i], got[i]


def check_qrels(run, want, au) -> None:
    f = str(run.path("run_qrels"))
    for q in run.analysed:
        src = run.source_qrels.get(q)
        au.check("qrels", src is not None and run.qrels.get(q) == src, f, f"qid {q}",
                 src if src is not None else "judgements in the pinned qrels file", run.qrels.get(q))
    au.check("qrels", set(run.qrels) <= set(run.analysed), f, "extra queries", [],
             sorted(set(run.qrels) - set(run.analysed)))
    # the file itself: the analysed queries in order, each one's judgements by document id, nothing repeated
    expect = [{"query-id": q, "corpus-id": d, "score": str(g)} for q in run.analysed
              for d, g in sorted(run.source_qrels.get(q, {}).items())]
    got = read_table(run.path("run_qrels"))
    au.check("qrels", expect == got, f, "every row (analysed order, judgements by document id)",
             *first_row_difference(expect, got))


def check_frozen_candidates(run, want, au) -> None:
    """The frozen table's r0 order is its RRF order: rrf_score = 1/(k + bm25_rank) + 1/(k + dense_rank)
    (a term only for a list holding the document, added in that order from 0.0) and ranks follow score
    descending, ties by document id string descending; k from the candidates' pin."""
    if want.anchor.lock("derived_pins.json")["candidates"].get("source") == "trec":
        return check_trec_candidates(run, want, au)
    f = str(run.path("candidates"))
    k = want.anchor.lock("derived_pins.json")["candidates"]["params"]["rrf_k"]
    for q, rows in rows_by_query(run.frozen_rows).items():
        scores = {}
        for r in rows:
            s = 0.0
            for col in ("bm25_rank", "dense_rank"):
                if r[col]:
                    s += 1.0 / (k + int(r[col]))
            scores[r["doc_id"]] = s
            au.check("frozen_candidates", cell_is(r["rrf_score"], s), f,
                     f"qid {q} doc {r['doc_id']} rrf_score", s, r["rrf_score"])
        order = tie_rule_order(scores)
        got = [r["doc_id"] for r in sorted(rows, key=lambda r: int(r["rank"]))]
        ranks_ok = sorted(int(r["rank"]) for r in rows) == list(range(1, len(rows) + 1))
        au.check("frozen_candidates", ranks_ok and got == order, f, f"qid {q} rank order", order[:5], got[:5])


def check_trec_candidates(run, want, au) -> None:
    """A TREC-run table (study.candidates: trec) is the committed run file's top ``depth`` per query in
    trec_eval's order (score descending, ties by document id string descending), the score kept as the
    run's text; the run file is the pinned one."""
    f, pin = str(run.path("candidates")), want.anchor.lock("derived_pins.json")["candidates"]
    run_path = want.anchor.lockdir / pin["provenance"]["run_file"]
    au.check("frozen_candidates", sha256_of(run_path) == pin["provenance"]["run_sha256"], str(run_path),
             "TREC run sha256", pin["provenance"]["run_sha256"], sha256_of(run_path))
    lines = read_run_scores(run_path)
    by_q = rows_by_query(run.frozen_rows)
    depth = pin["params"]["depth"]
    for q, rows in by_q.items():
        scores = lines.get(q, {})
        order = tie_rule_order({d: plain_number(sc) for d, sc in scores.items()})[:depth]
        au.check("frozen_candidates", all(math.isfinite(plain_number(sc)) for sc in scores.values()),
                 str(run_path), f"qid {q} scores", "finite plain decimal numbers",
                 [sc for sc in scores.values() if not math.isfinite(plain_number(sc))][:5])
        got = [r["doc_id"] for r in sorted(rows, key=lambda r: int(r["rank"]))]
        au.check("frozen_candidates", got == order, f, f"qid {q} rank order (the run's)", order[:5], got[:5])
        for r in rows:
            au.check("frozen_candidates", scores.get(r["doc_id"]) == r["run_score"], f,
                     f"qid {q} doc {r['doc_id']} run_score", scores.get(r["doc_id"]), r["run_score"])
