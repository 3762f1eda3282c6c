"""Checks of what is shown and what is kept apart: report.md shows the recomputed numbers, and no
development artefact holds a confirmation query id (a confirmation run analyses only confirmation
queries). Signature: see checks.provenance."""

from __future__ import annotations

from read.readers import text_of
from report.report_facts import facts
from report.report_numbers import (
    CHECK,
    check_banner,
    compare_labelled,
    compare_line,
    compare_record,
    compare_table,
    parse,
)


def check_report(run, want, au) -> None:
    """Every number, verdict and label of report.md equals the audit's recomputation (``report_facts``,
    compared by ``report_numbers``); the STAND-IN banner exactly when the scorer is the stand-in."""
    f = str(run.path("report"))
    au.note(CHECK, "every number, verdict and label of report.md's tables and numeric lines compared with "
                   "the audit's recomputation (numbers by value at the precision shown); the wording is "
                   "not compared")
    tables, lines = parse(text_of(run.path("report")))
    expect = facts(run, want, au)
    check_banner(au, f, lines, expect["standin"])
    for key, rows in expect["tables"].items():
        compare_table(au, f, key, tables.get(key), rows)
    for key, labelled in expect["labelled"].items():
        compare_labelled(au, f, key, tables.get(key), labelled)
    for fact in expect["lines"]:
        compare_line(au, f, lines, fact)
    for record in expect.get("records", []):
        compare_record(au, f, lines, record)


def check_seal(run, want, au) -> None:
    confirm_ids = set(run.split_confirm)
    if run.kind == "confirmation":
        au.note("seal", "confirmation run: every analysed query must be a confirmation query")
        au.check("seal", set(run.analysed) <= confirm_ids, str(run.path("run_queries")), "analysed queries",
                 "confirmation ids only", sorted(set(run.analysed) - confirm_ids)[:5])
        return
    tables = {"run_queries": run.analysed, "run_candidates": list(run.cands), "pairs": list(run.logits),
              "run_qrels": list(run.qrels), "per_query": [r["qid"] for r in run.per_query_rows],
              "groups": [r["qid"] for r in run.group_rows],
              "rankings": [r["qid"] for r in run.ranking_rows],
              "summary worst_primary": [w["qid"] for w in run.summary["worst_primary"]]}
    for key in ("run_rrf", "run_ce", "run_blend"):
        tables[key] = list(run.trec_run(key))
    for name, ids in tables.items():
        leaked = sorted(set(ids) & confirm_ids)
        au.check("seal", not leaked, name, "query ids", "no confirmation query id", leaked[:10])
