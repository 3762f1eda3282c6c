"""Metrics against hand calculation and against pytrec_eval (trec_eval)."""

import math

import pytest
import pytrec_eval

from rerank_study import metrics
from rerank_study.ranking import rank_derived_scores


def test_ndcg_hand_computed_with_relevant_doc_outside_the_list():
    qrels = {"d1": 1, "d2": 1, "d3": 1, "n": 0}
    ranked = ["d0", "d1", "x", "d2"]
    dcg = 1 / math.log2(3) + 1 / math.log2(5)
    idcg = 1 + 1 / math.log2(3) + 1 / math.log2(4)  # ideal from ALL judged relevant docs (d3 too)
    assert metrics.ndcg_at(ranked, qrels, 10) == pytest.approx(dcg / idcg, abs=1e-15)
    assert metrics.recall_at(ranked, qrels, 10) == 2 / 3
    assert metrics.recall_at(ranked, qrels, 2) == 1 / 3
    assert metrics.mrr_at(ranked, qrels, 10) == 0.5
    assert metrics.mrr_at(ranked, qrels, 1) == 0.0
    assert metrics.first_relevant_rank(ranked, qrels) == 2


def test_no_relevant_document_in_the_list():
    qrels = {"r": 1}
    ranked = ["a", "b", "c"]
    assert metrics.ndcg_at(ranked, qrels, 10) == 0.0
    assert metrics.recall_at(ranked, qrels, 10) == 0.0
    assert metrics.mrr_at(ranked, qrels, 10) == 0.0
    assert metrics.first_relevant_rank(ranked, qrels) is None


def test_cut_at_k_ignores_later_relevant_docs():
    qrels = {"r": 1}
    ranked = [f"x{i}" for i in range(10)] + ["r"]
    assert metrics.ndcg_at(ranked, qrels, 10) == 0.0
    assert metrics.recall_at(ranked, qrels, 10) == 0.0
    assert metrics.recall_at(ranked, qrels, 11) == 1.0
    assert metrics.first_relevant_rank(ranked, qrels) == 11


def test_capped_recall_is_a_different_named_metric():
    qrels = {f"p{i}": 1 for i in range(8)}
    ranked = ["p0", "p1", "p2", "x"]
    assert metrics.recall_at(ranked, qrels, 3) == 3 / 8  # seed 000: Recall@3 = 3/8
    assert metrics.capped_recall_at(ranked, qrels, 3) == 1.0  # ... and the capped variant = 1


def test_query_without_relevant_judgement_is_an_error():
    with pytest.raises(ValueError, match="no judged relevant"):
        metrics.ndcg_at(["a"], {"a": 0}, 10)


CASES = {
    "several_relevant": (["a", "r1", "b", "r2", "c", "d", "e", "f", "g", "h", "r3", "i"], {"r1": 1, "r2": 1, "r3": 1, "r4": 1}),
    "first_is_relevant": (["r", "a", "b"], {"r": 1}),
    "none_in_list": (["a", "b", "c"], {"r": 1}),
    "graded": (["a", "r2", "r1"], {"r1": 1, "r2": 2, "r0": 0}),
    "numeric_ids_tie_prone": (["10", "9", "100", "1"], {"9": 1, "1": 1}),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_against_pytrec_eval(name):
    ranked, qrels = CASES[name]
    run = {"q": {d: float(s) for d, s in zip(ranked, rank_derived_scores(len(ranked)))}}
    run10 = {"q": {d: float(s) for d, s in zip(ranked[:10], rank_derived_scores(len(ranked[:10])))}}
    ev = pytrec_eval.RelevanceEvaluator({"q": qrels}, {"ndcg_cut.10", "recall.10", "recall.50"})
    ref = ev.evaluate(run)["q"]
    rr = pytrec_eval.RelevanceEvaluator({"q": qrels}, {"recip_rank"}).evaluate(run10)["q"]["recip_rank"]
    assert metrics.ndcg_at(ranked, qrels, 10) == pytest.approx(ref["ndcg_cut_10"], abs=1e-12)
    assert metrics.recall_at(ranked, qrels, 10) == pytest.approx(ref["recall_10"], abs=1e-12)
    assert metrics.recall_at(ranked, qrels, 50) == pytest.approx(ref["recall_50"], abs=1e-12)
    assert metrics.mrr_at(ranked, qrels, 10) == pytest.approx(rr, abs=1e-12)


def test_pytrec_eval_breaks_score_ties_by_doc_id_descending_like_us():
    """With EQUAL scores trec_eval orders docno descending: the same rule as ours."""
    from rerank_study.ranking import order_by_score

    qrels = {"q": {"9": 1}}
    run = {"q": {"10": 1.0, "9": 1.0, "100": 1.0}}
    rr = pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank"}).evaluate(run)["q"]["recip_rank"]
    ours = order_by_score(run["q"])
    assert ours == ["9", "100", "10"]
    assert rr == 1.0 / (ours.index("9") + 1)
