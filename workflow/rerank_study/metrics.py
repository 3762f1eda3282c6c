"""Per-query retrieval metrics on an explicitly ordered list of document ids.

Definitions (P = judged relevant documents of the query, relevance > 0, including those that
are NOT in the ranked list; R_K = the first K ranked documents):

* nDCG@K exactly as trec_eval ``ndcg_cut.K``: gain = relevance level, discount log2(i+2) for
  0-based position i, DCG summed in rank order; the ideal DCG sorts ALL judged relevant
  documents of the query by gain and takes the first K; nDCG = DCG/IDCG (0 when IDCG = 0).
* Recall@K = |P ∩ R_K| / |P|      (the standard definition; |P| in the denominator).
* capped Recall@K = |P ∩ R_K| / min(|P|, K)   (a *different*, separately named metric; never
  reported under the name Recall).
* MRR@K (reciprocal rank cut at K) = 1 / rank of the first relevant document if it is <= K, else 0.
* first relevant rank = 1-based rank of the first relevant document in the list, None if none.
"""

from __future__ import annotations

import math
from typing import Mapping, Sequence

from .names import FIRST_REL_RANK, Measure


def _check(ranked: Sequence[str], qrels_q: Mapping[str, int]) -> None:
    if len(set(ranked)) != len(ranked):
        raise ValueError("ranked list contains duplicate document ids")
    if not any(r > 0 for r in qrels_q.values()):
        raise ValueError("query has no judged relevant document; its metrics are undefined")


def dcg_at(gains: Sequence[float], k: int) -> float:
    total = 0.0
    for i, g in enumerate(gains[:k]):
        if g > 0:
            total += g / math.log2(i + 2)
    return total


def ndcg_at(ranked: Sequence[str], qrels_q: Mapping[str, int], k: int = 10) -> float:
    _check(ranked, qrels_q)
    gains = [max(qrels_q.get(d, 0), 0) for d in ranked]
    ideal = sorted((r for r in qrels_q.values() if r > 0), reverse=True)
    idcg = dcg_at(ideal, k)
    return dcg_at(gains, k) / idcg if idcg > 0 else 0.0


def recall_at(ranked: Sequence[str], qrels_q: Mapping[str, int], k: int) -> float:
    _check(ranked, qrels_q)
    rel = {d for d, r in qrels_q.items() if r > 0}
    return len(rel.intersection(ranked[:k])) / len(rel)


def capped_recall_at(ranked: Sequence[str], qrels_q: Mapping[str, int], k: int) -> float:
    """|P ∩ R_K| / min(|P|, K): a separately named normalisation, NOT Recall@K."""
    _check(ranked, qrels_q)
    rel = {d for d, r in qrels_q.items() if r > 0}
    return len(rel.intersection(ranked[:k])) / min(len(rel), k)


def first_relevant_rank(ranked: Sequence[str], qrels_q: Mapping[str, int]) -> int | None:
    for i, d in enumerate(ranked, start=1):
        if qrels_q.get(d, 0) > 0:
            return i
    return None


def mrr_at(ranked: Sequence[str], qrels_q: Mapping[str, int], k: int = 10) -> float:
    _check(ranked, qrels_q)
    r = first_relevant_rank(ranked[:k], qrels_q)
    return 1.0 / r if r is not None else 0.0


def query_metrics(ranked: Sequence[str], qrels_q: Mapping[str, int], ndcg_k: int = 10,
                  recall_ks: Sequence[int] = (10, 50), mrr_k: int = 10) -> dict:
    """All per-query metrics of the product, keyed by their measure names (``names.Measure``)."""
    out = {str(Measure("ndcg", ndcg_k)): ndcg_at(ranked, qrels_q, ndcg_k)}
    for k in recall_ks:
        out[str(Measure("recall", k))] = recall_at(ranked, qrels_q, k)
    for k in recall_ks:
        out[str(Measure("capped_recall", k))] = capped_recall_at(ranked, qrels_q, k)
    out[str(Measure("mrr", mrr_k))] = mrr_at(ranked, qrels_q, mrr_k)
    out[str(FIRST_REL_RANK)] = first_relevant_rank(ranked, qrels_q)
    out["n_relevant"] = sum(1 for r in qrels_q.values() if r > 0)
    out["n_relevant_in_list"] = sum(1 for d in ranked if qrels_q.get(d, 0) > 0)
    return out
