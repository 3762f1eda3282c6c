"""The paired analysis of one run: per-method means, paired comparisons with grouped and
query-level bootstrap intervals, and the diagnostics. Pure: tables in, numbers out."""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np

from . import bootstrap as bs
from .grouping import size_histogram

METHODS = ("rrf", "ce", "blend")


def analyse(qids: Sequence[str], table: Mapping[str, Mapping[str, float]], groups: Sequence[Sequence[str]],
            group_ids: Sequence[str], comparisons: Mapping[str, Sequence[str]], primary: str, metric: str,
            B: int, seed: int, percentiles: Sequence[float], threshold: float,
            first_rel: Mapping[str, Mapping[str, int | None]] | None = None,
            other_metrics: Sequence[str] = ()):
    """Returns (summary dict, grouped index matrix, query index matrix, {column: replicate array}).

    ``table[qid][f"{method}_{metric}"]`` holds per-query values; ``first_rel[qid][method]`` the
    first relevant rank (for the worst-query audit).
    """
    positions = bs.group_positions(qids, groups)
    g_idx, q_idx = bs.draw_indices(seed, len(groups), len(qids), B)
    per_method = {m: [table[q][f"{m}_{metric}"] for q in qids] for m in METHODS}
    summary = {
        "metric": metric, "n_queries": len(qids), "n_groups": len(groups),
        "group_size_histogram": {str(k): v for k, v in size_histogram(groups).items()},
        "bootstrap": {"B": B, "seed": seed, "percentiles": list(percentiles),
                      "generator": "numpy.random.default_rng(seed); grouped = integers(0, G, (B, G)); then "
                                   "query = integers(0, n, (B, n))",
                      "estimator": "sum over drawn groups of the group's summed delta / sum of drawn group sizes"},
        "threshold": threshold, "primary": primary,
        "methods": {m: {"mean": bs.seq_mean(per_method[m]),
                        **{f"mean_{x}": bs.seq_mean(table[q][f"{m}_{x}"] for q in qids) for x in other_metrics}}
                    for m in METHODS},
        "comparisons": {},
    }
    replicates = {}
    for name, (a, b) in comparisons.items():
        deltas = [x - y for x, y in zip(per_method[a], per_method[b])]
        grouped = bs.grouped_replicates(deltas, positions, g_idx)
        query = bs.query_replicates(deltas, q_idx)
        replicates[f"grouped_{name}"] = grouped
        replicates[f"query_{name}"] = query
        gi, qi = bs.interval(grouped.tolist(), percentiles), bs.interval(query.tolist(), percentiles)
        w, t, l = bs.wins_ties_losses(deltas)
        logo = bs.leave_one_group_out(deltas, positions) if len(groups) > 1 else None
        comp = {
            "a": a, "b": b, "mean": bs.seq_mean(deltas),
            "grouped_interval": [gi.lower, gi.upper], "query_interval": [qi.lower, qi.upper],
            "grouped_covers_0": gi.covers(0.0), "grouped_covers_threshold": gi.covers(threshold),
            "query_covers_0": qi.covers(0.0), "query_covers_threshold": qi.covers(threshold),
            "mean_reaches_threshold": bs.seq_mean(deltas) >= threshold,
            "wins": w, "ties": t, "losses": l,
            "leave_one_group_out": None if logo is None else {
                "min": min(logo), "max": max(logo),
                "min_group": group_ids[int(np.argmin(logo))], "max_group": group_ids[int(np.argmax(logo))],
                "note": "influence diagnostic (mean with each evidence group removed), NOT an interval"},
        }
        summary["comparisons"][name] = comp
    # worst queries of the primary comparison and the repair / weakening counts
    a, b = comparisons[primary]
    prim = {q: table[q][f"{a}_{metric}"] - table[q][f"{b}_{metric}"] for q in qids}
    order = sorted(qids, key=lambda q: (prim[q], qids.index(q)))
    summary["worst_primary"] = [{
        "qid": q, "delta": prim[q], **{f"{m}_{metric}": table[q][f"{m}_{metric}"] for m in (a, b)},
        **({f"{m}_first_rel_rank": first_rel[q][m] for m in (a, b)} if first_rel else {}),
    } for q in order[:3]]
    if {"ce", "rrf", "blend"} <= set(METHODS):
        ce_loss = [q for q in qids if table[q][f"ce_{metric}"] < table[q][f"rrf_{metric}"]]
        ce_win = [q for q in qids if table[q][f"ce_{metric}"] > table[q][f"rrf_{metric}"]]
        summary["repair"] = {
            "ce_losses_vs_rrf": len(ce_loss),
            "repaired_by_blend": sum(1 for q in ce_loss if table[q][f"blend_{metric}"] > table[q][f"ce_{metric}"]),
            "ce_wins_vs_rrf": len(ce_win),
            "weakened_by_blend": sum(1 for q in ce_win if table[q][f"blend_{metric}"] < table[q][f"ce_{metric}"]),
            "definition": "CE loss/win = CE metric < / > RRF metric; repaired = blend > CE among CE losses; "
                          "weakened = blend < CE among CE wins",
        }
    return summary, g_idx, q_idx, replicates
