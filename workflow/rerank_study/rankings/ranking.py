"""The tie rule, rank materialisation and reciprocal-rank fusion.

Tie rule (everywhere in the project, and trec_eval's own): order by score descending, then by
document id *as a string* descending. Ranks are 1-based and materialised explicitly before any
evaluation.

Reciprocal-rank fusion (Cormack, Clarke & Buettcher 2009) of rankings r_1..r_m of a document:

    s(d) = sum_i 1 / (k + r_i(d))        (terms added in float64, in the order of the rankings)

A ranking that does not contain ``d`` contributes nothing. The candidate generator fuses BM25
and dense top-100 lists with k=60; the blend fuses the candidate rank r0 and the cross-encoder
rank r1 with k=60: ``1/(60+r0) + 1/(60+r1)``. Both are this one function.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

# The tie rule in words, as protocols and reports state it (the short form in a candidate pin is
# config.TIE_RULE, frozen into the committed candidate pins).
TIE_RULE_TEXT = "score descending, then document id as a string descending"

def order_by_score(scores: Mapping[str, float]) -> list[str]:
    """Document ids by score descending, ties by document id string descending."""
    for d, s in scores.items():
        if not isinstance(d, str):
            raise TypeError(f"document ids must be strings, got {d!r}")
        if not math.isfinite(s):
            raise ValueError(f"non-finite score {s!r} for document {d!r}")
    return [d for d, _ in sorted(scores.items(), key=lambda kv: (kv[1], kv[0]), reverse=True)]


def ranks_from_order(order: Sequence[str]) -> dict[str, int]:
    """{doc_id: 1-based rank} from an ordered list; refuses duplicates."""
    ranks = {d: i for i, d in enumerate(order, start=1)}
    if len(ranks) != len(order):
        seen, dups = set(), []
        for d in order:
            if d in seen:
                dups.append(d)
            seen.add(d)
        raise ValueError(f"duplicate document ids in a ranking: {sorted(set(dups))}")
    return ranks


def rank_by_score(scores: Mapping[str, float]) -> dict[str, int]:
    """{doc_id: rank} under the tie rule."""
    return ranks_from_order(order_by_score(scores))


def rrf_scores(rankings: Sequence[Mapping[str, int]], k: int = 60) -> dict[str, float]:
    """Reciprocal-rank fusion scores over the union of the rankings' documents (float64, in order)."""
    if k < 0:
        raise ValueError(f"RRF constant k must be >= 0, got {k}")
    fused: dict[str, float] = {}
    for ranking in rankings:
        for d, r in ranking.items():
            if not isinstance(r, int) or isinstance(r, bool) or r < 1:
                raise ValueError(f"rank of {d!r} must be a positive integer, got {r!r}")
            fused[d] = fused.get(d, 0.0) + 1.0 / (k + r)
    return fused


def blend_scores(r0: Mapping[str, int], r1: Mapping[str, int], k: int = 60) -> dict[str, float]:
    """The blend ``1/(k+r0) + 1/(k+r1)``: both rankings must cover exactly the same documents."""
    if set(r0) != set(r1):
        raise ValueError("blend needs the same documents in both rankings; differ by "
                         f"{sorted(set(r0) ^ set(r1))[:5]}")
    return rrf_scores([r0, r1], k)  # 0.0 + 1/(k+r0) == 1/(k+r0) exactly, so this IS 1/(k+r0) + 1/(k+r1)


def top_k(scores: Mapping[str, float], depth: int) -> list[tuple[str, int, float]]:
    """[(doc_id, rank, score)] for the ``depth`` best documents under the tie rule."""
    order = order_by_score(scores)[:depth]
    return [(d, i, scores[d]) for i, d in enumerate(order, start=1)]


def rank_derived_scores(n: int) -> list[int]:
    """Strictly decreasing integer scores n, n-1, ..., 1 written into TREC runs so that any
    evaluation tool reproduces exactly the materialised order (no ties left to resolve)."""
    return list(range(n, 0, -1))


def rerank_query(candidates: Sequence[str], logits: Mapping[str, float], k: int = 60) -> dict:
    """The three rankings of one query from its candidate list (r0 = position) and CE logits.

    Returns {"r0": {d: r0}, "r1": {d: CE rank}, "blend_score": {d: s}, "blend_rank": {d: rank},
    "order": {"rrf": [...], "ce": [...], "blend": [...]}}.
    """
    if set(logits) != set(candidates) or len(logits) != len(candidates):
        missing = sorted(set(candidates) - set(logits))
        extra = sorted(set(logits) - set(candidates))
        raise ValueError(f"logits do not match the candidates: missing {missing[:5]}, extra {extra[:5]}")
    r0 = ranks_from_order(candidates)
    ce_order = order_by_score(logits)
    r1 = ranks_from_order(ce_order)
    s = blend_scores(r0, r1, k)
    blend_order = order_by_score(s)
    return {"r0": r0, "r1": r1, "blend_score": s, "blend_rank": ranks_from_order(blend_order),
            "order": {"rrf": list(candidates), "ce": ce_order, "blend": blend_order}}
