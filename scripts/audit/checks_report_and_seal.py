"""Checks of what is shown and what is kept apart: report.md shows the recomputed numbers, and no
development artefact holds a confirmation query id (a confirmation run analyses only confirmation
queries). Signature: see checks_provenance."""

from __future__ import annotations

import report_numbers


def check_report(run, want, au) -> None:
    """Every number, verdict and label of report.md equals the audit's recomputation (``report_numbers``);
    the STAND-IN banner exactly when the scorer is the stand-in."""
    report_numbers.check(run, want, au)


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
