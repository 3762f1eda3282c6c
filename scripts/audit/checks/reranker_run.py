"""Check 'reranker_run': a run-file reranker's scores (the anchor's study.reranker_kind: run), re-derived from
its PINNED run file with the audit's own reader - the development run the lock folder pins, or an opening's
confirmation run its frozen protocol pins. The file has the pinned sha256; every line is six fields with a
finite score and no document twice for a query; it holds exactly the frozen top-``depth`` candidates of every
query of the run's split and no other query; reranker_scores.tsv is its score of every analysed candidate
(analysed queries in order, candidates by rank), and reranker_run.json says which file it is, what was read
from it and which queries it ties whole. A cross-encoder study lists neither artefact. Signature: see
checks.provenance."""

from __future__ import annotations

import math

from read.layout import RUN_FILE, RUN_FILE_ONLY
from read.readers import plain_number, read_json, read_run_lines, sha256_of

CHECK = "reranker_run"


def run_file_pin(run, want) -> dict:
    """{file, sha256, ...} of the run file the ANCHOR pins: the lock folder's development run, or an opening's
    confirmation run as its frozen protocol pins it."""
    if run.kind == "confirmation":
        return read_json(want.anchor.lockdir / "protocol.json")["model"]["confirmation_run"]
    return want.anchor.lock("derived_pins.json")["reranker_run"]


def full_depth(run, want) -> int:
    """The candidates a run file must score per query: the study's candidates.depth (an opening: its
    protocol's)."""
    if run.kind == "confirmation":
        return read_json(want.anchor.lockdir / "protocol.json")["candidates"]["params"]["depth"]
    return want.anchor.config["candidates"]["depth"]


def file_scores(au, path, lines) -> dict[str, dict[str, float]]:
    """{qid: {doc: score}} of the run's lines; a repeated (query, document) or a non-finite score fails."""
    out: dict[str, dict[str, float]] = {}
    for i, q, d, text in lines:
        score = plain_number(text)
        au.check(CHECK, math.isfinite(score), str(path), f"line {i} query {q} document {d} score",
                 "a finite plain decimal number (ASCII digits: read alike by trec_eval's atof)", text)
        au.check(CHECK, d not in out.get(q, {}), str(path), f"line {i} query {q} document {d}",
                 "one line per (query, document)", "a repeated document")
        out.setdefault(q, {})[d] = score
    return out


def check_coverage(run, want, au, path, scores: dict) -> None:
    """Exactly the frozen top-``depth`` candidates of every query of the run's split, and no other query."""
    split = run.split_confirm if run.kind == "confirmation" else run.split_dev
    depth, f = full_depth(run, want), str(path)
    au.check(CHECK, set(scores) <= set(split), f, f"queries (the {run.kind} split's only)", [],
             sorted(set(scores) - set(split))[:10])
    for q in split:
        want_docs, got = run.frozen.get(q, [])[:depth], scores.get(q, {})
        au.check(CHECK, set(got) == set(want_docs) and len(want_docs) == depth, f,
                 f"query {q}: its frozen top-{depth} candidates, each scored once",
                 "missing [], extra []",
                 f"missing {sorted(set(want_docs) - set(got))[:5]}, extra "
                 f"{sorted(set(got) - set(want_docs))[:5]}")


def check_table(run, au, scores: dict) -> None:
    """reranker_scores.tsv: each analysed candidate once, in order, r0 its rank, score the run file's
    value."""
    f = str(run.path("reranker_scores"))
    expect = [(q, d, r0, scores.get(q, {}).get(d)) for q in run.analysed
              for r0, d in enumerate(run.cands.get(q, []), start=1)]
    got = [(r["qid"], r["doc_id"], int(r["r0"]), float(r["score"])) for r in run.score_rows]
    au.check(CHECK, len(got) == len(expect), f, "rows (one per analysed candidate)", len(expect), len(got))
    for i, (e, g) in enumerate(zip(expect, got, strict=False), start=2):
        au.check(CHECK, e == g, f, f"line {i} (qid, doc, r0, score)", list(e), list(g))


def expected_record(run, want, pin: dict, scores: dict) -> dict:
    name = want.settings["study"]["reranker"]
    tied = [q for q in run.analysed if len(run.cands.get(q, [])) > 1
            and len({scores.get(q, {}).get(d) for d in run.cands[q]}) == 1]
    return {"reranker": name, "file": pin["file"], "sha256": pin["sha256"],
            "identity": f"{name} run:{pin['file']}",
            "weights_sha256": pin["sha256"], "queries": len(run.analysed),
            "pairs": sum(len(run.cands.get(q, [])) for q in run.analysed), "all_tied_queries": tied}


def check_record(run, want, au, pin: dict, scores: dict) -> None:
    f, rec = str(run.path("reranker_run")), run.reranker_record
    for key, val in expected_record(run, want, pin, scores).items():
        au.check(CHECK, rec.get(key) == val, f, key, val, rec.get(key))
    au.check(CHECK, isinstance(rec.get("tie_rule"), str), f, "tie_rule", "a description (prose)",
             type(rec.get("tie_rule")).__name__)


def check_reranker_run(run, want, au) -> None:
    if run.reranker_kind != RUN_FILE:
        for key in RUN_FILE_ONLY:
            au.check(CHECK, key not in run.art, str(run.manifest_path), f"{key} (a cross-encoder study)",
                     "not listed", "listed")
        au.note(CHECK, "a cross-encoder study: no run file is its reranker (its scores: checks 'pairs', "
                       "'verification', 'reference', 'reinfer')")
        return
    pin = run_file_pin(run, want)
    path = want.anchor.lockdir / pin["file"]
    au.check(CHECK, sha256_of(path) == pin["sha256"], str(path), "the pinned run file's sha256",
             pin["sha256"],
             sha256_of(path))
    scores = file_scores(au, path, read_run_lines(path))
    check_coverage(run, want, au, path, scores)
    check_table(run, au, scores)
    check_record(run, want, au, pin, scores)
    au.note(CHECK,
            f"every score re-derived from the pinned run file {path} (sha256 {pin['sha256']}), read in "
                   "trec_eval's order by check 'blend'")
