"""Checks of the metrics and statistics: every per-query metric, the evidence groups, both bootstrap
index matrices regenerated from the anchor's seed, every replicate, and every number of summary.json
(recomputed here or taken from the anchor; nothing else accepted). Signature: see checks.provenance."""

from __future__ import annotations

import math

from core.compare import first_difference, item_at, same_value
from expected.definitions import group_label
from expected.expected_summary import expected_summary
from expected.rng import DefaultRng
from read.columns import cell_is
from read.readers import sha256_of

# the descriptions summary.json holds (text; their words are not checked), at these paths only ('*': any one
# name)
PROSE_PATHS = ("bootstrap.estimator", "bootstrap.generator", "comparisons.*.leave_one_group_out.note",
               "evalstats.chance.definition", "evalstats.mcnemar.assumption",
               "evalstats.plan.exploratory_test", "evalstats.plan.guardrails.*.rule",
               "evalstats.power.formula", "repair.definition")


def is_prose_path(path: str) -> bool:
    parts = path.split(".")
    return any(len(p) == len(parts) and all(a in ("*", b) for a, b in zip(p, parts, strict=True))
               for p in (q.split(".") for q in PROSE_PATHS))
LIBRARY_P_KEYS = frozenset({"p", "p_holm", "p_bh"})  # the pipeline computes these with scipy / statsmodels
# stated bound: scipy's binomtest sums the tail in floating point (measured: <= 1 ulp from the exact value)
P_ULPS = 4


def check_per_query(run, want, au) -> None:
    f, rows = str(run.path("per_query")), run.per_query_rows
    au.check("per_query", [r["qid"] for r in rows] == run.analysed, f, "query rows",
             f"{len(run.analysed)} rows in analysed order",
             f"{len(rows)} rows; missing {sorted(set(run.analysed) - {r['qid'] for r in rows})[:5]}")
    by_q = {r["qid"]: r for r in rows}
    for q, rec in want.recomputed.items():
        row = by_q.get(q, {})
        for col, val in rec.items():
            found = row.get(col)
            ok = found == "" if val is None else found is not None and cell_is(found, val)  # None: no rank
            au.check("per_query", ok, f, f"qid {q} {col}", "" if val is None else val, found)


def check_groups(run, want, au) -> None:
    n_groups = len(want.groups)
    expect = [(group_label(i, n_groups), str(i), str(len(g)), q) for i, g in enumerate(want.groups)
              for q in g]
    got = [(r["group_id"], r["group_index"], r["group_size"], r["qid"]) for r in run.group_rows]
    i = first_difference(expect, got)
    au.check("groups", got == expect, str(run.path("groups")), "membership/order/sizes", item_at(expect, i),
             item_at(got, i))
    gmeta, f = run.groups_meta, str(run.path("groups_meta"))
    sizes = [len(g) for g in want.groups]
    expect_meta = {
        "groups": {group_label(i, n_groups): g for i, g in enumerate(want.groups)}, "n_groups": n_groups,
        "n_queries": len(run.analysed),
        "size_histogram": {str(n): sizes.count(n) for n in sorted(set(sizes))},
        "inputs": {"queries_sha256": sha256_of(run.path("run_queries")),
                   "qrels_sha256": sha256_of(run.path("run_qrels"))}}
    for key, val in expect_meta.items():
        au.check("groups", same_value(gmeta.get(key), val), f, key, val, gmeta.get(key))
    au.check("groups", isinstance(gmeta.get("rule"), str), f, "rule", "the grouping rule's "
             "description (prose)",
             type(gmeta.get("rule")).__name__)


