"""Per-query retrieval metrics on an explicitly ordered list of document ids.

nDCG@K, Recall@K and MRR@K are computed by the field's reference, trec_eval (through
pytrec_eval); capped Recall@K and the first relevant rank, which trec_eval does not define, are
computed here. The standard-library audit (scripts/audit) re-implements all of them from the
definitions below and must agree to the last bit.

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

from collections.abc import Mapping, Sequence

from ..core.names import FIRST_REL_RANK, Measure
from ..rankings.ranking import rank_derived_scores


def _check(ranked: Sequence[str], qrels_q: Mapping[str, int]) -> None:
    if len(set(ranked)) != len(ranked):
        raise ValueError("ranked list contains duplicate document ids")
    if not any(r > 0 for r in qrels_q.values()):
        raise ValueError("query has no judged relevant document; its metrics are undefined")


def _cutoff(k: int) -> int:
    """A cut-off is a positive integer (trec_eval crashes on ``ndcg_cut.0``; the config schema says >= 1)."""
    if type(k) is not int or k < 1:  # noqa: E721 - bool is not a cut-off
        raise ValueError(f"a metric cut-off must be a positive integer, got {k!r}")
    return k


def _trec_eval(ranked: Sequence[str], qrels_q: Mapping[str, int], measure: str, key: str) -> float:
    """trec_eval's value ``key`` of ``measure`` (pytrec_eval) for ONE query whose ranking is given as an
    ordered list.

    An empty ranking scores 0.0 by every definition above (no document retrieved); trec_eval itself
    leaves such a query out of its output, so it is answered here. The run carries strictly
    decreasing rank-derived scores (n, n-1, ..., 1), so trec_eval's tie handling cannot reorder
    anything: it evaluates exactly the materialised order. A measure missing from trec_eval's answer
    is an error, never a default."""
    import pytrec_eval

    if not ranked:
        return 0.0
    run = {"q": {d: float(s) for d, s in zip(ranked, rank_derived_scores(len(ranked)))}}
    qrels = {"q": {d: int(r) for d, r in qrels_q.items()}}
    return pytrec_eval.RelevanceEvaluator(qrels, {measure}).evaluate(run)["q"][key]


def ndcg_at(ranked: Sequence[str], qrels_q: Mapping[str, int], k: int = 10) -> float:
    """trec_eval ``ndcg_cut.k`` (pytrec_eval)."""
    _check(ranked, qrels_q)
    k = _cutoff(k)
    return _trec_eval(ranked, qrels_q, f"ndcg_cut.{k}", f"ndcg_cut_{k}")


def recall_at(ranked: Sequence[str], qrels_q: Mapping[str, int], k: int) -> float:
    """trec_eval ``recall.k`` (pytrec_eval): |P ∩ R_K| / |P|."""
    _check(ranked, qrels_q)
    k = _cutoff(k)
    return _trec_eval(ranked, qrels_q, f"recall.{k}", f"recall_{k}")


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
    """trec_eval ``recip_rank`` (pytrec_eval) of the ranking cut at k (trec_eval's measure has no cut-off)."""
    _check(ranked, qrels_q)
    return _trec_eval(list(ranked[:_cutoff(k)]), qrels_q, "recip_rank", "recip_rank")


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
