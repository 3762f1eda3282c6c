"""Checks of what is shown and what is kept apart: report.md shows the recomputed numbers, and no
development artefact holds a confirmation query id (a confirmation run analyses only confirmation
queries). Signature: see checks_provenance."""

from __future__ import annotations


def _report_tables(run):
    """report.md's methods table and comparisons table (None where absent)."""
    methods = next((t for t in run.report_tables
                    if t and "method" in t[0] and any(k.startswith("mean ndcg") for k in t[0])), None)
    comps = next((t for t in run.report_tables if t and "comparison" in t[0] and "W/T/L" in t[0]), None)
    return methods, comps


def check_report(run, want, au) -> None:
    """The methods and comparison tables of report.md show the recomputed numbers (6 decimals); the
    cells are found by their column headers."""
    f = str(run.path("report"))
    methods, comps = _report_tables(run)
    au.check("report", methods is not None and comps is not None, f, "methods and comparisons tables",
             "both present", [methods is not None, comps is not None])
    if methods is None or comps is None:
        return
    mean_col = f"mean {want.metric}"
    by_method = {r["method"]: r for r in methods}
    for m, val in want.method_means.items():
        found = by_method.get(m, {}).get(mean_col)
        au.check("report", found == f"{val:.6f}", f, f"method {m} mean", f"{val:.6f}", found)
    by_name = {r["comparison"].replace(" (primary)", ""): r for r in comps}
    header = list(comps[0])
    col = {"grouped": next(h for h in header if h.startswith("grouped ") and h.endswith("interval")),
           "query": next(h for h in header if h.startswith("query-level ") and h.endswith("interval")),
           "logo": next(h for h in header if h.startswith("leave-one-group-out"))}
    for name, exp in want.expected_comparisons.items():
        row = by_name.get(name)
        if row is None:
            au.check("report", False, f, f"{name} row", "a comparison row", "missing")
            continue
        shown = {"mean Δ": f"{exp['mean']:.6f}",
                 col["grouped"]: f"[{exp['grouped_interval'][0]:.6f}, {exp['grouped_interval'][1]:.6f}]",
                 col["query"]: f"[{exp['query_interval'][0]:.6f}, {exp['query_interval'][1]:.6f}]",
                 "W/T/L": f"{exp['wins']}/{exp['ties']}/{exp['losses']}"}
        if "leave_one_group_out.min" in exp:
            shown[col["logo"]] = f"{exp['leave_one_group_out.min']:.6f} … {exp['leave_one_group_out.max']:.6f}"
        for header_name, text in shown.items():
            au.check("report", row.get(header_name) == text, f, f"{name} {header_name}", text, row.get(header_name))


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