def check_bootstrap_indices(run, want, au) -> None:
    """Both index matrices are the draws of numpy's default_rng(seed), seed from the ANCHOR, reproduced here
    element by element: grouped integers(0, G, (B, G)) then query-level integers(0, n, (B, n))."""
    B, seed = want.settings["bootstrap_B"], want.settings["bootstrap_seed"]
    rng = DefaultRng(seed)
    n_groups = len(want.groups)
    grouped = run.grouped_idx
    n_queries = len(run.analysed)
    for key, matrix, high in (("grouped_indices", grouped, n_groups),
                              ("query_indices", run.query_idx, n_queries)):
        f = str(run.path(key))
        expected = rng.integers_matrix(high, B, high)
        au.check("bootstrap_indices", len(matrix) == B, f, "replicate count", B, len(matrix))
        for b, (row, wanted) in enumerate(zip(matrix, expected)):
            au.check("bootstrap_indices", row == wanted, f, f"replicate {b} (seed {seed})",
                     wanted[:8], row[:8] if row != wanted else "same")


def check_replicates(run, want, au) -> None:
    f, saved = str(run.path("replicates")), run.replicate_rows
    B = want.settings["bootstrap_B"]
    au.check("replicates", len(saved) == B, f, "replicate count", B, len(saved))
    au.check("replicates", set(saved[0]) == {"replicate"} | set(want.replicates) if saved else False, f,
             "columns", sorted(want.replicates), sorted(saved[0]) if saved else "no rows")
    numbers = [row.get("replicate") for row in saved]
    in_order = [str(b) for b in range(len(saved))]
    au.check("replicates", numbers == in_order, f, "replicate column", "0, 1, 2, ... in order",
             item_at(numbers, first_difference(numbers, in_order)))
    for col, vals in want.replicates.items():
        for b, (row, val) in enumerate(zip(saved, vals)):
            found = row.get(col)
            au.check("replicates", found is not None and cell_is(found, val), f, f"replicate {b} {col}", val,
                     found)


def check_summary(run, want, au) -> None:
    compare_tree(au, str(run.path("summary")), run.summary, expected_summary(run, want), "")


def compare_tree(au, f: str, found, want, path: str) -> None:
    """Every leaf of summary.json must equal the recomputed one (p-values within P_ULPS ulp); a missing
    section fails; a number the audit does not know fails ('not audited'); only prose is exempt."""
    check = "evalstats" if path.startswith("evalstats") else "summary"
    if isinstance(want, dict):
        if not isinstance(found, dict):
            au.check(check, False, f, path or "summary", "a section", found if found is None
                     else type(found).__name__)
            return
        for key in sorted(set(found) | set(want)):
            sub = f"{path}.{key}" if path else key
            if key not in want and is_prose_path(sub):
                au.check(check, isinstance(found[key], str), f, sub, "a description (text)", found[key])
            elif key not in want:
                au.check(check, False, f, sub, "nothing (not a number the audit recomputes)", found[key])
            elif key not in found:
                au.check(check, False, f, sub, want[key], "missing")
            else:
                compare_tree(au, f, found[key], want[key], sub)
    elif path.endswith("plan.exploratory") and isinstance(want, list):
        # one entry per (family, slice, comparison); their list order follows the config's mapping order,
        # which the audit's anchor (e.g. a canonical-JSON protocol) need not share: compare by name
        def keyed(entries):
            return {f"{e.get('family')}/{e.get('slice')}/{e.get('comparison')}": e for e in entries}
        found_k = keyed(found) if isinstance(found, list) else found
        au.check(check, isinstance(found, list) and len(found) == len(want), f, f"{path} entries", len(want),
                 len(found) if isinstance(found, list) else found)
        compare_tree(au, f, found_k, keyed(want), path + "{by family/slice/comparison}")
    elif isinstance(want, list) and want and isinstance(want[0], dict):
        au.check(check, isinstance(found, list) and len(found) == len(want), f, f"{path} entries", len(want),
                 len(found) if isinstance(found, list) else found)
        for i, (x, y) in enumerate(zip(found if isinstance(found, list) else [], want)):
            compare_tree(au, f, x, y, f"{path}[{i}]")
    elif path.rsplit(".", 1)[-1] in LIBRARY_P_KEYS and isinstance(want, float) and isinstance(found, float):
        au.check(check, abs(found - want) <= P_ULPS * math.ulp(max(abs(found), abs(want))), f, path, want,
                 found)
    else:
        au.check(check, same_value(found, want), f, path, want, found)
